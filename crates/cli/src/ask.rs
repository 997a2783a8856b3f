//! `deskhand ask`: one agent run on a prompt.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use deskhand_engine::agent::history;
use deskhand_engine::agent::stall::{StallAnswer, StallStep};
use deskhand_engine::agent::verify::{Check, DEFAULT_CHECK_TIMEOUT, Verification};
use deskhand_engine::agent::{
    AgentEvent, Answerer, ApprovalPolicy, DEFAULT_MAX_TURNS, DecidedBy, Decision, RunStatus,
};
use deskhand_engine::delegate::RemoteTarget;
use deskhand_engine::files;
use deskhand_engine::ids::ToolUseId;
use deskhand_engine::images::MAX_IMAGE_BYTES;
use deskhand_engine::llm::ContentBlock;
use deskhand_engine::llm::config::ProviderSettings;
use deskhand_engine::tasks::{
    DEFAULT_KEEP_SCREENSHOTS, DEFAULT_SUMMARIZE_AT, DesktopSettings, Engine, Origin, PrepareError,
    RunSettings, StallChoice, TaskError, TaskInfo, TaskSpec, TaskState, TaskUpdate, parse_seconds,
};
use tokio_util::sync::CancellationToken;

use reqwest::Method;
use serde_json::json;

use crate::UsageError;
use crate::approver;
use crate::printer::Printer;
use crate::service::{Service, ServiceArgs, TaskUpdates};

