//! `deskhand eval SUITE`: runs every task of a suite (a folder of TOML files) `--repeat`
//! times through `deskhand ask --check`, and reports how many runs were verified, as a table,
//! JSON and Markdown. Each run is an ordinary session in the history.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use deskhand_engine::agent::AgentEvent;
use deskhand_engine::agent::verify::Check;
use deskhand_engine::ids::SessionId;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};

#[derive(Args)]
pub struct EvalArgs {
    /// The suite: a folder of task files (`*.toml`).
    suite: PathBuf,
    /// How many times each task runs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Passed to every `deskhand ask`: the provider, model and base URL.
    #[arg(long)]
    provider: Option<String>,
    #[arg(long)]
    model: Option<String>,
    #[arg(long)]
    base_url: Option<String>,
    /// Where the JSON and Markdown reports go (default: the current folder).
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
}

/// One task file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    prompt: String,
    /// Shell commands run in order before each attempt; any failure is `setup failed`.
    #[serde(default)]
    setup: Vec<String>,
    /// The check: exit 0 means the task was done.
    check: String,
    /// Shell commands run after each attempt, whatever happened (failures ignored).
    #[serde(default)]
    teardown: Vec<String>,
    #[serde(default)]
    limits: Limits,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Limits {
    #[serde(default = "default_turns")]
    max_turns: u32,
    max_cost: Option<f64>,
    /// Seconds the whole attempt may take.
    #[serde(default = "default_timeout")]
    timeout: u64,
    /// Seconds the check may take.
    #[serde(default = "default_check_timeout")]
    check_timeout: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: default_turns(),
            max_cost: None,
            timeout: default_timeout(),
            check_timeout: default_check_timeout(),
        }
    }
}

fn default_turns() -> u32 {
    30
}
fn default_timeout() -> u64 {
    600
}
fn default_check_timeout() -> u64 {
    30
}

/// The largest task file read, and the largest JSON line of a run taken apart.
const MAX_TASK_FILE: u64 = 64 * 1024;
const MAX_EVENT_LINE: usize = 1024 * 1024;
/// Seconds one setup or teardown command may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

struct Task {
    name: String,
    file: TaskFile,
}

/// Reads and checks every task before anything runs: a bad file names itself and its field.
fn load_suite(dir: &Path) -> Result<Vec<Task>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the suite {}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        bail!("the suite {} has no task files (*.toml)", dir.display());
    }
    paths.iter().map(|path| load_task(path)).collect()
}

fn load_task(path: &Path) -> Result<Task> {
    let bytes = deskhand_engine::files::read_regular(path, MAX_TASK_FILE)
        .with_context(|| format!("{}", path.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))?;
    let file: TaskFile = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.message()))?;
    if file.prompt.trim().is_empty() {
        bail!("{}: field `prompt` is empty", path.display());
    }
    Check::new(&file.check, Duration::from_secs(file.limits.check_timeout))
        .map_err(|e| anyhow::anyhow!("{}: field `check`: {e}", path.display()))?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Task { name, file })
}

/// How one attempt ended.
#[derive(Clone, Debug, Serialize)]
struct Attempt {
    task: String,
    attempt: u32,
    /// verified, unverified, failed, setup failed, timed out, or error.
    outcome: String,
    status: Option<String>,
    session_id: Option<SessionId>,
    steps: u32,
    tokens: u64,
    cost_usd: Option<f64>,
    wall_s: f64,
    stalls: u32,
    detail: Option<String>,
}

