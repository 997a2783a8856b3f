//! The routes: tasks (submit, list, show, events as SSE, approve, deny, cancel), sessions
//! (list, read) and images (by hash). Every error is `{"error": {"kind", "message"}}` with a
//! status that says what kind.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::ApiError;
use super::peer::Admission;
use super::tcp::TcpAccess;
use deskhand_engine::agent::stall::StallAnswer;
use deskhand_engine::agent::{Answerer, ApprovalPolicy, Decision};
use deskhand_engine::llm::ContentBlock;
use deskhand_engine::llm::config::ProviderSettings;
use deskhand_engine::secrets::ApiKey;
use deskhand_engine::tasks::{
    DesktopSettings, Engine, Origin, RunSettings, StallChoice, TaskSpec, TaskUpdate, Watch,
};

/// Every route, as `docs/openapi.yaml` must list it (a test compares them).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/tasks"),
    ("POST", "/v1/tasks"),
    ("GET", "/v1/tasks/{id}"),
    ("GET", "/v1/tasks/{id}/events"),
    ("POST", "/v1/tasks/{id}/approve"),
    ("POST", "/v1/tasks/{id}/deny"),
    ("POST", "/v1/tasks/{id}/stall"),
    ("POST", "/v1/tasks/{id}/cancel"),
    ("GET", "/v1/sessions"),
    ("GET", "/v1/sessions/{id}"),
    ("GET", "/v1/images/{sha256}"),
];

/// Request bodies are small JSON documents.
const BODY_LIMIT: usize = 1 << 20;
/// How long a client has to send a request's body once its head arrived.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// The most event streams open on one task at once.
pub const MAX_WATCHERS_PER_TASK: usize = 16;
/// The longest prompt, reason or name accepted.
const MAX_PROMPT: usize = 100_000;
const MAX_TEXT: usize = 2_000;

#[derive(Clone)]
struct Api {
    engine: Engine,
    /// The event streams open on each task.
    watchers: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

/// A place among a task's [`MAX_WATCHERS_PER_TASK`] event streams, given back when the
/// stream ends (or its client leaves).
struct WatcherTicket {
    watchers: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
    task: String,
}

impl Api {
    fn watcher(&self, task: &str) -> Result<WatcherTicket, ApiError> {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        let open = watchers.entry(task.to_string()).or_default();
        if *open >= MAX_WATCHERS_PER_TASK {
            return Err(ApiError {
                status: StatusCode::TOO_MANY_REQUESTS,
                kind: "too_many_watchers",
                message: format!(
                    "task `{task}` already has {MAX_WATCHERS_PER_TASK} event streams open; \
                     close one and try again"
                ),
            });
        }
        *open += 1;
        Ok(WatcherTicket {
            watchers: self.watchers.clone(),
            task: task.to_string(),
        })
    }
}

impl Drop for WatcherTicket {
    fn drop(&mut self) {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(open) = watchers.get_mut(&self.task) {
            *open -= 1;
            if *open == 0 {
                watchers.remove(&self.task);
            }
        }
    }
}

/// The path's task or session id, refused in our error shape when it cannot be read.
fn path_id(id: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    id.map(|Path(id)| id)
        .map_err(|e| ApiError::invalid(format!("the path: {}", e.body_text())))
}

/// The query string, refused in our error shape when it cannot be read.
fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query
        .map(|Query(query)| query)
        .map_err(|e| ApiError::invalid(format!("the query: {}", e.body_text())))
}

/// A JSON body, refused with our error shape (not the framework's) when it does not parse.
fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    let bytes: &[u8] = if bytes.is_empty() { b"{}" } else { bytes };
    serde_json::from_slice(bytes).map_err(|e| ApiError::invalid(format!("the request body: {e}")))
}

/// The API. `tcp`: what every request on the TCP listener must carry and name; `None` for
/// the Unix socket, which the file system guards. Every request is refused to a run's
/// own programs, and to a connection whose peer is unknown (`connections::serve` knows it).
pub fn router(engine: Engine, tcp: Option<TcpAccess>) -> Router {
    let routes = Router::new()
        .route("/v1/tasks", get(list_tasks).post(submit))
        .route("/v1/tasks/{id}", get(show_task))
        .route("/v1/tasks/{id}/events", get(events))
        .route("/v1/tasks/{id}/approve", post(approve))
        .route("/v1/tasks/{id}/deny", post(deny))
        .route("/v1/tasks/{id}/stall", post(answer_stall))
        .route("/v1/tasks/{id}/cancel", post(cancel))
        .route("/v1/sessions", get(list_sessions))
        .route("/v1/sessions/{id}", get(show_session))
        .route("/v1/images/{sha256}", get(image))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(read_body_in_time))
        .with_state(Api {
            engine,
            watchers: Arc::default(),
        });
    let routes = match tcp {
        Some(access) => super::tcp::guarded(routes, access),
        None => routes,
    };
    routes
        .layer(middleware::from_fn(refuse_run_programs))
        .layer(middleware::map_response(stamp_version))
}

