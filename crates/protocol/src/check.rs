//! Proof of done, as saved with a session and reported at the end of a run. Running a check
//! is the engine's.

use serde::{Deserialize, Serialize};

use crate::status::RunStatus;

/// A check as saved with a session (the window's settings for that session).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SavedCheck {
    pub command: String,
    pub timeout_secs: f64,
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum VerifyOutcome {
    /// A check passed.
    Verified,
    /// No check exists, or it could not run (`error` says why).
    Unverified,
    /// A check failed.
    Failed,
}

/// The result of checking one run, stored with it as its `verification` event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Verification {
    pub outcome: VerifyOutcome,
    /// The check command, if there was one.
    pub check: Option<String>,
    pub exit_code: Option<i32>,
    /// The check's output (stdout, then stderr), its start and end if long.
    pub output: String,
    /// Why the check could not run (it timed out, could not start, was stopped).
    pub error: Option<String>,
    /// Whether a failure was sent back to the model for a second try.
    pub retried: bool,
}

impl VerifyOutcome {
    /// Its name on the wire (`verified`, …): serde and strum both name it in snake_case.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

impl Default for Verification {
    /// No check: `unverified`.
    fn default() -> Self {
        Self::without_check()
    }
}

impl Verification {
    /// No check: `unverified`, with nothing run.
    pub fn without_check() -> Self {
        Self {
            outcome: VerifyOutcome::Unverified,
            check: None,
            exit_code: None,
            output: String::new(),
            error: None,
            retried: false,
        }
    }

    /// The CLI's exit status for a run that ended `status` with this verification. A run
    /// the model ended keeps 0 without a check (scripts rely on it) unless `require_verified`.
    pub fn exit_code(&self, status: RunStatus, require_verified: bool) -> i32 {
        if !matches!(status, RunStatus::Done) {
            return status.exit_code();
        }
        match (self.outcome, &self.error) {
            (VerifyOutcome::Verified, _) => 0,
            (VerifyOutcome::Failed, _) => CHECK_FAILED_EXIT,
            (VerifyOutcome::Unverified, Some(_)) => CHECK_NOT_RUN_EXIT,
            (VerifyOutcome::Unverified, None) if require_verified => UNVERIFIED_EXIT,
            (VerifyOutcome::Unverified, None) => 0,
        }
    }
}

/// Exit status: the check failed.
pub const CHECK_FAILED_EXIT: i32 = 6;

/// Exit status: the check could not run (it timed out, or could not start).
pub const CHECK_NOT_RUN_EXIT: i32 = 7;

/// Exit status: no check, and `--require-verified` was given.
pub const UNVERIFIED_EXIT: i32 = 8;