#[derive(Args)]
pub struct AskArgs {
    /// Print one JSON event per line on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// Which actions run: ask on the terminal, allow all, or allow read-only ones only.
    #[arg(long, default_value = "ask", value_parser = ["ask", "auto", "deny"])]
    approve: String,
    /// The most model requests in this run; the last is announced to the model.
    #[arg(long, default_value_t = DEFAULT_MAX_TURNS, value_parser = clap::value_parser!(u32).range(1..))]
    max_turns: u32,
    /// Tools to offer, comma-separated (default: every tool that works on this machine).
    #[arg(long, value_delimiter = ',')]
    tools: Option<Vec<String>>,
    /// Who serves the model: anthropic, openai, azure, openrouter, ollama, lmstudio, vllm or
    /// compatible (default: $LLM_PROVIDER, else Anthropic, else the one whose key is set).
    #[arg(long)]
    provider: Option<String>,
    /// The model (default: $ANTHROPIC_MODEL or $OPENAI_MODEL, else the provider's default).
    #[arg(long)]
    model: Option<String>,
    /// The provider's base URL (default: $ANTHROPIC_BASE_URL, $OPENAI_BASE_URL or
    /// $AZURE_OPENAI_ENDPOINT, else the service's own).
    #[arg(long)]
    base_url: Option<String>,
    /// How hard the model thinks: low, medium, high, xhigh or max (Claude 5 models and GPT
    /// models with the GA computer tool; default: $ANTHROPIC_EFFORT for Anthropic, else high
    /// for Claude 5 and the service's own for GPT).
    #[arg(long, value_name = "LEVEL", value_parser = ["low", "medium", "high", "xhigh", "max"])]
    effort: Option<String>,
    /// Replaces the default system prompt.
    #[arg(long)]
    system: Option<String>,
    /// An image (PNG, JPEG, GIF or WebP) to send with the prompt; repeatable.
    #[arg(long)]
    attach: Vec<PathBuf>,
    /// Stop cleanly once the run has cost this many US dollars (needs a known model price).
    #[arg(long, value_name = "USD", env = "DESKHAND_MAX_COST")]
    max_cost: Option<f64>,
    /// Stop cleanly once the run has used this many tokens (input, output and cache).
    #[arg(long, value_name = "N", env = "DESKHAND_MAX_TOKENS")]
    max_tokens: Option<u64>,
    /// Seconds one bash command may run before it is killed (default 120).
    #[arg(long, value_name = "SECS", env = "DESKHAND_BASH_TIMEOUT", value_parser = parse_seconds)]
    bash_timeout: Option<Duration>,
    /// Screenshots sent to the model at most; older ones are replaced by a placeholder.
    #[arg(long, default_value_t = DEFAULT_KEEP_SCREENSHOTS, value_name = "N")]
    keep_screenshots: usize,
    /// Summarize the older turns once a request would fill this share of the model's context
    /// window.
    #[arg(long, default_value_t = DEFAULT_SUMMARIZE_AT, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(10..=95))]
    summarize_at: u8,
    /// The monitor the computer tool uses (see `deskhand monitors`; default: the primary one).
    #[arg(long, value_name = "N", env = "DESKHAND_MONITOR")]
    monitor: Option<usize>,
    /// Where history is kept (default: the OS data directory).
    #[arg(long, env = "DESKHAND_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Continue this stored session (its id, or the first characters of it) with its full
    /// history, its saved check and its desktop.
    #[arg(long, value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    session: Option<String>,
    /// Leave the notes out of this run's system prompt (the `memory` tool stays).
    #[arg(long)]
    no_memory: bool,
    /// Number the interactive elements on each screenshot and list their refs beside it, for
    /// models that click imprecisely (default: the `set-of-marks` setting, off).
    #[arg(long)]
    set_of_marks: bool,
    /// A shell command run after the model stops, on the same display: exit 0 means the job
    /// was done (`verified`). A failure goes back to the model once. Saved with the session:
    /// its later tasks are checked by it (default: the session's saved check).
    #[arg(long, value_name = "CMD")]
    check: Option<String>,
    /// Seconds the check may run before it is killed (default 60).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    check_timeout: Option<Duration>,
    /// Exit non-zero (8) when the run ends without a passed check.
    #[arg(long)]
    require_verified: bool,
    /// Turn the stall breaker off.
    #[arg(long)]
    no_stall_check: bool,
    /// The stall breaker steps in after the same action on the same screen N times
    /// (default: the stall-repeats setting, else 3).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    stall_repeats: Option<u32>,
    /// … after N actions in a row that change nothing on the screen (default 3).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    stall_no_ops: Option<u32>,
    /// … after a cycle between two or three screens goes round N times (default 3).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    stall_cycles: Option<u32>,
    /// Seconds a stall question waits for an answer before the run ends `stalled`.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    stall_ask_timeout: Option<Duration>,
    /// Hand the task to the running `deskhand serve`, print its id and return (follow it
    /// with `deskhand tasks watch ID`).
    #[arg(long)]
    background: bool,
    /// The service's socket, for --background (default: $XDG_RUNTIME_DIR/deskhand/api.sock).
    #[arg(long, env = "DESKHAND_SOCKET")]
    socket: Option<PathBuf>,
    /// Where the agent works: `person` (your screen) or `agent` (a private desktop that
    /// Deskhand starts, sandboxed by default; see docs/agent-desktop.md). Default: the
    /// session's saved choice with --session, else `person`.
    #[arg(long, value_parser = ["person", "agent"])]
    desktop: Option<String>,
    /// Run the agent's programs in a bubblewrap sandbox (default with --desktop agent, or as
    /// the session saved it).
    #[arg(long, conflicts_with = "no_sandbox")]
    sandbox: bool,
    /// No sandbox, even on an agent desktop.
    #[arg(long)]
    no_sandbox: bool,
    /// A folder the sandbox may read and write, at the same path; repeatable.
    #[arg(long, value_name = "DIR")]
    share: Vec<PathBuf>,
    /// Cut the sandbox off the network.
    #[arg(long)]
    no_network: bool,
    /// A remote `deskhand serve` the `delegate` tool may hand tasks to, by name; its token
    /// is read from DESKHAND_DELEGATE_TOKEN_<NAME>. Repeatable; offers the tool.
    #[arg(long, value_name = "NAME=URL", value_parser = RemoteTarget::parse, conflicts_with = "background")]
    delegate_to: Vec<RemoteTarget>,
    /// Keep the agent desktop after the task for the session's next task. Only the service
    /// outlives a task, so this goes with --background (a `deskhand ask` ends its desktop
    /// when it exits).
    #[arg(long, requires = "background")]
    keep_desktop: bool,
    /// What to do; `-` reads it from stdin (for a long prompt).
    prompt: String,
}

