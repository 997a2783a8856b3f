//! The `delegate` tool: hands a sub-task to another Deskhand agent and waits for it. The
//! child runs on a new agent desktop on this machine (a task of this process's engine) or
//! on a remote `deskhand serve` the person configured (`--delegate-to NAME=URL`, its token
//! from the environment, never from the model). The child's events stream into the
//! parent's run as `child_event`s, its approvals go to the parent's person, a stop of the
//! parent cancels it, and its answer, status and cost come back as the call's result.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::agent::{AgentEvent, Answer, ApprovalRequest, Approver, Decision, RunStatus};
use crate::images::ImageRef;
use crate::llm::{ContentBlock, ImageSource, Role, ToolDefinition};
use crate::secrets::ApiKey;
use crate::tasks::{
    DesktopSettings, Engine, Lineage, Origin, PendingApprovals, RunSettings, TaskApprover,
    TaskSpec, TaskUpdate, Watch,
};
use crate::tools::{
    ActionDetail, ActionPlan, Progress, ToolContext, ToolError, ToolOutput, TypedTool,
};
use deskhand_protocol::action::DelegateDetail;
use deskhand_protocol::ids::{SessionId, TaskId, ToolUseId};

pub const NAME: &str = "delegate";
/// The target that means "a new agent desktop on this machine".
pub const LOCAL: &str = "local";
/// Where a remote's token is read from: this prefix and the remote's name in capitals.
pub const TOKEN_VARIABLE_PREFIX: &str = "DESKHAND_DELEGATE_TOKEN_";
/// The stored setting naming remotes for every front end: `{"name": "url", …}`.
pub const TARGETS_SETTING: &str = "delegate.targets";
/// The API version a remote must speak (its `Deskhand-Api` header).
pub const API_VERSION: &str = "1";
pub const API_VERSION_HEADER: &str = "deskhand-api";

/// How long the parent waits for a child unless the call says otherwise, and the most it
/// may ask for.
pub const DEFAULT_TIMEOUT_SECS: u32 = 600;
pub const MAX_TIMEOUT_SECS: u32 = 3600;
/// The child's turn limit unless the call says otherwise, and the most it may ask for.
const DEFAULT_CHILD_TURNS: u32 = 30;
const MAX_CHILD_TURNS: u32 = 200;
/// A remote that does not answer this fast is unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A request other than the event stream that takes longer has failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a cancelled local child may take to end (within the loop's grace period).
const LOCAL_CANCEL_WAIT: Duration = Duration::from_secs(15);
/// How often a broken event stream is opened again before the call gives up.
const RECONNECTS: u32 = 3;
/// The longest prompt the API takes (its `MAX_PROMPT`).
const MAX_PROMPT: usize = 100_000;
/// The most a remote's JSON answer (a task, a check) may be: they are a few hundred bytes.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// The most of a child's events one call keeps (shows, and stores in the parent's history),
/// and the most bytes of JSON they may add up to. Past either, the rest are counted and left
/// out, and the call's result says how many; the child's approvals and its `done` are
/// always passed on. A child that floods cannot fill the parent's disk.
pub const MAX_CHILD_EVENTS: usize = 2_000;
pub const MAX_CHILD_EVENT_BYTES: usize = 8 * 1024 * 1024;
/// The most images kept from one child event, and from one call.
pub const MAX_IMAGES_PER_EVENT: usize = 4;
pub const MAX_IMAGES_PER_CALL: usize = 32;
/// The most of the child's answer passed to the parent's model: its start and its end.
const MAX_ANSWER_TEXT_BYTES: usize = 100 * 1024;

/// A remote Deskhand by the name the model uses for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteTarget {
    pub name: String,
    /// The service's base URL, e.g. `http://10.0.0.5:7733`.
    pub url: String,
}

impl RemoteTarget {
    /// Reads `NAME=URL` (the `--delegate-to` flag).
    pub fn parse(text: &str) -> Result<Self, TargetError> {
        let (name, url) = text
            .split_once('=')
            .ok_or_else(|| TargetError::NotNameUrl(text.to_string()))?;
        let valid_name = !name.is_empty()
            && name != LOCAL
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid_name {
            return Err(TargetError::Name(name.to_string()));
        }
        let parsed = reqwest::Url::parse(url).map_err(|e| TargetError::Url {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(TargetError::NotHttp(url.to_string()));
        }
        Ok(Self {
            name: name.to_string(),
            url: url.trim_end_matches('/').to_string(),
        })
    }

    /// The variable that holds this remote's token.
    pub fn token_variable(&self) -> String {
        let upper: String = self
            .name
            .chars()
            .map(|c| match c {
                '-' => '_',
                c => c.to_ascii_uppercase(),
            })
            .collect();
        format!("{TOKEN_VARIABLE_PREFIX}{upper}")
    }
}

/// Why a `NAME=URL` is not a delegation target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("`{0}` is not NAME=URL")]
    NotNameUrl(String),
    #[error("`{0}` is not a target name: letters, digits, - and _, and not `{LOCAL}`")]
    Name(String),
    #[error("`{url}`: {reason}")]
    Url { url: String, reason: String },
    #[error("`{0}` is not an http(s) URL")]
    NotHttp(String),
}

