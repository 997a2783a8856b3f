//! The agent: its loop, its events, the approval gate and history repair.

mod approval;
pub mod context;
mod forecast;
pub mod injection;
mod outcome;
pub mod provenance;
pub use deskhand_protocol::history;
mod redact;
pub mod resume;
mod run;
mod secret_places;
pub mod spotlight;
pub mod stall;
pub mod verify;
mod window;

#[cfg(any(test, feature = "test-support"))]
pub use approval::FixedApprover;
pub use approval::{
    Answer, Answerer, ApprovalGate, ApprovalPolicy, ApprovalRequest, Approver, DecidedBy, Decision,
    OtherCall, Precheck, SessionRules,
};
pub use deskhand_protocol::event::{AgentEvent, RunStatus, ToolStatus};
pub use outcome::{EventSink, RunOutcome};
pub use redact::REDACTED;
pub use run::{
    Agent, AgentConfig, Budget, CANCELLED, CHANGED_WHILE_ASKING, DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS, DEFAULT_SYSTEM,
};
pub use secret_places::SecretPlaces;
pub use window::RunWindow;
