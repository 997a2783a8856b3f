//! The one error type every command rejects with: a kind the window can act on and a line a
//! person can read (docs/ipc.md, "Errors").

use deskhand_engine::store::StoreError;
use deskhand_engine::tasks::{LockError, PrepareError, TaskError};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(rename = "IpcErrorKind")]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    NoKey,
    KeyringUnavailable,
    Busy,
    NotFound,
    Invalid,
    CaptureFailed,
    /// The person said no in the shell's native confirmation.
    Declined,
    Internal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error, ts_rs::TS)]
#[error("{message}")]
pub struct IpcError {
    pub kind: ErrorKind,
    pub message: String,
}

impl IpcError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
}

pub type IpcResult<T> = Result<T, IpcError>;

/// Store failures as the window sees them: a missing or ambiguous session is the caller's to
/// fix, anything else is the machine's.
impl From<StoreError> for IpcError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound(_) | StoreError::NoNote(_) => {
                IpcError::not_found(error.to_string())
            }
            StoreError::Ambiguous { .. } | StoreError::EmptyId | StoreError::BadNote(_) => {
                IpcError::invalid(error.to_string())
            }
            other => IpcError::internal(other.to_string()),
        }
    }
}

/// The engine's refusals as the window sees them: settings that cannot work are the
/// person's to change in Settings.
impl From<TaskError> for IpcError {
    fn from(error: TaskError) -> Self {
        match error {
            TaskError::Store(error) => error.into(),
            TaskError::Lock(LockError::Busy(_)) => {
                IpcError::new(ErrorKind::Busy, error.to_string())
            }
            TaskError::Prepare(PrepareError::Provider(e)) => {
                IpcError::invalid(format!("{e}; change it in Settings"))
            }
            TaskError::Prepare(e) => IpcError::invalid(e.to_string()),
            TaskError::NotFound(_)
            | TaskError::NotPending(_)
            | TaskError::NothingPending(_)
            | TaskError::NoStallQuestion(_)
            | TaskError::Finished { .. } => IpcError::not_found(error.to_string()),
            other => IpcError::internal(other.to_string()),
        }
    }
}
