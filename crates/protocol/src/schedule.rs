//! Schedules: a prompt that `deskhand serve` runs as a task at the times its trigger names,
//! with what it may do while nobody watches. Working out when is the engine's
//! (`tasks::schedules`); this is what is stored, sent and shown.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{ScheduleId, SessionId, TaskId};

/// When a schedule runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Trigger {
    /// A five-field cron expression (minute hour day-of-month month day-of-week, Sunday
    /// 0), read in the IANA time zone `tz`, so 09:00 stays 09:00 across DST.
    Cron { expr: String, tz: String },
    /// Every so many seconds, counted from when the schedule was made.
    Every { seconds: u64 },
    /// Once, at this time (RFC 3339).
    At { at: String },
}

/// What happens to the runs missed while the daemon was not running (or the machine slept).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// One run for all the missed ones.
    #[default]
    Once,
    /// None: only a run due just now (within a minute) runs.
    Skip,
    /// Each missed run, up to this many (the newest).
    Each(u32),
}

/// What happens when a run is due while the schedule's previous run still runs.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// The new run is not started.
    #[default]
    Skip,
    /// The new run starts once the previous one ends.
    Queue,
    /// The previous run is cancelled and the new one starts.
    Cancel,
}

/// What a run nobody watches may do without asking: the tools it may use without asking.
/// Anything else waits for a person, until the schedule's approval deadline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
// Inline: read, `tools` may be left out; answered, it is always there.
#[schemars(inline)]
pub struct Scope {
    #[serde(default)]
    pub tools: Vec<String>,
}

/// What a person asks to schedule (`deskhand schedule add`, `POST /v1/schedules`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct ScheduleSpec {
    /// Unique among schedules; how the CLI names it.
    pub name: String,
    pub trigger: Trigger,
    pub prompt: String,
    /// A session every run continues; `None`: each run starts a new one.
    #[serde(default)]
    pub session: Option<SessionId>,
    /// Runs work on their own agent desktop, not the person's screen.
    #[serde(default)]
    pub agent_desktop: bool,
    /// A shell command that proves a run done (exit 0: verified).
    #[serde(default)]
    pub check: Option<String>,
    #[serde(default)]
    pub scope: Scope,
    /// Each run's cost limit in US dollars.
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    #[serde(default)]
    pub catch_up: CatchUp,
    #[serde(default)]
    pub overlap: Overlap,
    /// How long a run waits for a person to approve an action outside its scope before it
    /// ends `needs_approval`.
    #[serde(default = "default_approval_deadline")]
    pub approval_deadline_secs: u64,
    /// Failed runs in a row after which the schedule pauses itself (0: never).
    #[serde(default = "default_pause_after")]
    pub pause_after_failures: u32,
}

/// The longest approval deadline a schedule may set: a week.
pub const MAX_APPROVAL_DEADLINE_SECS: u64 = 7 * 24 * 3600;

fn default_approval_deadline() -> u64 {
    3600
}

fn default_pause_after() -> u32 {
    3
}

/// How a scheduled run ended, as its history and `schedule show` say.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    ts_rs::TS,
    JsonSchema,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ScheduleOutcome {
    /// Done, and its check passed.
    Verified,
    /// Done, with no check (or one that could not run).
    Unverified,
    /// Ended in error, a failed check, the budget, the turn limit or a cancel.
    Failed,
    Stalled,
    /// An action outside its scope waited past the deadline.
    NeedsApproval,
}

impl ScheduleOutcome {
    pub const ALL: [Self; 5] = [
        Self::Verified,
        Self::Unverified,
        Self::Failed,
        Self::Stalled,
        Self::NeedsApproval,
    ];

    pub fn name(self) -> &'static str {
        self.into()
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Whether it counts towards pausing the schedule.
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Failed | Self::Stalled)
    }
}

/// One run of a schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct ScheduleRun {
    pub task_id: TaskId,
    /// The time it was due (RFC 3339, UTC); a `run-now` run is due when asked.
    pub due_at: String,
    pub started_at: String,
    /// `None` while it runs.
    pub outcome: Option<ScheduleOutcome>,
    pub ended_at: Option<String>,
    /// The last screenshot the run took, by its hash (`GET /v1/images/{sha256}`): what the
    /// screen showed when, say, it ended `needs_approval`.
    pub screenshot: Option<String>,
}

/// A schedule as stored and shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct Schedule {
    pub id: ScheduleId,
    #[serde(flatten)]
    pub spec: ScheduleSpec,
    pub paused: bool,
    /// Why it paused itself, or that a person paused it.
    pub paused_reason: Option<String>,
    /// The last due time that was fired (or skipped by the catch-up policy): no due time at
    /// or before it runs again, whatever the clock does.
    pub last_due: Option<String>,
    /// The next due time, `None` when there is none (an `--at` that ran, a paused one).
    pub next_due: Option<String>,
    /// Failed runs since the last one that did not fail.
    pub failures_in_a_row: u32,
    pub created_at: String,
}

/// A schedule with its latest runs and their sums, for `schedule show`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct ScheduleReport {
    #[serde(flatten)]
    pub schedule: Schedule,
    /// The newest runs, newest first.
    pub runs: Vec<ScheduleRun>,
    /// Every run's outcome counted, by outcome's name.
    pub totals: std::collections::BTreeMap<String, u64>,
}
