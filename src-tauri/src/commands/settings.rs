//! Settings, providers, monitors and the API key.

use deskhand_engine::agent::ApprovalPolicy;
use deskhand_engine::elements::marks;
use deskhand_engine::llm::providers::ProviderKind;
use deskhand_engine::tools::computer::capture::RealScreen;
use deskhand_engine::tools::computer::scaling::model_size_within;
use deskhand_engine::tools::computer::screen::Screen;
use serde::Serialize;
use serde_json::Value;
use tauri::State;

use crate::commands::confirm::{self, confirmed};
use crate::config::{ProviderInfo, WindowSettings, providers};
use crate::error::{ErrorKind, IpcError, IpcResult};
use crate::keys::{self, KeyInfo};
use crate::state::AppState;

/// The window's settings with the run budget and set-of-marks from the store.
#[tauri::command]
pub async fn get_settings(state: State<'_, AppState>) -> IpcResult<WindowSettings> {
    let store = state.store()?;
    let budget = store.budget()?;
    Ok(WindowSettings {
        settings: state.settings(),
        max_cost_usd: budget.max_cost_usd,
        max_tokens: budget.max_tokens,
        set_of_marks: store
            .setting(marks::SETTING)?
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
    })
}

/// Validates and stores the settings (the budget and set-of-marks in the store, where
/// `deskhand settings` keeps them and every run reads them); the approval mode becomes the window's mode too. Two changes need the person's
/// native confirmation first (`declined` otherwise): a new base URL for a provider that has
/// a key (the key goes wherever the base URL points), and Auto as the mode.
#[tauri::command]
pub async fn set_settings(
    state: State<'_, AppState>,
    settings: WindowSettings,
) -> IpcResult<WindowSettings> {
    let budget = settings.budget()?;
    settings.settings.validate()?;
    let store = state.store()?;
    let (old, new) = (state.settings(), &settings.settings);
    if let Some(url) = &new.base_url
        && (new.base_url != old.base_url || new.provider != old.provider)
        && key_status(state.clone(), Some(new.provider.clone()))
            .await?
            .status
            .set
    {
        let provider =
            ProviderKind::parse(&new.provider).map_or(new.provider.as_str(), |k| k.name());
        confirmed(&state, confirm::key_destination(provider, url)).await?;
    }
    if new.approval_mode == ApprovalPolicy::Auto && old.approval_mode != ApprovalPolicy::Auto {
        confirmed(&state, confirm::auto_mode()).await?;
    }
    let saved = state.save_settings(settings.settings)?;
    store.set_budget(&budget)?;
    store.set_setting(marks::SETTING, &Value::Bool(settings.set_of_marks))?;
    Ok(WindowSettings {
        settings: saved,
        max_cost_usd: budget.max_cost_usd,
        max_tokens: budget.max_tokens,
        set_of_marks: settings.set_of_marks,
    })
}

#[tauri::command]
pub async fn list_providers() -> IpcResult<Vec<ProviderInfo>> {
    Ok(providers())
}

#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
pub struct MonitorInfo {
    /// What the `monitor` setting holds; `deskhand monitors` and `--monitor` use the same.
    pub index: usize,
    pub name: String,
    pub width: u32,
    pub height: u32,
    pub primary: bool,
    /// What the model sees of it with the current screenshot setting.
    pub model_width: u32,
    pub model_height: u32,
}

/// The monitors the computer tool can use, as the core lists them.
#[tauri::command]
pub async fn list_monitors(state: State<'_, AppState>) -> IpcResult<Vec<MonitorInfo>> {
    let bound = state.settings().screenshot_size;
    let monitors = RealScreen::open()
        .and_then(|screen| screen.monitors())
        .map_err(|e| IpcError::new(ErrorKind::CaptureFailed, e.to_string()))?;
    Ok(monitors
        .into_iter()
        .map(|m| {
            let pixels = m.geometry.pixels;
            let model = model_size_within(pixels, bound);
            MonitorInfo {
                index: m.index,
                name: m.name,
                width: pixels.width,
                height: pixels.height,
                primary: m.primary,
                model_width: model.width,
                model_height: model.height,
            }
        })
        .collect())
}

/// Stores the key in the OS keyring; answers what the window may know of it.
#[tauri::command]
pub async fn set_api_key(
    state: State<'_, AppState>,
    provider: String,
    key: String,
) -> IpcResult<KeyInfo> {
    let keyring = state.keyring.clone();
    // The keyring is a blocking D-Bus call on a thread of its own.
    tauri::async_runtime::spawn_blocking(move || keys::store(&keyring, &provider, key))
        .await
        .map_err(|e| IpcError::internal(e.to_string()))?
}

/// Whether `provider` (default: the configured one) has a key, where from, and its last
/// four characters.
#[tauri::command]
pub async fn key_status(
    state: State<'_, AppState>,
    provider: Option<String>,
) -> IpcResult<KeyInfo> {
    let keyring = state.keyring.clone();
    let provider = provider.unwrap_or_else(|| state.settings().provider);
    tauri::async_runtime::spawn_blocking(move || keys::status(&keyring, &provider))
        .await
        .map_err(|e| IpcError::internal(e.to_string()))?
}
