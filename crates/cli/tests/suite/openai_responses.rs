//! OpenAI's Responses API through the CLI on a real X display: `deskhand ask --provider openai
//! --model computer-use-preview` against the stand-in's `/v1/responses`, whose computer calls
//! land on an xev window, and whose safety checks a person must acknowledge on the terminal,
//! even in the auto mode.

use std::path::Path;
use std::process::Command;

use crate::support::API_KEY;
use crate::support::cli::{deskhand, on_terminal, run};
use crate::support::x11::{self, Xev};
use base64::Engine as _;
use deskhand_standin::{Recorded, Reply, StandIn, Turn};
use serde_json::{Value, json};

const MODEL: &str = "computer-use-preview";

/// The arguments of `deskhand ask` at the stand-in's Responses side, in the auto mode.
fn ask_args(api: &StandIn) -> Vec<String> {
    model_args(api, MODEL)
}

/// The same for `model`.
fn model_args(api: &StandIn, model: &str) -> Vec<String> {
    [
        "ask",
        "--provider",
        "openai",
        "--base-url",
        &format!("{}/v1", api.url()),
        "--model",
        model,
        "--tools",
        "computer",
        "--approve",
        "auto",
        "do the task",
    ]
    .map(str::to_string)
    .to_vec()
}

fn ask(api: &StandIn, dir: &Path) -> Command {
    let mut command = deskhand(dir);
    command.env("OPENAI_API_KEY", API_KEY).args(ask_args(api));
    command
}

/// An xev window and the model's coordinates (1920x1080 shown as 1366x768) of a point in it.
fn window(name: &str) -> (Xev, (i32, i32), (i64, i64)) {
    x11::wait_until_still();
    let xev = Xev::open(name, 500, 400, 400, 300);
    let (wx, wy, _, _) = x11::window_geometry(&xev.id);
    let target = (wx + 100, wy + 80);
    let model = (
        (i64::from(target.0) * 1366 * 2 + 1920) / 3840,
        (i64::from(target.1) * 768 * 2 + 1080) / 2160,
    );
    (xev, target, model)
}

fn click(model: (i64, i64)) -> Value {
    json!({"type": "click", "button": "left", "x": model.0, "y": model.1})
}

fn safety_check() -> Value {
    json!({"id": "cu_sc_1", "code": "malicious_instructions",
           "message": "The screen asks the agent to do something else."})
}

/// The texts of the last input item: a batch that did not run whole goes back as text, one
/// result per action.
fn result_texts(items: &[Value]) -> Vec<&str> {
    let parts = items.last().unwrap()["content"].as_array().unwrap();
    parts
        .iter()
        .filter_map(|part| part["text"].as_str())
        .collect()
}

fn input(request: &Recorded) -> &Vec<Value> {
    request.body["input"].as_array().unwrap()
}

fn screenshot_size(output: &Value) -> (usize, usize) {
    assert_eq!(output["type"], "computer_call_output");
    let url = output["output"]["image_url"].as_str().unwrap();
    let data = url.strip_prefix("data:image/png;base64,").expect("a PNG");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let size = imagesize::blob_size(&bytes).unwrap();
    (size.width, size.height)
}

fn assert_clicked_at(xev: &Xev, target: (i32, i32)) -> Vec<x11::XEvent> {
    let events = xev.wait_for("the click", |e| e.iter().any(|e| e.kind == "ButtonRelease"));
    let press = events.iter().find(|e| e.kind == "ButtonPress").unwrap();
    assert_eq!(press.button, Some(1));
    assert!(
        (press.root.0 - target.0).abs() <= 2 && (press.root.1 - target.1).abs() <= 2,
        "{press:?} vs {target:?}"
    );
    events
}