pub async fn run(args: EvalArgs) -> Result<i32> {
    let tasks = load_suite(&args.suite)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut attempts = Vec::new();
    for task in &tasks {
        for attempt in 1..=args.repeat {
            let result = run_attempt(&args, task, attempt).await;
            eprintln!(
                "deskhand eval: {} #{attempt}: {}",
                task.name, result.outcome
            );
            attempts.push(result);
        }
    }
    let rows = summarize(&tasks, &attempts);
    let table = markdown(&args, &rows, &attempts);
    println!("{table}");
    let stamp = time::OffsetDateTime::now_utc().unix_timestamp();
    let json_path = args.out.join(format!("eval-{stamp}.json"));
    let md_path = args.out.join(format!("eval-{stamp}.md"));
    let verified = attempts.iter().filter(|a| a.outcome == "verified").count();
    let report = serde_json::json!({
        "suite": args.suite,
        "provider": args.provider,
        "model": args.model,
        "repeat": args.repeat,
        "verified": verified,
        "runs": attempts.len(),
        "tasks": rows,
        "attempts": attempts,
    });
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)?)?;
    std::fs::write(&md_path, &table)?;
    eprintln!(
        "deskhand eval: {verified} of {} runs verified; wrote {} and {}",
        attempts.len(),
        json_path.display(),
        md_path.display()
    );
    Ok(0)
}

async fn run_attempt(args: &EvalArgs, task: &Task, attempt: u32) -> Attempt {
    let mut result = Attempt {
        task: task.name.clone(),
        attempt,
        outcome: "error".into(),
        status: None,
        session_id: None,
        steps: 0,
        tokens: 0,
        cost_usd: None,
        wall_s: 0.0,
        stalls: 0,
        detail: None,
    };
    let started = Instant::now();
    for command in &task.file.setup {
        if let Err(why) = shell(command).await {
            result.outcome = "setup failed".into();
            result.detail = Some(format!("`{command}`: {why}"));
            teardown(task).await;
            return result;
        }
    }
    let limits = &task.file.limits;
    let mut command = tokio::process::Command::new(
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("deskhand")),
    );
    command.args(["ask", "--json", "--approve", "auto"]);
    command.args(["--max-turns", &limits.max_turns.to_string()]);
    command.args(["--check", &task.file.check]);
    command.args(["--check-timeout", &limits.check_timeout.to_string()]);
    if let Some(cost) = limits.max_cost {
        command.args(["--max-cost", &cost.to_string()]);
    }
    for (flag, value) in [
        ("--provider", &args.provider),
        ("--model", &args.model),
        ("--base-url", &args.base_url),
    ] {
        if let Some(value) = value {
            command.args([flag, value]);
        }
    }
    // Keys left this process's environment at start (`key_guard`); the attempt is this same
    // program, which takes them out of its own environment again first thing.
    for provider in deskhand_engine::secrets::PROVIDERS.iter() {
        if let Some(key) = deskhand_engine::key_guard::env_var(provider.env) {
            command.env(provider.env, key);
        }
    }
    command
        .arg(&task.file.prompt)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    match command.spawn() {
        Err(e) => result.detail = Some(format!("cannot start deskhand ask: {e}")),
        Ok(mut child) => {
            let read = read_events(child.stdout.take(), &mut result);
            let timeout = Duration::from_secs(limits.timeout);
            match tokio::time::timeout(timeout, read).await {
                Ok(()) => {
                    let _ = child.wait().await;
                }
                Err(_) => {
                    let _ = child.kill().await;
                    result.outcome = "timed out".into();
                    result.detail = Some(format!("killed after {} s", limits.timeout));
                }
            }
        }
    }
    result.wall_s = started.elapsed().as_secs_f64();
    teardown(task).await;
    result
}

