//! Images: screenshots and attachments by hash as binary responses, attaching files, pastes,
//! drops and captures.

use deskhand_engine::tools::computer::capture::RealScreen;
use deskhand_engine::tools::computer::pipeline::{self, Format};
use deskhand_engine::tools::computer::screen::{self, Screen};
use deskhand_engine::windows::Desk;
use tauri::ipc::{InvokeBody, Request, Response};
use tauri::{AppHandle, Runtime, State};

use crate::bar::main_window;
use crate::error::{ErrorKind, IpcError, IpcResult};
use crate::images::AttachedImage;
use crate::state::AppState;

/// An image's encoded bytes as a binary response (an `ArrayBuffer` in the webview):
/// attachments not yet sent from where they are held, every other image from the store, which
/// keeps each one before the window is shown an event naming it.
#[tauri::command]
pub async fn get_image(state: State<'_, AppState>, sha256: String) -> IpcResult<Response> {
    if let Some(bytes) = state.attachments.bytes(&sha256) {
        return Ok(Response::new(bytes));
    }
    let (_, bytes) = state
        .store()?
        .image(&sha256)
        .map_err(|_| IpcError::not_found(format!("no image `{sha256}`")))?;
    Ok(Response::new(bytes))
}

/// Attaches an image sent as the raw request body (a file, a paste or a drop).
#[tauri::command]
pub async fn attach_image(
    state: State<'_, AppState>,
    request: Request<'_>,
) -> IpcResult<AttachedImage> {
    let InvokeBody::Raw(bytes) = request.body() else {
        return Err(IpcError::invalid(
            "attach_image takes the image's bytes as the request body",
        ));
    };
    state.attachments.attach(bytes.clone())
}

#[tauri::command]
pub async fn discard_attachment(state: State<'_, AppState>, id: String) -> IpcResult<()> {
    state.attachments.discard(&id)
}

/// Captures the configured monitor now, scaled as for the model, as an attachment (the
/// window shows it as a thumbnail that can be removed before sending). The window steps aside
/// for the instant of the capture: the person wants what they are working on, not Deskhand.
#[tauri::command]
pub async fn capture_screen<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
) -> IpcResult<AttachedImage> {
    let monitor = state.settings().monitor;
    let failed = |e: &dyn std::fmt::Display| IpcError::new(ErrorKind::CaptureFailed, e.to_string());
    let window = main_window(&app);
    let desk = Desk::open().ok();
    let aside = match &window {
        Some(window) => Some(state.bar.step_aside(window, desk.as_ref()).await),
        None => None,
    };
    // Capturing and encoding a frame takes tens of milliseconds: off the async workers.
    let shot = tauri::async_runtime::spawn_blocking(move || {
        let screen = RealScreen::open()?;
        let monitor = screen::choose(screen.monitors()?, monitor)?;
        pipeline::screenshot(&screen, &monitor, Format::Png)
    })
    .await;
    drop(aside);
    if let Some(window) = window {
        let _ = window.set_focus();
    }
    let shot = shot.map_err(|e| failed(&e))?.map_err(|e| failed(&e))?;
    state.attachments.attach(shot.bytes)
}
