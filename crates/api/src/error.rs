//! The API's refusals: one JSON shape, `{"error": {"kind", "message"}}`, with the status and
//! the kind a program can match, for every route and the TCP guard.

use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;
use axum::extract::rejection::PathRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use deskhand_engine::store::StoreError;
use deskhand_engine::tasks::{LockError, TaskError};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What kind of refusal it is: the names a program matches, each with its status here or in
/// docs/openapi.json.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorKind {
    Invalid,
    NotFound,
    NotPending,
    Finished,
    Elsewhere,
    Busy,
    // A schedule has that name already. (A plain comment: a documented variant would
    // change how the schema lists the kinds.)
    Exists,
    Unauthorized,
    Forbidden,
    WrongHost,
    ForbiddenOrigin,
    Timeout,
    TooManyWatchers,
    TooManyConnections,
    Internal,
}

/// A refusal: its status, a kind a program can match, and a message for a person.
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

/// Every refusal's body, `{"error": {"kind", "message"}}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Error")]
pub(crate) struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
struct ErrorDetail {
    kind: ErrorKind,
    message: String,
}

impl ErrorBody {
    pub(crate) fn new(kind: ErrorKind, message: String) -> Self {
        Self {
            error: ErrorDetail { kind, message },
        }
    }
}

impl ApiError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: ErrorKind::Invalid,
            message: message.into(),
        }
    }
}

/// The path's task, session or schedule id, refused in our error shape when it cannot be
/// read.
pub(crate) fn path_id(id: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    id.map(|Path(id)| id)
        .map_err(|e| ApiError::invalid(format!("the path: {}", e.body_text())))
}

/// A JSON body, refused with our error shape (not the framework's) when it does not parse.
pub(crate) fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    let bytes: &[u8] = if bytes.is_empty() { b"{}" } else { bytes };
    serde_json::from_slice(bytes).map_err(|e| ApiError::invalid(format!("the request body: {e}")))
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody::new(self.kind, self.message);
        (self.status, Json(body)).into_response()
    }
}

impl From<TaskError> for ApiError {
    fn from(error: TaskError) -> Self {
        let (status, kind) = match &error {
            TaskError::NotFound(_) | TaskError::Store(StoreError::NotFound(_)) => {
                (StatusCode::NOT_FOUND, ErrorKind::NotFound)
            }
            TaskError::NotPending(_)
            | TaskError::NothingPending(_)
            | TaskError::NoStallQuestion(_) => (StatusCode::CONFLICT, ErrorKind::NotPending),
            TaskError::Finished { .. } => (StatusCode::CONFLICT, ErrorKind::Finished),
            TaskError::Elsewhere { .. } => (StatusCode::CONFLICT, ErrorKind::Elsewhere),
            TaskError::Lock(LockError::Busy(_)) => (StatusCode::CONFLICT, ErrorKind::Busy),
            TaskError::Prepare(_)
            | TaskError::Invalid(_)
            | TaskError::Store(StoreError::Ambiguous { .. } | StoreError::EmptyId) => {
                (StatusCode::BAD_REQUEST, ErrorKind::Invalid)
            }
            TaskError::Lock(_) | TaskError::Store(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, ErrorKind::Internal)
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
