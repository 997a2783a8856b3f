//! `AgentEvent`: the one stream of what happens in a run. The CLI prints it, the window
//! renders it and the store persists it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::approval::{ApprovalRequest, DecidedBy, Decision};
use super::stall::{StallAnswer, StallPattern, StallStep};
use super::verify::Verification;
use crate::images::ImageRef;
use crate::llm::{Message, Usage};
use crate::memory::NoteRef;
use crate::tools::plan::{PlanChange, PlanStep};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Done,
    MaxTurns,
    Cancelled,
    Error,
    /// A `--max-cost` or `--max-tokens` budget was reached.
    Budget,
    /// The agent was stuck and nobody could answer, or the person said stop.
    Stalled,
}

impl RunStatus {
    /// The CLI's exit status for this outcome (a stable contract for scripts).
    pub fn exit_code(self) -> i32 {
        match self {
            Self::Done => 0,
            Self::MaxTurns => 3,
            Self::Cancelled => 130,
            Self::Error => 1,
            Self::Budget => 4,
            Self::Stalled => 5,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    Started {
        session_id: String,
        provider: String,
        model: String,
        /// The notes put into this run's system prompt (none with `--no-memory`).
        #[serde(default)]
        notes: Vec<NoteRef>,
        /// Tool types the provider no longer offers this model because its endpoint refused
        /// them (the computer toolset stepped down to `computer_20251124`, say).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_fallbacks: Vec<String>,
    },
    /// A piece of the assistant's text as it streams in.
    TextDelta {
        text: String,
    },
    /// A piece of the model's thinking as it streams in: progress to show as a quiet line,
    /// never as answer text. The whole block is in the assistant's `message`.
    ThinkingDelta {
        text: String,
    },
    /// A complete message appended to the history (the user's, the assistant's, or tool
    /// results). Carries images in full, so the CLI does not print it.
    Message {
        message: Message,
    },
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    ApprovalNeeded {
        request: ApprovalRequest,
    },
    ApprovalDecided {
        id: String,
        #[serde(flatten)]
        decision: Decision,
        by: DecidedBy,
    },
    ToolResult {
        id: String,
        name: String,
        is_error: bool,
        /// The result's text parts joined.
        text: String,
        images: Vec<ImageRef>,
        duration_ms: u64,
        /// For a computer action: whether the screen changed (false: the action did
        /// nothing visible). Absent for other tools.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changed: Option<bool>,
    },
    /// A request failed and will be sent again after `delay_ms`.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        error: String,
    },
    /// Tokens of one request and of the run so far; costs in US dollars where the model's
    /// price is known.
    Usage {
        turn: Usage,
        total: Usage,
        turn_cost_usd: Option<f64>,
        total_cost_usd: Option<f64>,
    },
    /// Older turns were replaced by a model-written summary in what is sent (the stored
    /// history keeps them): `history[..upto]` is summarized.
    ContextSummarized {
        upto: usize,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The model wrote or changed its plan (the `plan` tool): the whole plan as it now
    /// is, and what changed; `replanned` when a plan was replaced by a new one.
    PlanUpdated {
        steps: Vec<PlanStep>,
        changes: Vec<PlanChange>,
        replanned: bool,
    },
    /// The forecast cost (or tokens) of the run at its turn limit passes the budget; sent
    /// once per run, before the budget is spent.
    CostForecast {
        turns: u32,
        max_turns: u32,
        forecast_cost_usd: Option<f64>,
        max_cost_usd: Option<f64>,
        forecast_tokens: u64,
        max_tokens: Option<u64>,
    },
    /// The stall breaker saw a loop (`steps`: the tool calls that show it) and took `step`.
    StallDetected {
        pattern: StallPattern,
        steps: Vec<String>,
        step: StallStep,
        message: String,
    },
    /// What the person answered when a stall paused the run.
    StallAnswered {
        #[serde(flatten)]
        answer: StallAnswer,
    },
    /// An event of a task this run delegated (the `delegate` tool): `task` is the child
    /// task's id, `event` its event as the child stored it (images as refs).
    ChildEvent {
        task: String,
        event: Value,
    },
    /// Whether the run's result was checked: the last event of every run that ends.
    Verification(Verification),
    Error {
        message: String,
    },
    Done {
        status: RunStatus,
        turns: u32,
        session_id: String,
        usage: Usage,
        cost_usd: Option<f64>,
    },
}
