//! `deskhand ask`, run as a process against the stand-in server: the CLI contract scripts
//! depend on (stdout/stderr split, JSON Lines, exit statuses, Ctrl-C).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::support::cli::{deskhand_at, json_lines, run};
use crate::support::{API_KEY, PNG_1X1};
use base64::Engine as _;
use deskhand_standin::{Recorded, Reply, Script, StandIn, Turn};
use serde_json::{Value, json};

#[test]
fn text_mode_streams_the_answer_to_stdout_and_the_rest_to_stderr() {
    let api = StandIn::spawn([Turn::text("Hello from the stand-in.")]);
    let data = tempfile::tempdir().unwrap();
    let (output, stdout, stderr) = run(deskhand_at(&api, data.path()).args([
        "ask",
        "--model",
        "claude-x",
        "--system",
        "Be brief.",
        "--max-turns",
        "4",
        "say hello",
    ]));
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "Hello from the stand-in.\n");
    assert!(stderr.contains("[done] 1 turn(s)"), "{stderr}");
    let body = &api.requests()[0].body;
    assert_eq!(body["model"], "claude-x");
    assert_eq!(
        body["system"][0]["text"],
        format!(
            "Be brief.\n\n{}",
            deskhand_engine::agent::spotlight::SYSTEM_NOTE
        )
    );
    assert_eq!(body["messages"][0]["content"][0]["text"], "say hello");
}

#[test]
fn json_mode_prints_one_event_per_line_ending_with_done() {
    let api = StandIn::spawn([Reply::new()
        .text("Streaming in pieces.")
        .usage(12, 5)
        .into()]);
    let data = tempfile::tempdir().unwrap();
    let (output, stdout, _) = run(deskhand_at(&api, data.path()).args(["ask", "--json", "hi"]));
    assert_eq!(output.status.code(), Some(0));
    let events = json_lines(&stdout);
    assert!(events.iter().all(|e| e["type"].is_string()));
    assert!(
        events.iter().all(|e| e["type"] != "message"),
        "full messages are not printed"
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Streaming in pieces.");
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(done["status"], "done");
    assert_eq!(done["turns"], 1);
    assert!(!done["session_id"].as_str().unwrap().is_empty());
    assert_eq!(done["usage"]["input_tokens"], 12);
    assert_eq!(done["usage"]["output_tokens"], 5);
    assert_eq!(
        api.requests()[0].body["model"],
        "claude-sonnet-5-5",
        "the default model"
    );
}

#[test]
fn attach_sends_images_and_refuses_other_files_before_any_request() {
    let api = StandIn::spawn([Turn::text("A single pixel.")]);
    let data = tempfile::tempdir().unwrap();
    let png = data.path().join("pixel.png");
    std::fs::write(
        &png,
        base64::engine::general_purpose::STANDARD
            .decode(PNG_1X1)
            .unwrap(),
    )
    .unwrap();
    let (output, _, stderr) = run(deskhand_at(&api, data.path())
        .args(["ask", "--attach"])
        .arg(&png)
        .arg("what is this?"));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let content = &api.requests()[0].body["messages"][0]["content"];
    assert_eq!(content[1]["type"], "image");
    assert_eq!(
        content[1]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": PNG_1X1})
    );

    let notes = data.path().join("notes.txt");
    std::fs::write(&notes, "not an image").unwrap();
    let (output, _, stderr) = run(deskhand_at(&api, data.path())
        .args(["ask", "--attach"])
        .arg(&notes)
        .arg("and this?"));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("notes.txt is not a PNG, JPEG, GIF or WebP image"),
        "{stderr}"
    );
    assert_eq!(
        api.requests().len(),
        1,
        "no request for a refused attachment"
    );
}

#[test]
fn turn_limit_exits_3_and_unknown_tools_are_answered() {
    let turns: Vec<Turn> = (0..3)
        .map(|_| Turn::tool_use("no_such_tool", json!({})))
        .collect();
    let api = StandIn::spawn(turns);
    let data = tempfile::tempdir().unwrap();
    let (output, stdout, _) =
        run(deskhand_at(&api, data.path()).args(["ask", "--json", "--max-turns", "2", "loop"]));
    assert_eq!(output.status.code(), Some(3));
    let done = json_lines(&stdout).pop().unwrap();
    assert_eq!(
        (done["status"].as_str(), done["turns"].as_u64()),
        (Some("max_turns"), Some(2))
    );
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    let result = &requests[1].body["messages"][2]["content"][0];
    assert_eq!(result["is_error"], true);
    assert!(
        deskhand_engine::agent::spotlight::unmarked(result["content"][0]["text"].as_str().unwrap())
            .starts_with("unknown tool `no_such_tool`")
    );
}