#[test]
fn a_responses_session_clicks_and_types_on_the_display() {
    let Some(_display) = x11::display() else {
        return;
    };
    let (xev, target, model) = window("deskhand-responses");
    let api = StandIn::spawn([
        Reply::new()
            .thinking("Look first.", "enc_1")
            .computer_call(json!({"type": "screenshot"}), vec![])
            .into(),
        Reply::new().computer_call(click(model), vec![]).into(),
        Reply::new()
            .computer_call(json!({"type": "type", "text": "hi"}), vec![])
            .into(),
        Turn::text("Typed."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (output, stdout, stderr) = run(&mut ask(&api, dir.path()));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Typed."), "{stdout}");
    let requests = api.requests();
    assert!(
        requests.iter().all(|r| r.rejected.is_none()),
        "{requests:?}"
    );
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    let first = &requests[0].body;
    assert_eq!(
        first["tools"],
        json!([{"type": "computer_use_preview", "display_width": 1366, "display_height": 768, "environment": "linux"}])
    );
    assert_eq!(first["store"], false);
    // Every call answered by its screenshot, the full history sent each time, the reasoning
    // item kept before its call.
    for request in &requests[1..] {
        let items = input(request);
        assert_eq!(screenshot_size(items.last().unwrap()), (1366, 768));
    }
    let second = input(&requests[1]);
    assert_eq!(second[1]["type"], "reasoning");
    assert_eq!(second[1]["encrypted_content"], "enc_1");
    assert_eq!(second[2]["type"], "computer_call");
    let events = assert_clicked_at(&xev, target);
    let _ = events;
    let events = xev.wait_for("the typing", |e| {
        e.iter().filter(|e| e.kind == "KeyPress").count() >= 2
    });
    let keys: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == "KeyPress")
        .filter_map(|e| e.keysym.as_deref())
        .collect();
    assert_eq!(keys, ["h", "i"]);
}

#[test]
fn a_safety_check_is_acknowledged_on_the_terminal_even_in_auto_mode() {
    let Some(_display) = x11::display() else {
        return;
    };
    let (xev, target, model) = window("deskhand-safety-yes");
    let api = StandIn::spawn([
        Reply::new()
            .computer_call(click(model), vec![safety_check()])
            .into(),
        Turn::text("Done."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let args = ask_args(&api);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("OPENAI_API_KEY", API_KEY.to_string())];
    let (status, screen) = on_terminal(dir.path(), &env, "y", &args);
    let screen = String::from_utf8_lossy(&screen);
    assert_eq!(status, 0, "{screen}");
    assert!(
        screen.contains("[SAFETY CHECK to acknowledge: malicious_instructions: The screen asks the agent to do something else.]"),
        "{screen}"
    );
    let requests = api.requests();
    assert!(
        requests.iter().all(|r| r.rejected.is_none()),
        "{requests:?}"
    );
    assert_eq!(requests.len(), 2);
    let answer = input(&requests[1]).last().unwrap().clone();
    assert_eq!(
        answer["acknowledged_safety_checks"],
        json!([safety_check()])
    );
    assert_eq!(screenshot_size(&answer), (1366, 768));
    assert_clicked_at(&xev, target);
}

#[test]
fn a_refused_safety_check_runs_nothing_and_the_run_goes_on() {
    let Some(_display) = x11::display() else {
        return;
    };
    let (xev, _, model) = window("deskhand-safety-no");
    let turns = || {
        [
            Reply::new()
                .computer_call(click(model), vec![safety_check()])
                .into(),
            Turn::text("Stopped as asked."),
        ]
    };
    let dir = tempfile::tempdir().unwrap();
    // Refused on the terminal.
    let api = StandIn::spawn(turns());
    let args = ask_args(&api);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("OPENAI_API_KEY", API_KEY.to_string())];
    let (status, screen) = on_terminal(dir.path(), &env, "n", &args);
    let screen = String::from_utf8_lossy(&screen);
    assert_eq!(status, 0, "{screen}");
    assert!(screen.contains("Stopped as asked."), "{screen}");
    // No terminal at all, in the auto mode: nobody acknowledged it, so it did not run.
    let api_without_terminal = StandIn::spawn(turns());
    let (output, _, stderr) = run(&mut ask(&api_without_terminal, dir.path()));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("no terminal to ask for approval"),
        "{stderr}"
    );
    for api in [&api, &api_without_terminal] {
        let requests = api.requests();
        assert!(
            requests.iter().all(|r| r.rejected.is_none()),
            "{requests:?}"
        );
        assert_eq!(requests.len(), 2);
        let items = input(&requests[1]);
        // The call goes back as text, since its output could not acknowledge the check.
        assert!(
            items.iter().all(|i| i["type"] != "computer_call"),
            "{items:?}"
        );
        let said = items.last().unwrap()["content"][0]["text"]
            .as_str()
            .unwrap();
        assert!(
            said.contains("] Error: ") && said.contains("\nnot run: "),
            "{said}"
        );
    }
    // A click that slipped through reaches xev in milliseconds: watch for 300 ms.
    let clicked = crate::support::wait_until(std::time::Duration::from_millis(300), || {
        xev.events().iter().any(|e| e.kind == "ButtonPress")
    });
    assert!(!clicked, "{:?}", xev.events());
}

/// GPT-5.4 and newer get the GA `computer` tool, whose calls batch their actions.
const GA_MODEL: &str = "gpt-5.4";

#[test]
fn a_ga_batch_runs_in_order_and_stops_at_the_action_that_fails() {
    let Some(_display) = x11::display() else {
        return;
    };
    let (xev, target, model) = window("deskhand-ga-batch");
    let api = StandIn::spawn([
        Reply::new()
            .computer_actions(
                vec![
                    click(model),
                    json!({"type": "keypress", "keys": ["NOSUCHKEY"]}),
                    json!({"type": "type", "text": "hi"}),
                ],
                vec![],
            )
            .into(),
        Turn::text("The key was wrong."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut command = deskhand(dir.path());
    command
        .env("OPENAI_API_KEY", API_KEY)
        .args(model_args(&api, GA_MODEL))
        .args(["--json", "--effort", "low"]);
    let (output, stdout, stderr) = run(&mut command);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let requests = api.requests();
    assert!(
        requests.iter().all(|r| r.rejected.is_none()),
        "{requests:?}"
    );
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    assert_eq!(requests[0].body["tools"], json!([{"type": "computer"}]));
    assert_eq!(
        requests[0].body["reasoning"],
        json!({"summary": "concise", "effort": "low"})
    );
    // The results, in order, as text: the batch could not go back as one screenshot.
    let items = input(&requests[1]);
    assert!(
        items.iter().all(|i| i["type"] != "computer_call"),
        "{items:?}"
    );
    let results = result_texts(items);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].starts_with("[result of computer call "),
        "{results:?}"
    );
    assert!(results[0].contains("#1] "), "{results:?}");
    assert!(!results[0].contains("Error"), "{results:?}");
    assert!(
        results[1].contains("#2] Error: ") && results[1].contains("NOSUCHKEY"),
        "{results:?}"
    );
    assert!(
        results[2].contains("#3] Error: ") && results[2].contains("\nNot executed"),
        "{results:?}"
    );
    // On the --json stream: three calls, the last two errors.
    let statuses: Vec<String> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["status"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(statuses, ["ok", "error", "error"], "{stdout}");
    // The click ran; the typing after the failure did not.
    let events = assert_clicked_at(&xev, target);
    assert!(events.iter().all(|e| e.kind != "KeyPress"), "{events:?}");
    let typed = crate::support::wait_until(std::time::Duration::from_millis(300), || {
        xev.events().iter().any(|e| e.kind == "KeyPress")
    });
    assert!(!typed, "{:?}", xev.events());
}

#[test]
fn a_batchs_safety_check_is_acknowledged_once_and_its_output_acknowledges_it() {
    let Some(_display) = x11::display() else {
        return;
    };
    let (xev, target, model) = window("deskhand-ga-safety");
    let api = StandIn::spawn([
        Reply::new()
            .computer_actions(
                vec![click(model), json!({"type": "type", "text": "hi"})],
                vec![safety_check()],
            )
            .into(),
        Turn::text("Done."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let args = model_args(&api, GA_MODEL);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("OPENAI_API_KEY", API_KEY.to_string())];
    let (status, screen) = on_terminal(dir.path(), &env, "y", &args);
    let screen = String::from_utf8_lossy(&screen);
    assert_eq!(status, 0, "{screen}");
    assert_eq!(
        screen
            .matches("[SAFETY CHECK to acknowledge: malicious_instructions")
            .count(),
        1,
        "{screen}"
    );
    let requests = api.requests();
    assert!(
        requests.iter().all(|r| r.rejected.is_none()),
        "{requests:?}"
    );
    assert_eq!(requests.len(), 2);
    let items = input(&requests[1]);
    let call = &items[items.len() - 2];
    assert_eq!(call["type"], "computer_call");
    assert_eq!(call["actions"].as_array().map(Vec::len), Some(2));
    let answer = items.last().unwrap();
    assert_eq!(answer["call_id"], call["call_id"]);
    assert_eq!(
        answer["acknowledged_safety_checks"],
        json!([safety_check()])
    );
    assert_eq!(screenshot_size(answer), (1366, 768));
    assert_clicked_at(&xev, target);
    xev.wait_for("the typing", |e| {
        e.iter().filter(|e| e.kind == "KeyPress").count() >= 2
    });
}

#[test]
fn a_batch_is_approved_once_with_every_action_listed_and_a_refusal_runs_none() {
    let Some(_display) = x11::display() else {
        return;
    };
    let (xev, target, model) = window("deskhand-ga-ask");
    let turns = || {
        [
            Reply::new()
                .computer_actions(
                    vec![
                        json!({"type": "screenshot"}),
                        click(model),
                        json!({"type": "type", "text": "hi"}),
                    ],
                    vec![],
                )
                .into(),
            Turn::text("Done."),
        ]
    };
    let ask_mode = |api: &StandIn| {
        let mut args = model_args(api, GA_MODEL);
        let at = args.iter().position(|a| a == "auto").unwrap();
        args[at] = "ask".into();
        args
    };
    let env = [("OPENAI_API_KEY", API_KEY.to_string())];
    let dir = tempfile::tempdir().unwrap();
    // Refused: the screenshot (read-only) ran before the question; nothing after it did.
    let refused = StandIn::spawn(turns());
    let args = ask_mode(&refused);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, screen) = on_terminal(dir.path(), &env, "n", &args);
    let screen = String::from_utf8_lossy(&screen);
    assert_eq!(status, 0, "{screen}");
    assert_eq!(screen.matches("Allow ").count(), 1, "{screen}");
    assert!(screen.contains("these 3 actions, in order:"), "{screen}");
    let items = input(&refused.requests()[1]).clone();
    let results = result_texts(&items);
    assert!(
        results[1].contains("#2] Error: ") && results[1].contains("denied"),
        "{results:?}"
    );
    assert!(
        results[2].contains("#3] Error: ") && results[2].contains("\nNot executed"),
        "{results:?}"
    );
    let acted = crate::support::wait_until(std::time::Duration::from_millis(300), || {
        (xev.events().iter()).any(|e| ["ButtonPress", "KeyPress"].contains(&e.kind.as_str()))
    });
    assert!(!acted, "{:?}", xev.events());
    // Approved: one question, listing each action in order, and then all of them ran.
    let approved = StandIn::spawn(turns());
    let args = ask_mode(&approved);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, screen) = on_terminal(dir.path(), &env, "y", &args);
    let screen = String::from_utf8_lossy(&screen);
    assert_eq!(status, 0, "{screen}");
    assert_eq!(screen.matches("Allow ").count(), 1, "{screen}");
    let listed: Vec<usize> = ["1. screenshot", "2. left_click", "3. type"]
        .iter()
        .map(|line| {
            screen
                .find(line)
                .unwrap_or_else(|| panic!("{line}: {screen}"))
        })
        .collect();
    assert!(listed.is_sorted(), "{screen}");
    assert_clicked_at(&xev, target);
    xev.wait_for("the typing", |e| {
        e.iter().filter(|e| e.kind == "KeyPress").count() >= 2
    });
}
