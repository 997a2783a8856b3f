//! What a task is and where it stands, as the store keeps it and every front end shows it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approval::ApprovalRequest;
use crate::ids::{SessionId, TaskId};
use crate::status::RunStatus;

/// Where a task stands. The first three are live; the others are final.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Waiting for its session's earlier task to end.
    Queued,
    Running,
    WaitingForApproval,
    Done,
    MaxTurns,
    Budget,
    Cancelled,
    Error,
    /// The stall breaker stopped it: nobody answered its question, or the person said stop.
    Stalled,
    /// The process running it ended (a crash, a kill) before the task did; its session was
    /// repaired and can be continued.
    Interrupted,
    /// A scheduled run's action outside its scope waited for a person past its deadline.
    NeedsApproval,
}

impl TaskState {
    pub const ALL: [Self; 11] = [
        Self::Queued,
        Self::Running,
        Self::WaitingForApproval,
        Self::Done,
        Self::MaxTurns,
        Self::Budget,
        Self::Cancelled,
        Self::Error,
        Self::Stalled,
        Self::Interrupted,
        Self::NeedsApproval,
    ];

    pub fn is_final(self) -> bool {
        !matches!(
            self,
            Self::Queued | Self::Running | Self::WaitingForApproval
        )
    }

    /// The name stored and sent (`waiting_for_approval`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::WaitingForApproval => "waiting_for_approval",
            Self::Done => "done",
            Self::MaxTurns => "max_turns",
            Self::Budget => "budget",
            Self::Cancelled => "cancelled",
            Self::Error => "error",
            Self::Stalled => "stalled",
            Self::Interrupted => "interrupted",
            Self::NeedsApproval => "needs_approval",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl From<RunStatus> for TaskState {
    fn from(status: RunStatus) -> Self {
        match status {
            RunStatus::Done => Self::Done,
            RunStatus::MaxTurns => Self::MaxTurns,
            RunStatus::Budget => Self::Budget,
            RunStatus::Cancelled => Self::Cancelled,
            RunStatus::Error => Self::Error,
            RunStatus::Stalled => Self::Stalled,
            RunStatus::NeedsApproval => Self::NeedsApproval,
        }
    }
}

/// Which front end submitted a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "TaskOrigin")]
#[schemars(rename = "TaskOrigin")]
pub enum Origin {
    Cli,
    Api,
    Window,
    /// A task another task's `delegate` call started on this machine.
    Delegate,
    /// A run of a schedule, started by `deskhand serve` at its time.
    Schedule,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Self::Cli => "cli",
            Self::Api => "api",
            Self::Window => "window",
            Self::Delegate => "delegate",
            Self::Schedule => "schedule",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::Cli,
            Self::Api,
            Self::Window,
            Self::Delegate,
            Self::Schedule,
        ]
        .into_iter()
        .find(|o| o.name() == name)
    }
}

/// A task as listed and shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
#[schemars(rename = "Task")]
pub struct TaskInfo {
    pub id: TaskId,
    pub session_id: SessionId,
    pub state: TaskState,
    pub origin: Origin,
    /// The first line of the prompt.
    pub prompt: String,
    /// The process running it.
    pub pid: u32,
    /// The action waiting for an answer, while `state` is `waiting_for_approval`.
    pub waiting_for: Option<ApprovalRequest>,
    /// Why it failed, for `error` (and for `interrupted`).
    pub error: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub updated_at: String,
}
