//! `AgentEvent`: the one stream of what happens in a run. The CLI prints it, the window
//! renders it and the store persists it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::{ApprovalRequest, DecidedBy, Decision};
use crate::budget::PriceSource;
use crate::check::Verification;
use crate::error_kind::ErrorKind;
use crate::ids::{SessionId, TaskId, ToolUseId};
use crate::images::ImageRef;
use crate::message::{ImageSource, Message, Usage};
use crate::note::NoteRef;
use crate::plan::{PlanChange, PlanStep};
use crate::provenance::Source;
use crate::stall::{StallAnswer, StallPattern, StallStep};
pub use crate::status::{RunStatus, ToolStatus};

/// The result a tool call gets when the person stopped the run before or while it ran.
pub const CANCELLED: &str = "cancelled by the user";

#[derive(
    Clone,
    Debug,
    PartialEq,
    Serialize,
    Deserialize,
    ts_rs::TS,
    strum::IntoStaticStr,
    strum::VariantNames,
)]
#[serde(tag = "type", rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum AgentEvent {
    Started {
        session_id: SessionId,
        provider: String,
        model: String,
        /// The notes put into this run's system prompt (none with `--no-memory`). Absent in
        /// events stored before notes existed.
        #[serde(default)]
        #[ts(as = "Option<_>", optional)]
        notes: Vec<NoteRef>,
        /// Tool types the provider no longer offers this model because its endpoint refused
        /// them (the computer toolset stepped down to `computer_20251124`, say).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[ts(as = "Option<_>", optional)]
        tool_fallbacks: Vec<String>,
        /// Where the model's price comes from, when it has one: a cost from a `reseller`
        /// price is likely, not certain, and the front ends say so with it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        price_source: Option<PriceSource>,
        /// Said before the run starts: a model past its retirement date.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[ts(as = "Option<_>", optional)]
        warnings: Vec<String>,
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
        id: ToolUseId,
        name: String,
        #[ts(type = "unknown")]
        input: Value,
    },
    ApprovalNeeded {
        request: ApprovalRequest,
    },
    ApprovalDecided {
        id: ToolUseId,
        #[serde(flatten)]
        decision: Decision,
        by: DecidedBy,
        /// For `by: "api"`: which client answered (its connection's peer, or the token).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        client: Option<String>,
    },
    ToolResult {
        id: ToolUseId,
        name: String,
        is_error: bool,
        /// How the call ended. Absent in events stored before it existed, where `is_error`
        /// is all there is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        status: Option<ToolStatus>,
        /// The result's text parts joined.
        text: String,
        /// The result's images: as the tool made them until the recorder has kept their
        /// bytes in the store, then refs. On the wire always refs (`ImageRef`s), so a front
        /// end reads every one back by its hash.
        #[serde(with = "image_refs")]
        #[ts(as = "Vec<ImageRef>")]
        images: Vec<ImageSource>,
        duration_ms: u64,
        /// For a computer action: whether the screen changed (false: the action did
        /// nothing visible). Absent for other tools.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        changed: Option<bool>,
    },
    /// A request failed and will be sent again after `delay_ms`.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        /// What failed. Absent in events stored before kinds existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        kind: Option<ErrorKind>,
        error: String,
    },
    /// Tokens of one request and of the run so far; costs in US dollars where the model's
    /// price is known.
    Usage {
        turn: Usage,
        total: Usage,
        /// Absent in events stored before costs existed.
        #[ts(optional = nullable)]
        turn_cost_usd: Option<f64>,
        #[ts(optional = nullable)]
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
        steps: Vec<ToolUseId>,
        step: StallStep,
        message: String,
    },
    /// What the person answered when a stall paused the run.
    StallAnswered {
        #[serde(flatten)]
        answer: StallAnswer,
    },
    /// Text in a tool's result (`id`) addresses the agent: "ignore previous instructions",
    /// a role marker, a fake tool call, a download piped to a shell. The run's next actions
    /// that change anything ask, in auto mode too, until the person approves one.
    SuspectedInjection {
        id: ToolUseId,
        source: Source,
        /// Where it was read, e.g. "the output of `cat README.md` at step 2".
        origin: String,
        /// What it looks like: `ignore previous instructions`, `role marker`, `fake tool
        /// call`, `addressed to the agent`, `download piped to a shell`.
        pattern: String,
        /// The line it was found on.
        text: String,
    },
    /// An event of a task this run delegated (the `delegate` tool): `task` is the child
    /// task's id, `event` its event as the child stored it (images as refs).
    ChildEvent {
        task: TaskId,
        #[ts(type = "AgentEvent")]
        event: Box<AgentEvent>,
    },
    /// Whether the run's result was checked: the last event of every run that ends.
    Verification(Verification),
    Error {
        /// What failed. Absent in events stored before kinds existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        kind: Option<ErrorKind>,
        message: String,
    },
    Done {
        status: RunStatus,
        turns: u32,
        session_id: SessionId,
        usage: Usage,
        /// Absent in events stored before costs existed.
        #[ts(optional = nullable)]
        cost_usd: Option<f64>,
    },
}

