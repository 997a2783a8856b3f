//! The `bash` tool (`bash_20250124`): one persistent shell per session, so `cd` and exported
//! variables carry over between calls.
//!
//! Each command is handed to the shell through a quoted here-document and `eval`, so a syntax
//! error is an ordinary failed command instead of a shell waiting for the rest of a string.
//! A random marker printed after it on stdout (with the exit status) and on stderr tells where
//! the command's output ends; another, printed before it, sets apart what background jobs
//! wrote since the last command. The shell runs under a keeper (`deskhand_host::processes`): a
//! timeout, a stop, a restart, the end of the run or Deskhand's death ends it and everything
//! it started, `setsid` ones included, never the app.

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::Mutex;

use super::launch::Launch;
use super::{
    ActionDetail, ActionPlan, ToolContext, ToolError, ToolOutput, TypedTool, capped::CappedOutput,
    input,
};
use deskhand_llm::{AnthropicNativeTool, ToolDefinition};

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Bytes kept of each of stdout and stderr (half from the start, half from the end).
pub const DEFAULT_OUTPUT_LIMIT: usize = 20_000;

const DESCRIPTION: &str = "Run a command in a persistent bash shell. The working directory, \
variables and functions carry over between calls. Give `command` to run, or `restart: true` \
for a fresh shell. Commands read no input (stdin is /dev/null) and are killed after a timeout, \
so do not start interactive programs; run long jobs in the background with their output \
redirected to a file. Long output is shortened to its start and end.";

pub struct BashTool {
    shell: Mutex<Option<Shell>>,
    timeout: Duration,
    output_limit: usize,
    launch: Launch,
}

impl BashTool {
    pub fn new(timeout: Duration, output_limit: usize) -> Self {
        Self {
            shell: Mutex::new(None),
            timeout,
            output_limit,
            launch: Launch::default(),
        }
    }

    /// The shell started on a desktop or in a sandbox.
    pub fn with_launch(mut self, launch: Launch) -> Self {
        self.launch = launch;
        self
    }
}

// Field doc comments are the descriptions the model reads in the schema.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BashInput {
    /// The bash command to run.
    command: Option<String>,
    /// Start a fresh shell instead.
    restart: Option<bool>,
}

/// What a call asks for, checked.
pub enum BashCall {
    Run(String),
    Restart,
}

impl BashInput {
    fn read(input: &Value) -> Result<BashCall, ToolError> {
        let input: Self = input::read("bash", input)?;
        match input {
            Self {
                restart: Some(true),
                ..
            } => Ok(BashCall::Restart),
            Self {
                command: Some(command),
                ..
            } if !command.trim().is_empty() => Ok(BashCall::Run(command)),
            _ => Err(ToolError::InvalidInput(
                "give `command` (the shell command to run), or `restart: true` for a fresh shell"
                    .into(),
            )),
        }
    }
}

impl BashTool {
    async fn restart(&self) -> ToolOutput {
        let mut slot = self.shell.lock().await;
        *slot = None; // dropping the shell ends it and everything it started
        match Shell::start(&self.launch) {
            Ok(shell) => {
                *slot = Some(shell);
                ToolOutput::text("The shell has been restarted.")
            }
            Err(e) => e.into(),
        }
    }
}