/// What the tool needs from the run that offers it.
#[derive(Clone)]
pub struct Delegation {
    /// The engine a local child runs on, and the parent's settings it starts from.
    pub engine: Engine,
    /// The parent's session: a remote child's screenshots are kept in its history.
    pub session_id: SessionId,
    pub settings: RunSettings,
    /// The lineage a child gets: the parent's, and the parent's task.
    pub lineage: Lineage,
    pub remotes: Vec<RemoteTarget>,
    /// The parent's open questions: a child's approvals are asked here, so whoever answers
    /// the parent (terminal, window, API) answers them.
    pub approvals: Arc<PendingApprovals>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("remotes", &self.remotes)
            .finish_non_exhaustive()
    }
}

pub struct DelegateTool {
    delegation: Delegation,
}

impl DelegateTool {
    pub fn new(delegation: Delegation) -> Self {
        Self { delegation }
    }

    fn targets(&self) -> Vec<&str> {
        std::iter::once(LOCAL)
            .chain(self.delegation.remotes.iter().map(|r| r.name.as_str()))
            .collect()
    }
}

// Field doc comments are the descriptions the model reads in the schema.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DelegateInput {
    /// The whole sub-task, written for an agent that has not seen this conversation.
    prompt: String,
    /// Where: `local` (default: a new private desktop here) or a configured remote's name.
    to: Option<String>,
    /// The child's turn limit (default 30, at most 200).
    max_turns: Option<u32>,
    /// The most the child may spend, in US dollars; it counts against this run's budget.
    max_cost_usd: Option<f64>,
    /// Seconds to wait for the child (default 600, at most 3600); it is cancelled after that.
    timeout_secs: Option<u32>,
}

/// A call, checked.
pub struct Call {
    prompt: String,
    to: String,
    max_turns: u32,
    max_cost_usd: Option<f64>,
    timeout: Duration,
}