/// Takes the numbers of a run from its JSON events, read from its stdout (piped, so always
/// there; `None` reads nothing).
async fn read_events(stdout: Option<tokio::process::ChildStdout>, result: &mut Attempt) {
    let Some(stdout) = stdout else { return };
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) if line.len() > MAX_EVENT_LINE => continue,
            Ok(_) => {}
        }
        let Ok(event) = serde_json::from_slice::<AgentEvent>(&line) else {
            continue;
        };
        match event {
            AgentEvent::Started { session_id, .. } => result.session_id = Some(session_id),
            AgentEvent::StallDetected { .. } => result.stalls += 1,
            AgentEvent::Usage {
                total,
                total_cost_usd,
                ..
            } => {
                result.tokens = total.input_tokens
                    + total.output_tokens
                    + total.cache_creation_input_tokens
                    + total.cache_read_input_tokens;
                result.cost_usd = total_cost_usd;
            }
            AgentEvent::Done { status, turns, .. } => {
                result.status = Some(status.name().to_string());
                result.steps += turns;
            }
            AgentEvent::Verification(verification) => {
                result.outcome = verification.outcome.name().to_string();
                result.detail = verification.error;
            }
            _ => {}
        }
    }
}

async fn shell(command: &str) -> Result<(), String> {
    // Output goes nowhere: a program the setup starts in the background must not hold a pipe.
    let status = tokio::process::Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status();
    match tokio::time::timeout(SETUP_TIMEOUT, status).await {
        Ok(Ok(s)) if s.success() => Ok(()),
        Ok(Ok(s)) => Err(format!("exited {}", s.code().unwrap_or(-1))),
        Ok(Err(e)) => Err(format!("could not start: {e}")),
        Err(_) => Err(format!("timed out after {} s", SETUP_TIMEOUT.as_secs())),
    }
}

async fn teardown(task: &Task) {
    for command in &task.file.teardown {
        let _ = shell(command).await;
    }
}

#[derive(Serialize)]
struct Row {
    task: String,
    verified: usize,
    runs: usize,
    median_steps: f64,
    median_tokens: f64,
    cost_usd: Option<f64>,
    median_wall_s: f64,
    stalls: u32,
}

fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

fn summarize(tasks: &[Task], attempts: &[Attempt]) -> Vec<Row> {
    tasks
        .iter()
        .map(|task| {
            let runs: Vec<&Attempt> = attempts.iter().filter(|a| a.task == task.name).collect();
            let costs: Vec<f64> = runs.iter().filter_map(|a| a.cost_usd).collect();
            Row {
                task: task.name.clone(),
                verified: runs.iter().filter(|a| a.outcome == "verified").count(),
                runs: runs.len(),
                median_steps: median(runs.iter().map(|a| f64::from(a.steps)).collect()),
                median_tokens: median(runs.iter().map(|a| a.tokens as f64).collect()),
                cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
                median_wall_s: median(runs.iter().map(|a| a.wall_s).collect()),
                stalls: runs.iter().map(|a| a.stalls).sum(),
            }
        })
        .collect()
}

fn markdown(args: &EvalArgs, rows: &[Row], attempts: &[Attempt]) -> String {
    let mut out = format!(
        "Suite `{}`, provider {}, model {}, {} run(s) per task\n\n\
         | task | verified | median steps | median tokens | cost (USD) | median wall (s) | stalls |\n\
         |---|---|---|---|---|---|---|\n",
        args.suite.display(),
        args.provider.as_deref().unwrap_or("(default)"),
        args.model.as_deref().unwrap_or("(default)"),
        args.repeat
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {}/{} | {} | {} | {} | {:.1} | {} |\n",
            r.task,
            r.verified,
            r.runs,
            r.median_steps,
            r.median_tokens,
            r.cost_usd.map_or("-".into(), |c| format!("{c:.4}")),
            r.median_wall_s,
            r.stalls
        ));
    }
    let verified = attempts.iter().filter(|a| a.outcome == "verified").count();
    out.push_str(&format!(
        "\n**{verified} of {} runs verified.**\n\n| task | run | outcome | session |\n|---|---|---|---|\n",
        attempts.len()
    ));
    for a in attempts {
        out.push_str(&format!(
            "| {} | {} | {}{} | {} |\n",
            a.task,
            a.attempt,
            a.outcome,
            a.detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default(),
            a.session_id.as_ref().map_or("-", SessionId::as_str)
        ));
    }
    out
}