#[async_trait]
impl TypedTool for BashTool {
    type Input = BashCall;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "bash".into(),
            description: DESCRIPTION.into(),
            input_schema: input::schema::<BashInput>(),
            anthropic: Some(AnthropicNativeTool::new(
                json!({"type": "bash_20250124", "name": "bash"}),
                None,
            )),
        }
    }

    fn read(&self, input: &Value) -> Result<BashCall, ToolError> {
        BashInput::read(input)
    }

    fn plan(&self, call: &BashCall) -> Result<ActionPlan, ToolError> {
        match call {
            BashCall::Restart => Ok(ActionPlan {
                kind: "bash".into(),
                read_only: false,
                summary: "restart the bash shell".into(),
                detail: ActionDetail::Restart { restart: true },
                on_screen: false,
                safety_checks: Vec::new(),
                target: None,
            }),
            BashCall::Run(command) => Ok(ActionPlan {
                kind: "bash".into(),
                read_only: false,
                summary: format!("bash: {command}"),
                detail: ActionDetail::Command {
                    command: command.clone(),
                    timeout_s: self.timeout.as_secs_f64(),
                },
                on_screen: false,
                safety_checks: Vec::new(),
                target: None,
            }),
        }
    }

    async fn run(&self, call: BashCall, ctx: &ToolContext) -> ToolOutput {
        let command = match call {
            BashCall::Run(command) => command,
            BashCall::Restart => return self.restart().await,
        };
        let mut slot = self.shell.lock().await;
        // Taken out of the slot while the command runs: if this call is dropped midway (a
        // stop), the shell drops with it and its keeper ends it and everything it started.
        let mut shell = match slot.take() {
            Some(shell) => shell,
            None => match Shell::start(&self.launch) {
                Ok(shell) => shell,
                Err(e) => return e.into(),
            },
        };
        let mut outputs = Outputs::new(self.output_limit);
        let ended = tokio::select! {
            ended = tokio::time::timeout(self.timeout, shell.execute(&command, &mut outputs)) => ended,
            () = ctx.cancel.cancelled() => return ToolError::Cancelled.into(),
        };
        if !matches!(ended, Ok(Ok(Ended::Status(_)))) {
            // Cut off before its end marker: what was read but held back is its output.
            outputs.stdout.push(&std::mem::take(&mut shell.stdout_rest));
            outputs.stderr.push(&std::mem::take(&mut shell.stderr_rest));
        }
        let output = |note: Option<String>| outputs.text(note);
        match ended {
            Ok(Ok(Ended::Status(status))) => {
                *slot = Some(shell);
                let note = (status != 0).then(|| format!("[exit status {status}]"));
                ToolOutput::text(output(note))
            }
            Ok(Ok(Ended::ShellExited)) => {
                let status = shell.exit_status().await;
                ToolOutput::text(output(Some(format!(
                    "[the shell exited ({status}); the next command starts a fresh shell]"
                ))))
            }
            Ok(Err(e)) => ToolOutput::error(output(Some(format!(
                "[the shell failed: {e}; the next command starts a fresh shell]"
            )))),
            Err(_) => {
                drop(shell);
                ToolOutput::error(output(Some(format!(
                    "[timed out after {} s: the command was killed. The shell was restarted, so \
                     the working directory, variables and background jobs are reset.]",
                    self.timeout.as_secs_f64()
                ))))
            }
        }
    }
}

/// stdout, then stderr under a heading, then a note, leaving out what is empty.
fn format_output(stdout: String, stderr: String, note: Option<String>) -> String {
    let mut text = stdout;
    if !stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(&stderr);
    }
    if let Some(note) = note {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&note);
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    text
}

enum Ended {
    Status(i32),
    ShellExited,
}

struct Shell {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: ChildStderr,
    /// Bytes read past the last marker line of each stream (a background job's output).
    stdout_rest: Vec<u8>,
    stderr_rest: Vec<u8>,
    /// The pid of the shell's keeper (see `processes`), which ends it and all it started.
    keeper: u32,
}

impl Shell {
    fn start(launch: &Launch) -> Result<Shell, ToolError> {
        let cannot =
            |e: &dyn std::fmt::Display| ToolError::Unavailable(format!("cannot start bash: {e}"));
        let mut command = launch
            .command("bash", &["--noprofile", "--norc"])
            .map_err(|e| cannot(&e))?;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        deskhand_host::processes::keep(&mut command);
        let mut child = command.spawn().map_err(|e| cannot(&e))?;
        let (Some(stdin), Some(stdout), Some(stderr), Some(pid)) = (
            child.stdin.take(),
            child.stdout.take(),
            child.stderr.take(),
            child.id(),
        ) else {
            return Err(cannot(&"its pipes are missing"));
        };
        Ok(Shell {
            child,
            stdin,
            stdout,
            stderr,
            stdout_rest: Vec::new(),
            stderr_rest: Vec::new(),
            keeper: pid,
        })
    }

