//! Progress from the newest models on the terminal: an Opus 5.5-shaped stream, whose text
//! between tool calls arrives inside thinking blocks (shown with `display: "summarized"`),
//! reaches stderr as it streams, between the tool calls it comes between; `--effort` goes as
//! the API expects.

use crate::support::cli::{deskhand_at, run};
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::json;

/// Opus 5.5's shape: no text blocks between the calls, the progress in thinking blocks.
fn opus_5_5_turns() -> Vec<Turn> {
    vec![
        Reply::new()
            .thinking("Listing the folder first.", "sig_1")
            .tool_use("bash", json!({"command": "echo first-call"}))
            .into(),
        Reply::new()
            .thinking("The folder is listed; now the second look.", "sig_2")
            .tool_use("bash", json!({"command": "echo second-call"}))
            .into(),
        Reply::new()
            .thinking("Both looked at.", "sig_3")
            .text("All done.")
            .into(),
    ]
}

#[test]
fn progress_between_tool_calls_reaches_the_terminal_and_effort_is_sent() {
    let api = StandIn::spawn(opus_5_5_turns());
    let dir = tempfile::tempdir().unwrap();
    let (output, stdout, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--model",
        "claude-opus-5-5",
        "--effort",
        "max",
        "--tools",
        "bash",
        "--approve",
        "auto",
        "look twice",
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "All done.");
    // Each progress line before the call it announces, after the one before it.
    let at = |needle: &str| {
        stderr
            .find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} in {stderr}"))
    };
    let order = [
        at("· thinking: Listing the folder first."),
        at("→ bash {\"command\":\"echo first-call\"}"),
        at("✓ bash"),
        at("· thinking: The folder is listed; now the second look."),
        at("→ bash {\"command\":\"echo second-call\"}"),
        at("· thinking: Both looked at."),
    ];
    assert!(order.is_sorted(), "{order:?}: {stderr}");
    let requests = api.accepted();
    assert_eq!(requests.len(), 3, "{:?}", api.requests());
    for request in &requests {
        assert_eq!(
            request.body["thinking"],
            json!({"type": "adaptive", "display": "summarized"})
        );
        assert_eq!(request.body["output_config"], json!({"effort": "max"}));
    }
    // A level the API does not know is refused before anything is sent.
    let (output, _, stderr) =
        run(deskhand_at(&api, dir.path()).args(["ask", "--effort", "extreme", "hi"]));
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("extreme"), "{stderr}");
    assert_eq!(api.requests().len(), 3);
}
