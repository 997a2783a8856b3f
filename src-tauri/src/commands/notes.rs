//! The agent's notes, as the window's Notes view manages them: the same notes `deskhand
//! notes` and the `memory` tool change, checked the same way (never empty, at most 4 KB, no
//! secrets), and whether they go into each run's system prompt.

use deskhand_engine::memory::{IN_PROMPT_SETTING, Note};
use serde_json::Value;
use tauri::State;

use crate::error::IpcResult;
use crate::state::AppState;

/// The most notes a search answers.
const SEARCH_LIMIT: usize = 50;

/// Every note, the most recently changed first.
#[tauri::command]
pub async fn list_notes(state: State<'_, AppState>) -> IpcResult<Vec<Note>> {
    Ok(state.store()?.notes()?)
}

/// Notes holding every word of `query`, best match first.
#[tauri::command]
pub async fn search_notes(state: State<'_, AppState>, query: String) -> IpcResult<Vec<Note>> {
    Ok(state.store()?.search_notes(&query, SEARCH_LIMIT)?)
}

/// A note the person wrote; `invalid` for an empty note, one over 4 KB, or one holding a
/// secret.
#[tauri::command]
pub async fn add_note(state: State<'_, AppState>, text: String) -> IpcResult<Note> {
    Ok(state.store()?.add_note(&text, None)?)
}

#[tauri::command]
pub async fn edit_note(state: State<'_, AppState>, id: i64, text: String) -> IpcResult<Note> {
    Ok(state.store()?.update_note(id, &text)?)
}

#[tauri::command]
pub async fn delete_note(state: State<'_, AppState>, id: i64) -> IpcResult<()> {
    state.store()?.delete_note(id)?;
    Ok(())
}

/// Whether each run's system prompt holds the notes most relevant to it (on by default).
#[tauri::command]
pub async fn get_memory_in_prompt(state: State<'_, AppState>) -> IpcResult<bool> {
    Ok(state.store()?.memory_in_prompt()?)
}

#[tauri::command]
pub async fn set_memory_in_prompt(state: State<'_, AppState>, enabled: bool) -> IpcResult<()> {
    Ok(state
        .store()?
        .set_setting(IN_PROMPT_SETTING, &Value::Bool(enabled))?)
}
