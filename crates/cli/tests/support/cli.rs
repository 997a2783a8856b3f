//! `deskhand` as a process, isolated from the developer's own settings, and the scripted
//! bash and editor session the CLI tests of every provider run.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

use super::API_KEY;

pub const EDITOR: &str = "str_replace_based_edit_tool";

/// Every variable that could choose a provider, so the developer's own cannot leak in.
pub const PROVIDER_VARIABLES: &[&str] = &[
    "LLM_PROVIDER",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_DEPLOYMENT",
    "AZURE_OPENAI_API_VERSION",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
];

/// `deskhand` keeping its history and settings in `dir`, with stdin closed and none of the
/// developer's provider variables, budget or set-of-marks override.
pub fn deskhand(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deskhand"));
    for variable in PROVIDER_VARIABLES.iter().chain(&[
        "DESKHAND_MAX_COST",
        "DESKHAND_MAX_TOKENS",
        "DESKHAND_MONITOR",
        "DESKHAND_SET_OF_MARKS",
    ]) {
        command.env_remove(variable);
    }
    command
        .env("DESKHAND_DATA_DIR", dir)
        .env("DESKHAND_CONFIG_DIR", dir)
        .stdin(Stdio::null());
    command
}

/// [`deskhand`] talking to the stand-in as Anthropic, with [`API_KEY`].
pub fn deskhand_at(api: &StandIn, dir: &Path) -> Command {
    let mut command = deskhand(dir);
    command
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url());
    command
}

/// [`deskhand_at`] on a pseudo-terminal (the pty driver `tests/fixtures/pty_run.py`), where
/// `answer` is typed at each approval prompt; the caller adds deskhand's arguments.
pub fn on_pty(api: &StandIn, dir: &Path, answer: &str) -> Command {
    command_on_pty(&deskhand_at(api, dir), answer)
}

/// `deskhand` (its program, arguments and environment) on a pseudo-terminal, where `answer`
/// is typed at each approval prompt; the caller may add more arguments.
pub fn command_on_pty(deskhand: &Command, answer: &str) -> Command {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pty_run.py");
    let mut command = Command::new("python3");
    command
        .arg(driver)
        .args([PROMPT_END, answer, "--"])
        .arg(deskhand.get_program())
        .args(deskhand.get_args());
    for (name, value) in deskhand.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
}

