//! Links in replies. A link the model wrote never loads in the window (the navigation guard
//! refuses it anyway): it opens in the system browser, after the person has read its full
//! address in a native dialog and said yes.

use tauri::{State, Url};

use crate::commands::confirm::{self, confirmed};
use crate::error::{IpcError, IpcResult};
use crate::state::AppState;

/// The longest address shown and opened; a longer one is refused (a dialog could not show it).
const MAX_URL: usize = 4096;

/// Opens `url` (http, https or mailto) in the system browser once the person confirms it.
#[tauri::command]
pub async fn open_link(state: State<'_, AppState>, url: String) -> IpcResult<()> {
    if url.len() > MAX_URL {
        return Err(IpcError::invalid(format!(
            "the link is longer than {MAX_URL} characters"
        )));
    }
    let url = Url::parse(&url).map_err(|e| IpcError::invalid(format!("not a link ({e})")))?;
    if !matches!(url.scheme(), "http" | "https" | "mailto") {
        return Err(IpcError::invalid(format!(
            "links to `{}:` are not opened",
            url.scheme()
        )));
    }
    // The parsed form: the host in ASCII (punycode), everything else percent-encoded.
    confirmed(&state, confirm::open_link(url.as_str())).await?;
    state.desktop.open_url(&url).map_err(IpcError::internal)
}
