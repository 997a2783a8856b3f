//! Issue 14: the agent's processes do not outlive Deskhand. A `kill -9` of the CLI in the
//! middle of a bash command ends the shell, the command, and what it started with `setsid`
//! or left orphaned (`tail -f`, `sleep`); so does the end of a run.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::cli::deskhand_at;
use crate::support::gone;
use deskhand_standin::{StandIn, Turn};
use serde_json::json;

/// Waits up to 5 s for every pid in `file` to be gone; returns those that are not.
fn survivors(file: &Path) -> Vec<String> {
    let pids = std::fs::read_to_string(file).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<String> = pids
            .lines()
            .filter(|pid| !gone(pid))
            .map(str::to_string)
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn escaping_command(pids: &Path) -> String {
    format!(
        "echo $$ >> {p}; setsid sleep 300 > /dev/null 2>&1 & echo $! >> {p}; \
         (tail -f /dev/null > /dev/null 2>&1 & echo $! >> {p}); \
         (setsid tail -f /dev/null > /dev/null 2>&1 & echo $! >> {p})",
        p = pids.display()
    )
}

#[test]
fn kill_9_of_the_cli_ends_the_shell_and_everything_it_started() {
    let data = tempfile::tempdir().unwrap();
    let pids = data.path().join("pids");
    let command = format!(
        "{}; echo $$ > {}.ready; sleep 300",
        escaping_command(&pids),
        pids.display()
    );
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({ "command": command })),
        Turn::text("never reached"),
    ]);
    let mut cli = deskhand_at(&api, data.path())
        .args([
            "ask",
            "--json",
            "--tools",
            "bash",
            "--approve",
            "auto",
            "start things",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ready = data.path().join("pids.ready");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    cli.kill().unwrap(); // SIGKILL
    cli.wait().unwrap();
    let left = survivors(&pids);
    assert!(left.is_empty(), "still running after kill -9: {left:?}");
}

#[test]
fn the_end_of_a_run_ends_what_its_commands_left_running() {
    let data = tempfile::tempdir().unwrap();
    let pids = data.path().join("pids");
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({ "command": escaping_command(&pids) })),
        Turn::text("started"),
    ]);
    let output = deskhand_at(&api, data.path())
        .args([
            "ask",
            "--json",
            "--tools",
            "bash",
            "--approve",
            "auto",
            "start things",
        ])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(std::fs::read_to_string(&pids).unwrap().lines().count(), 4);
    let left = survivors(&pids);
    assert!(left.is_empty(), "still running after the run: {left:?}");
}