/// Refuses the agent's programs (see `peer`) before anything else, the token included, as
/// decided when the connection started (`connections::serve`).
async fn refuse_run_programs(request: Request, next: Next) -> Response {
    let refusal = match request.extensions().get::<Admission>() {
        Some(admission) => admission.refusal.clone(),
        None => Some("the API cannot tell who is on this connection".into()),
    };
    match refusal {
        None => next.run(request).await,
        Some(message) => {
            let mut refused = ApiError {
                status: StatusCode::FORBIDDEN,
                kind: "forbidden",
                message,
            }
            .into_response();
            // A refused client's connection ends with this answer: it cannot hold a place.
            refused.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
            refused
        }
    }
}

/// Reads the request's body within [`BODY_TIMEOUT`] (and [`BODY_LIMIT`]) before the route
/// sees it: a client that sends a head and then trickles or withholds its body is cut off.
async fn read_body_in_time(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, BODY_LIMIT)).await;
    let refusal = |status, kind, message: String| {
        ApiError {
            status,
            kind,
            message,
        }
        .into_response()
    };
    match read {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Ok(Err(e)) => refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid",
            format!("the request body: {e} (at most {BODY_LIMIT} bytes)"),
        ),
        Err(_) => refusal(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            format!(
                "the request body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        ),
    }
}

/// Every answer, refusals too, says which API version speaks: a client (a parent's
/// `delegate`) checks it before it submits anything.
async fn stamp_version(mut response: Response) -> Response {
    response.headers_mut().insert(
        deskhand_engine::delegate::API_VERSION_HEADER,
        axum::http::HeaderValue::from_static(deskhand_engine::delegate::API_VERSION),
    );
    response
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<usize>,
}

async fn list_tasks(
    State(api): State<Api>,
    query_string: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let limit = query(query_string)?.limit.unwrap_or(50).min(1000);
    Ok(Json(json!({"tasks": api.engine.tasks(limit)?})))
}

/// What a client may choose about a task; everything else is the service's settings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SubmitBody {
    prompt: String,
    session_id: Option<String>,
    approve: Option<ApprovalPolicy>,
    max_turns: Option<u32>,
    tools: Option<Vec<String>>,
    provider: Option<String>,
    model: Option<String>,
    base_url: Option<String>,
    /// The key for `base_url`: the service's own keys never go to a URL a request names.
    api_key: Option<String>,
    system: Option<String>,
    max_cost_usd: Option<f64>,
    max_tokens: Option<u64>,
    bash_timeout_secs: Option<f64>,
    keep_screenshots: Option<usize>,
    summarize_at: Option<u8>,
    monitor: Option<usize>,
    /// Whether the chosen notes go into the system prompt (default true).
    memory: Option<bool>,
    stall: Option<StallBody>,
    /// `agent`: the task runs on an agent desktop of its own; `person`: on the service's
    /// display. Default: the session's saved choice, else `person`.
    desktop: Option<DesktopBody>,
    /// The bubblewrap sandbox for the agent's programs (default: the session's saved choice,
    /// else on for an agent desktop).
    sandbox: Option<bool>,
    /// Folders on the service's machine shared with the sandbox.
    share: Option<Vec<std::path::PathBuf>>,
    /// Whether the sandbox has the network (default true).
    network: Option<bool>,
    /// Keep the agent desktop after the task for the session's next one (default: the
    /// session's saved choice, else false).
    keep_desktop: Option<bool>,
    /// Set by a delegating Deskhand: how many delegations led here, and the tasks they came
    /// from, root first (`deskhand_engine::tasks::Lineage`).
    delegation: Option<DelegationBody>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DelegationBody {
    hops: usize,
    chain: Vec<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum DesktopBody {
    Person,
    Agent,
}

/// A field in seconds: more than 0 and at most a day.
fn seconds(name: &str, secs: Option<f64>) -> Result<Option<Duration>, ApiError> {
    match secs {
        Some(secs) if secs > 0.0 && secs <= 86_400.0 => Ok(Some(Duration::from_secs_f64(secs))),
        Some(_) => Err(ApiError::invalid(format!(
            "`{name}` must be more than 0 and at most 86400"
        ))),
        None => Ok(None),
    }
}

/// The stall breaker's thresholds for a task; each missing one is the service's setting.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StallBody {
    enabled: Option<bool>,
    repeats: Option<u32>,
    no_ops: Option<u32>,
    cycles: Option<u32>,
    ask_timeout_secs: Option<f64>,
}

