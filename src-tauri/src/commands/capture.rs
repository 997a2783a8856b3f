//! Images: screenshots and attachments by hash as binary responses, attaching files, pastes,
//! drops and captures.

use tauri::State;
use tauri::ipc::{InvokeBody, Request, Response};

use crate::error::{ErrorKind, IpcError, IpcResult};
use crate::images::AttachedImage;
use crate::state::AppState;

/// An image's encoded bytes as a binary response (an `ArrayBuffer` in the webview).
#[tauri::command]
pub async fn get_image(state: State<'_, AppState>, sha256: String) -> IpcResult<Response> {
    let (_, bytes) = state
        .images
        .get(&sha256)
        .ok_or_else(|| IpcError::not_found(format!("no image `{sha256}`")))?;
    Ok(Response::new(bytes.as_ref().clone()))
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
    state.attachments.attach(bytes.clone(), &state.images)
}

#[tauri::command]
pub async fn discard_attachment(state: State<'_, AppState>, id: String) -> IpcResult<()> {
    state.attachments.discard(&id)
}

/// Captures the configured monitor now, scaled as for the model, as an attachment.
#[tauri::command]
pub async fn capture_screen(_state: State<'_, AppState>) -> IpcResult<AttachedImage> {
    Err(IpcError::new(
        ErrorKind::CaptureFailed,
        "screen capture is not available in this build yet (it comes with the computer tool)",
    ))
}
