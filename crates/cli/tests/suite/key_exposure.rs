//! The agent's own shell hunting for the API key (issue 13): it inherits no key variable,
//! but it runs as the same user as `deskhand`, whose environment it tries to read through
//! `/proc/$PPID/environ`. A run in auto mode against the stand-in; the key must end up in no
//! tool result, no output, no stored file and no request body.

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;

use crate::support::cli::{deskhand_at, files_under, run};
use crate::support::{API_KEY, last_tool_results, result_text};
use base64::Engine as _;
use deskhand_engine::agent::REDACTED;
use deskhand_standin::{StandIn, Turn};
use serde_json::json;

/// Another provider's key in the environment: not the one the run uses, but a key all the
/// same.
const OTHER_KEY: &str = "sk-or-other-provider-key-1111";

/// The shell's tries, one tool call each, and the closing text.
fn key_hunt() -> Vec<Turn> {
    let (head, rest) = API_KEY.split_at(8);
    let commands = [
        r#"tr '\0' '\n' < /proc/$PPID/environ | grep -a API_KEY; echo "read: $?""#.to_string(),
        "base64 -w0 /proc/$PPID/environ".to_string(),
        r#"echo "[$ANTHROPIC_API_KEY][$OPENROUTER_API_KEY]"; env | grep -c API_KEY"#.to_string(),
        // The key rebuilt from pieces: no layer but the redaction can catch this one.
        format!(r#"echo "{head}""{rest}""#),
    ];
    let mut turns: Vec<Turn> = commands
        .iter()
        .map(|command| Turn::tool_use("bash", json!({ "command": command })))
        .collect();
    turns.push(Turn::text("Nothing found."));
    turns
}

fn contains_a_key(bytes: &[u8]) -> bool {
    [API_KEY, OTHER_KEY].iter().any(|key| {
        bytes
            .windows(key.len())
            .any(|window| window == key.as_bytes())
    })
}

/// Runs the hunt; `as_other_user` runs `deskhand` (and so its shell) as `nobody` when the
/// test runs as root. Returns the text of each tool result, in order.
fn hunt(as_other_user: bool) -> Vec<String> {
    let api = StandIn::spawn(key_hunt());
    let data = tempfile::tempdir().unwrap();
    std::fs::set_permissions(data.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut command = deskhand_at(&api, data.path());
    command
        .env("OPENROUTER_API_KEY", OTHER_KEY)
        .env("HOME", data.path())
        .current_dir(data.path())
        .args([
            "ask",
            "--json",
            "--approve",
            "auto",
            "--tools",
            "bash",
            "look around",
        ]);
    // SAFETY: geteuid has no preconditions.
    if as_other_user && unsafe { libc::geteuid() } == 0 {
        // The data directory is theirs, as a person's own is: Deskhand makes it private.
        std::os::unix::fs::chown(data.path(), Some(65534), Some(65534)).unwrap();
        command.uid(65534).gid(65534);
    }
    let (output, stdout, stderr) = run(&mut command);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert!(
        !contains_a_key(stdout.as_bytes()),
        "a key on stdout: {stdout}"
    );
    assert!(
        !contains_a_key(stderr.as_bytes()),
        "a key on stderr: {stderr}"
    );
    check_files(data.path());
    let requests = api.requests();
    assert_eq!(requests.len(), 5);
    for request in &requests {
        let body = request.body.to_string();
        assert!(!contains_a_key(body.as_bytes()), "a key was sent: {body}");
    }
    let results: Vec<String> = requests[1..]
        .iter()
        .map(|request| result_text(&last_tool_results(&request.body)[0]))
        .collect();
    let environ = base64::engine::general_purpose::STANDARD
        .decode(results[1].trim())
        .unwrap_or_default();
    assert!(!contains_a_key(&environ), "a key in the environment block");
    assert!(
        results[2].starts_with("[][]\n0\n"),
        "the shell inherits no key variable: {}",
        results[2]
    );
    assert_eq!(
        results[3],
        format!("{REDACTED}\n"),
        "the rebuilt key is redacted"
    );
    results
}

fn check_files(dir: &Path) {
    for (path, bytes) in files_under(dir) {
        assert!(!contains_a_key(&bytes), "a key in {path}");
    }
}

/// As the same user: the process is not dumpable, so its `/proc` files are not this user's
/// to read.
#[test]
fn the_same_users_shell_cannot_read_deskhands_environment() {
    let results = hunt(true);
    assert!(
        results[0].starts_with("read: 1\n") && results[0].contains("Permission denied"),
        "{}",
        results[0]
    );
}

/// As root, who may read any process's `/proc` files: the key variables are gone from the
/// environment block, their bytes blanked, and whatever still shows a key is redacted.
#[test]
fn even_root_finds_no_key_in_deskhands_environment() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can read another process's environment here");
        return;
    }
    let results = hunt(false);
    assert!(
        results[0].ends_with("read: 0\n"),
        "root reads it: {}",
        results[0]
    );
    assert!(
        results[0].contains("ANTHROPIC_API_KEY=\n") || !results[0].contains("ANTHROPIC_API_KEY="),
        "the value is blanked: {}",
        results[0]
    );
}
