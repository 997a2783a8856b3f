//! The approval gate's words: the policy, what the person is asked, what they answer and
//! who answered. The gate itself is the engine's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::action::ActionPlan;
use crate::ids::ToolUseId;
use crate::provenance::Derivation;

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// Ask the person before every action that changes anything.
    #[default]
    Ask,
    /// Allow everything.
    Auto,
    /// Allow read-only actions only; refuse the rest without asking. Named `deny` on the
    /// wire (`--approve deny`, settings, IPC), as it always was.
    #[serde(rename = "deny")]
    ReadOnly,
}

impl std::str::FromStr for ApprovalPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ask" => Ok(Self::Ask),
            "auto" => Ok(Self::Auto),
            "deny" | "read-only" => Ok(Self::ReadOnly),
            _ => Err(format!(
                "unknown approval policy `{s}` (expected ask, auto or deny)"
            )),
        }
    }
}

/// What the person is asked to approve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct ApprovalRequest {
    pub tool_use_id: ToolUseId,
    pub tool: String,
    #[ts(type = "unknown")]
    pub input: Value,
    #[serde(flatten)]
    pub plan: ActionPlan,
    /// For an action of a batched call (OpenAI's GA computer tool): the summary of every
    /// action of the batch, in order. The answer holds for all of them, so the person sees
    /// them all. Absent for a call on its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<_>", optional)]
    pub batch: Vec<String>,
    /// Set when a decisive argument of the action first appeared in untrusted content of the
    /// run (a file, the screen, a plugin's result): where, and that text. Such an action is
    /// asked about in every mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub derived_from: Option<Derivation>,
    /// Only a person may answer this one; no policy, rule or scope does: it carries a safety
    /// check, reaches a secret place, changes a note, came from untrusted content, or follows
    /// a suspected injection. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<_>", optional)]
    pub needs_person: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Approve,
    /// Approve, and every later action of the same kind in this session.
    ApproveKind,
    Deny {
        reason: Option<String>,
    },
}

/// A decision and the call it was made for: the gate takes it only for the call it asked
/// about, so an answer meant for one card can never approve another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The `tool_use_id` of the request the person was shown.
    pub tool_use_id: ToolUseId,
    pub decision: Decision,
    pub answerer: Answerer,
}

impl ApprovalRequest {
    /// `decision`, made for this request by the embedder's own approver.
    pub fn answer(&self, decision: Decision) -> Answer {
        Answer {
            tool_use_id: self.tool_use_id.clone(),
            decision,
            answerer: Answerer::new(DecidedBy::User),
        }
    }
}

/// Who answered a question the gate asked: which front end, and for the local API which
/// client, so that the history never says the person answered when a program did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answerer {
    pub by: DecidedBy,
    /// For [`DecidedBy::Api`]: the client (its connection's peer, or the token it held).
    pub client: Option<String>,
}

impl Answerer {
    pub fn new(by: DecidedBy) -> Self {
        Self { by, client: None }
    }

    /// An HTTP client of the local API, as `client` describes it.
    pub fn api(client: String) -> Self {
        Self {
            by: DecidedBy::Api,
            client: Some(client),
        }
    }
}

/// Why the gate did not take an answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "a decision for action `{named}` was refused: the action waiting for approval is \
     `{pending}`"
)]
pub struct OtherCall {
    pub pending: ToolUseId,
    pub named: ToolUseId,
}

/// Who made a decision, for the action log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    Policy,
    SessionRule,
    /// A person, front end not recorded: every decision stored before the front ends were
    /// told apart, and an embedder's own [`Approver`].
    User,
    /// The person, in the window.
    Window,
    /// The person, at the terminal of `deskhand ask`.
    Terminal,
    /// A client of the local API (`deskhand serve`): a program, not necessarily the person.
    Api,
}