impl StallBody {
    fn choice(self) -> Result<StallChoice, ApiError> {
        let counts = [
            ("repeats", self.repeats),
            ("no_ops", self.no_ops),
            ("cycles", self.cycles),
        ];
        if let Some((name, _)) = counts
            .iter()
            .find(|(_, n)| n.is_some_and(|n| !(2..=1000).contains(&n)))
        {
            return Err(ApiError::invalid(format!(
                "`stall.{name}` must be between 2 and 1000"
            )));
        }
        let ask_timeout = seconds("stall.ask_timeout_secs", self.ask_timeout_secs)?;
        Ok(StallChoice {
            enabled: self.enabled.unwrap_or(true),
            repeats: self.repeats,
            no_ops: self.no_ops,
            cycles: self.cycles,
            ask_timeout,
        })
    }
}

impl SubmitBody {
    fn spec(self) -> Result<TaskSpec, ApiError> {
        if self.prompt.trim().is_empty() || self.prompt.len() > MAX_PROMPT {
            return Err(ApiError::invalid(format!(
                "`prompt` must be 1 to {MAX_PROMPT} bytes of text"
            )));
        }
        let short = [
            ("session_id", &self.session_id),
            ("provider", &self.provider),
            ("model", &self.model),
            ("base_url", &self.base_url),
            ("api_key", &self.api_key),
        ];
        if let Some((name, _)) = short
            .iter()
            .find(|(_, value)| value.as_ref().is_some_and(|v| v.len() > MAX_TEXT))
        {
            return Err(ApiError::invalid(format!("`{name}` is too long")));
        }
        if self.system.as_ref().is_some_and(|s| s.len() > MAX_PROMPT) {
            return Err(ApiError::invalid("`system` is too long"));
        }
        if self
            .tools
            .as_ref()
            .is_some_and(|t| t.len() > 64 || t.iter().any(|n| n.is_empty() || n.len() > 64))
        {
            return Err(ApiError::invalid(
                "`tools` takes at most 64 names of 1 to 64 characters",
            ));
        }
        let max_turns = self
            .max_turns
            .unwrap_or(deskhand_engine::agent::DEFAULT_MAX_TURNS);
        if !(1..=1000).contains(&max_turns) {
            return Err(ApiError::invalid("`max_turns` must be between 1 and 1000"));
        }
        if self
            .max_cost_usd
            .is_some_and(|usd| !(usd > 0.0 && usd.is_finite()))
        {
            return Err(ApiError::invalid(
                "`max_cost_usd` must be a positive number",
            ));
        }
        if self.max_tokens == Some(0) {
            return Err(ApiError::invalid("`max_tokens` must be positive"));
        }
        let bash_timeout = seconds("bash_timeout_secs", self.bash_timeout_secs)?;
        let keep_screenshots = self
            .keep_screenshots
            .unwrap_or(deskhand_engine::tasks::DEFAULT_KEEP_SCREENSHOTS);
        if keep_screenshots > 100 {
            return Err(ApiError::invalid("`keep_screenshots` must be at most 100"));
        }
        let summarize_at = self
            .summarize_at
            .unwrap_or(deskhand_engine::tasks::DEFAULT_SUMMARIZE_AT);
        if !(10..=95).contains(&summarize_at) {
            return Err(ApiError::invalid(
                "`summarize_at` must be between 10 and 95",
            ));
        }
        if self.monitor.is_some_and(|m| m > 64) {
            return Err(ApiError::invalid("`monitor` must be at most 64"));
        }
        let stall = match self.stall {
            Some(stall) => stall.choice()?,
            None => StallChoice::default(),
        };
        let api_key = self
            .api_key
            .map(ApiKey::new)
            .transpose()
            .map_err(|e| ApiError::invalid(format!("`api_key`: {e}")))?;
        let base_url_from_request = self.base_url.is_some();
        if base_url_from_request && api_key.is_none() {
            return Err(ApiError::invalid(
                "`base_url` needs `api_key`, the key for that server: the service's own keys \
                 go only to the base URLs its own settings name (a server that needs no key \
                 takes any `api_key`)",
            ));
        }
        let lineage = match self.delegation {
            Some(given) => deskhand_engine::tasks::Lineage::stated(given.hops, given.chain)
                .map_err(|e| ApiError::invalid(e.to_string()))?,
            None => deskhand_engine::tasks::Lineage::default(),
        };
        Ok(TaskSpec {
            session: self.session_id,
            input: vec![ContentBlock::text(self.prompt)],
            settings: RunSettings {
                provider: ProviderSettings {
                    provider: self.provider,
                    model: self.model,
                    base_url: self.base_url,
                },
                api_key,
                base_url_from_request,
                tools: self.tools,
                approval: self.approve.unwrap_or_default(),
                max_turns,
                max_cost_usd: self.max_cost_usd,
                max_tokens: self.max_tokens,
                bash_timeout,
                keep_screenshots,
                summarize_at,
                monitor: self.monitor,
                system: self.system,
                memory: self.memory.unwrap_or(true),
                stall,
                desktop: DesktopSettings {
                    agent: self.desktop.map(|desktop| desktop == DesktopBody::Agent),
                    sandbox: self.sandbox,
                    keep: self.keep_desktop,
                    shares: self.share.unwrap_or_default(),
                    network: self.network.unwrap_or(true),
                },
                lineage,
                ..RunSettings::default()
            },
            origin: Origin::Api,
            wrap_tools: None,
        })
    }
}