#[test]
fn errors_are_one_clear_line_with_status_and_request_id() {
    let api = StandIn::spawn([Turn::status(401, "authentication_error", None)]);
    let data = tempfile::tempdir().unwrap();
    let (output, stdout, stderr) = run(deskhand_at(&api, data.path()).args(["ask", "hi"]));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout, "");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .expect(&stderr);
    assert!(
        line.contains("authentication failed")
            && line.contains("HTTP 401")
            && line.contains("request-id req_standin_1"),
        "{line}"
    );
    assert!(!stderr.contains("panicked"));
    assert!(
        !stderr.contains(API_KEY),
        "the key never reaches the output"
    );
}

#[test]
fn missing_key_and_unknown_tools_are_refused_up_front() {
    let api = StandIn::spawn([Turn::text("unused")]);
    let data = tempfile::tempdir().unwrap();
    let (output, _, stderr) = run(deskhand_at(&api, data.path())
        .env_remove("ANTHROPIC_API_KEY")
        .args(["ask", "hi"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("API key"), "{stderr}");

    let (output, _, stderr) =
        run(deskhand_at(&api, data.path()).args(["ask", "--tools", "teleport", "hi"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("unknown tool `teleport`"), "{stderr}");
    assert!(api.requests().is_empty());
}

#[test]
fn ctrl_c_cancels_cleanly_with_exit_130() {
    let api = StandIn::spawn([Reply::new()
        .text("A long answer that hangs midway through.")
        .hang_after(6)
        .into()]);
    let data = tempfile::tempdir().unwrap();
    let mut child = deskhand_at(&api, data.path())
        .args(["ask", "--json", "talk"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let is_text = event["type"] == "text_delta";
        seen.push(event);
        if is_text {
            break;
        }
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    seen.extend(lines.map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(130));
    let done = seen.last().unwrap();
    assert_eq!(
        (done["type"].as_str(), done["status"].as_str()),
        (Some("done"), Some("cancelled"))
    );
}

#[test]
fn a_cost_budget_ends_the_run_with_status_budget_and_exit_4() {
    let turns: Vec<Turn> = (0..5)
        .map(|_| Turn::tool_use("no_such_tool", json!({})))
        .collect();
    let api = StandIn::spawn(turns);
    let data = tempfile::tempdir().unwrap();
    // The stand-in bills about 100 input tokens a request: at $3/MTok a budget of $0.0004 is
    // crossed on the second request.
    let (output, stdout, _) = run(deskhand_at(&api, data.path())
        .env("DESKHAND_MAX_COST", "0.0004")
        .args(["ask", "--json", "go"]));
    assert_eq!(output.status.code(), Some(4));
    let events = json_lines(&stdout);
    let done = events.last().unwrap();
    assert_eq!(done["status"], "budget");
    assert!(done["cost_usd"].as_f64().unwrap() >= 0.0004);
    assert!(api.requests().len() < 5);
    let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
    assert!(usage["turn_cost_usd"].as_f64().unwrap() > 0.0);

    let (output, _, stderr) = run(deskhand_at(&api, data.path()).args([
        "ask",
        "--model",
        "local-llm",
        "--max-cost",
        "1",
        "go",
    ]));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("--max-cost needs the price of `local-llm`"),
        "{stderr}"
    );
}

#[test]
fn a_stored_budget_holds_for_every_run_and_a_flag_overrides_it() {
    let data = tempfile::tempdir().unwrap();
    let idle = StandIn::spawn([Turn::text("unused")]);
    let (output, _, stderr) =
        run(deskhand_at(&idle, data.path()).args(["settings", "set", "max-tokens", "400"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let (_, listed, _) = run(deskhand_at(&idle, data.path()).args(["settings"]));
    assert_eq!(
        listed,
        "max-cost = (none)\nmax-tokens = 400\nsecret-paths = (none)\nstall-repeats = (none)\n\
         stall-no-ops = (none)\nstall-cycles = (none)\nmemory = (none)\n\
         set-of-marks = (none)\ndelegate-targets = (none)\npass-env = (none)\n"
    );

    // About 250 input tokens a request (without the memory and plan tools' descriptions, with
    // the note on marked tool results): the stored limit is crossed on the second.
    let turns: Vec<Turn> = (0..5)
        .map(|_| Turn::tool_use("no_such_tool", json!({})))
        .collect();
    let api = StandIn::spawn(turns);
    let (output, stdout, _) =
        run(deskhand_at(&api, data.path()).args(["ask", "--json", "--tools", "bash,editor", "go"]));
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(json_lines(&stdout).last().unwrap()["status"], "budget");
    assert_eq!(api.requests().len(), 2);

    let api = StandIn::spawn([
        Turn::tool_use("no_such_tool", json!({})),
        Turn::text("done"),
    ]);
    let (output, _, stderr) =
        run(deskhand_at(&api, data.path()).args(["ask", "--max-tokens", "100000", "go"]));
    assert_eq!(output.status.code(), Some(0), "the flag wins: {stderr}");

    let (output, _, stderr) =
        run(deskhand_at(&idle, data.path()).args(["settings", "set", "max-tokens", "lots"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("positive whole number, not `lots`"),
        "{stderr}"
    );
    run(deskhand_at(&idle, data.path()).args(["settings", "unset", "max-tokens"]));
    run(deskhand_at(&idle, data.path()).args(["settings", "set", "max-cost", "1"]));
    let (_, listed, _) = run(deskhand_at(&idle, data.path()).args(["settings"]));
    assert_eq!(
        listed,
        "max-cost = 1.0\nmax-tokens = (none)\nsecret-paths = (none)\nstall-repeats = (none)\n\
         stall-no-ops = (none)\nstall-cycles = (none)\nmemory = (none)\n\
         set-of-marks = (none)\ndelegate-targets = (none)\npass-env = (none)\n"
    );
    let (output, _, stderr) =
        run(deskhand_at(&idle, data.path()).args(["ask", "--model", "local-llm", "go"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("the max-cost setting needs the price of `local-llm`"),
        "{stderr}"
    );
    assert!(idle.requests().is_empty());
}

/// `--summarize-at` sets where summaries start. Three bash outputs of 20,000 bytes (about
/// 5,000 tokens each) on a model with a 32k window: the fourth request would fill about 48%
/// of it, so at the default 80% nothing is summarized, and at 40% the older turns are.
#[test]
fn summarize_at_sets_the_share_of_the_window_where_summaries_start() {
    const MARKER: &str = "getting too long for the context window";
    let script = || {
        let mut turns: Vec<Turn> = (0..3)
            .map(|_| {
                Turn::tool_use(
                    "bash",
                    json!({"command": "head -c 30000 /dev/zero | tr '\\0' x"}),
                )
            })
            .collect();
        turns.push(Turn::text("Done."));
        Script::new(turns).with_rule(MARKER, Reply::new().text("Summary: printed x three times."))
    };
    let ask = |api: &StandIn, data: &tempfile::TempDir, extra: &[&str]| {
        let (output, stdout, stderr) = run(deskhand_at(api, data.path())
            .args(["ask", "--json", "--model", "local-llm", "--tools", "bash"])
            .args(["--approve", "auto"])
            .args(extra)
            .arg("print some x"));
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        json_lines(&stdout)
    };
    let asked_to_summarize = |r: &Recorded| r.body.to_string().contains(MARKER);

    let data = tempfile::tempdir().unwrap();
    let api = StandIn::spawn(script());
    let events = ask(&api, &data, &[]);
    assert!(events.iter().all(|e| e["type"] != "context_summarized"));
    assert_eq!(api.accepted().len(), 4);
    assert!(!api.requests().iter().any(asked_to_summarize));

    let api = StandIn::spawn(script());
    let events = ask(&api, &data, &["--summarize-at", "40"]);
    let summarized: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "context_summarized")
        .collect();
    assert_eq!(summarized.len(), 1, "{events:?}");
    let (before, after) = (
        summarized[0]["tokens_before"].as_u64().unwrap(),
        summarized[0]["tokens_after"].as_u64().unwrap(),
    );
    assert!(
        before >= 32_768 * 4 / 10 && after < before,
        "{before} -> {after}"
    );
    let requests = api.requests();
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    assert_eq!(requests.len(), 5);
    assert!(asked_to_summarize(&requests[3]));
    // The last request starts with the summary in place of the first two turns.
    let first = &requests[4].body["messages"][0];
    assert_eq!(first["role"], "user");
    assert!(
        first
            .to_string()
            .contains("Summary: printed x three times."),
        "{first}"
    );
    assert_eq!(requests[4].body["messages"].as_array().unwrap().len(), 5);

    let (output, _, stderr) =
        run(deskhand_at(&api, data.path()).args(["ask", "--summarize-at", "100", "hi"]));
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--summarize-at"), "{stderr}");
}
