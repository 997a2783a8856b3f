//! The HTTP side: routes, the shared record of requests, and turning a turn into a
//! response (JSON, SSE, or a deliberately broken stream).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::cache::PromptCache;
use crate::openai;
use crate::responses;
use crate::rules;
use crate::script::{Reply, Rule, Script, Turn};
use crate::sse::Message;
use crate::validate;

/// One `POST` of a model request as the stand-in received it.
#[derive(Clone, Debug, Serialize)]
pub struct Recorded {
    /// The path and query, e.g. `/v1/messages` or Azure's
    /// `/openai/deployments/D/chat/completions?api-version=V`.
    pub path: String,
    /// Header names in lowercase; repeated headers joined with ", ".
    pub headers: BTreeMap<String, String>,
    /// The body as JSON, or as a JSON string when it did not parse.
    pub body: serde_json::Value,
    /// The 400/401/413 message if validation rejected the request.
    pub rejected: Option<String>,
    /// The request id header of the response (`request-id` for Messages, `x-request-id` for
    /// Chat Completions).
    pub request_id: String,
}

/// State shared by the handlers and the [`crate::StandIn`] handle.
pub(crate) struct Shared {
    /// Turns and record under one lock, so the record's order is the order turns were
    /// consumed in.
    log: Mutex<Log>,
    prompt_cache: Mutex<PromptCache>,
    rules: Vec<Rule>,
    pub(crate) validate_images: bool,
    pub(crate) open_access: bool,
    refuse_tool_types: Vec<String>,
    /// The thinking blocks sent before each tool call, by call id (see `rules`).
    thinking_sent: Mutex<HashMap<String, Vec<Value>>>,
    next_request: AtomicU64,
    pub(crate) next_message: AtomicU64,
    pub(crate) next_tool: AtomicU64,
    hangups: AtomicUsize,
}

struct Log {
    turns: VecDeque<Turn>,
    requests: Vec<Recorded>,
}

impl Shared {
    pub fn new(script: Script) -> Shared {
        Shared {
            log: Mutex::new(Log {
                turns: script.turns.into(),
                requests: Vec::new(),
            }),
            prompt_cache: Mutex::default(),
            rules: script.rules,
            validate_images: script.validate_images,
            open_access: script.open_access,
            refuse_tool_types: script.refuse_tool_types,
            thinking_sent: Mutex::default(),
            next_request: AtomicU64::new(1),
            next_message: AtomicU64::new(1),
            next_tool: AtomicU64::new(1),
            hangups: AtomicUsize::new(0),
        }
    }

    fn prompt_cache(&self) -> MutexGuard<'_, PromptCache> {
        self.prompt_cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn thinking_sent(&self) -> MutexGuard<'_, HashMap<String, Vec<Value>>> {
        self.thinking_sent.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        // A panicking test thread must not hide the record from the others.
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.log().requests.clone()
    }

    pub fn remaining_turns(&self) -> usize {
        self.log().turns.len()
    }

    pub fn hangups(&self) -> usize {
        self.hangups.load(Ordering::SeqCst)
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/messages", post(messages))
        // OpenAI, local servers (base …/v1), OpenRouter (…/api/v1) and Azure (by deployment).
        .route("/v1/chat/completions", post(chat_completions))
        .route("/api/v1/chat/completions", post(chat_completions))
        .route("/v1/responses", post(responses))
        .route(
            "/openai/deployments/{deployment}/chat/completions",
            post(chat_completions),
        )
        .route("/_standin/requests", get(recorded))
        .fallback(not_found)
        // Screenshots make big requests; the size limit is checked (and recorded) by hand.
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

async fn recorded(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.requests()).into_response()
}

async fn not_found() -> Response {
    error_response(404, "not_found_error", "Not found", None)
}

/// Which wire format a request came in, and so its answer goes out in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    Messages,
    ChatCompletions,
    Responses,
}

