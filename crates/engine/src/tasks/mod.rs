//! Runs as tasks: one engine under every front end (`deskhand ask`, the window, `deskhand
//! serve`). It prepares a run from settings the same way for all of them, records it in the
//! store, runs one task at a time per session (across processes too, with a file lock), and
//! lets any watcher follow its events, answer its approvals or cancel it.

mod approvals;
mod engine;
mod lineage;
mod lock;
mod prepare;

pub use approvals::{PendingApprovals, TaskApprover};
pub use deskhand_protocol::task::{Origin, TaskInfo, TaskState};
pub use deskhand_protocol::update::{TaskUpdate, WindowUpdate};
pub use engine::{Engine, TaskSpec, Watch};
pub use lineage::{Lineage, LineageError, MAX_HOPS};
pub use lock::{LockError, SessionLock};
pub use prepare::{
    BASH_TIMEOUT_VARIABLE, DEFAULT_KEEP_SCREENSHOTS, DEFAULT_SUMMARIZE_AT, DesktopSettings,
    PrepareError, Prepared, Resolved, RunSettings, SecondsError, StallChoice, parse_seconds,
    prepare, resolve,
};

use crate::store::StoreError;
use deskhand_protocol::ids::{TaskId, ToolUseId};

/// Why the engine refused a request; each is worded for the person who made it.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("no task `{0}`")]
    NotFound(TaskId),
    /// Nothing with that id waits for an answer (never asked, answered already, or the task
    /// ended).
    #[error("no action `{0}` is waiting for approval")]
    NotPending(ToolUseId),
    #[error("task `{0}` is not waiting for approval")]
    NothingPending(TaskId),
    /// No stall question is open: none was asked, it was answered, or it timed out.
    #[error("task `{0}` is not asking whether to go on")]
    NoStallQuestion(TaskId),
    #[error("task `{id}` has already ended ({state})")]
    Finished { id: TaskId, state: &'static str },
    /// Another process (a `deskhand ask`, the window) runs the task and answers for it.
    #[error("task `{id}` is run by another Deskhand process (pid {pid}); answer or stop it there")]
    Elsewhere { id: TaskId, pid: u32 },
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
}