async fn submit(State(api): State<Api>, bytes: Bytes) -> Result<Response, ApiError> {
    let spec = body::<SubmitBody>(&bytes)?.spec()?;
    // Delegated tasks from other services come here (a local child shares the store, and
    // never delegates again).
    spec.settings
        .lineage
        .check(api.engine.store())
        .map_err(|e| ApiError::invalid(e.to_string()))?;
    let task = api.engine.submit(spec).await?;
    Ok((StatusCode::ACCEPTED, Json(task)).into_response())
}

async fn show_task(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = path_id(id)?;
    Ok(Json(
        serde_json::to_value(api.engine.task(&id)?).unwrap_or_default(),
    ))
}

#[derive(Deserialize)]
struct EventsQuery {
    after: Option<i64>,
}

/// The task's events as SSE, each with its stored sequence number as its id: events after
/// `Last-Event-ID` (or `?after=`) are replayed from the store, then the rest follow live,
/// and the stream ends when the task does.
async fn events(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
    query_string: Result<Query<EventsQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = path_id(id)?;
    let query = query(query_string)?;
    let after = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|&v| v >= 0)
            .ok_or_else(|| ApiError::invalid("Last-Event-ID must be an event id (a number)"))?,
        None => query.after.unwrap_or(0).max(0),
    };
    let ticket = api.watcher(&id)?;
    let watch = api.engine.watch(&id, after)?;
    let stream = futures_util::stream::unfold(
        (watch, ticket),
        |(mut watch, ticket): (Watch, WatcherTicket)| async move {
            loop {
                if let Some(event) = sse_event(watch.next().await?) {
                    return Some((Ok::<_, Infallible>(event), (watch, ticket)));
                }
            }
        },
    );
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// An update as an SSE event; the task's end is the stream's end, so it has none.
fn sse_event(update: TaskUpdate) -> Option<Event> {
    match update {
        TaskUpdate::Event { id, event } => {
            let sse = Event::default()
                .event(event.kind())
                .data(serde_json::to_string(&event).ok()?);
            Some(match id {
                Some(id) => sse.id(id.to_string()),
                None => sse,
            })
        }
        TaskUpdate::Notice(text) => Some(
            Event::default()
                .event("notice")
                .data(Value::String(text).to_string()),
        ),
        TaskUpdate::Ended(_) => None,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    tool_use_id: Option<String>,
    /// Every later action of the same kind in this session too.
    #[serde(default)]
    always: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DenyBody {
    tool_use_id: Option<String>,
    reason: Option<String>,
}

async fn approve(
    State(api): State<Api>,
    Extension(Admission { peer, .. }): Extension<Admission>,
    id: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let id = path_id(id)?;
    let request: ApproveBody = body(&bytes)?;
    let decision = if request.always {
        Decision::ApproveKind
    } else {
        Decision::Approve
    };
    let call = api.engine.answer(
        &id,
        request.tool_use_id.as_deref(),
        decision,
        Answerer::api(peer.describe()),
    )?;
    Ok(Json(json!({"tool_use_id": call})))
}

async fn deny(
    State(api): State<Api>,
    Extension(Admission { peer, .. }): Extension<Admission>,
    id: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let id = path_id(id)?;
    let request: DenyBody = body(&bytes)?;
    if request.reason.as_ref().is_some_and(|r| r.len() > MAX_TEXT) {
        return Err(ApiError::invalid("`reason` is too long"));
    }
    let reason = request.reason.filter(|r| !r.trim().is_empty());
    let call = api.engine.answer(
        &id,
        request.tool_use_id.as_deref(),
        Decision::Deny { reason },
        Answerer::api(peer.describe()),
    )?;
    Ok(Json(json!({"tool_use_id": call})))
}

/// The person's answer to a stall question: `{"answer": "continue"}`, `{"answer": "hint",
/// "text": …}` or `{"answer": "stop"}`.
#[derive(Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case", deny_unknown_fields)]
enum StallBodyAnswer {
    Continue,
    Hint { text: String },
    Stop,
}

async fn answer_stall(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let id = path_id(id)?;
    let answer = match body::<StallBodyAnswer>(&bytes)? {
        StallBodyAnswer::Continue => StallAnswer::Continue,
        StallBodyAnswer::Hint { text } if text.trim().is_empty() || text.len() > MAX_TEXT => {
            return Err(ApiError::invalid(format!(
                "`text` must be 1 to {MAX_TEXT} bytes"
            )));
        }
        StallBodyAnswer::Hint { text } => StallAnswer::Hint { text },
        StallBodyAnswer::Stop => StallAnswer::Stop,
    };
    api.engine.answer_stall(&id, answer.clone())?;
    Ok(Json(json!(answer)))
}

async fn cancel(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(id)?;
    api.engine.cancel(&id)?;
    Ok((StatusCode::ACCEPTED, Json(api.engine.task(&id)?)).into_response())
}

async fn list_sessions(State(api): State<Api>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({"sessions": api.engine.store().sessions()?})))
}

