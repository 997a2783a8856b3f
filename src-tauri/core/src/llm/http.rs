//! What every HTTP provider shares: the client's timeouts, the retry loop (which retries only
//! while nothing of the response was shown), reading the SSE body, and mapping a failed
//! response to the typed errors. A provider adds its URL, headers, body and stream decoder.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use super::{
    ErrorKind, ModelResponse, ProviderError, RetryPolicy, SseEvent, SseParser, StreamEvent,
};

/// Turns one provider's stream events into a response.
pub(crate) trait StreamDecoder: Default + Send {
    /// Applies one event; returns the finished response once the stream says it is complete.
    fn apply(
        &mut self,
        event: &SseEvent,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Option<ModelResponse>, ProviderError>;

    /// The body ended without the end marker: the response, if what arrived is complete
    /// anyway; `None` reports a cut stream.
    fn at_end_of_body(&mut self) -> Option<ModelResponse> {
        None
    }
}

/// One request, ready to send as often as retries need. Holds the key in a header, so it
/// has no `Debug`.
pub(crate) struct HttpRequest {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

/// A provider's HTTP side: its name (for error lines), a client and a retry policy.
pub(crate) struct HttpApi {
    provider: &'static str,
    client: reqwest::Client,
    retry: RetryPolicy,
    /// Response headers that name the request, in order of preference.
    request_id_headers: &'static [&'static str],
}

impl HttpApi {
    pub fn new(
        provider: &'static str,
        retry: RetryPolicy,
        request_id_headers: &'static [&'static str],
    ) -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(20))
            // Idle time between chunks; services ping or send comments while the model thinks.
            .read_timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| ProviderError::new(provider, ErrorKind::Network, e.to_string()))?;
        Ok(Self {
            provider,
            client,
            retry,
            request_id_headers,
        })
    }

    pub fn provider(&self) -> &'static str {
        self.provider
    }

    /// Sends `request` and decodes its stream, retrying what is retryable as long as nothing
    /// has been streamed to the caller: once text has reached the user, a retry would show
    /// it twice.
    pub async fn stream<D: StreamDecoder>(
        &self,
        request: &HttpRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        let mut attempt = 0;
        loop {
            let mut streamed = false;
            let result = self
                .attempt::<D>(request, &mut |event| {
                    streamed = true;
                    on_event(event)
                })
                .await;
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            let delay = match self.retry.delay_before_retry(attempt, &error) {
                Some(delay) if !streamed => delay,
                _ => return Err(error),
            };
            attempt += 1;
            on_event(StreamEvent::Retrying {
                attempt,
                delay_ms: delay.as_millis() as u64,
                error: error.to_string(),
            });
            tokio::time::sleep(delay).await;
        }
    }

    async fn attempt<D: StreamDecoder>(
        &self,
        request: &HttpRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        let mut builder = self
            .client
            .post(&request.url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(request.body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let response = builder.send().await.map_err(|e| self.network_error(e))?;
        let request_id = self
            .request_id_headers
            .iter()
            .find_map(|name| response.headers().get(*name)?.to_str().ok())
            .map(str::to_string);
        if !response.status().is_success() {
            return Err(self.http_error(response, request_id).await);
        }
        let stamp = |mut error: ProviderError| {
            error.provider = self.provider;
            error.request_id = request_id.clone();
            error
        };
        let mut decoder = D::default();
        let mut parser = SseParser::default();
        let mut bytes = response.bytes_stream();
        while let Some(chunk) = bytes.next().await {
            let chunk = chunk
                .map_err(|e| stamp(stream_cut(format!("connection failed mid-response: {e}"))))?;
            for event in parser.push(&chunk) {
                if let Some(done) = decoder.apply(&event, on_event).map_err(stamp)? {
                    return Ok(done);
                }
            }
        }
        decoder.at_end_of_body().ok_or_else(|| {
            stamp(stream_cut(
                "the stream ended before the response was complete".into(),
            ))
        })
    }

    async fn http_error(
        &self,
        response: reqwest::Response,
        request_id: Option<String>,
    ) -> ProviderError {
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        let body = ErrorBody::parse(&text);
        ProviderError {
            provider: self.provider,
            kind: kind_for_status(status, &body),
            status: Some(status),
            request_id,
            message: body.message,
            retry_after,
        }
    }

    fn network_error(&self, error: reqwest::Error) -> ProviderError {
        // Walk the source chain: reqwest's own text ("error sending request") hides the cause.
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message = format!("{message}: {cause}");
            source = cause.source();
        }
        ProviderError::new(self.provider, ErrorKind::Network, message)
    }
}

