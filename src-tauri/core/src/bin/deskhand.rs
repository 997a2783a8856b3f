//! `deskhand`: the headless CLI over the same core the window uses. Its flags, JSON Lines and
//! exit statuses are a contract that scripts depend on.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, bail};
use async_trait::async_trait;
use clap::{Args, Parser, Subcommand};
use deskhand::agent::context::ContextPolicy;
use deskhand::agent::{
    Agent, AgentConfig, AgentEvent, ApprovalGate, ApprovalPolicy, ApprovalRequest, Approver,
    Budget, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, Decision, RunStatus,
};
use deskhand::images::load_attachment;
use deskhand::llm::anthropic::{self, Anthropic, AnthropicConfig};
use deskhand::llm::pricing::PriceTable;
use deskhand::llm::{ContentBlock, RetryPolicy};
use deskhand::paths;
use deskhand::tools::catalog::{self, ToolSettings};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(
    name = "deskhand",
    version,
    about = "A computer-use agent you watch and approve"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the agent on a prompt until it is done.
    Ask(AskArgs),
}

#[derive(Args)]
struct AskArgs {
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
    /// Screenshots sent to the model at most; older ones are replaced by a placeholder.
    #[arg(long, default_value_t = 3, value_name = "N")]
    keep_screenshots: usize,
    /// Where history is kept (default: the OS data directory).
    #[arg(long, env = "DESKHAND_DATA_DIR")]
    data_dir: Option<PathBuf>,
    prompt: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return fail(anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Ask(args) => ask(args).await,
        }
    });
    match result {
        Ok(status) => ExitCode::from(status.exit_code() as u8),
        Err(e) => fail(e),
    }
}

fn fail(error: anyhow::Error) -> ExitCode {
    eprintln!("deskhand: {error:#}");
    ExitCode::from(RunStatus::Error.exit_code() as u8)
}

const DEFAULT_SYSTEM: &str = "You are Deskhand, an assistant that works on the user's computer \
through the tools you are given, while the user watches and approves each action. Take a \
screenshot before acting on the screen, act in small steps, and check the result of each step. \
If an action is denied, do not retry it; ask or choose another way.";

async fn ask(args: AskArgs) -> Result<RunStatus> {
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
    let settings = ToolSettings {
        model: args.model.clone(),
    };
    let tools = catalog::registry(args.tools.as_deref(), &settings)?;
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
    Ok(outcome.status)
}

/// The first Ctrl-C stops the run cleanly; a second one exits at once.
fn watch_ctrl_c(cancel: CancellationToken) {
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

/// Text mode: the assistant's words on stdout, everything else on stderr.
/// JSON mode: one event per line on stdout (full messages excepted: they carry image data).
struct Printer {
    json: bool,
    in_text: bool,
}

impl Printer {
    fn print(&mut self, event: &AgentEvent) {
        if self.json {
            if !matches!(event, AgentEvent::Message { .. }) {
                let mut out = std::io::stdout().lock();
                let _ = serde_json::to_writer(&mut out, event);
                let _ = writeln!(out);
                let _ = out.flush();
            }
            return;
        }
        if let AgentEvent::TextDelta { text } = event {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            self.in_text = true;
            return;
        }
        let line = match event {
            AgentEvent::ToolCall { name, input, .. } => format!("→ {name} {input}"),
            AgentEvent::ApprovalDecided {
                decision: Decision::Deny { reason },
                ..
            } => {
                format!(
                    "✗ denied{}",
                    reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                )
            }
            AgentEvent::ToolResult {
                name,
                is_error,
                text,
                images,
                duration_ms,
                ..
            } => {
                let mark = if *is_error { "✗" } else { "✓" };
                let mut summary: String = text
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(160)
                    .collect();
                if !images.is_empty() {
                    summary.push_str(&format!(" [{} image(s)]", images.len()));
                }
                format!("{mark} {name} ({duration_ms} ms) {summary}")
            }
            AgentEvent::Retrying {
                attempt,
                delay_ms,
                error,
            } => {
                format!(
                    "… {error}; retry {attempt} in {:.1} s",
                    *delay_ms as f64 / 1000.0
                )
            }
            AgentEvent::Error { message } => format!("error: {message}"),
            AgentEvent::ContextSummarized {
                upto,
                tokens_before,
                tokens_after,
            } => format!(
                "… summarized the first {upto} messages to fit the context ({tokens_before} → {tokens_after} tokens)"
            ),
            AgentEvent::Done {
                status,
                turns,
                usage,
                cost_usd,
                ..
            } => format!(
                "[{}] {turns} turn(s), {} input + {} output tokens{}",
                serde_json::to_value(status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                usage.input_tokens
                    + usage.cache_creation_input_tokens
                    + usage.cache_read_input_tokens,
                usage.output_tokens,
                cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default()
            ),
            _ => return,
        };
        if std::mem::take(&mut self.in_text) {
            println!();
        }
        eprintln!("{line}");
    }
}

/// Asks on the terminal: y = yes, n = no (optionally "n reason"), a = always for this kind.
/// With no terminal it refuses, and says why.
struct TerminalApprover;

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        if !std::io::stdin().is_terminal() {
            let reason = "no terminal to ask for approval (stdin is not a TTY); run with --approve auto to allow actions";
            eprintln!("deskhand: refused {}: {reason}", request.plan.summary);
            return Decision::Deny {
                reason: Some(reason.into()),
            };
        }
        let prompt = format!(
            "\nAllow {}? [y]es / [n]o (n <reason>) / [a]lways for {} this session: ",
            request.plan.summary, request.plan.kind
        );
        let answer = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            eprint!("{prompt}");
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await;
        let line = match answer {
            Ok(Ok(line)) => line,
            _ => {
                return Decision::Deny {
                    reason: Some("could not read the answer".into()),
                };
            }
        };
        let line = line.trim();
        match line.chars().next().map(|c| c.to_ascii_lowercase()) {
            Some('y') => Decision::Approve,
            Some('a') => Decision::ApproveKind,
            _ => {
                let reason = line.get(1..).map(str::trim).filter(|r| !r.is_empty());
                Decision::Deny {
                    reason: reason.map(str::to_string),
                }
            }
        }
    }
}
