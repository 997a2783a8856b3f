//! The routes: tasks (submit, list, show, events as SSE, approve, deny, cancel), sessions
//! (list, read) and images (by hash). Every error is `{"error": {"kind", "message"}}` with a
//! status that says what kind.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, Request, State};
use axum::handler::Handler;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, on};
use axum::{Json, Router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::connections::BODY_TIMEOUT;
use super::error::{ApiError, ErrorKind, body, path_id};
use super::openapi::Operation;
use super::peer::Admission;
use super::tcp::TcpAccess;
use deskhand_engine::agent::stall::StallAnswer;
use deskhand_engine::agent::{Answerer, ApprovalPolicy, Decision};
use deskhand_engine::ids::{TaskId, ToolUseId};
use deskhand_engine::llm::ContentBlock;
use deskhand_engine::llm::claude::Effort;
use deskhand_engine::llm::config::ProviderSettings;
use deskhand_engine::schedules::{Schedule, ScheduleReport, ScheduleSpec, Schedules};
use deskhand_engine::secrets::ApiKey;
use deskhand_engine::store::{LoadedSession, SessionSummary};
use deskhand_engine::tasks::{
    DesktopSettings, Engine, Origin, RunSettings, StallChoice, TaskInfo, TaskSpec, TaskUpdate,
    Watch,
};

/// A route: what serves it and how docs/openapi.json describes it.
struct Route {
    method: Method,
    path: &'static str,
    handler: MethodRouter<Api>,
    operation: Operation,
}

impl Route {
    fn new<H: Handler<T, Api>, T: 'static>(
        method: Method,
        path: &'static str,
        handler: H,
        operation: Operation,
    ) -> Self {
        #[expect(
            clippy::expect_used,
            reason = "the table names only methods axum routes; every test builds the router"
        )]
        let filter = MethodFilter::try_from(method.clone()).expect("a method axum routes");
        Self {
            method,
            path,
            handler: on(filter, handler),
            operation,
        }
    }
}

/// Every route, the one list of them: [`router`] serves these and [`openapi`] describes
/// these, with the types their handlers read and answer.
fn routes() -> Vec<Route> {
    let mut routes = task_routes();
    routes.extend(schedule_routes());
    routes
}

/// The schedule routes, served by `super::schedules`.
fn schedule_routes() -> Vec<Route> {
    use super::schedules as handlers;
    let one = |operation: Operation| {
        operation
            .refuses(400, "A path that cannot be read.")
            .refuses(404, "No such schedule (by id or name).")
    };
    vec![
        Route::new(
            Method::GET,
            "/v1/schedules",
            handlers::list,
            Operation::new("listSchedules", "Every schedule, by name.")
                .answers::<handlers::ScheduleList>(200, "The schedules."),
        ),
        Route::new(
            Method::POST,
            "/v1/schedules",
            handlers::add,
            Operation::new(
                "addSchedule",
                "Add a schedule; `deskhand serve` runs it at its times. A malformed cron \
                 expression, an unknown time zone, a time that has passed or an approval \
                 deadline out of range is refused, and nothing is scheduled.",
            )
            .body::<ScheduleSpec>(true)
            .answers::<Schedule>(201, "The schedule, with its next due time.")
            .refuses(400, "A malformed body or a schedule that cannot work.")
            .refuses(409, "exists: a schedule has that name."),
        ),
        Route::new(
            Method::GET,
            "/v1/schedules/{id}",
            handlers::show,
            one(Operation::new(
                "getSchedule",
                "A schedule, its newest runs and every run's outcome counted.",
            )
            .answers::<ScheduleReport>(200, "The schedule.")),
        ),
        Route::new(
            Method::DELETE,
            "/v1/schedules/{id}",
            handlers::delete,
            one(Operation::new(
                "deleteSchedule",
                "Delete a schedule (its runs' tasks and sessions stay).",
            )
            .answers::<Schedule>(200, "The schedule as it was.")),
        ),
        Route::new(
            Method::POST,
            "/v1/schedules/{id}/pause",
            handlers::pause,
            one(Operation::new(
                "pauseSchedule",
                "Pause a schedule: nothing runs until it is resumed.",
            )
            .answers::<Schedule>(200, "The schedule.")),
        ),
        Route::new(
            Method::POST,
            "/v1/schedules/{id}/resume",
            handlers::resume,
            one(Operation::new(
                "resumeSchedule",
                "Resume a schedule from now (the times missed while paused do not run) and \
                 forget its failures in a row.",
            )
            .answers::<Schedule>(200, "The schedule.")),
        ),
        Route::new(
            Method::POST,
            "/v1/schedules/{id}/run",
            handlers::run_now,
            one(
                Operation::new("runSchedule", "Run a schedule now, outside its times.")
                    .answers::<TaskInfo>(202, "The run's task.")
                    .refuses(
                        409,
                        "busy: its run is still going and its overlap policy is not cancel.",
                    ),
            ),
        ),
    ]
}

