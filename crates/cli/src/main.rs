//! `deskhand`: the headless CLI over the same core the window uses. Its flags, JSON Lines and
//! exit statuses are a contract that scripts depend on.

mod approver;
mod ask;
mod elements;
mod eval;
mod install;
mod key;
mod keypress;
mod monitors;
mod notes;
mod plugins;
mod printer;
mod schedule;
mod screenshot;
mod serve;
mod service;
mod sessions;
mod settings;
mod tasks;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use deskhand_engine::agent::RunStatus;

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
    /// The agent's notes: list, search, add, edit, delete.
    Notes(notes::NotesArgs),
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
    /// The UI elements showing on the screen (accessibility tree, optionally OCR words).
    Elements(elements::ElementsArgs),
    /// MCP plugin servers (configured in mcp.json in the config directory).
    Plugins(plugins::PluginsArgs),
    /// Settings every run reads: the budget (max-cost, max-tokens).
    Settings(settings::SettingsArgs),
    /// Serve the task engine as a local API (a Unix socket; TCP with --listen).
    Serve(serve::ServeArgs),
    /// The tasks of a running `deskhand serve`: list, show, watch, approve, deny, cancel.
    Tasks(tasks::TasksArgs),
    /// Schedules a running `deskhand serve` runs: add, list, show, pause, resume, delete,
    /// run-now.
    Schedule(schedule::ScheduleArgs),
}

fn main() -> ExitCode {
    // SAFETY: the first thing main does, before any other thread exists.
    unsafe { deskhand_engine::key_guard::protect_secrets() };
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return fail(anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Ask(args) => ask::run(*args).await,
            Command::Notes(args) => notes::run(args).map(|()| 0),
            Command::Eval(args) => eval::run(args).await,
            Command::Sessions(args) => sessions::run(args).map(|()| 0),
            Command::Key(args) => key::run(args).map(|()| 0),
            Command::Screenshot(args) => screenshot::run(args).map(|()| 0),
            Command::Monitors => monitors::run().map(|()| 0),
            Command::Elements(args) => elements::run(args).map(|()| 0),
            Command::Plugins(args) => plugins::run(args).await.map(|()| 0),
            Command::Settings(args) => settings::run(args).map(|()| 0),
            Command::Serve(args) => serve::run(args).await.map(|()| 0),
            Command::Tasks(args) => tasks::run(args).await,
            Command::Schedule(args) => schedule::run(args).await,
        }
    });
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => fail(e),
    }
}

/// The history in `dir` (else the default data directory), saying once if it had to be made
/// private.
fn open_store(dir: Option<std::path::PathBuf>) -> anyhow::Result<deskhand_engine::store::Store> {
    let store = deskhand_engine::store::Store::open_default(dir)?;
    if let Some(notice) = store.privacy_notice() {
        eprintln!("deskhand: {notice}");
    }
    Ok(store)
}

/// A mistake in how the command was called, found after parsing (an empty prompt): exit
/// status 2, as clap gives a wrong flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn fail(error: anyhow::Error) -> ExitCode {
    // Errors quote servers, plugins and files; shown escaped like everything from outside.
    eprintln!(
        "deskhand: {}",
        deskhand_engine::visible::text(&one_line(&error))
    );
    if error.downcast_ref::<UsageError>().is_some() {
        return ExitCode::from(2);
    }
    ExitCode::from(RunStatus::Error.exit_code() as u8)
}

/// The error and its causes on one line, each said once: a cause that the message before it
/// already quotes (as `cannot read X: <cause>` does) is not repeated.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if line.contains(&cause) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&cause);
    }
    line
}
