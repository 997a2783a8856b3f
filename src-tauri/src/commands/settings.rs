//! Settings, providers, monitors and the API key.

use serde::Serialize;
use tauri::{AppHandle, Runtime, State};

use crate::bar::main_window;
use crate::config::{PROVIDERS, ProviderInfo, Settings};
use crate::error::{IpcError, IpcResult};
use crate::keys::{self, KeyStatus};
use crate::state::AppState;

#[tauri::command]
pub async fn get_settings(state: State<'_, AppState>) -> IpcResult<Settings> {
    Ok(state.settings())
}

/// Validates and stores the settings; the approval mode becomes the window's mode too.
#[tauri::command]
pub async fn set_settings(state: State<'_, AppState>, settings: Settings) -> IpcResult<Settings> {
    state.save_settings(settings)
}

#[tauri::command]
pub async fn list_providers() -> IpcResult<&'static [ProviderInfo]> {
    Ok(PROVIDERS)
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MonitorInfo {
    pub id: String,
    pub name: String,
    pub width: u32,
    pub height: u32,
    pub primary: bool,
}

/// The monitors the agent can capture, by the names the display server gives them.
#[tauri::command]
pub async fn list_monitors<R: Runtime>(app: AppHandle<R>) -> IpcResult<Vec<MonitorInfo>> {
    let window = main_window(&app).ok_or_else(|| IpcError::internal("the window is gone"))?;
    let primary = window.primary_monitor().ok().flatten();
    let monitors = window
        .available_monitors()
        .map_err(|e| IpcError::internal(format!("cannot list the monitors: {e}")))?;
    Ok(monitors
        .iter()
        .enumerate()
        .map(|(index, m)| {
            let name = m
                .name()
                .cloned()
                .unwrap_or_else(|| format!("monitor {}", index + 1));
            MonitorInfo {
                id: name.clone(),
                primary: primary.as_ref().is_some_and(|p| p.name() == m.name()),
                name,
                width: m.size().width,
                height: m.size().height,
            }
        })
        .collect())
}

#[tauri::command]
pub async fn set_api_key(provider: String, key: String) -> IpcResult<KeyStatus> {
    if !PROVIDERS.iter().any(|p| p.id == provider) {
        return Err(IpcError::invalid(format!("unknown provider `{provider}`")));
    }
    if key.trim().is_empty() {
        return Err(IpcError::invalid("the key is empty"));
    }
    keys::store(&provider, &key)
}

/// Whether the configured provider has a key, and its last four characters.
#[tauri::command]
pub async fn key_status(state: State<'_, AppState>) -> IpcResult<KeyStatus> {
    Ok(keys::status(&state.settings().provider))
}