/// What the schedule routes see of the API.
impl axum::extract::FromRef<Api> for super::schedules::ScheduleApi {
    fn from_ref(api: &Api) -> Self {
        Self {
            engine: api.engine.clone(),
            schedules: api.schedules.clone(),
        }
    }
}

fn task_routes() -> Vec<Route> {
    vec![
        Route::new(
            Method::GET,
            "/v1/tasks",
            list_tasks,
            Operation::new(
                "listTasks",
                "Running and waiting tasks, and the newest finished ones, newest first.",
            )
            .query::<ListQuery>()
            .answers::<TaskList>(200, "The tasks.")
            .refuses(400, "A query that cannot be read."),
        ),
        Route::new(
            Method::POST,
            "/v1/tasks",
            submit,
            Operation::new(
                "submitTask",
                "Submit a task; answers with it at once (running, or queued behind its \
                 session's task).",
            )
            .body::<SubmitBody>(true)
            .answers::<TaskInfo>(202, "The task.")
            .refuses(
                400,
                "A malformed body or settings that cannot work (no key, an unknown tool, a \
                 cost limit without a price).",
            )
            .refuses(404, "No such session.")
            .refuses(409, "busy: another process runs this session.")
            .refuses(500, "The history cannot be written."),
        ),
        Route::new(
            Method::GET,
            "/v1/tasks/{id}",
            show_task,
            Operation::new("getTask", "One task.")
                .answers::<TaskInfo>(200, "The task.")
                .refuses(400, "A path that cannot be read.")
                .refuses(404, "No such task."),
        ),
        Route::new(
            Method::GET,
            "/v1/tasks/{id}/events",
            events,
            Operation::new(
                "taskEvents",
                "The task's events as Server-Sent Events: `id` is the stored sequence number, \
                 `event` the AgentEvent's type, `data` its JSON. Events after Last-Event-ID (or \
                 ?after=) are replayed from the store, then the rest follow live; the stream \
                 ends when the task does. `notice` events (no id) are messages about the task \
                 that are not part of its run.",
            )
            .query::<EventsQuery>()
            .header(
                "Last-Event-ID",
                json!({"type": "string", "pattern": "^[0-9]{1,18}$"}),
            )
            .streams(200, "The event stream.")
            .refuses(400, "A Last-Event-ID or query that is not an event id.")
            .refuses(404, "No such task.")
            .refuses(
                429,
                format!(
                    "too_many_watchers: the task already has {MAX_WATCHERS_PER_TASK} event \
                     streams open."
                ),
            ),
        ),
        Route::new(
            Method::POST,
            "/v1/tasks/{id}/approve",
            approve,
            answers_the_waiting_action(
                Operation::new("approveAction", "Approve the action the task waits for.")
                    .body::<ApproveBody>(false),
            ),
        ),
        Route::new(
            Method::POST,
            "/v1/tasks/{id}/deny",
            deny,
            answers_the_waiting_action(
                Operation::new(
                    "denyAction",
                    "Deny the action the task waits for; the reason is told to the model.",
                )
                .body::<DenyBody>(false),
            ),
        ),
        Route::new(
            Method::POST,
            "/v1/tasks/{id}/stall",
            answer_stall,
            Operation::new(
                "answerStall",
                "Answer the question the stall breaker asks (go on, go on with a hint, or \
                 stop).",
            )
            .body::<StallBodyAnswer>(true)
            .answers::<StallBodyAnswer>(
                200,
                "The answer was handed to the waiting run; echoed back.",
            )
            .refuses(
                400,
                "A malformed body, or a hint that is empty or too long.",
            )
            .refuses(404, "No such task.")
            .refuses(
                409,
                "No stall question is open (not_pending), the task ended (finished) or \
                 another process runs it (elsewhere).",
            ),
        ),
        Route::new(
            Method::POST,
            "/v1/tasks/{id}/cancel",
            cancel,
            Operation::new(
                "cancelTask",
                "Stop the task: open calls are answered \"cancelled by the user\" and the \
                 session stays valid.",
            )
            .answers::<TaskInfo>(
                202,
                "The task, as it is when the stop is asked (it ends `cancelled` soon after).",
            )
            .refuses(400, "A path that cannot be read.")
            .refuses(404, "No such task.")
            .refuses(
                409,
                "The task has ended already (finished) or another process runs it \
                 (elsewhere).",
            ),
        ),
        Route::new(
            Method::GET,
            "/v1/sessions",
            list_sessions,
            Operation::new(
                "listSessions",
                "Every session, most recently updated first.",
            )
            .answers::<SessionList>(200, "The sessions."),
        ),
        Route::new(
            Method::GET,
            "/v1/sessions/{id}",
            show_session,
            Operation::new(
                "getSession",
                "A session with its messages and events (images as \
                 {\"type\":\"ref\",\"sha256\":...}).",
            )
            .answers::<LoadedSession>(200, "The session.")
            .refuses(400, "An id that matches several sessions.")
            .refuses(404, "No such session."),
        ),
        Route::new(
            Method::GET,
            "/v1/images/{sha256}",
            image,
            Operation::new(
                "getImage",
                "An image of the history by its content hash: a ref's `sha256` (screenshots \
                 and attachments), as its bytes.",
            )
            .image(200, "The image's bytes, with its media type.")
            .refuses(
                404,
                "No image with that hash (or not a SHA-256 in lowercase hex).",
            ),
        ),
    ]
}

