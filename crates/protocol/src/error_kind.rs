//! What kind of failure a provider call was, as events carry it.

use serde::{Deserialize, Serialize};

/// What kind of failure it was. It travels in `error` and `retrying` events, so that front
/// ends decide what to advise by the kind and never by the wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// 401: the key is missing, wrong or revoked.
    Auth,
    /// 402: the account has no credit.
    Billing,
    /// 403: the key may not use this model or feature.
    Permission,
    /// 404: usually a wrong model name or base URL.
    NotFound,
    /// 400 and 413 other than the context window.
    InvalidRequest,
    /// The prompt does not fit the model's context window.
    ContextTooLong,
    /// 429.
    RateLimited,
    /// 529, or an `overloaded_error` event.
    Overloaded,
    /// 5xx other than 529, 408 and 409.
    Server,
    /// Could not connect, or the connection failed before a response.
    Network,
    /// The stream ended before `message_stop`, or an `error` event arrived mid-stream.
    StreamCut,
    /// The provider sent something that is not the documented wire format.
    Protocol,
    /// A 3xx answer, which is not followed: it would take the key to another address.
    Redirected,
}

impl ErrorKind {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Auth => "authentication failed (check the API key)",
            Self::Billing => "billing problem on the account",
            Self::Permission => "permission denied",
            Self::NotFound => "not found (check the model name and base URL)",
            Self::InvalidRequest => "invalid request",
            Self::ContextTooLong => "the conversation is too long for the model's context window",
            Self::RateLimited => "rate limited",
            Self::Overloaded => "the service is overloaded",
            Self::Server => "server error",
            Self::Network => "network error",
            Self::StreamCut => "the response stream broke off",
            Self::Protocol => "unexpected response",
            Self::Redirected => "redirected",
        }
    }
}
