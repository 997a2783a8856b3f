//! `deskhand`: the headless CLI over the same core the window uses. Its flags, JSON Lines and
//! exit statuses are a contract that scripts depend on.

mod approver;
mod ask;
mod eval;
mod key;
mod monitors;
mod plugins;
mod printer;
mod screenshot;
mod sessions;
mod settings;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use deskhand::agent::RunStatus;

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
    /// Run the agent on a prompt until it is done (`--session ID` continues a session).
    Ask(Box<ask::AskArgs>),
    /// Run a suite of tasks (TOML files in a folder), each checked, and report how many
    /// were verified.
    Eval(eval::EvalArgs),
    /// The local history: list, show, search, rename, export, import, delete, prune.
    Sessions(sessions::SessionsArgs),
    /// API keys in the OS keyring: set, status, delete.
    Key(key::KeyArgs),
    /// Capture a monitor as the model sees it and write it to a file.
    Screenshot(screenshot::ScreenshotArgs),
    /// List the monitors (* marks the default).
    Monitors,
    /// MCP plugin servers (configured in mcp.json in the config directory).
    Plugins(plugins::PluginsArgs),
    /// Settings every run reads: the budget (max-cost, max-tokens).
    Settings(settings::SettingsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return fail(anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Ask(args) => ask::run(*args).await,
            Command::Eval(args) => eval::run(args).await,
            Command::Sessions(args) => sessions::run(args).map(|()| 0),
            Command::Key(args) => key::run(args).map(|()| 0),
            Command::Screenshot(args) => screenshot::run(args).map(|()| 0),
            Command::Monitors => monitors::run().map(|()| 0),
            Command::Plugins(args) => plugins::run(args).await.map(|()| 0),
            Command::Settings(args) => settings::run(args).map(|()| 0),
        }
    });
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => fail(e),
    }
}

fn fail(error: anyhow::Error) -> ExitCode {
    // Errors quote servers, plugins and files; shown escaped like everything from outside.
    eprintln!(
        "deskhand: {}",
        deskhand::visible::text(&format!("{error:#}"))
    );
    ExitCode::from(RunStatus::Error.exit_code() as u8)
}