/// The API's OpenAPI document (docs/openapi.json): every route of [`router`].
pub fn openapi() -> Value {
    let routes = routes();
    super::openapi::document(
        routes
            .iter()
            .map(|route| (&route.method, route.path, &route.operation)),
    )
}

/// What approving and denying an action answer alike: both hand a decision to the action
/// the task waits for.
fn answers_the_waiting_action(operation: Operation) -> Operation {
    operation
        .answers::<Answered>(200, "The answer was handed to the waiting action.")
        .refuses(400, "A malformed body.")
        .refuses(404, "No such task.")
        .refuses(
            409,
            "Nothing with that id waits for approval (not_pending), the task ended (finished) \
             or another process runs it (elsewhere).",
        )
}

/// Request bodies are small JSON documents.
const BODY_LIMIT: usize = 1 << 20;
/// The most event streams open on one task at once.
pub const MAX_WATCHERS_PER_TASK: usize = 16;
/// The longest prompt, reason or name accepted.
const MAX_PROMPT: usize = 100_000;
const MAX_TEXT: usize = 2_000;

#[derive(Clone)]
struct Api {
    engine: Engine,
    /// The daemon's schedules; `None` where nothing runs them (an embedder's router).
    schedules: Option<Schedules>,
    /// The event streams open on each task.
    watchers: Arc<std::sync::Mutex<std::collections::HashMap<TaskId, usize>>>,
}

/// A place among a task's [`MAX_WATCHERS_PER_TASK`] event streams, given back when the
/// stream ends (or its client leaves).
struct WatcherTicket {
    watchers: Arc<std::sync::Mutex<std::collections::HashMap<TaskId, usize>>>,
    task: TaskId,
}