impl Api {
    /// The scripted reply with its ids and usage decided, in this API's format.
    fn render(self, shared: &Shared, reply: &Reply, request: &Value) -> Box<dyn Rendered> {
        match self {
            Api::Messages => {
                let id = format!(
                    "msg_standin_{}",
                    shared.next_message.fetch_add(1, Ordering::SeqCst)
                );
                let model = request.get("model").and_then(Value::as_str).unwrap_or("");
                let prompt = shared.prompt_cache().bill(request);
                let omit_thinking = request.pointer("/thinking/display") == Some(&json!("omitted"));
                let message = Message::resolve(reply, id, model, prompt, omit_thinking, || {
                    format!(
                        "toolu_standin_{}",
                        shared.next_tool.fetch_add(1, Ordering::SeqCst)
                    )
                });
                shared
                    .thinking_sent()
                    .extend(message.thinking_before_tool_calls());
                Box::new(message)
            }
            Api::ChatCompletions => Box::new(openai::Completion::resolve(shared, reply, request)),
            Api::Responses => Box::new(responses::Response::resolve(shared, reply, request)),
        }
    }

    fn error_response(
        self,
        status: u16,
        error_type: &str,
        message: &str,
        retry_after: Option<u64>,
    ) -> Response {
        match self {
            Api::Messages => error_response(status, error_type, message, retry_after),
            Api::ChatCompletions | Api::Responses => {
                openai::error_response(status, error_type, message, retry_after)
            }
        }
    }
}

/// A reply rendered in one API's wire format, to go out streamed, whole, or broken off.
pub(crate) trait Rendered {
    /// Every SSE event of a successful stream, encoded, first to last.
    fn stream(&self) -> Vec<Bytes>;
    /// The complete response of a request that does not stream.
    fn whole(&self) -> Value;
    /// The first `after_events` events (at least the first, never the end of the response),
    /// then the API's error event.
    fn stream_with_error(&self, after_events: usize, error_type: &str, message: &str)
    -> Vec<Bytes>;
}

async fn messages(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&shared, Api::Messages, &uri, &headers, &body)
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&shared, Api::ChatCompletions, &uri, &headers, &body)
}

async fn responses(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&shared, Api::Responses, &uri, &headers, &body)
}

/// Validates and records a request, then answers it with the next turn in its API's format.
fn handle(
    shared: &Arc<Shared>,
    api: Api,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let request_id = format!(
        "req_standin_{}",
        shared.next_request.fetch_add(1, Ordering::SeqCst)
    );
    let (value, verdict) = match api {
        Api::Messages => {
            let (value, verdict) = validate::check(headers, body, shared.validate_images);
            let verdict = verdict.and_then(|()| {
                rules::check(&value, &shared.refuse_tool_types, &shared.thinking_sent())
            });
            (value, verdict)
        }
        Api::ChatCompletions => openai::check(uri, headers, body, shared),
        Api::Responses => responses::check(uri, headers, body, shared),
    };
    let turn = {
        let mut log = shared.log();
        log.requests.push(Recorded {
            path: uri.to_string(),
            headers: lowercase_headers(headers),
            body: value.clone(),
            rejected: verdict.as_ref().err().map(|r| r.message.clone()),
            request_id: request_id.clone(),
        });
        match verdict {
            Ok(()) => Script::rule_for(&shared.rules, &value).or_else(|| log.turns.pop_front()),
            Err(rejection) => {
                drop(log);
                let response = api.error_response(
                    rejection.status,
                    rejection.error_type,
                    &rejection.message,
                    None,
                );
                return with_request_id(response, api, &request_id);
            }
        }
    };
    let response = match turn {
        None => api.error_response(500, "api_error", "stand-in script exhausted", None),
        Some(turn) => answer(shared, api, turn, &value),
    };
    with_request_id(response, api, &request_id)
}

/// How a streamed body ends once its events are out.
pub(crate) enum Ending {
    /// Cleanly, as a finished response.
    Finish,
    /// Not at all: stay silent until the client goes away.
    Hang,
    /// With a transport error, so the connection is cut without a proper end.
    Cut,
}

