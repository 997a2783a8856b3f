//! `deskhand ask`: one agent run on a prompt.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use deskhand::agent::context::ContextPolicy;
use deskhand::agent::{
    Agent, AgentConfig, ApprovalGate, ApprovalPolicy, Approver, Budget, DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS, RunStatus,
};
use deskhand::images::load_attachment;
use deskhand::llm::anthropic::{self, Anthropic, AnthropicConfig};
use deskhand::llm::pricing::PriceTable;
use deskhand::llm::{ContentBlock, RetryPolicy};
use deskhand::paths;
use deskhand::tools::catalog::{self, ToolSettings};
use deskhand::tools::plugins::{PluginConfig, PluginTimeouts, Plugins};
use tokio_util::sync::CancellationToken;

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
    /// The model (default: $ANTHROPIC_MODEL, else a current Claude model).
    #[arg(long, env = "ANTHROPIC_MODEL", default_value = anthropic::DEFAULT_MODEL)]
    model: String,
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
    /// Where history is kept (default: the OS data directory).
    #[arg(long, env = "DESKHAND_DATA_DIR")]
    data_dir: Option<PathBuf>,
    prompt: String,
}

const DEFAULT_SYSTEM: &str = "You are Deskhand, an assistant that works on the user's computer \
through the tools you are given, while the user watches and approves each action. Take a \
screenshot before acting on the screen, act in small steps, and check the result of each step. \
If an action is denied, do not retry it; ask or choose another way.";

pub async fn run(args: AskArgs) -> Result<RunStatus> {
    let policy: ApprovalPolicy = args.approve.parse().map_err(anyhow::Error::msg)?;
    let mut input = vec![ContentBlock::text(&args.prompt)];
    for path in &args.attach {
        input.push(load_attachment(path)?);
    }
    let api_key = std::env::var("ANTHROPIC_API_KEY").unwrap_or_default();
    if api_key.trim().is_empty() {
        bail!("no Anthropic API key: set ANTHROPIC_API_KEY");
    }
    let provider = Anthropic::new(AnthropicConfig {
        api_key,
        base_url: std::env::var("ANTHROPIC_BASE_URL")
            .unwrap_or_else(|_| anthropic::DEFAULT_BASE_URL.to_string()),
        retry: RetryPolicy::default(),
    })?;
    let defaults = ToolSettings::default();
    let settings = ToolSettings {
        model: args.model.clone(),
        bash_timeout: args.bash_timeout.unwrap_or(defaults.bash_timeout),
        ..defaults
    };
    let plugin_config = PluginConfig::load(&PluginConfig::default_path())?;
    let selection = plugin_config.select(args.tools.as_deref())?;
    let mut tools = catalog::registry(selection.builtin.as_deref(), &settings)?;
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
        eprintln!("deskhand: {problem}; going on without it");
    }
    let prices = PriceTable::with_overrides(&paths::config_dir().join("prices.json"))?;
    let price = prices.price(&args.model);
    if args.max_cost.is_some() && price.is_none() {
        bail!(
            "--max-cost needs the price of `{}`: add it to {}",
            args.model,
            paths::config_dir().join("prices.json").display()
        );
    }
    let approver: Box<dyn Approver> = Box::new(TerminalApprover);
    let agent = Agent {
        provider: Arc::new(provider),
        tools: Arc::new(tools),
        gate: Arc::new(ApprovalGate::new(policy, approver)),
        config: AgentConfig {
            model: args.model.clone(),
            system: args
                .system
                .clone()
                .unwrap_or_else(|| DEFAULT_SYSTEM.to_string()),
            max_turns: args.max_turns,
            max_tokens: DEFAULT_MAX_TOKENS,
            context: ContextPolicy {
                keep_screenshots: Some(args.keep_screenshots),
                ..ContextPolicy::default()
            },
            price,
            budget: Budget {
                max_cost_usd: args.max_cost,
                max_tokens: args.max_tokens,
            },
        },
    };

    let cancel = CancellationToken::new();
    watch_ctrl_c(cancel.clone());
    // store: open the store in `args.data_dir`, create or resume the session, persist every event.
    let _ = &args.data_dir;
    let session_id = uuid::Uuid::new_v4().to_string();
    let mut history = Vec::new();
    let mut printer = Printer {
        json: args.json,
        in_text: false,
    };
    let outcome = agent
        .run(
            &session_id,
            &mut history,
            input,
            &mut |event| printer.print(&event),
            &cancel,
        )
        .await;
    plugins.shutdown().await;
    Ok(outcome.status)
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