impl AgentEvent {
    /// Every `type` on the wire, in the order of the variants.
    pub const KINDS: &'static [&'static str] = <Self as strum::VariantNames>::VARIANTS;

    /// Its `type` on the wire (`tool_call`, …), which names the API's SSE events: serde and
    /// strum both name the variants in snake_case.
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}

/// A tool result's images on the wire: each one's `ImageRef`, whatever it holds in memory.
mod image_refs {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::images::ImageRef;
    use crate::message::ImageSource;

    pub fn serialize<S: Serializer>(images: &[ImageSource], out: S) -> Result<S::Ok, S::Error> {
        out.collect_seq(images.iter().map(ImageRef::of))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Vec<ImageSource>, D::Error> {
        let refs = Vec::<ImageRef>::deserialize(from)?;
        Ok(refs.into_iter().map(ImageSource::Ref).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_decision_stored_as_the_users_still_loads_and_an_api_client_is_named() {
        let old = json!({"type": "approval_decided", "id": "t1", "decision": "approve",
                         "by": "user"});
        let read: AgentEvent = serde_json::from_value(old.clone()).unwrap();
        assert!(matches!(
            read,
            AgentEvent::ApprovalDecided {
                by: DecidedBy::User,
                client: None,
                ..
            }
        ));
        assert_eq!(serde_json::to_value(&read).unwrap(), old);
        let api = AgentEvent::ApprovalDecided {
            id: "t2".into(),
            decision: Decision::Deny { reason: None },
            by: DecidedBy::Api,
            client: Some("a client on the API's socket (pid 7, uid 1000)".into()),
        };
        assert_eq!(
            serde_json::to_value(&api).unwrap(),
            json!({"type": "approval_decided", "id": "t2", "decision": "deny", "reason": null,
                   "by": "api", "client": "a client on the API's socket (pid 7, uid 1000)"})
        );
    }

    #[test]
    fn events_stored_before_kinds_and_statuses_still_load() {
        let old = [
            json!({"type": "error", "message": "Anthropic: rate limited (HTTP 429)"}),
            json!({"type": "retrying", "attempt": 1, "delay_ms": 500, "error": "overloaded"}),
            json!({"type": "tool_result", "id": "t1", "name": "bash", "is_error": true,
                   "text": "cancelled by the user", "images": [], "duration_ms": 3}),
        ];
        let read: Vec<AgentEvent> = old
            .into_iter()
            .map(|event| serde_json::from_value(event).unwrap())
            .collect();
        assert!(matches!(read[0], AgentEvent::Error { kind: None, .. }));
        assert!(matches!(read[1], AgentEvent::Retrying { kind: None, .. }));
        assert!(matches!(
            read[2],
            AgentEvent::ToolResult { status: None, .. }
        ));
    }

    #[test]
    fn an_events_kind_and_a_statuss_name_are_their_wire_names() {
        let events = [
            AgentEvent::TextDelta { text: "a".into() },
            AgentEvent::ContextSummarized {
                upto: 2,
                tokens_before: 9,
                tokens_after: 3,
            },
            AgentEvent::StallAnswered {
                answer: StallAnswer::NoOne,
            },
            AgentEvent::ChildEvent {
                task: "t1".into(),
                event: Box::new(AgentEvent::Error {
                    kind: None,
                    message: "x".into(),
                }),
            },
            AgentEvent::Verification(Verification::default()),
        ];
        for event in events {
            assert_eq!(serde_json::to_value(&event).unwrap()["type"], event.kind());
        }
        let statuses = [
            RunStatus::Done,
            RunStatus::MaxTurns,
            RunStatus::Cancelled,
            RunStatus::Error,
            RunStatus::Budget,
            RunStatus::Stalled,
        ];
        for status in statuses {
            assert_eq!(serde_json::to_value(status).unwrap(), status.name());
        }
        use crate::check::VerifyOutcome;
        for outcome in [
            VerifyOutcome::Verified,
            VerifyOutcome::Unverified,
            VerifyOutcome::Failed,
        ] {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.name());
        }
    }

    #[test]
    fn kinds_and_statuses_have_snake_case_wire_names() {
        let error = AgentEvent::Error {
            kind: Some(ErrorKind::ContextTooLong),
            message: "too long".into(),
        };
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"type": "error", "kind": "context_too_long", "message": "too long"})
        );
        assert_eq!(
            serde_json::to_value(ToolStatus::Denied).unwrap(),
            json!("denied")
        );
    }
}