async fn show_session(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = path_id(id)?;
    let store = api.engine.store();
    let id = store.resolve_id(&id)?;
    Ok(Json(
        serde_json::to_value(store.load_session(&id)?).unwrap_or_default(),
    ))
}

/// An image of the history by its content hash (a ref's `sha256`), as its bytes: how a
/// delegating Deskhand shows a remote child's screenshots.
async fn image(
    State(api): State<Api>,
    sha256: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let sha256 = path_id(sha256)?;
    let (media_type, bytes) = api.engine.store().image(&sha256)?;
    Ok(([(header::CONTENT_TYPE, media_type)], bytes).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskhand_engine::agent::AgentEvent;
    use deskhand_engine::tasks::{Origin, TaskInfo, TaskState};

    /// Every kind of update as the stream sends it: an event named by its type, with its
    /// id; a notice without one, its text a JSON string; the task's end as nothing, since
    /// the stream's end is the task's.
    #[tokio::test]
    async fn each_kind_of_update_is_an_sse_event_or_the_streams_end() {
        let ended = TaskInfo {
            id: "t1".into(),
            session_id: "s1".into(),
            state: TaskState::Done,
            origin: Origin::Api,
            prompt: "go".into(),
            pid: 1,
            waiting_for: None,
            error: None,
            created_at: String::new(),
            updated_at: String::new(),
        };
        let updates = [
            TaskUpdate::Event {
                id: Some(7),
                event: AgentEvent::TextDelta { text: "hi".into() },
            },
            TaskUpdate::Notice("the plugin server `files` did not start".into()),
            TaskUpdate::Ended(ended),
        ];
        let events = updates
            .into_iter()
            .filter_map(sse_event)
            .map(Ok::<_, Infallible>);
        let body = Sse::new(futures_util::stream::iter(events))
            .into_response()
            .into_body();
        let sent = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&sent),
            "event: text_delta\ndata: {\"type\":\"text_delta\",\"text\":\"hi\"}\nid: 7\n\n\
             event: notice\ndata: \"the plugin server `files` did not start\"\n\n"
        );
    }
}
