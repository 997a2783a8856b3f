//! Stored sessions: list, search, rename, delete, export, load.

use serde_json::Value;
use tauri::State;

use crate::error::{IpcError, IpcResult};
use crate::state::AppState;

const NO_STORE: &str =
    "session history is not available in this build yet (it comes with the store)";

#[tauri::command]
pub async fn list_sessions(_state: State<'_, AppState>) -> IpcResult<Vec<Value>> {
    Err(IpcError::internal(NO_STORE))
}

#[tauri::command]
pub async fn search_sessions(_state: State<'_, AppState>, query: String) -> IpcResult<Vec<Value>> {
    let _ = query;
    Err(IpcError::internal(NO_STORE))
}

#[tauri::command]
pub async fn rename_session(
    _state: State<'_, AppState>,
    id: String,
    title: String,
) -> IpcResult<()> {
    let _ = (id, title);
    Err(IpcError::internal(NO_STORE))
}

#[tauri::command]
pub async fn delete_session(_state: State<'_, AppState>, id: String) -> IpcResult<()> {
    let _ = id;
    Err(IpcError::internal(NO_STORE))
}

#[tauri::command]
pub async fn export_session(
    _state: State<'_, AppState>,
    id: String,
    format: String,
) -> IpcResult<Option<String>> {
    let _ = (id, format);
    Err(IpcError::internal(NO_STORE))
}

#[tauri::command]
pub async fn load_session(_state: State<'_, AppState>, id: String) -> IpcResult<Value> {
    let _ = id;
    Err(IpcError::internal(NO_STORE))
}
