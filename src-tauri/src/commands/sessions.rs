//! Stored sessions: list, search, rename, delete, export, load, and the check saved with one. The same store the CLI's
//! `deskhand sessions` reads, so a session started in either shows up in both.

use std::path::{Path, PathBuf};

use deskhand_engine::agent::verify::SavedCheck;
use deskhand_engine::store::{ExportFormat, LoadedSession, SessionHit, SessionSummary};
use tauri::State;

use crate::error::{IpcError, IpcResult};
use crate::state::AppState;

#[tauri::command]
pub async fn list_sessions(state: State<'_, AppState>) -> IpcResult<Vec<SessionSummary>> {
    Ok(state.store()?.sessions()?)
}

#[tauri::command]
pub async fn search_sessions(
    state: State<'_, AppState>,
    query: String,
) -> IpcResult<Vec<SessionHit>> {
    Ok(state.store()?.search(&query)?)
}

#[tauri::command]
pub async fn rename_session(
    state: State<'_, AppState>,
    id: String,
    title: String,
) -> IpcResult<()> {
    if title.trim().is_empty() {
        return Err(IpcError::invalid("a session title cannot be empty"));
    }
    let store = state.store()?;
    Ok(store.rename(&store.resolve_id(&id)?, &title)?)
}

/// Deletes a session with its screenshots; not the one running, whose events are still
/// being written.
#[tauri::command]
pub async fn delete_session(state: State<'_, AppState>, id: String) -> IpcResult<()> {
    let store = state.store()?;
    let id = store.resolve_id(&id)?;
    if state.running_session().as_ref() == Some(&id) {
        return Err(IpcError::new(
            crate::error::ErrorKind::Busy,
            "this session is running; stop it before deleting it",
        ));
    }
    Ok(store.delete(&id)?)
}

/// Writes the session to a new file in the Downloads folder (the home folder where there is
/// none) and answers its path. No save dialog: the webview has no file system access and
/// a native dialog would block the window's WebDriver tests; the path is shown instead.
#[tauri::command]
pub async fn export_session(
    state: State<'_, AppState>,
    id: String,
    format: String,
) -> IpcResult<String> {
    let (format, extension) = match format.as_str() {
        "markdown" | "md" => (ExportFormat::Markdown, "md"),
        "json" => (ExportFormat::Json, "json"),
        other => {
            return Err(IpcError::invalid(format!(
                "unknown export format `{other}`; use markdown or json"
            )));
        }
    };
    let store = state.store()?;
    let id = store.resolve_id(&id)?;
    let text = store.export(&id, format)?;
    let title = store.session(&id)?.title;
    let path = write_new(
        &export_dir(),
        &file_stem(&title, id.as_str()),
        extension,
        &text,
    )?;
    Ok(path.display().to_string())
}

/// A stored session with its messages and events, images as references (`get_image`).
#[tauri::command]
pub async fn load_session(state: State<'_, AppState>, id: String) -> IpcResult<LoadedSession> {
    let store = state.store()?;
    Ok(store.load_session(&store.resolve_id(&id)?)?)
}

fn export_dir() -> PathBuf {
    dirs::download_dir()
        .or_else(|| dirs::home_dir().map(|home| home.join("Downloads")))
        .unwrap_or_else(std::env::temp_dir)
}

/// A file name from the title: letters, digits, spaces, `-` and `_`, at most 60 of them.
fn file_stem(title: &str, id: &str) -> String {
    let kept: String = title
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .take(60)
        .collect();
    match kept.trim() {
        "" => format!(
            "deskhand-session-{}",
            id.chars().take(8).collect::<String>()
        ),
        stem => stem.to_string(),
    }
}

/// Writes `text` to `stem.extension` in `dir`, or `stem (2).extension` and so on: an earlier
/// export is never overwritten.
fn write_new(dir: &Path, stem: &str, extension: &str, text: &str) -> IpcResult<PathBuf> {
    let failed = |path: &Path, e: std::io::Error| {
        IpcError::internal(format!("cannot write {}: {e}", path.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| failed(dir, e))?;
    for n in 1..1000 {
        let name = match n {
            1 => format!("{stem}.{extension}"),
            n => format!("{stem} ({n}).{extension}"),
        };
        let path = dir.join(name);
        // Private (0600): an export holds the whole transcript and its screenshots.
        match deskhand_engine::files::write_private(&path, text.as_bytes(), true) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(failed(&path, e)),
        }
    }
    Err(IpcError::internal(format!(
        "{} holds 999 exports named `{stem}`; move some away",
        dir.display()
    )))
}

/// The check saved with a session (its settings in the window), or `null`.
#[tauri::command]
pub async fn get_session_check(
    state: State<'_, AppState>,
    id: String,
) -> IpcResult<Option<SavedCheck>> {
    let store = state.store()?;
    Ok(store.session_check(&store.resolve_id(&id)?)?)
}

/// Saves the check every later run of the session ends with (`null` removes it). It is
/// refused at once when its program does not exist or its timeout is out of range.
#[tauri::command]
pub async fn set_session_check(
    state: State<'_, AppState>,
    id: String,
    check: Option<SavedCheck>,
) -> IpcResult<()> {
    if let Some(check) = &check {
        deskhand_engine::agent::verify::Check::saved(check)
            .map_err(|e| IpcError::invalid(format!("the check: {e}")))?;
    }
    let store = state.store()?;
    Ok(store.set_session_check(&store.resolve_id(&id)?, check.as_ref())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_names_are_safe_and_never_overwrite() {
        assert_eq!(file_stem("Fix ../the printer!", "abc"), "Fix the printer");
        assert_eq!(file_stem("/// ", "0123456789"), "deskhand-session-01234567");
        let dir = tempfile::tempdir().unwrap();
        let first = write_new(dir.path(), "a", "md", "one").unwrap();
        let second = write_new(dir.path(), "a", "md", "two").unwrap();
        assert_eq!(first, dir.path().join("a.md"));
        assert_eq!(second, dir.path().join("a (2).md"));
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "one");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&first).unwrap().permissions(),
        );
        assert_eq!(
            mode & 0o777,
            0o600,
            "an export is private whatever the umask"
        );
    }
}