#[async_trait]
impl TypedTool for DelegateTool {
    type Input = Call;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: NAME.into(),
            description: format!(
                "Hand a whole sub-task to another Deskhand agent and wait for its answer. \
                 It works on its own desktop (`local`) or on another machine, with its own \
                 tools; its steps are shown to the person and its approvals are asked of \
                 them. Targets: {}.",
                self.targets().join(", ")
            ),
            input_schema: crate::tools::input::schema::<DelegateInput>(),
            anthropic: None,
        }
    }

    fn read(&self, input: &Value) -> Result<Call, ToolError> {
        let input: DelegateInput = crate::tools::input::read(NAME, input)?;
        if input.prompt.trim().is_empty() || input.prompt.len() > MAX_PROMPT {
            return Err(ToolError::OutOfRange(format!(
                "`prompt` must be 1 to {MAX_PROMPT} bytes of text"
            )));
        }
        let to = input.to.unwrap_or_else(|| LOCAL.to_string());
        if !self.targets().contains(&to.as_str()) {
            return Err(ToolError::NotFound(format!(
                "no target `{to}`; the targets are: {}",
                self.targets().join(", ")
            )));
        }
        let max_turns = input.max_turns.unwrap_or(DEFAULT_CHILD_TURNS);
        if !(1..=MAX_CHILD_TURNS).contains(&max_turns) {
            return Err(ToolError::OutOfRange(format!(
                "`max_turns` must be 1 to {MAX_CHILD_TURNS}"
            )));
        }
        if input
            .max_cost_usd
            .is_some_and(|usd| !(usd > 0.0 && usd.is_finite()))
        {
            return Err(ToolError::OutOfRange(
                "`max_cost_usd` must be a positive number".into(),
            ));
        }
        let secs = input.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if !(1..=MAX_TIMEOUT_SECS).contains(&secs) {
            return Err(ToolError::OutOfRange(format!(
                "`timeout_secs` must be 1 to {MAX_TIMEOUT_SECS}"
            )));
        }
        Ok(Call {
            prompt: input.prompt,
            to,
            max_turns,
            max_cost_usd: input.max_cost_usd,
            timeout: Duration::from_secs(secs.into()),
        })
    }

    fn plan(&self, call: &Call) -> Result<ActionPlan, ToolError> {
        let whom = match self.delegation.remotes.iter().find(|r| r.name == call.to) {
            Some(remote) => format!("{} ({})", remote.name, remote.url),
            None => "a new agent desktop on this machine".to_string(),
        };
        let first_line = call.prompt.lines().next().unwrap_or_default();
        let may = self.child_may(call.to != LOCAL);
        Ok(ActionPlan {
            kind: format!("{NAME}.{}", call.to),
            read_only: false,
            summary: format!("delegate to {whom}: {first_line} (the child may: {may})"),
            detail: ActionDetail::Delegate(Box::new(DelegateDetail {
                to: call.to.clone(),
                target: whom,
                prompt: call.prompt.clone(),
                max_turns: call.max_turns,
                max_cost_usd: call.max_cost_usd,
                timeout_secs: call.timeout.as_secs(),
            })),
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn run(&self, call: Call, ctx: &ToolContext) -> ToolOutput {
        let started = match self.start(&call).await {
            Ok(child) => child,
            Err(e) => return ToolOutput::error(format!("the task was not delegated: {e}")),
        };
        let mut follow = Follow {
            child: started,
            delegation: &self.delegation,
            ctx,
            answer: String::new(),
            done: None,
            kept: Kept::default(),
        };
        let deadline = Instant::now() + call.timeout;
        let ended = tokio::select! {
            ended = follow.follow_to_end() => ended,
            () = ctx.cancel.cancelled() => Err(Stop::Cancelled),
            () = tokio::time::sleep_until(deadline) => Err(Stop::TimedOut(call.timeout)),
        };
        follow.report(&call.to, ended).await
    }

    fn cancel_grace(&self) -> Duration {
        REQUEST_TIMEOUT
    }
}

impl DelegateTool {
    async fn start(&self, call: &Call) -> Result<Child, ChildError> {
        match self.delegation.remotes.iter().find(|r| r.name == call.to) {
            Some(remote) => Remote::submit(remote, call, &self.delegation, self.parent_policy())
                .await
                .map(Child::Remote),
            None => self.start_local(call).await,
        }
    }

    /// The parent's approval mode as it is now (the window can switch it mid-run), else as
    /// the run began: the child's.
    fn parent_policy(&self) -> crate::agent::ApprovalPolicy {
        let delegation = &self.delegation;
        delegation
            .lineage
            .chain
            .last()
            .and_then(|parent| delegation.engine.policy(parent))
            .unwrap_or(delegation.settings.approval)
    }

    /// What a child may do, for the approval: never more than its parent. It gets the
    /// parent's approval mode; a local child runs in a sandbox with the parent's network and
    /// shares (none added); a remote one gets the parent's network when the parent is
    /// sandboxed, and no shares.
    fn child_may(&self, remote: bool) -> String {
        let parent = &self.delegation.settings;
        let approvals = match self.parent_policy() {
            crate::agent::ApprovalPolicy::Ask => "approvals asked of you",
            crate::agent::ApprovalPolicy::Auto => "act without asking (auto)",
            crate::agent::ApprovalPolicy::ReadOnly => "read-only actions only",
        };
        let sandbox = local_sandbox(parent);
        let network = if sandbox.network {
            "network"
        } else {
            "no network"
        };
        if remote {
            return match parent.desktop.sandbox() {
                Some(_) => format!("{approvals}; sandboxed, {network}; no shared folders"),
                None => format!("{approvals}; the remote's own sandbox and network"),
            };
        }
        let shares = match sandbox.shares.as_slice() {
            [] => "no shared folders".to_string(),
            shares => format!(
                "shared: {}",
                shares
                    .iter()
                    .map(|s| s.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!("{approvals}; sandboxed, {network}; {shares}")
    }

    async fn start_local(&self, call: &Call) -> Result<Child, ChildError> {
        let engine = &self.delegation.engine;
        let parent = &self.delegation.settings;
        let sandbox = local_sandbox(parent);
        let settings = RunSettings {
            tools: None,
            max_turns: call.max_turns,
            max_cost_usd: call.max_cost_usd,
            system: None,
            check: None,
            desktop: DesktopSettings {
                agent: Some(true),
                sandbox: Some(true),
                shares: sandbox.shares,
                network: sandbox.network,
                ..parent.desktop.clone()
            },
            may_delegate: false,
            delegate_to: Vec::new(),
            lineage: self.delegation.lineage.clone(),
            approval: self.parent_policy(),
            ..parent.clone()
        };
        let spec = TaskSpec {
            session: None,
            input: vec![ContentBlock::text(call.prompt.clone())],
            settings,
            origin: Origin::Delegate,
            window: None,
        };
        let task = engine.submit(spec).await?;
        let watch = engine.watch(&task.id, 0)?;
        Ok(Child::Local {
            engine: engine.clone(),
            task: task.id,
            watch,
        })
    }
}

/// A local child's sandbox: the parent's (its network and shares, never more), or one with
/// the network and no shares for a parent that has none.
fn local_sandbox(parent: &RunSettings) -> crate::sandbox::SandboxChoice {
    parent.desktop.sandbox().unwrap_or_default()
}

/// Why following a child stopped before it ended.
enum Stop {
    Cancelled,
    TimedOut(Duration),
    Failed(ChildError),
}

/// Why a child task could not be started, followed, answered or cancelled: this process's
/// engine refused, or the remote service did, was unreachable or sent what cannot be used.
#[derive(Debug, thiserror::Error)]
enum ChildError {
    #[error(transparent)]
    Task(#[from] crate::tasks::TaskError),
    #[error("it did not end within {} s", LOCAL_CANCEL_WAIT.as_secs())]
    NotEnded,
    #[error("no token for `{name}`: set {variable}")]
    NoToken { name: String, variable: String },
    /// The HTTP client could not be built, or a body broke off.
    #[error(transparent)]
    Http(reqwest::Error),
    #[error("{base} is unreachable: {}", unreachable_why(.error))]
    Unreachable { base: String, error: reqwest::Error },
    #[error("{base} is not a Deskhand service (it sent no {API_VERSION_HEADER} header)")]
    NotDeskhand { base: String },
    #[error(
        "{base} speaks Deskhand API {found}; this Deskhand speaks {API_VERSION}: run the same version on both"
    )]
    Version { base: String, found: String },
    #[error(
        "{base} refused the token in {variable} (`deskhand serve --print-token` there shows the right one)"
    )]
    Token { base: String, variable: String },
    /// A refusal in the API's words: its error's kind and message.
    #[error("{base} refused: {message}")]
    Refused {
        base: String,
        kind: Option<String>,
        message: String,
    },
    #[error("{base} answered {status}")]
    Status {
        base: String,
        status: reqwest::StatusCode,
    },
    #[error("{base} answered without a task id")]
    NoTaskId { base: String },
    #[error("{base} sent an image that does not match its hash")]
    ImageHash { base: String },
    #[error("{base} sent {error}")]
    Image {
        base: String,
        error: crate::images::ImageError,
    },
    #[error("{base} sent {what} over the size limit")]
    TooLarge { base: String, what: &'static str },
    #[error("{base} refused the task's events: {status}")]
    Events {
        base: String,
        status: reqwest::StatusCode,
    },
    #[error("{base} sent an event this Deskhand cannot read: {error}")]
    Event {
        base: String,
        error: serde_json::Error,
    },
    #[error(transparent)]
    Sse(#[from] crate::llm::SseError),
    #[error("lost the task's events from {base}: {why}")]
    Lost { base: String, why: String },
}

/// A child task being followed: its events, its answer so far, and how it ended.
struct Follow<'a> {
    child: Child,
    delegation: &'a Delegation,
    ctx: &'a ToolContext,
    /// The text of the child's last assistant message: its answer.
    answer: String,
    /// The child's `done` event: how it ended, after how many turns, at what cost.
    done: Option<(RunStatus, u32, Option<f64>)>,
    kept: Kept,
}

/// How much of the child a call kept, and left out, against [`MAX_CHILD_EVENTS`],
/// [`MAX_CHILD_EVENT_BYTES`] and [`MAX_IMAGES_PER_CALL`].
#[derive(Default)]
struct Kept {
    events: usize,
    bytes: usize,
    images: usize,
    left_out: usize,
    left_out_bytes: usize,
}

impl Follow<'_> {
    /// The child's events until its `done`, which ends the following even if the child's
    /// stream stays open.
    async fn follow_to_end(&mut self) -> Result<(), Stop> {
        while let Some(event) = self.child.next().await.map_err(Stop::Failed)? {
            self.seen(event).await?;
            if self.done.is_some() {
                break;
            }
        }
        Ok(())
    }

    async fn seen(&mut self, event: AgentEvent) -> Result<(), Stop> {
        let mut ask = None;
        match &event {
            // Streaming pieces: the whole message follows.
            AgentEvent::TextDelta { .. } | AgentEvent::ThinkingDelta { .. } => return Ok(()),
            AgentEvent::Message { message } if message.role == Role::Assistant => {
                let text = message.text();
                if !text.is_empty() {
                    self.answer = text;
                }
            }
            AgentEvent::Done {
                status,
                turns,
                cost_usd,
                ..
            } => self.done = Some((*status, *turns, *cost_usd)),
            AgentEvent::ApprovalNeeded { request } => ask = Some(request.clone()),
            _ => {}
        }
        let always = ask.is_some() || matches!(event, AgentEvent::Done { .. });
        let size = serde_json::to_string(&event).map_or(0, |json| json.len());
        let fits =
            self.kept.events < MAX_CHILD_EVENTS && self.kept.bytes + size <= MAX_CHILD_EVENT_BYTES;
        if always || fits {
            if let AgentEvent::ToolResult { images, .. } = &event {
                self.keep_images(images).await;
            }
            self.kept.events += 1;
            self.kept.bytes += size;
            self.emit(AgentEvent::ChildEvent {
                task: self.child.id().clone(),
                event: Box::new(event),
            });
        } else {
            self.kept.left_out += 1;
            self.kept.left_out_bytes += size;
        }
        if let Some(request) = ask {
            self.ask_person(request).await?;
        }
        Ok(())
    }

    /// A remote child's screenshots, fetched into the parent's history before its event is
    /// shown, so the side panel finds them by hash as it finds a local child's (which share
    /// the store). Only real images are kept (sniffed as attachments are, whatever their
    /// label), at most [`MAX_IMAGES_PER_EVENT`] of an event and [`MAX_IMAGES_PER_CALL`] of
    /// a call. One that is not kept is left out, and the panel says it is not available;
    /// the task goes on.
    async fn keep_images(&mut self, images: &[ImageSource]) {
        let Child::Remote(remote) = &self.child else {
            return;
        };
        let store = self.delegation.engine.store();
        for image in images.iter().take(MAX_IMAGES_PER_EVENT) {
            let sha256 = &ImageRef::of(image).sha256;
            if store.image(sha256).is_ok() {
                continue;
            }
            if self.kept.images >= MAX_IMAGES_PER_CALL {
                return;
            }
            self.kept.images += 1;
            if let Ok((media_type, bytes)) = remote.image(sha256).await {
                let _ = store.keep_image(&self.delegation.session_id, media_type, &bytes);
            }
        }
    }

    fn emit(&self, event: AgentEvent) {
        let _ = self.ctx.progress.send(Progress::Event(Box::new(event)));
    }

    /// The child's approval, asked of the parent's person under an id of its own, and the
    /// answer passed on to the child.
    async fn ask_person(&mut self, request: ApprovalRequest) -> Result<(), Stop> {
        let child_call = request.tool_use_id.clone();
        let mut asked = request;
        asked.tool_use_id = format!("{}.{child_call}", short(self.child.id().as_str())).into();
        asked.plan.summary = format!("[delegated task] {}", asked.plan.summary);
        self.emit(AgentEvent::ApprovalNeeded {
            request: asked.clone(),
        });
        let approver = TaskApprover {
            approvals: self.delegation.approvals.clone(),
        };
        let answer = approver.decide(&asked).await;
        self.emit(AgentEvent::ApprovalDecided {
            id: asked.tool_use_id,
            decision: answer.decision.clone(),
            by: answer.answerer.by,
            client: answer.answerer.client.clone(),
        });
        self.child
            .answer(&child_call, answer)
            .await
            .map_err(Stop::Failed)
    }

    /// When some of the child's events were left out: a summary in the parent's history (a
    /// child `error` event) and a note for the call's result.
    fn left_out(&self, task: &TaskId) -> String {
        if self.kept.left_out == 0 {
            return String::new();
        }
        let note = format!(
            "{} of the child's events ({} bytes) were left out: a delegated call keeps at most \
             {MAX_CHILD_EVENTS} events and {MAX_CHILD_EVENT_BYTES} bytes of them",
            self.kept.left_out, self.kept.left_out_bytes
        );
        self.emit(AgentEvent::ChildEvent {
            task: task.clone(),
            event: Box::new(AgentEvent::Error {
                kind: None,
                message: note.clone(),
            }),
        });
        format!("\n{note}.")
    }

    /// The call's result from how following ended; the child is cancelled if it still runs.
    async fn report(mut self, to: &str, ended: Result<(), Stop>) -> ToolOutput {
        let task = self.child.id().clone();
        let stopped = match ended {
            Ok(()) => None,
            Err(Stop::Cancelled) => Some("the run was stopped".to_string()),
            Err(Stop::TimedOut(after)) => Some(format!(
                "no answer within {} s (`timeout_secs`)",
                after.as_secs()
            )),
            Err(Stop::Failed(e)) => Some(e.to_string()),
        };
        let left_out = self.left_out(&task);
        if let Some(why) = stopped {
            let cancelled = match self.child.cancel().await {
                Ok(()) => "it was cancelled".to_string(),
                Err(e) => format!("cancelling it failed: {e}"),
            };
            return ToolOutput::error(format!(
                "the delegated task {task} on {to} did not finish: {why}; {cancelled}.{left_out}"
            ));
        }
        let Some((status, turns, cost)) = self.done else {
            return ToolOutput::error(format!(
                "the delegated task {task} on {to} ended without reporting how"
            ));
        };
        // A cost that is not a finite amount of at least zero is unknown: it never lowers the
        // parent's spend.
        let cost = cost.filter(|usd| usd.is_finite() && *usd >= 0.0);
        if let Some(usd) = cost {
            let _ = self.ctx.progress.send(Progress::Spent(usd));
        }
        let cost = cost.map_or("unknown".to_string(), |usd| format!("${usd:.4}"));
        let answer = match self.answer.trim() {
            "" => "(no answer text)".to_string(),
            text => {
                let mut capped = crate::tools::capped::CappedOutput::new(MAX_ANSWER_TEXT_BYTES);
                capped.push(text.as_bytes());
                capped.text()
            }
        };
        let text = format!(
            "The delegated task {task} on {to} ended `{}` after {turns} turn(s); it cost {cost}.{left_out}\n\
             Its answer:\n{answer}",
            status.name()
        );
        match status {
            RunStatus::Done => ToolOutput::text(text),
            _ => ToolOutput::error(text),
        }
    }
}

/// The first characters of an id.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// The child task, here or on a remote service.
enum Child {
    Local {
        engine: Engine,
        task: TaskId,
        watch: Watch,
    },
    Remote(Remote),
}

impl Child {
    fn id(&self) -> &TaskId {
        match self {
            Self::Local { task, .. } => task,
            Self::Remote(remote) => &remote.task,
        }
    }

    /// The child's next event as it stored it; `None` once it ended.
    async fn next(&mut self) -> Result<Option<AgentEvent>, ChildError> {
        match self {
            Self::Local { watch, .. } => loop {
                match watch.next().await {
                    Some(TaskUpdate::Event { event, .. }) => return Ok(Some(event)),
                    Some(TaskUpdate::Notice(_)) => continue,
                    Some(TaskUpdate::Ended(_)) | None => return Ok(None),
                }
            },
            Self::Remote(remote) => remote.next().await,
        }
    }

    /// Passes the parent's answer on: a local child records who gave it; a remote one
    /// records this Deskhand, an API client with its token.
    async fn answer(&self, call: &ToolUseId, answer: Answer) -> Result<(), ChildError> {
        let Answer {
            decision, answerer, ..
        } = answer;
        match self {
            Self::Local { engine, task, .. } => engine
                .answer(task, Some(call), decision, answerer)
                .map(drop)
                .map_err(ChildError::from),
            Self::Remote(remote) => remote.answer(call, decision).await,
        }
    }

    /// Cancels the child; a local one is waited for until it ended (its state stored, its
    /// desktop closed), since the parent's process may end right after.
    async fn cancel(&mut self) -> Result<(), ChildError> {
        match self {
            Self::Local {
                engine,
                task,
                watch,
            } => {
                match engine.cancel(task) {
                    Ok(()) | Err(crate::tasks::TaskError::Finished { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
                let ended = async { while watch.next().await.is_some() {} };
                tokio::time::timeout(LOCAL_CANCEL_WAIT, ended)
                    .await
                    .map_err(|_| ChildError::NotEnded)
            }
            Self::Remote(remote) => remote.cancel().await,
        }
    }
}

/// A task on a remote `deskhand serve`, over its HTTP API.
struct Remote {
    client: reqwest::Client,
    base: String,
    token: ApiKey,
    task: TaskId,
    /// The id of the last event read: a broken stream resumes after it (`Last-Event-ID`).
    last_event: i64,
    /// In a mutex only to be `Sync` (a stream is not); reached through `get_mut`, never
    /// locked.
    stream: Option<std::sync::Mutex<EventStream>>,
    reconnects: u32,
}

type EventStream = (
    futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    crate::llm::sse::SseParser,
    std::collections::VecDeque<crate::llm::sse::SseEvent>,
);

impl Remote {
    /// Checks the remote (reachable, the token, the API version) and submits the task.
    async fn submit(
        target: &RemoteTarget,
        call: &Call,
        delegation: &Delegation,
        policy: crate::agent::ApprovalPolicy,
    ) -> Result<Self, ChildError> {
        let variable = target.token_variable();
        let Some(token) = crate::key_guard::env_var(&variable).and_then(|t| ApiKey::new(t).ok())
        else {
            return Err(ChildError::NoToken {
                name: target.name.clone(),
                variable,
            });
        };
        // A redirect could take the token to another host: none is followed.
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(ChildError::Http)?;
        let mut remote = Self {
            client,
            base: target.url.clone(),
            token,
            task: TaskId::from(String::new()),
            last_event: 0,
            stream: None,
            reconnects: 0,
        };
        remote.check(&target.name).await?;
        let lineage = &delegation.lineage;
        let mut body = json!({
            "prompt": call.prompt,
            "max_turns": call.max_turns,
            "approve": policy,
            "delegation": {"hops": lineage.hops(), "chain": lineage.chain},
        });
        if let Some(usd) = call.max_cost_usd {
            body["max_cost_usd"] = json!(usd);
        }
        // A sandboxed parent's child is sandboxed too, with the parent's network at most.
        if let Some(sandbox) = delegation.settings.desktop.sandbox() {
            body["sandbox"] = json!(true);
            body["network"] = json!(sandbox.network);
        }
        let task = remote
            .request(reqwest::Method::POST, "/v1/tasks", Some(body))
            .await?;
        remote.task = task["id"]
            .as_str()
            .ok_or_else(|| ChildError::NoTaskId {
                base: remote.base.clone(),
            })?
            .into();
        Ok(remote)
    }

    /// Whether the remote is a Deskhand that speaks this API and takes the token.
    async fn check(&self, name: &str) -> Result<(), ChildError> {
        let response = self.get("/v1/tasks?limit=1").await?;
        let version = response
            .headers()
            .get(API_VERSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match version {
            None => {
                return Err(ChildError::NotDeskhand {
                    base: self.base.clone(),
                });
            }
            Some(found) if found != API_VERSION => {
                return Err(ChildError::Version {
                    base: self.base.clone(),
                    found,
                });
            }
            Some(_) => {}
        }
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            return Err(ChildError::Token {
                base: self.base.clone(),
                variable: RemoteTarget {
                    name: name.into(),
                    url: String::new(),
                }
                .token_variable(),
            });
        }
        if !response.status().is_success() {
            return Err(self.refusal(response).await);
        }
        Ok(())
    }

    /// A refusal in the API's words (its error's kind and message), else its status.
    async fn refusal(&self, response: reqwest::Response) -> ChildError {
        let status = response.status();
        let body = self
            .read_capped(response, MAX_ANSWER_BYTES, "an answer")
            .await
            .unwrap_or_default();
        let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let base = self.base.clone();
        match answer["error"]["message"].as_str() {
            Some(message) => ChildError::Refused {
                base,
                kind: answer["error"]["kind"].as_str().map(str::to_string),
                message: message.to_string(),
            },
            None => ChildError::Status { base, status },
        }
    }

    fn unreachable(&self, error: reqwest::Error) -> ChildError {
        ChildError::Unreachable {
            base: self.base.clone(),
            error,
        }
    }

    /// A GET of `path` with the token, within the request timeout.
    async fn get(&self, path: &str) -> Result<reqwest::Response, ChildError> {
        self.client
            .get(format!("{}{path}", self.base))
            .bearer_auth(self.token.expose())
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| self.unreachable(e))
    }

    /// An image of the child's history by its hash: read up to the API's image limit, kept
    /// only if its bytes have that hash and are an image the API takes (PNG, JPEG, GIF or
    /// WebP within its limits), and typed by its bytes, never by the remote's label.
    async fn image(&self, sha256: &str) -> Result<(&'static str, Vec<u8>), ChildError> {
        let response = self.get(&format!("/v1/images/{sha256}")).await?;
        if !response.status().is_success() {
            return Err(ChildError::Status {
                base: self.base.clone(),
                status: response.status(),
            });
        }
        let bytes = self
            .read_capped(response, crate::images::MAX_IMAGE_BYTES, "an image")
            .await?;
        if crate::images::content_hash(&bytes) != sha256 {
            return Err(ChildError::ImageHash {
                base: self.base.clone(),
            });
        }
        let media_type = crate::images::checked_media_type(&bytes, &format!("image {sha256}"))
            .map_err(|error| ChildError::Image {
                base: self.base.clone(),
                error,
            })?;
        Ok((media_type, bytes))
    }

    /// A response's body, refused once it grows past `limit` bytes: a remote is not trusted
    /// to end what it sends.
    async fn read_capped(
        &self,
        response: reqwest::Response,
        limit: usize,
        what: &'static str,
    ) -> Result<Vec<u8>, ChildError> {
        use futures_util::StreamExt as _;
        let mut body = response.bytes_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.next().await {
            bytes.extend_from_slice(&chunk.map_err(ChildError::Http)?);
            if bytes.len() > limit {
                return Err(ChildError::TooLarge {
                    base: self.base.clone(),
                    what,
                });
            }
        }
        Ok(bytes)
    }

    /// A request other than the event stream: its JSON answer, or the API's error message.
    async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ChildError> {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(self.token.expose())
            .timeout(REQUEST_TIMEOUT);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        if !response.status().is_success() {
            return Err(self.refusal(response).await);
        }
        let body = self
            .read_capped(response, MAX_ANSWER_BYTES, "an answer")
            .await?;
        Ok(serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    async fn open_stream(&mut self) -> Result<(), ChildError> {
        let response = self
            .client
            .get(format!("{}/v1/tasks/{}/events", self.base, self.task))
            .bearer_auth(self.token.expose())
            .header("Last-Event-ID", self.last_event.to_string())
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        if !response.status().is_success() {
            return Err(ChildError::Events {
                base: self.base.clone(),
                status: response.status(),
            });
        }
        use futures_util::StreamExt as _;
        self.stream = Some(std::sync::Mutex::new((
            response.bytes_stream().boxed(),
            crate::llm::sse::SseParser::default(),
            Default::default(),
        )));
        Ok(())
    }

    async fn next(&mut self) -> Result<Option<AgentEvent>, ChildError> {
        use futures_util::StreamExt as _;
        loop {
            if self.stream.is_none() {
                self.open_stream().await?;
            }
            let Some(stream) = self.stream.as_mut() else {
                continue;
            };
            let (bytes, parser, ready) = stream.get_mut().unwrap_or_else(|e| e.into_inner());
            if let Some(event) = ready.pop_front() {
                if event.event == "notice" {
                    continue;
                }
                let read: AgentEvent =
                    serde_json::from_str(&event.data).map_err(|error| ChildError::Event {
                        base: self.base.clone(),
                        error,
                    })?;
                if let Some(id) = value_id(&event) {
                    self.last_event = id;
                }
                return Ok(Some(read));
            }
            match bytes.next().await {
                Some(Ok(chunk)) => {
                    let events = parser.push(&chunk)?;
                    ready.extend(events);
                }
                // The stream ends with the task; a broken one is opened again after the
                // last event read, unless the task has ended.
                other => {
                    self.stream = None;
                    let task = self
                        .request(
                            reqwest::Method::GET,
                            &format!("/v1/tasks/{}", self.task),
                            None,
                        )
                        .await?;
                    let running = matches!(
                        task["state"].as_str(),
                        Some("queued" | "running" | "waiting_for_approval")
                    );
                    if !running {
                        return Ok(None);
                    }
                    self.reconnects += 1;
                    if self.reconnects > RECONNECTS {
                        let why = match other {
                            Some(Err(e)) => e.to_string(),
                            _ => "the stream ended".into(),
                        };
                        return Err(ChildError::Lost {
                            base: self.base.clone(),
                            why,
                        });
                    }
                }
            }
        }
    }

    async fn answer(&self, call: &ToolUseId, decision: Decision) -> Result<(), ChildError> {
        let (path, body) = match decision {
            Decision::Approve => ("approve", json!({"tool_use_id": call})),
            Decision::ApproveKind => ("approve", json!({"tool_use_id": call, "always": true})),
            Decision::Deny { reason } => ("deny", json!({"tool_use_id": call, "reason": reason})),
        };
        self.request(
            reqwest::Method::POST,
            &format!("/v1/tasks/{}/{path}", self.task),
            Some(body),
        )
        .await
        .map(drop)
    }

    async fn cancel(&self) -> Result<(), ChildError> {
        let path = format!("/v1/tasks/{}/cancel", self.task);
        match self.request(reqwest::Method::POST, &path, None).await {
            Ok(_) => Ok(()),
            // Ended meanwhile (the API's `finished`): nothing left to cancel.
            Err(ChildError::Refused {
                kind: Some(kind), ..
            }) if kind == "finished" => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The SSE id of an event, which the parser does not keep: the service sends it as `id`.
fn value_id(event: &crate::llm::sse::SseEvent) -> Option<i64> {
    event.id.as_deref().and_then(|id| id.parse().ok())
}

/// Why a request found no service, in words.
fn unreachable_why(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "it did not answer in time".to_string()
    } else if error.is_connect() {
        "cannot connect".to_string()
    } else {
        error.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn tool(store: &Store, remotes: &[&str]) -> DelegateTool {
        DelegateTool::new(Delegation {
            engine: Engine::new(store.clone()),
            session_id: "s".into(),
            settings: RunSettings::default(),
            lineage: Lineage::default(),
            remotes: remotes
                .iter()
                .map(|r| RemoteTarget::parse(r).unwrap())
                .collect(),
            approvals: Arc::default(),
        })
    }

    #[test]
    fn a_target_is_a_name_and_an_http_url_and_its_token_variable_follows_the_name() {
        let target = RemoteTarget::parse("build-box=http://127.0.0.1:7733/").unwrap();
        assert_eq!(target.name, "build-box");
        assert_eq!(target.url, "http://127.0.0.1:7733");
        assert_eq!(target.token_variable(), "DESKHAND_DELEGATE_TOKEN_BUILD_BOX");
        for wrong in [
            "no-equals",
            "=http://x",
            "local=http://x",
            "sp ace=http://x",
            "far=ftp://x",
            "far=not a url",
        ] {
            assert!(RemoteTarget::parse(wrong).is_err(), "{wrong}");
        }
    }

    #[test]
    fn the_agents_programs_never_get_a_delegate_token() {
        let withheld = |name: &str| {
            crate::program_env::is_secret(std::ffi::OsStr::new(name), std::ffi::OsStr::new("t"))
        };
        assert!(withheld("DESKHAND_DELEGATE_TOKEN_FAR"));
        assert!(withheld("deskhand_delegate_token_far"));
        assert!(!withheld("DESKHAND_DELEGATE"));
    }

    #[test]
    fn a_call_is_checked_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tool = tool(&store, &["far=http://127.0.0.1:9"]);
        let call = tool.read(&json!({"prompt": "go", "to": "far"})).unwrap();
        assert_eq!(
            (call.to.as_str(), call.max_turns, call.timeout),
            ("far", DEFAULT_CHILD_TURNS, Duration::from_secs(600))
        );
        assert_eq!(tool.read(&json!({"prompt": "go"})).unwrap().to, LOCAL);
        for (input, says) in [
            (json!({"prompt": "  "}), "`prompt`"),
            (json!({"prompt": "go", "to": "near"}), "no target `near`"),
            (json!({"prompt": "go", "max_turns": 0}), "`max_turns`"),
            (json!({"prompt": "go", "max_turns": 201}), "`max_turns`"),
            (json!({"prompt": "go", "max_cost_usd": 0}), "`max_cost_usd`"),
            (
                json!({"prompt": "go", "timeout_secs": 3601}),
                "`timeout_secs`",
            ),
            (json!({"prompt": "go", "extra": 1}), "extra"),
        ] {
            let error = tool
                .read(&input)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(says), "{input}: {error}");
        }
        let call = tool
            .read(&json!({"prompt": "first\nsecond", "to": "far"}))
            .unwrap();
        let plan = tool.plan(&call).unwrap();
        assert_eq!(plan.kind, "delegate.far");
        assert!(
            plan.summary
                .starts_with("delegate to far (http://127.0.0.1:9): first (the child may: "),
            "{}",
            plan.summary
        );
        assert!(!plan.read_only);
    }

    /// The approval says what the child may do, and that is never more than the parent may:
    /// a parent without the network has a child without it, with its shares and no others.
    #[test]
    fn the_approval_says_what_the_child_may_do_and_it_is_at_most_the_parents() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut tool = tool(&store, &["far=http://127.0.0.1:9"]);
        let plan = |tool: &DelegateTool, to: &str| {
            let call = tool.read(&json!({"prompt": "go", "to": to})).unwrap();
            tool.plan(&call).unwrap().summary
        };
        assert!(
            plan(&tool, LOCAL).ends_with(
                "(the child may: approvals asked of you; sandboxed, network; no shared folders)"
            ),
            "{}",
            plan(&tool, LOCAL)
        );
        tool.delegation.settings.approval = crate::agent::ApprovalPolicy::ReadOnly;
        tool.delegation.settings.desktop = DesktopSettings {
            sandbox: Some(true),
            shares: vec!["/srv/shared".into()],
            network: false,
            ..Default::default()
        };
        let local = plan(&tool, LOCAL);
        assert!(
            local.ends_with(
                "(the child may: read-only actions only; sandboxed, no network; shared: /srv/shared)"
            ),
            "{local}"
        );
        let remote = plan(&tool, "far");
        assert!(
            remote.ends_with("read-only actions only; sandboxed, no network; no shared folders)"),
            "{remote}"
        );
        let child = local_sandbox(&tool.delegation.settings);
        assert!(!child.network);
        assert_eq!(child.shares, vec![std::path::PathBuf::from("/srv/shared")]);
    }

    /// A 1x1 PNG's signature and header: what the image sniffing reads.
    fn tiny_png() -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]);
        png
    }

    /// A remote's image is kept only when its bytes have the hash asked for and are an image
    /// (whatever the remote labels them), and read only up to the API's image limit: a
    /// service that sends other bytes under a hash, garbage, or an endless image, cannot put
    /// them in the parent's history. An endless answer to a request is cut off the same way.
    #[tokio::test]
    async fn a_remote_image_is_kept_only_if_its_bytes_have_its_hash_and_fit_the_limit() {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let png = tiny_png();
        let garbage = b"<html>not an image</html>".to_vec();
        let bodies = [png.clone(), png.clone(), garbage.clone()];
        std::thread::spawn(move || {
            for (i, stream) in listener.incoming().take(5).enumerate() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.read(&mut [0u8; 4096]);
                if let Some(body) = bodies.get(i) {
                    // Labelled as the remote likes: the bytes decide.
                    let _ = stream.write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                             Connection: close\r\n\r\n",
                            body.len()
                        )
                        .as_bytes(),
                    );
                    let _ = stream.write_all(body);
                    continue;
                }
                // An image, then an answer, that never ends: the reader must stop at the limit.
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n\r\n",
                );
                let chunk = vec![0u8; 64 * 1024];
                while stream.write_all(&chunk).is_ok() {}
            }
        });
        let remote = Remote {
            client: reqwest::Client::new(),
            base,
            token: ApiKey::new("token").unwrap(),
            task: TaskId::from(String::new()),
            last_event: 0,
            stream: None,
            reconnects: 0,
        };
        let hash = crate::images::content_hash(&png);
        assert_eq!(remote.image(&hash).await.unwrap(), ("image/png", png));
        let wrong = remote.image(&"0".repeat(64)).await.unwrap_err();
        assert!(matches!(wrong, ChildError::ImageHash { .. }), "{wrong:?}");
        assert!(
            wrong.to_string().contains("does not match its hash"),
            "{wrong}"
        );
        let not_an_image = remote
            .image(&crate::images::content_hash(&garbage))
            .await
            .unwrap_err();
        assert!(
            not_an_image
                .to_string()
                .contains("is not a PNG, JPEG, GIF or WebP image"),
            "{not_an_image}"
        );
        let endless = remote.image(&hash).await.unwrap_err();
        assert!(
            matches!(
                endless,
                ChildError::TooLarge {
                    what: "an image",
                    ..
                }
            ),
            "{endless:?}"
        );
        assert!(
            endless.to_string().contains("an image over the size limit"),
            "{endless}"
        );
        let endless = remote
            .request(reqwest::Method::GET, "/v1/tasks/t1", None)
            .await
            .unwrap_err();
        assert!(
            endless
                .to_string()
                .contains("an answer over the size limit"),
            "{endless}"
        );
    }
}
