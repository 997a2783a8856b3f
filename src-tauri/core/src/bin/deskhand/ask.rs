//! `deskhand ask`: one agent run on a prompt.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use deskhand::agent::context::ContextPolicy;
use deskhand::agent::history;
use deskhand::agent::{
    Agent, AgentConfig, ApprovalGate, ApprovalPolicy, Approver, Budget, DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS, DEFAULT_SYSTEM, RunStatus, SecretPlaces,
};
use deskhand::images::load_attachment;
use deskhand::llm::RetryPolicy;
use deskhand::llm::config::{self, ProviderSettings};
use deskhand::llm::pricing::PriceTable;
use deskhand::paths;
use deskhand::secrets::{self, OsKeyring};
use deskhand::store::{Recorder, StoreError};
use deskhand::tools::catalog::{self, ToolSettings};
use deskhand::tools::plugins::{PluginConfig, PluginTimeouts, Plugins};
use tokio_util::sync::CancellationToken;

use crate::UsageError;
use crate::approver::TerminalApprover;
use crate::printer::Printer;

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
    #[arg(long, default_value_t = 3, value_name = "N")]
    keep_screenshots: usize,
    /// Summarize the older turns once a request would fill this share of the model's context
    /// window.
    #[arg(long, default_value_t = 80, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(10..=95))]
    summarize_at: u8,
    /// The monitor the computer tool uses (see `deskhand monitors`; default: the primary one).
    #[arg(long, value_name = "N", env = "DESKHAND_MONITOR")]
    monitor: Option<usize>,
    /// Where history is kept (default: the OS data directory).
    #[arg(long, env = "DESKHAND_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Continue this stored session (its id, or the first characters of it) with its full
    /// history.
    #[arg(long, value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    session: Option<String>,
    /// What to do; `-` reads it from stdin (for a long prompt).
    prompt: String,
}

/// The most a prompt read from stdin may be: the API's whole request is 32 MB at most.
const MAX_STDIN_PROMPT: u64 = 32 * 1024 * 1024;

pub async fn run(args: AskArgs) -> Result<RunStatus> {
    let policy: ApprovalPolicy = args.approve.parse().map_err(anyhow::Error::msg)?;
    let prompt = match args.prompt.as_str() {
        "-" => read_stdin_prompt()?,
        _ => args.prompt.clone(),
    };
    let mut attachments = Vec::new();
    for path in &args.attach {
        attachments.push(load_attachment(path)?);
    }
    // Refused before anything is stored or sent: the API would refuse it, and a stored empty
    // prompt would break the session.
    let input = history::prompt_content(&prompt, attachments)
        .map_err(|empty| UsageError(empty.to_string()))?;
    let chosen = config::choose(
        &ProviderSettings {
            provider: args.provider.clone(),
            model: args.model.clone(),
            base_url: args.base_url.clone(),
        },
        &config::process_env,
        &|id| secrets::stored_key(&OsKeyring::default(), id),
        RetryPolicy::default(),
    )?;
    let model = chosen.model.clone();
    let defaults = ToolSettings::default();
    let settings = ToolSettings {
        model: model.clone(),
        monitor: args.monitor,
        bash_timeout: args.bash_timeout.unwrap_or(defaults.bash_timeout),
        ..defaults
    };
    let plugin_config = PluginConfig::load(&PluginConfig::default_path())?;
    let selection = plugin_config.select(args.tools.as_deref())?;
    let mut tools = catalog::registry(selection.builtin.as_deref(), &settings)?;
    let store = crate::open_store(args.data_dir.clone())?;
    let resumed = args
        .session
        .as_deref()
        .map(|id| store.resolve_id(id))
        .transpose()?;
    // This run's limits, else the stored ones.
    let stored = store.budget()?;
    let budget = Budget {
        max_cost_usd: args.max_cost.or(stored.max_cost_usd),
        max_tokens: args.max_tokens.or(stored.max_tokens),
    };
    let prices = PriceTable::with_overrides(&paths::config_dir().join("prices.json"))?;
    let price = prices.price(&model);
    if budget.max_cost_usd.is_some() && price.is_none() {
        let limit = match args.max_cost {
            Some(_) => "--max-cost",
            None => "the max-cost setting",
        };
        bail!(
            "{limit} needs the price of `{}`: add it to {}",
            model,
            paths::config_dir().join("prices.json").display()
        );
    }
    // Plugin servers start once every check that can end the run early has passed.
    let plugins = Plugins::start(
        &plugin_config,
        &selection.servers,
        PluginTimeouts::default(),
    )
    .await;
    let problems = plugins.add_tools(&mut tools).await;
    if selection.explicit && !problems.is_empty() {
        plugins.shutdown().await;
        bail!("{}", problems.join("; "));
    }
    for problem in problems {
        eprintln!(
            "deskhand: {}; going on without it",
            deskhand::visible::line(&problem)
        );
    }
    let approver: Box<dyn Approver> = Box::new(TerminalApprover);
    let agent = Agent {
        provider: chosen.provider,
        tools: Arc::new(tools),
        gate: Arc::new(
            ApprovalGate::new(policy, approver)
                .with_secret_places(SecretPlaces::for_store(&store)?),
        ),
        config: AgentConfig {
            model: model.clone(),
            system: args
                .system
                .clone()
                .unwrap_or_else(|| DEFAULT_SYSTEM.to_string()),
            max_turns: args.max_turns,
            max_tokens: DEFAULT_MAX_TOKENS,
            context: ContextPolicy {
                keep_screenshots: Some(args.keep_screenshots),
                context_window: config::context_window(&model),
                summarize_at: f64::from(args.summarize_at) / 100.0,
                ..ContextPolicy::default()
            },
            price,
            budget,
        },
    };

    let opened = match &resumed {
        Some(id) => Recorder::resume(&store, id),
        None => {
            Recorder::create(&store, &uuid::Uuid::new_v4().to_string()).map(|r| (r, Vec::new()))
        }
    };
    let (mut recorder, mut history) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            plugins.shutdown().await;
            return Err(e.into());
        }
    };
    let session_id = recorder.session_id().to_string();

    let cancel = CancellationToken::new();
    watch_ctrl_c(cancel.clone());
    let mut printer = Printer {
        json: args.json,
        in_text: false,
    };
    let mut not_saved: Option<StoreError> = None;
    let outcome = agent
        .run(
            &session_id,
            &mut history,
            input,
            // Stored before shown: whatever was printed survives a crash.
            &mut |event| {
                if not_saved.is_none()
                    && let Err(e) = recorder.record(&event)
                {
                    eprintln!("deskhand: stopping the run: {e}");
                    not_saved = Some(e);
                    cancel.cancel();
                }
                printer.print(&event);
            },
            &cancel,
        )
        .await;
    plugins.shutdown().await;
    if let Some(e) = not_saved {
        return Err(anyhow::Error::new(e).context("the run's history could not be saved"));
    }
    Ok(outcome.status)
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

fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds > 0.0 && seconds.is_finite() => Ok(Duration::from_secs_f64(seconds)),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

/// The first Ctrl-C stops the run cleanly; a second one exits at once.
pub fn watch_ctrl_c(cancel: CancellationToken) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ndeskhand: stopping (Ctrl-C again to quit at once)");
            cancel.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(RunStatus::Cancelled.exit_code());
            }
        }
    });
}