/// The server's wait: `retry-after-ms` (OpenAI, Azure) or `retry-after` in seconds.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

/// The parts of an error body the services agree on: `{"error": {"message", "type", "code"}}`
/// (Anthropic, OpenAI, Azure, OpenRouter and the local servers all nest it this way).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ErrorBody {
    pub message: String,
    pub error_type: String,
    pub code: String,
}

impl ErrorBody {
    pub fn parse(text: &str) -> Self {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => Self::from_value(&value),
            Err(_) => Self {
                message: text.chars().take(300).collect(),
                ..Self::default()
            },
        }
    }

    pub fn from_value(value: &Value) -> Self {
        let error = value.get("error").unwrap_or(value);
        let field = |name: &str| match error.get(name) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        let mut body = Self {
            message: field("message"),
            error_type: field("type"),
            code: field("code"),
        };
        if body.message.is_empty() {
            body.message = match error {
                Value::String(s) => s.clone(),
                other => other.to_string().chars().take(300).collect(),
            };
        }
        body
    }

    /// Whether the service says the prompt does not fit the model's window, in any of the
    /// wordings in use.
    pub fn is_context_overflow(&self) -> bool {
        let message = self.message.to_ascii_lowercase();
        self.code == "context_length_exceeded"
            || [
                "prompt is too long",
                "maximum context length",
                "context length exceeded",
                "exceeds the context window",
            ]
            .iter()
            .any(|needle| message.contains(needle))
    }
}

/// The typed error for an HTTP status, the same for every service.
pub(crate) fn kind_for_status(status: u16, body: &ErrorBody) -> ErrorKind {
    match status {
        401 => ErrorKind::Auth,
        402 => ErrorKind::Billing,
        403 => ErrorKind::Permission,
        404 => ErrorKind::NotFound,
        400 | 413 if body.is_context_overflow() => ErrorKind::ContextTooLong,
        // OpenAI answers an empty account with 429; waiting will not fill it.
        429 if body.code == "insufficient_quota" || body.error_type == "insufficient_quota" => {
            ErrorKind::Billing
        }
        429 => ErrorKind::RateLimited,
        503 | 529 => ErrorKind::Overloaded,
        408 | 409 | 500..=599 => ErrorKind::Server,
        _ => ErrorKind::InvalidRequest,
    }
}

/// A failure the decoder reports; [`HttpApi`] stamps its name and the request id on it.
pub(crate) fn decode_error(kind: ErrorKind, message: impl Into<String>) -> ProviderError {
    ProviderError::new("", kind, message)
}

fn stream_cut(message: String) -> ProviderError {
    decode_error(ErrorKind::StreamCut, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_of_every_service_give_one_kind() {
        let cases = [
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                ErrorKind::ContextTooLong,
            ),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
                ErrorKind::ContextTooLong,
            ),
            (
                429,
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
                ErrorKind::Billing,
            ),
            (
                429,
                r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded call rate limit."}}"#,
                ErrorKind::RateLimited,
            ),
            (
                503,
                r#"{"error":{"message":"The engine is currently overloaded","type":"server_error"}}"#,
                ErrorKind::Overloaded,
            ),
            (400, "not json at all", ErrorKind::InvalidRequest),
        ];
        for (status, text, kind) in cases {
            assert_eq!(
                kind_for_status(status, &ErrorBody::parse(text)),
                kind,
                "{text}"
            );
        }
        assert_eq!(
            ErrorBody::parse(r#"{"error":{"code":429,"message":"slow down"}}"#),
            ErrorBody {
                message: "slow down".into(),
                error_type: String::new(),
                code: "429".into()
            }
        );
    }
}
