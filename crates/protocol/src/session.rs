//! A stored session as lists, searches and the window see it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::SessionId;
use crate::message::Usage;

/// A session as lists show it (the window's `SessionSummary`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
#[schemars(rename = "Session")]
pub struct SessionSummary {
    pub id: SessionId,
    pub title: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub updated_at: String,
    pub provider: String,
    pub model: String,
    pub message_count: u64,
    /// Tokens over all of the session's runs.
    pub usage: Usage,
    /// US dollars over all runs, where the model's price was known.
    pub cost_usd: Option<f64>,
}

/// A search result: the session and plain text around its best match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SessionHit {
    #[serde(flatten)]
    pub session: SessionSummary,
    pub snippet: String,
}

/// Everything the window needs to show a stored session: messages and events (images as
/// refs), events in order over all runs so they can be replayed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct LoadedSession {
    pub session: SessionSummary,
    #[ts(type = "Array<Message>")]
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    pub messages: Vec<Value>,
    #[ts(type = "Array<AgentEvent>")]
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    pub events: Vec<Value>,
}
