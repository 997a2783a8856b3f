//! The agent desktop in the window: where a session's runs work (saved with the session),
//! the live view of that desktop in the side panel, and the person's take-over input.

use deskhand_engine::desktop::DesktopChoice;
use deskhand_engine::desktop::live::LiveView;
use deskhand_engine::desktop::takeover::{TakeOver, TakeOverInput};
use deskhand_engine::tools::computer::scaling::Size;
use serde::Serialize;
use tauri::State;
use tauri::ipc::{Channel, InvokeResponseBody};

use crate::error::{IpcError, IpcResult};
use crate::state::AppState;

/// The widest frame the live view sends: the side panel's width on a large screen.
const MAX_VIEW_WIDTH: u32 = 1280;

/// Where the session's runs work; the person's screen until set.
#[tauri::command]
pub async fn get_session_desktop(
    state: State<'_, AppState>,
    id: String,
) -> IpcResult<DesktopChoice> {
    let store = state.store()?;
    Ok(store.session_desktop(&store.resolve_id(&id)?)?)
}

/// Saves where the session's later runs work. A desktop the session kept ends once the
/// choice no longer keeps one (or, if a run is on it, with that run).
#[tauri::command]
pub async fn set_session_desktop(
    state: State<'_, AppState>,
    id: String,
    choice: DesktopChoice,
) -> IpcResult<()> {
    let store = state.store()?;
    let id = store.resolve_id(&id)?;
    store.set_session_desktop(&id, &choice)?;
    state
        .engine()?
        .keep_desktop(&id, choice.agent && choice.keep);
    Ok(())
}

/// What the live view shows: the display, and the desktop's size that take-over
/// coordinates are in.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct Watching {
    pub display: String,
    pub screen: Size,
}

/// Shows the session's agent desktop: JPEG frames (raw bytes, no JSON) go to `on_frame`, the
/// first at once and then one after each change, at most 10 a second. One view at a time:
/// a new one replaces the last. `not_found` while the session has no agent desktop.
#[tauri::command]
pub async fn watch_agent_desktop(
    state: State<'_, AppState>,
    session_id: String,
    max_width: u32,
    on_frame: Channel<InvokeResponseBody>,
) -> IpcResult<Watching> {
    let display = desktop_of(&state, &session_id)?;
    let width = max_width.clamp(64, MAX_VIEW_WIDTH);
    let view = LiveView::start(&display, width, move |frame| {
        on_frame.send(InvokeResponseBody::Raw(frame.jpeg)).is_ok()
    })
    .map_err(|e| IpcError::internal(e.to_string()))?;
    let screen = view.screen();
    state.show_live_view(Some(view));
    Ok(Watching { display, screen })
}

/// Stops the live view (the panel closed it, or the run ended).
#[tauri::command]
pub async fn unwatch_agent_desktop(state: State<'_, AppState>) -> IpcResult<()> {
    state.show_live_view(None);
    Ok(())
}

/// One click, scroll, key or text of the person, in the desktop's pixels, sent to the
/// session's agent desktop only. `not_found` while it has none; unknown keys are `invalid`.
#[tauri::command]
pub async fn take_over_input(
    state: State<'_, AppState>,
    session_id: String,
    input: TakeOverInput,
) -> IpcResult<()> {
    let display = desktop_of(&state, &session_id)?;
    if let TakeOverInput::Text { text } = &input
        && (text.is_empty() || text.len() > 1_000)
    {
        return Err(IpcError::invalid("typed text is 1 to 1,000 bytes"));
    }
    let takeover = state.takeover.clone();
    tauri::async_runtime::spawn_blocking(move || {
        let mut held = takeover.lock().unwrap_or_else(|e| e.into_inner());
        if held.as_ref().is_none_or(|t| t.display() != display) {
            *held = Some(TakeOver::open(&display).map_err(|e| IpcError::internal(e.to_string()))?);
        }
        let Some(takeover) = held.as_mut() else {
            return Err(IpcError::internal("no input connection"));
        };
        takeover.send(&input).map_err(|e| match &input {
            TakeOverInput::Key { .. } => IpcError::invalid(e.to_string()),
            _ => {
                // A connection to a desktop that has ended: the next input opens anew.
                IpcError::internal(e.to_string())
            }
        })
    })
    .await
    .map_err(|e| IpcError::internal(e.to_string()))?
}

fn desktop_of(state: &AppState, session_id: &str) -> IpcResult<String> {
    let store = state.store()?;
    let id = store.resolve_id(session_id)?;
    state
        .engine()?
        .desktop_display(&id)
        .ok_or_else(|| IpcError::not_found("this session has no agent desktop now"))
}
