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

/// The most bytes of one streamed response. A model's reply is bounded by its output tokens
/// (a few MB at most); a server that sends more is broken or hostile, and would otherwise
/// fill memory as fast as it can send.
const MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// The most of an error body that is read: error objects are small.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

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
            .read_timeout(retry.idle_timeout)
            // A redirect would carry the key's header to wherever it points (reqwest drops
            // `Authorization` across origins, but not `x-api-key` or `api-key`). The
            // official SDKs do not follow them either: a redirect is an error that names it.
            .redirect(reqwest::redirect::Policy::none())
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
                kind: error.kind,
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
        if response.status().is_redirection() {
            return Err(self.redirect_error(&response, request_id));
        }
        if !response.status().is_success() {
            return Err(self.http_error(response, request_id).await);
        }
        if let Some(problem) = not_an_event_stream(response.headers()) {
            let mut error = decode_error(ErrorKind::Protocol, problem);
            error.status = Some(response.status().as_u16());
            error
                .message
                .push_str(&format!(": {}", read_at_most(response, 300).await));
            error.provider = self.provider;
            error.request_id = request_id;
            return Err(error);
        }
        let stamp = |mut error: ProviderError| {
            error.provider = self.provider;
            error.request_id = request_id.clone();
            error
        };
        let mut decoder = D::default();
        let mut parser = SseParser::default();
        let mut received = 0;
        let mut bytes = response.bytes_stream();
        while let Some(chunk) = bytes.next().await {
            let chunk = chunk
                .map_err(|e| stamp(stream_cut(format!("connection failed mid-response: {e}"))))?;
            received += chunk.len();
            if received > MAX_RESPONSE_BYTES {
                return Err(stamp(stream_cut(format!(
                    "broken stream: the response is larger than {MAX_RESPONSE_BYTES} bytes"
                ))));
            }
            let events = parser
                .push(&chunk)
                .map_err(|e| stamp(stream_cut(e.to_string())))?;
            for event in events {
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
        let text = read_at_most(response, MAX_ERROR_BODY_BYTES).await;
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

    /// A 3xx answer: not followed (see [`HttpApi::new`]), reported with where it points so
    /// that a moved base URL can be corrected.
    fn redirect_error(
        &self,
        response: &reqwest::Response,
        request_id: Option<String>,
    ) -> ProviderError {
        let status = response.status().as_u16();
        let location = header_text(response.headers(), reqwest::header::LOCATION, 300)
            .unwrap_or_else(|| "nowhere (no Location header)".to_string());
        ProviderError {
            provider: self.provider,
            kind: ErrorKind::Redirected,
            status: Some(status),
            request_id,
            message: format!(
                "the server redirects to {location}; redirects are not followed, since they \
                 would take the API key along: check the base URL"
            ),
            retry_after: None,
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

/// Why a successful answer is not a stream this client can read: another content type (an
/// HTML page from a proxy or a login portal, a JSON body), or a compression that was not asked
/// for (none is: a compressed body would need an unbounded decompression to read).
fn not_an_event_stream(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let header = |name| header_text(headers, name, 100);
    if let Some(encoding) = header(reqwest::header::CONTENT_ENCODING)
        .filter(|encoding| !encoding.trim().eq_ignore_ascii_case("identity"))
    {
        return Some(format!(
            "the response is compressed ({encoding}), which this client does not accept"
        ));
    }
    match header(reqwest::header::CONTENT_TYPE) {
        Some(kind)
            if !kind
                .trim()
                .to_ascii_lowercase()
                .starts_with("text/event-stream") =>
        {
            Some(format!("the answer is {kind}, not an event stream"))
        }
        _ => None,
    }
}

/// A header's value as text, cut at `limit` characters: a server's words, for an error line.
fn header_text(
    headers: &reqwest::header::HeaderMap,
    name: reqwest::header::HeaderName,
    limit: usize,
) -> Option<String> {
    let value = headers.get(name)?;
    Some(
        String::from_utf8_lossy(value.as_bytes())
            .chars()
            .take(limit)
            .collect(),
    )
}

/// The first `limit` bytes of a body, as text: enough of an error body or of what came
/// instead of a stream to show, however much the server sends.
async fn read_at_most(response: reqwest::Response, limit: usize) -> String {
    let mut bytes = response.bytes_stream();
    let mut start = Vec::new();
    while start.len() < limit {
        match bytes.next().await {
            Some(Ok(chunk)) => start.extend_from_slice(&chunk),
            _ => break,
        }
    }
    start.truncate(limit);
    String::from_utf8_lossy(&start).into_owned()
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

/// An error the service reports after HTTP 200. One that would be the request's fault at
/// the start is a cut stream here, retried while nothing was shown.
pub(crate) fn stream_failure(kind: ErrorKind, message: impl Into<String>) -> ProviderError {
    let kind = match kind {
        ErrorKind::InvalidRequest | ErrorKind::Protocol => ErrorKind::StreamCut,
        kind => kind,
    };
    decode_error(kind, message)
}

/// Reads one event's data (`what` names it in the error) as its wire type. Data that does not
/// fit is read again as plain JSON, only to say which is wrong: the text (not JSON, or nested
/// past serde_json's limit) or its shape.
pub(crate) fn parse_event<T: serde::de::DeserializeOwned>(
    what: &str,
    data: &str,
) -> Result<T, ProviderError> {
    serde_json::from_str(data).map_err(|typed| {
        let message = match serde_json::from_str::<Value>(data) {
            Err(e) => format!("{what} is not JSON: {e}"),
            Ok(_) => format!("{what} is not as the API describes it: {typed}"),
        };
        decode_error(ErrorKind::Protocol, message)
    })
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
