//! The agent's plan: its steps and how one version differs from the last.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
    Skipped,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct PlanStep {
    pub id: String,
    pub title: String,
    pub status: StepStatus,
    #[serde(default)]
    pub note: String,
}

/// One difference between the plan before and after a change, for the window and the CLI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PlanChange {
    Added {
        id: String,
        title: String,
    },
    Removed {
        id: String,
        title: String,
    },
    Retitled {
        id: String,
        from: String,
        to: String,
    },
    Status {
        id: String,
        from: StepStatus,
        to: StepStatus,
    },
    Note {
        id: String,
        note: String,
    },
}
