//! What the stall breaker reports and asks when the agent loops on the screen. The breaker
//! itself is the engine's.

use serde::{Deserialize, Serialize};

use crate::ids::ToolUseId;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum StallPattern {
    /// The same action on a near-identical screen.
    SameAction,
    /// The screen goes round between two or three states.
    Cycle,
    /// Actions that changed nothing on the screen.
    NoChange,
}

/// Which rung of the ladder a detection reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum StallStep {
    /// A note went to the model with the tool result.
    Note,
    /// The run pauses and asks the person.
    Ask,
    /// Nobody answered, or the person said stop: the run ends `stalled`.
    Stalled,
}

/// What the person is asked when the agent is stuck.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallQuestion {
    /// The tool call whose result waits for the answer.
    pub tool_use_id: ToolUseId,
    pub pattern: StallPattern,
    /// What repeated, in words.
    pub message: String,
}

/// The person's answer to a [`StallQuestion`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum StallAnswer {
    /// Go on as before.
    Continue,
    /// Go on, with this hint for the model.
    Hint { text: String },
    /// End the run.
    Stop,
    /// Nobody can answer here (no terminal, no window, no watcher).
    NoOne,
}