/// The most a prompt read from stdin may be: the API's whole request is 32 MB at most.
const MAX_STDIN_PROMPT: u64 = 32 * 1024 * 1024;

impl AskArgs {
    /// The run these flags ask for, as the engine takes it.
    fn spec(&self) -> Result<TaskSpec> {
        let approval: ApprovalPolicy = self.approve.parse().map_err(anyhow::Error::msg)?;
        let prompt = self.prompt()?;
        let mut attachments = Vec::new();
        for path in &self.attach {
            attachments.push(load_attachment(path)?);
        }
        // Refused before anything is stored or sent: the API would refuse it, and a stored
        // empty prompt would break the session.
        let input = history::prompt_content(&prompt, attachments)
            .map_err(|empty| UsageError(empty.to_string()))?;
        let check = self
            .check
            .as_deref()
            .map(|command| {
                Check::new(command, self.check_timeout.unwrap_or(DEFAULT_CHECK_TIMEOUT))
                    .map_err(|e| anyhow::anyhow!("--check: {e}"))
            })
            .transpose()?;
        Ok(TaskSpec {
            session: self.session.clone(),
            input,
            settings: RunSettings {
                provider: ProviderSettings {
                    provider: self.provider.clone(),
                    model: self.model.clone(),
                    base_url: self.base_url.clone(),
                    effort: self.effort.clone(),
                },
                made_provider: None,
                api_key: None,
                // `--base-url` is the person's own choice.
                base_url_from_request: false,
                tools: self.tools.clone(),
                approval,
                max_turns: self.max_turns,
                max_cost_usd: self.max_cost,
                max_tokens: self.max_tokens,
                bash_timeout: self.bash_timeout,
                keep_screenshots: self.keep_screenshots,
                summarize_at: self.summarize_at,
                monitor: self.monitor,
                screenshot_size: None,
                system: self.system.clone(),
                memory: !self.no_memory,
                check,
                stall: StallChoice {
                    enabled: !self.no_stall_check,
                    repeats: self.stall_repeats,
                    no_ops: self.stall_no_ops,
                    cycles: self.stall_cycles,
                    ask_timeout: self.stall_ask_timeout,
                },
                desktop: DesktopSettings {
                    agent: self.desktop.as_deref().map(|desktop| desktop == "agent"),
                    sandbox: self.sandbox_flag(),
                    keep: self.keep_desktop.then_some(true),
                    shares: self.share.clone(),
                    network: !self.no_network,
                },
                delegate_to: self.delegate_to.clone(),
                may_delegate: true,
                lineage: Default::default(),
                set_of_marks: self.set_of_marks.then_some(true),
            },
            origin: Origin::Cli,
            window: None,
        })
    }
}

impl AskArgs {
    /// `--sandbox` or `--no-sandbox`; `None`: neither.
    fn sandbox_flag(&self) -> Option<bool> {
        (self.sandbox || self.no_sandbox).then_some(self.sandbox)
    }

    /// The prompt: the argument, or stdin for `-`.
    fn prompt(&self) -> Result<String> {
        match self.prompt.as_str() {
            "-" => read_stdin_prompt(),
            _ => Ok(self.prompt.clone()),
        }
    }
}

