//! What a run gives back: its events as they happen, and its outcome at the end.

use deskhand_protocol::check::Verification;
use deskhand_protocol::event::AgentEvent;
use deskhand_protocol::message::Usage;
use deskhand_protocol::status::RunStatus;

/// Where events go: the CLI's printer, the window's channel, the store.
pub type EventSink<'a> = dyn FnMut(AgentEvent) + Send + 'a;

/// How a run ended, what it cost and what its check said.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub turns: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub verification: Verification,
}