/// The response to `turn`, in `api`'s format: the same faults for both APIs.
fn answer(shared: &Arc<Shared>, api: Api, turn: Turn, request: &Value) -> Response {
    let streaming = request.get("stream") == Some(&Value::Bool(true));
    let render = |reply: &Reply| api.render(shared, reply, request);
    match turn {
        Turn::Status {
            status,
            error_type,
            message,
            retry_after,
        } => api.error_response(status, &error_type, &message, retry_after),
        Turn::Reply(reply) => {
            let rendered = render(&reply);
            let delay = Duration::from_millis(reply.chunk_delay_ms);
            match (streaming, reply.hang_after_events) {
                (true, None) => sse(shared, rendered.stream(), delay, Ending::Finish),
                (true, Some(n)) => {
                    let events = rendered.stream().into_iter().take(n).collect();
                    sse(shared, events, delay, Ending::Hang)
                }
                (false, None) => axum::Json(rendered.whole()).into_response(),
                (false, Some(_)) => json_stream(shared, Ending::Hang),
            }
        }
        Turn::DropMidStream {
            reply,
            after_events,
        } if streaming => {
            let events = render(&reply)
                .stream()
                .into_iter()
                .take(after_events)
                .collect();
            let delay = Duration::from_millis(reply.chunk_delay_ms);
            sse(shared, events, delay, Ending::Cut)
        }
        Turn::DropMidStream { .. } => json_stream(shared, Ending::Cut),
        Turn::ErrorEvent {
            after_events,
            error_type,
            message,
            reply,
        } if streaming => {
            let message = or_stock(&message, &error_type);
            let events = render(&reply).stream_with_error(after_events, &error_type, message);
            let delay = Duration::from_millis(reply.chunk_delay_ms);
            sse(shared, events, delay, Ending::Finish)
        }
        // Without a stream there is no event to carry the error: answer with its status.
        Turn::ErrorEvent {
            error_type,
            message,
            ..
        } => api.error_response(status_of(&error_type), &error_type, &message, None),
    }
}

fn sse(shared: &Arc<Shared>, events: Vec<Bytes>, delay: Duration, ending: Ending) -> Response {
    let body = streamed_body(shared.clone(), events, delay, ending);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A 200 JSON response whose body never comes: it hangs or is cut.
fn json_stream(shared: &Arc<Shared>, ending: Ending) -> Response {
    let body = streamed_body(shared.clone(), Vec::new(), Duration::ZERO, ending);
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A body fed by a task, which paces the chunks and then ends the body as `ending` says.
/// The task notices the client leaving when the body (the receiver) is dropped.
fn streamed_body(shared: Arc<Shared>, chunks: Vec<Bytes>, delay: Duration, ending: Ending) -> Body {
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(1);
    tokio::spawn(async move {
        for (i, chunk) in chunks.into_iter().enumerate() {
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if tx.send(Ok(chunk)).await.is_err() {
                return;
            }
        }
        match ending {
            Ending::Finish => {}
            Ending::Hang => {
                tx.closed().await;
                shared.hangups.fetch_add(1, Ordering::SeqCst);
            }
            Ending::Cut => {
                let cut = io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "stand-in: connection dropped mid-stream",
                );
                let _ = tx.send(Err(cut)).await;
            }
        }
    });
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

fn error_response(
    status: u16,
    error_type: &str,
    message: &str,
    retry_after: Option<u64>,
) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"type": "error", "error": {
        "type": error_type,
        "message": or_stock(message, error_type),
    }});
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

fn with_request_id(mut response: Response, api: Api, request_id: &str) -> Response {
    let name = match api {
        Api::Messages => "request-id",
        Api::ChatCompletions | Api::Responses => "x-request-id",
    };
    response.headers_mut().insert(
        name,
        HeaderValue::from_str(request_id).expect("ids are ASCII"),
    );
    response
}

/// `message`, or the API's usual wording for `error_type` when it is empty.
pub(crate) fn or_stock<'a>(message: &'a str, error_type: &str) -> &'a str {
    if !message.is_empty() {
        return message;
    }
    match error_type {
        "invalid_request_error" => "Invalid request",
        "authentication_error" => "invalid x-api-key",
        "billing_error" => "Your credit balance is too low",
        "permission_error" => {
            "Your API key does not have permission to use the specified resource."
        }
        "not_found_error" => "Not found",
        "request_too_large" => "Request exceeds the maximum allowed number of bytes.",
        "rate_limit_error" => "Number of request tokens has exceeded your per-minute rate limit",
        "timeout_error" => "Request timed out",
        "overloaded_error" => "Overloaded",
        _ => "Internal server error",
    }
}

/// The HTTP status the API uses for an error type.
pub(crate) fn status_of(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

fn lowercase_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut map = BTreeMap::<String, String>::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        map.entry(name.as_str().to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    map
}