/// The prompt from stdin, up to [`MAX_STDIN_PROMPT`] bytes of UTF-8.
fn read_stdin_prompt() -> Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_STDIN_PROMPT + 1)
        .read_to_end(&mut bytes)
        .context("cannot read the prompt from stdin")?;
    if bytes.len() as u64 > MAX_STDIN_PROMPT {
        bail!("the prompt on stdin is over {MAX_STDIN_PROMPT} bytes, more than the API takes");
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("the prompt on stdin is not UTF-8"))
}

/// Runs the task in this process and follows it on the terminal, or hands it to the
/// service with --background. The exit status says how the run ended and whether it was
/// verified.
pub async fn run(args: AskArgs) -> Result<i32> {
    if args.background {
        return background(&args).await.map(|()| 0);
    }
    let spec = args.spec()?;
    let store = deskhand_engine::store::Store::open_default(args.data_dir.clone())?;
    let notice = store.privacy_notice();
    let engine = Engine::new(store);
    let cancel = CancellationToken::new();
    watch_ctrl_c(cancel.clone());
    // A settings mistake is one line: the store's privacy notice waits until the task runs.
    let task = engine.submit(spec).await.map_err(|e| match e {
        // Flags that do not go together, as clap refuses others.
        TaskError::Prepare(PrepareError::Choice(mistake)) => UsageError(mistake).into(),
        e => anyhow::Error::from(e),
    })?;
    if let Some(notice) = notice {
        eprintln!("deskhand: {notice}");
    }
    tokio::spawn({
        let engine = engine.clone();
        let id = task.id.clone();
        async move {
            cancel.cancelled().await;
            let _ = engine.cancel(&id);
        }
    });
    let reply = async |reply| {
        // The task may have ended meanwhile (a stop): nothing waits then.
        let _ = match reply {
            Reply::Approval { call, decision } => {
                let terminal = Answerer::new(DecidedBy::Terminal);
                engine
                    .answer(&task.id, Some(&call), decision, terminal)
                    .map(drop)
            }
            Reply::Stall(answer) => engine.answer_stall(&task.id, answer),
        };
    };
    let verification = follow(engine.watch(&task.id, 0)?, args.json, reply).await?;
    let status = outcome(&engine.task(&task.id)?)?;
    Ok(verification.exit_code(status, args.require_verified))
}

/// Submits the task to `deskhand serve` and prints its id.
async fn background(args: &AskArgs) -> Result<()> {
    if !args.attach.is_empty() {
        bail!("--attach cannot be used with --background yet: the API takes text prompts");
    }
    if args.check.is_some() || args.require_verified {
        bail!("--check and --require-verified cannot be used with --background yet");
    }
    if args.set_of_marks {
        bail!(
            "--set-of-marks cannot be used with --background yet: `deskhand settings set \
             set-of-marks on` turns it on for the service's runs"
        );
    }
    let service = Service::new(&ServiceArgs {
        socket: args.socket.clone(),
        data_dir: args.data_dir.clone(),
    })?;
    let body = json!({
        "prompt": args.prompt()?,
        "session_id": args.session,
        "approve": args.approve,
        "max_turns": args.max_turns,
        "tools": args.tools,
        "provider": args.provider,
        "model": args.model,
        "base_url": args.base_url,
        "effort": args.effort,
        "system": args.system,
        "max_cost_usd": args.max_cost,
        "max_tokens": args.max_tokens,
        "bash_timeout_secs": args.bash_timeout.map(|d| d.as_secs_f64()),
        "keep_screenshots": args.keep_screenshots,
        "summarize_at": args.summarize_at,
        "monitor": args.monitor,
        "memory": !args.no_memory,
        "desktop": args.desktop,
        "sandbox": args.sandbox_flag(),
        "share": args.share,
        "network": !args.no_network,
        "keep_desktop": args.keep_desktop.then_some(true),
        "stall": {
            "enabled": !args.no_stall_check,
            "repeats": args.stall_repeats,
            "no_ops": args.stall_no_ops,
            "cycles": args.stall_cycles,
            "ask_timeout_secs": args.stall_ask_timeout.map(|d| d.as_secs_f64()),
        },
    });
    let task: TaskInfo =
        serde_json::from_value(service.call(Method::POST, "/v1/tasks", Some(&body)).await?)?;
    if args.json {
        println!(
            "{}",
            deskhand_engine::visible::json(&serde_json::to_string(&task)?)
        );
    } else {
        println!("{}", task.id);
    }
    Ok(())
}