    /// Runs `command`. A first marker, printed before it, tells what background jobs wrote
    /// since the last command (into `background`) from what this command writes.
    async fn execute(&mut self, command: &str, out: &mut Outputs) -> std::io::Result<Ended> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let begin = format!("__deskhand_begin_{id}__");
        let marker = format!("__deskhand_done_{id}__");
        let script = format!(
            "printf '%s\\n' {begin}; printf '%s\\n' {begin} >&2\n\
             IFS= read -r -d '' __deskhand_command <<'__deskhand_command_{id}__'\n\
             {command}\n\
             __deskhand_command_{id}__\n\
             eval \"$__deskhand_command\" < /dev/null; \
             printf '%s %d\\n' {marker} \"$?\"; printf '%s\\n' {marker} >&2\n"
        );
        self.stdin.write_all(script.as_bytes()).await?;
        self.stdin.flush().await?;
        let begin = begin.as_bytes();
        let started = tokio::try_join!(
            read_until_marker(
                &mut self.stdout,
                &mut self.stdout_rest,
                begin,
                &mut out.background_stdout
            ),
            read_until_marker(
                &mut self.stderr,
                &mut self.stderr_rest,
                begin,
                &mut out.background_stderr
            ),
        )?;
        if started.0.is_none() || started.1.is_none() {
            return Ok(Ended::ShellExited);
        }
        let marker = marker.as_bytes();
        let (status, _) = tokio::try_join!(
            read_until_marker(
                &mut self.stdout,
                &mut self.stdout_rest,
                marker,
                &mut out.stdout
            ),
            read_until_marker(
                &mut self.stderr,
                &mut self.stderr_rest,
                marker,
                &mut out.stderr
            ),
        )?;
        Ok(match status {
            Some(status) => Ended::Status(status.trim().parse().unwrap_or(-1)),
            None => Ended::ShellExited,
        })
    }

    async fn exit_status(&mut self) -> String {
        match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            _ => "status unknown".into(),
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        // The keeper ends the shell and everything it started, `setsid` ones included.
        deskhand_host::processes::end(self.keeper);
    }
}

/// What one command's run collected from the shell's two streams, each capped: what
/// background jobs wrote before it started, and its own output.
struct Outputs {
    background_stdout: CappedOutput,
    background_stderr: CappedOutput,
    stdout: CappedOutput,
    stderr: CappedOutput,
}

impl Outputs {
    fn new(limit: usize) -> Self {
        Self {
            background_stdout: CappedOutput::new(limit),
            background_stderr: CappedOutput::new(limit),
            stdout: CappedOutput::new(limit),
            stderr: CappedOutput::new(limit),
        }
    }

    /// The command's output, then what background jobs wrote between commands under its own
    /// heading (so it is not taken for this command's), then `note`.
    fn text(self, note: Option<String>) -> String {
        let (stdout, stderr) = (self.background_stdout.text(), self.background_stderr.text());
        let note = if stdout.is_empty() && stderr.is_empty() {
            note
        } else {
            Some(format!(
                "[output of background jobs, written before this command started]\n{}",
                format_output(stdout, stderr, note)
            ))
        };
        format_output(self.stdout.text(), self.stderr.text(), note)
    }
}

/// Copies `reader` into `kept` until `marker`, and returns the rest of the marker's line, or
/// `None` if the stream ended first. `carry` holds bytes read past that line, for the next
/// call; bytes that could be the start of the marker are held back until they are not.
async fn read_until_marker(
    reader: &mut (impl AsyncRead + Unpin),
    carry: &mut Vec<u8>,
    marker: &[u8],
    kept: &mut CappedOutput,
) -> std::io::Result<Option<String>> {
    // Held in the caller's `carry`, so that what a command printed before a timeout is
    // still there to show when this future is dropped.
    let pending = carry;
    let mut buffer = vec![0u8; 16 * 1024];
    let mut searched = 0;
    loop {
        if let Some(at) = find(&pending[searched..], marker).map(|at| at + searched) {
            let line = at + marker.len();
            if let Some(end) = pending[line..].iter().position(|&b| b == b'\n') {
                kept.push(&pending[..at]);
                let rest = String::from_utf8_lossy(&pending[line..line + end]).into_owned();
                pending.drain(..line + end + 1);
                return Ok(Some(rest));
            }
            searched = at;
        } else {
            let keep = pending.len().min(marker.len() - 1);
            let flush = pending.len() - keep;
            kept.push(&pending[..flush]);
            pending.drain(..flush);
            searched = 0;
        }
        let n = reader.read(&mut buffer).await?;
        if n == 0 {
            kept.push(pending);
            pending.clear();
            return Ok(None);
        }
        pending.extend_from_slice(&buffer[..n]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
