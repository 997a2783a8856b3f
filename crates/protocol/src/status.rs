//! How a run and a tool call ended: what front ends and the CLI's exit status go by.

use serde::{Deserialize, Serialize};

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RunStatus {
    Done,
    MaxTurns,
    Cancelled,
    Error,
    /// A `--max-cost` or `--max-tokens` budget was reached.
    Budget,
    /// The agent was stuck and nobody could answer, or the person said stop.
    Stalled,
    /// An action outside a scheduled run's scope waited for a person past its deadline.
    NeedsApproval,
}

impl RunStatus {
    /// Its name on the wire (`max_turns`, …): serde and strum both name it in snake_case.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The CLI's exit status for this outcome (a stable contract for scripts).
    pub fn exit_code(self) -> i32 {
        match self {
            Self::Done => 0,
            Self::MaxTurns => 3,
            Self::Cancelled => 130,
            Self::Error => 1,
            Self::Budget => 4,
            Self::Stalled => 5,
            Self::NeedsApproval => 9,
        }
    }
}

/// How a tool call ended, so that front ends tell a stop or a denial from a failure without
/// reading the result's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
    /// The person stopped the run before or while it ran.
    Cancelled,
    /// The person or the approval policy said no.
    Denied,
}