impl Api {
    fn watcher(&self, task: &TaskId) -> Result<WatcherTicket, ApiError> {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        let open = watchers.entry(task.clone()).or_default();
        if *open >= MAX_WATCHERS_PER_TASK {
            return Err(ApiError {
                status: StatusCode::TOO_MANY_REQUESTS,
                kind: ErrorKind::TooManyWatchers,
                message: format!(
                    "task `{task}` already has {MAX_WATCHERS_PER_TASK} event streams open; \
                     close one and try again"
                ),
            });
        }
        *open += 1;
        Ok(WatcherTicket {
            watchers: self.watchers.clone(),
            task: task.clone(),
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

/// The query string, refused in our error shape when it cannot be read.
fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query
        .map(|Query(query)| query)
        .map_err(|e| ApiError::invalid(format!("the query: {}", e.body_text())))
}

/// The API. `tcp`: what every request on the TCP listener must carry and name; `None` for
/// the Unix socket, which the file system guards. Every request is refused to a run's
/// own programs, and to a connection whose peer is unknown (`connections::serve` knows it).
pub fn router(engine: Engine, tcp: Option<TcpAccess>) -> Router {
    router_with_schedules(engine, None, tcp)
}

/// [`router`] with the schedule routes answered by `schedules` (`deskhand serve`'s).
pub fn router_with_schedules(
    engine: Engine,
    schedules: Option<Schedules>,
    tcp: Option<TcpAccess>,
) -> Router {
    let routes = routes()
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(route.path, route.handler)
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(read_body_in_time))
        .with_state(Api {
            engine,
            schedules,
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
                kind: ErrorKind::Forbidden,
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
            ErrorKind::Invalid,
            format!("the request body: {e} (at most {BODY_LIMIT} bytes)"),
        ),
        Err(_) => refusal(
            StatusCode::REQUEST_TIMEOUT,
            ErrorKind::Timeout,
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

#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Finished tasks listed at most (default 50).
    #[schemars(range(max = 1000))]
    limit: Option<usize>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
struct TaskList {
    tasks: Vec<TaskInfo>,
}

async fn list_tasks(
    State(api): State<Api>,
    query_string: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<TaskList>, ApiError> {
    let limit = query(query_string)?.limit.unwrap_or(50).min(1000);
    Ok(Json(TaskList {
        tasks: api.engine.tasks(limit)?,
    }))
}

/// What a client may choose about a task; everything else is the service's settings.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Submit")]
struct SubmitBody {
    #[schemars(length(min = 1, max = MAX_PROMPT), regex(pattern = r"\S"))]
    prompt: String,
    /// A stored session to continue (its id or the first characters of it), with its saved
    /// check and, where desktop, sandbox and keep_desktop are left out, its saved desktop
    /// choice (docs/agent.md).
    #[schemars(length(max = MAX_TEXT))]
    session_id: Option<String>,
    /// ask (default): actions wait for /approve or /deny; auto: all allowed; deny: read-only
    /// ones only.
    approve: Option<ApprovalPolicy>,
    #[schemars(range(min = 1, max = 1000))]
    max_turns: Option<u32>,
    #[schemars(length(max = 64), inner(length(min = 1, max = 64)))]
    tools: Option<Vec<String>>,
    #[schemars(length(max = MAX_TEXT))]
    provider: Option<String>,
    #[schemars(length(max = MAX_TEXT))]
    model: Option<String>,
    #[schemars(length(max = MAX_TEXT))]
    base_url: Option<String>,
    /// How hard the model thinks, as `deskhand ask --effort` (docs/providers.md); default:
    /// the service's `ANTHROPIC_EFFORT`, else the model's.
    effort: Option<Effort>,
    /// The key for `base_url`, which needs one: the service's own keys go only to the base
    /// URLs its own settings name.
    #[schemars(length(max = MAX_TEXT))]
    api_key: Option<String>,
    #[schemars(length(max = MAX_PROMPT))]
    system: Option<String>,
    #[schemars(extend("exclusiveMinimum" = 0))]
    max_cost_usd: Option<f64>,
    #[schemars(range(min = 1))]
    max_tokens: Option<u64>,
    #[schemars(extend("exclusiveMinimum" = 0), range(max = MAX_SECONDS))]
    bash_timeout_secs: Option<f64>,
    #[schemars(range(max = 100))]
    keep_screenshots: Option<usize>,
    #[schemars(range(min = 10, max = 95))]
    summarize_at: Option<u8>,
    #[schemars(range(max = 64))]
    monitor: Option<usize>,
    /// Whether the notes chosen for the prompt go into the system prompt (default true; the
    /// service's memory-in-prompt setting can still turn them off).
    memory: Option<bool>,
    /// The stall breaker for this task; each missing field is the service's setting, then
    /// the default.
    stall: Option<StallBody>,
    /// agent: the task runs on an agent desktop of its own (docs/agent-desktop.md); default:
    /// the session's saved choice, else person. Saved with the session when given.
    desktop: Option<DesktopBody>,
    /// Run the agent's programs in the bubblewrap sandbox (docs/sandbox.md); default: the
    /// session's saved choice, else on for an agent desktop. Saved with the session when
    /// given for an agent desktop.
    sandbox: Option<bool>,
    /// Folders on the service's machine the sandbox may read and write; needs the sandbox.
    share: Option<Vec<std::path::PathBuf>>,
    /// Whether the sandbox has the network (default true); false needs the sandbox.
    network: Option<bool>,
    /// Keep the agent desktop after the task, for the session's next task (default: the
    /// session's saved choice, else false); needs an agent desktop. Saved with the session
    /// when given. It still ends with the service.
    keep_desktop: Option<bool>,
    /// Set by a delegating Deskhand (its `delegate` tool): how many delegations led to this
    /// task and the ids of the tasks they came from, root first. A chain of more than 4 hops,
    /// or one that holds a task of this service, is refused (400 invalid): two services that
    /// delegate to each other cannot loop.
    delegation: Option<DelegationBody>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Delegation")]
struct DelegationBody {
    /// The number of task ids in `chain`.
    hops: usize,
    #[schemars(inner(length(min = 1, max = 64)))]
    chain: Vec<TaskId>,
}

/// Where the task works: on the service's display (the person's), or on an agent desktop
/// of its own.
#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "Desktop")]
enum DesktopBody {
    Person,
    Agent,
}

/// The most a field in seconds takes: a day.
const MAX_SECONDS: f64 = 86_400.0;

/// A field in seconds: more than 0 and at most [`MAX_SECONDS`].
fn seconds(name: &str, secs: Option<f64>) -> Result<Option<Duration>, ApiError> {
    match secs {
        Some(secs) if secs > 0.0 && secs <= MAX_SECONDS => Ok(Some(Duration::from_secs_f64(secs))),
        Some(_) => Err(ApiError::invalid(format!(
            "`{name}` must be more than 0 and at most {MAX_SECONDS}"
        ))),
        None => Ok(None),
    }
}

/// The stall breaker's thresholds for a task; each missing one is the service's setting.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Stall")]
struct StallBody {
    enabled: Option<bool>,
    #[schemars(range(min = 2, max = 1000))]
    repeats: Option<u32>,
    #[schemars(range(min = 2, max = 1000))]
    no_ops: Option<u32>,
    #[schemars(range(min = 2, max = 1000))]
    cycles: Option<u32>,
    #[schemars(extend("exclusiveMinimum" = 0), range(max = MAX_SECONDS))]
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
                    effort: self.effort.map(|effort| effort.name().to_string()),
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
            window: None,
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
) -> Result<Json<TaskInfo>, ApiError> {
    let id = TaskId::from(path_id(id)?);
    Ok(Json(api.engine.task(&id)?))
}

#[derive(Deserialize, JsonSchema)]
struct EventsQuery {
    /// Replay the events after this id (`Last-Event-ID` wins when both are given).
    #[schemars(range(min = 0))]
    after: Option<i64>,
}

/// The task's events as SSE (see its operation in [`routes`]).
async fn events(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
    query_string: Result<Query<EventsQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = TaskId::from(path_id(id)?);
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

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Approve")]
struct ApproveBody {
    /// The action to approve; default: the one the task waits for.
    tool_use_id: Option<ToolUseId>,
    /// Also every later action of this kind in the session.
    #[serde(default)]
    always: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Deny")]
struct DenyBody {
    /// The action to deny; default: the one the task waits for.
    tool_use_id: Option<ToolUseId>,
    /// Told to the model.
    #[schemars(length(max = MAX_TEXT))]
    reason: Option<String>,
}

/// Which action an answer went to.
#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
struct Answered {
    tool_use_id: ToolUseId,
}

async fn approve(
    State(api): State<Api>,
    Extension(Admission { peer, .. }): Extension<Admission>,
    id: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<Answered>, ApiError> {
    let id = TaskId::from(path_id(id)?);
    let request: ApproveBody = body(&bytes)?;
    let decision = if request.always {
        Decision::ApproveKind
    } else {
        Decision::Approve
    };
    let call = api.engine.answer(
        &id,
        request.tool_use_id.as_ref(),
        decision,
        Answerer::api(peer.describe()),
    )?;
    Ok(Json(Answered { tool_use_id: call }))
}

async fn deny(
    State(api): State<Api>,
    Extension(Admission { peer, .. }): Extension<Admission>,
    id: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<Answered>, ApiError> {
    let id = TaskId::from(path_id(id)?);
    let request: DenyBody = body(&bytes)?;
    if request.reason.as_ref().is_some_and(|r| r.len() > MAX_TEXT) {
        return Err(ApiError::invalid("`reason` is too long"));
    }
    let reason = request.reason.filter(|r| !r.trim().is_empty());
    let call = api.engine.answer(
        &id,
        request.tool_use_id.as_ref(),
        Decision::Deny { reason },
        Answerer::api(peer.describe()),
    )?;
    Ok(Json(Answered { tool_use_id: call }))
}

/// The person's answer when the agent seems stuck (a stall_detected event with step ask):
/// go on, go on with a hint for the model, or stop.
#[derive(Deserialize, Serialize, JsonSchema, Clone)]
#[serde(tag = "answer", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "StallAnswer")]
enum StallBodyAnswer {
    Continue,
    Hint {
        #[schemars(length(min = 1, max = MAX_TEXT), regex(pattern = r"\S"))]
        text: String,
    },
    Stop,
}

async fn answer_stall(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
    bytes: Bytes,
) -> Result<Json<StallBodyAnswer>, ApiError> {
    let id = TaskId::from(path_id(id)?);
    let given = body::<StallBodyAnswer>(&bytes)?;
    let answer = match given.clone() {
        StallBodyAnswer::Continue => StallAnswer::Continue,
        StallBodyAnswer::Hint { text } if text.trim().is_empty() || text.len() > MAX_TEXT => {
            return Err(ApiError::invalid(format!(
                "`text` must be 1 to {MAX_TEXT} bytes"
            )));
        }
        StallBodyAnswer::Hint { text } => StallAnswer::Hint { text },
        StallBodyAnswer::Stop => StallAnswer::Stop,
    };
    api.engine.answer_stall(&id, answer)?;
    Ok(Json(given))
}

async fn cancel(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = TaskId::from(path_id(id)?);
    api.engine.cancel(&id)?;
    Ok((StatusCode::ACCEPTED, Json(api.engine.task(&id)?)).into_response())
}

#[derive(Serialize, JsonSchema)]
#[schemars(inline)]
struct SessionList {
    sessions: Vec<SessionSummary>,
}

async fn list_sessions(State(api): State<Api>) -> Result<Json<SessionList>, ApiError> {
    Ok(Json(SessionList {
        sessions: api.engine.store().sessions()?,
    }))
}

async fn show_session(
    State(api): State<Api>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<LoadedSession>, ApiError> {
    let id = path_id(id)?;
    let store = api.engine.store();
    let id = store.resolve_id(&id)?;
    Ok(Json(store.load_session(&id)?))
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