/// What the person answered on the terminal, for the task to hear.
pub enum Reply {
    Approval { call: ToolUseId, decision: Decision },
    Stall(StallAnswer),
}

/// Prints a task's updates and asks on the terminal for each approval it waits for and
/// each stall question, handing the answer to `reply`; returns the run's verification once
/// the task ended.
pub async fn follow(
    mut watch: impl TaskUpdates,
    json: bool,
    reply: impl AsyncFn(Reply),
) -> Result<Verification> {
    let mut printer = Printer {
        json,
        in_text: false,
        in_thinking: false,
        price_caveat: None,
    };
    let mut verification = Verification::default();
    while let Some(update) = watch.next_update().await? {
        let event = match update {
            TaskUpdate::Event { event, .. } => event,
            TaskUpdate::Notice(notice) => {
                eprintln!("deskhand: {}", deskhand_engine::visible::line(&notice));
                continue;
            }
            // The caller reads how the task ended (from the service, too, whose stream has
            // no end of its own).
            TaskUpdate::Ended(_) => continue,
        };
        printer.print(&event);
        match &event {
            AgentEvent::ApprovalNeeded { request } => {
                let decision = approver::ask(request).await;
                reply(Reply::Approval {
                    call: request.tool_use_id.clone(),
                    decision,
                })
                .await;
            }
            AgentEvent::StallDetected {
                step: StallStep::Ask,
                message,
                ..
            } => reply(Reply::Stall(approver::ask_stall(message).await)).await,
            AgentEvent::Verification(checked) => verification = checked.clone(),
            _ => {}
        }
    }
    Ok(verification)
}

/// The exit status of a finished task; a task that never ran is the error that stopped it.
pub fn outcome(task: &TaskInfo) -> Result<RunStatus> {
    if let Some(error) = &task.error
        && task.state == TaskState::Error
    {
        bail!("{error}");
    }
    Ok(match task.state {
        TaskState::Done => RunStatus::Done,
        TaskState::MaxTurns => RunStatus::MaxTurns,
        TaskState::Budget => RunStatus::Budget,
        TaskState::Cancelled => RunStatus::Cancelled,
        TaskState::Stalled => RunStatus::Stalled,
        TaskState::NeedsApproval => RunStatus::NeedsApproval,
        _ => RunStatus::Error,
    })
}

/// The first Ctrl-C stops the run cleanly; a second one exits at once. The handler is in
/// place when this returns, so a Ctrl-C right after never kills the process unhandled.
pub fn watch_ctrl_c(cancel: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut interrupts) = signal(SignalKind::interrupt()) else {
        return;
    };
    tokio::spawn(async move {
        if interrupts.recv().await.is_some() {
            eprintln!("\ndeskhand: stopping (Ctrl-C again to quit at once)");
            cancel.cancel();
            if interrupts.recv().await.is_some() {
                crate::keypress::restore();
                std::process::exit(RunStatus::Cancelled.exit_code());
            }
        }
    });
}

/// An image file attached to a message: a regular file of at most [`MAX_IMAGE_BYTES`],
/// checked before a byte is read (a FIFO or `/dev/urandom` is refused at once).
fn load_attachment(path: &std::path::Path) -> anyhow::Result<ContentBlock> {
    let bytes = files::read_regular(path, MAX_IMAGE_BYTES as u64)?;
    Ok(ContentBlock::image(&bytes, &path.display().to_string())?)
}
