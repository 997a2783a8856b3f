//! One error type for every provider, so that retries and the messages a user reads behave
//! alike whichever service is behind them.

use std::fmt;
use std::time::Duration;

pub use deskhand_protocol::error_kind::ErrorKind;

/// A provider failure, displayed as one line: what failed, the HTTP status and the request id.
#[derive(Clone, Debug, thiserror::Error)]
pub struct ProviderError {
    pub provider: &'static str,
    pub kind: ErrorKind,
    pub status: Option<u16>,
    pub request_id: Option<String>,
    pub message: String,
    /// The server's `retry-after`, when it sent one.
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    pub fn new(provider: &'static str, kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            provider,
            kind,
            status: None,
            request_id: None,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Whether the same request may succeed if sent again. (A cut stream is only retried
    /// while nothing of it has reached the user; the provider checks that.)
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::RateLimited
                | ErrorKind::Overloaded
                | ErrorKind::Server
                | ErrorKind::Network
                | ErrorKind::StreamCut
        )
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.provider, self.kind.describe())?;
        let mut meta = Vec::new();
        if let Some(status) = self.status {
            meta.push(format!("HTTP {status}"));
        }
        if let Some(id) = &self.request_id {
            meta.push(format!("request-id {id}"));
        }
        if !meta.is_empty() {
            write!(f, " ({})", meta.join(", "))?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}
