//! The API's refusals: one JSON shape, `{"error": {"kind", "message"}}`, with the status and
//! the kind a program can match, for every route and the TCP guard.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use deskhand_engine::store::StoreError;
use deskhand_engine::tasks::{LockError, TaskError};
use serde_json::json;

/// A refusal: its status, a kind a program can match, and a message for a person.
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) kind: &'static str,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid",
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"kind": self.kind, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}

impl From<TaskError> for ApiError {
    fn from(error: TaskError) -> Self {
        let (status, kind) = match &error {
            TaskError::NotFound(_) | TaskError::Store(StoreError::NotFound(_)) => {
                (StatusCode::NOT_FOUND, "not_found")
            }
            TaskError::NotPending(_)
            | TaskError::NothingPending(_)
            | TaskError::NoStallQuestion(_) => (StatusCode::CONFLICT, "not_pending"),
            TaskError::Finished { .. } => (StatusCode::CONFLICT, "finished"),
            TaskError::Elsewhere { .. } => (StatusCode::CONFLICT, "elsewhere"),
            TaskError::Lock(LockError::Busy(_)) => (StatusCode::CONFLICT, "busy"),
            TaskError::Prepare(_)
            | TaskError::Invalid(_)
            | TaskError::Store(StoreError::Ambiguous { .. } | StoreError::EmptyId) => {
                (StatusCode::BAD_REQUEST, "invalid")
            }
            TaskError::Lock(_) | TaskError::Store(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "internal")
            }
        };
        Self {
            status,
            kind,
            message: error.to_string(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        TaskError::Store(error).into()
    }
}