/// The events of `--json` output on a terminal: the lines that are JSON, between the
/// approval prompts.
pub fn json_lines_on_screen(screen: &str) -> Vec<Value> {
    screen
        .lines()
        .map(|line| line.trim_end_matches('\r'))
        .filter(|line| line.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// `deskhand ask` through `--provider openai` at the stand-in's Chat Completions side, with
/// [`API_KEY`] and `gpt-4.1` (which has a price); the caller adds the rest of the arguments.
pub fn ask_over_openai(api: &StandIn, dir: &Path) -> Command {
    let mut command = deskhand(dir);
    command.env("OPENAI_API_KEY", API_KEY).args([
        "ask",
        "--provider",
        "openai",
        "--base-url",
        &format!("{}/v1", api.url()),
        "--model",
        "gpt-4.1",
    ]);
    command
}

/// Runs the command to the end: its output, stdout and stderr.
pub fn run(command: &mut Command) -> (Output, String, String) {
    let output = command.output().expect("deskhand runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}

/// Runs the command with `input` on its stdin.
pub fn run_with_stdin(command: &mut Command, input: &str) -> (Output, String, String) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("deskhand starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}

/// The events of `--json` output, one a line.
pub fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Every file under `dir` with its bytes, sorted, to show what changed and what did not.
pub fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// The session the model (the stand-in) scripts for `deskhand ask --tools bash,editor`, the
/// same whichever provider carries it: bash makes a directory and a file, the editor creates,
/// edits and inserts into a script there, and bash runs it from the directory the first
/// command moved to.
pub struct BashEditorSession {
    /// The run's working directory, as the shell's `pwd` prints it.
    pub root: PathBuf,
    /// The run's data directory, beside the work: Deskhand's own directory is a secret
    /// place, where every edit asks.
    pub data: PathBuf,
    app: PathBuf,
    _work: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl BashEditorSession {
    pub fn new() -> Self {
        let work = tempfile::tempdir().unwrap();
        let root = work.path().canonicalize().unwrap();
        let data_dir = tempfile::tempdir().unwrap();
        Self {
            app: root.join("project/app.py"),
            root,
            data: data_dir.path().to_path_buf(),
            _data: data_dir,
            _work: work,
        }
    }

    /// The arguments of `deskhand ask` after the provider's: every action allowed, events
    /// as JSON Lines.
    pub const ASK_ARGS: [&str; 6] = [
        "--json",
        "--tools",
        "bash,editor",
        "--approve",
        "auto",
        "set up the project",
    ];

    /// Five tool calls, then the closing text.
    pub fn turns(&self) -> Vec<Turn> {
        let app = self.app.display().to_string();
        vec![
            Turn::tool_use(
                "bash",
                json!({"command": "mkdir -p project && cd project && printf 'hello\\n' > greeting.txt && pwd; env | grep API_KEY; echo \"keys found: $?\""}),
            ),
            Turn::tool_use(
                EDITOR,
                json!({"command": "create", "path": app, "file_text": "def main():\n    print('hi')\n"}),
            ),
            Turn::tool_use(
                EDITOR,
                json!({"command": "str_replace", "path": app, "old_str": "print('hi')", "new_str": "print(open('greeting.txt').read())"}),
            ),
            Turn::tool_use(
                EDITOR,
                json!({"command": "insert", "path": app, "insert_line": 2, "new_str": "\nmain()"}),
            ),
            Turn::tool_use("bash", json!({"command": "ls; python3 app.py"})),
            Turn::text("The project is set up."),
        ]
    }

    /// Checks the files the run left, and `results`: the text of each tool result the model
    /// received, in order.
    pub fn check(&self, results: &[String]) {
        // What the tools said, without the delimiters that mark it as data.
        let results: Vec<String> = results
            .iter()
            .map(|r| deskhand_engine::agent::spotlight::unmarked(r).to_string())
            .collect();
        assert_eq!(
            std::fs::read_to_string(self.root.join("project/greeting.txt")).unwrap(),
            "hello\n"
        );
        assert_eq!(
            std::fs::read_to_string(&self.app).unwrap(),
            "def main():\n    print(open('greeting.txt').read())\n\nmain()\n"
        );
        assert_eq!(results.len(), 5, "{results:?}");
        assert_eq!(
            results[0],
            format!("{}\nkeys found: 1\n", self.root.join("project").display()),
            "no API key reaches the shell"
        );
        assert_eq!(results[1], format!("File created: {}", self.app.display()));
        assert!(results[2].contains("print(open('greeting.txt').read())"));
        assert!(results[3].contains("     4\tmain()\n"));
        // Still in `project`: the shell kept the `cd` of the first command.
        assert_eq!(results[4], "app.py\ngreeting.txt\nhello\n\n");
    }
}

/// The real prompt's end, after which the pty driver types the answer.
pub const PROMPT_END: &str = "this session: ";

/// `deskhand ARGS` on a pseudo-terminal; `answer` is typed at each approval prompt. Returns
/// the exit status and every byte the terminal received.
pub fn on_terminal(
    data: &Path,
    env: &[(&str, String)],
    answer: &str,
    args: &[&str],
) -> (i32, Vec<u8>) {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pty_run.py");
    let mut command = Command::new("python3");
    command
        .arg(driver)
        .args([PROMPT_END, answer, "--", env!("CARGO_BIN_EXE_deskhand")])
        .args(args)
        .env("DESKHAND_DATA_DIR", data)
        .env("DESKHAND_CONFIG_DIR", data);
    for variable in PROVIDER_VARIABLES {
        command.env_remove(variable);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("python3 runs the pty driver");
    (output.status.code().unwrap_or(-1), output.stdout)
}
