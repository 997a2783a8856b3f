//! Issue 19 end to end through the CLI: no-op actions reported on a real X display, the
//! stall breaker's ladder ending a run nobody watches `stalled`, proof of done with
//! `--check`, and `deskhand eval` over a suite, all against the stand-in model.

use crate::support::cli::{deskhand, deskhand_at, json_lines, run};
use crate::support::x11;
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::{Value, json};

/// The text of every `tool_result` in the last message of a request body.
fn last_results_text(body: &Value) -> String {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    last["content"].to_string()
}

/// The run's `verification` event.
fn verification(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|e| e["type"] == "verification")
        .expect("a verification event")
}

fn clicks(n: usize, action: &str, at: [i64; 2]) -> Vec<Turn> {
    (0..n)
        .map(|_| Turn::tool_use("computer", json!({"action": action, "coordinate": at})))
        .collect()
}

#[test]
fn the_same_click_on_a_static_screen_is_noted_then_ends_stalled_without_a_person() {
    let Some(_display) = x11::display() else {
        return;
    };
    x11::wait_until_still();
    let dir = tempfile::tempdir().unwrap();
    // A model that clicks the same empty spot of the desktop forever.
    let mut turns = clicks(20, "left_click", [20, 700]);
    turns.push(Turn::text("never reached"));
    let api = StandIn::spawn(turns);
    let (output, stdout, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--json",
        "--tools",
        "computer",
        "--approve",
        "auto",
        "--max-turns",
        "30",
        "click the button",
    ]));
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    let events = json_lines(&stdout);
    let rungs: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "stall_detected")
        .map(|e| e["step"].as_str().unwrap())
        .collect();
    assert_eq!(rungs, ["note", "ask", "stalled"]);
    let stalled = events
        .iter()
        .find(|e| e["type"] == "stall_detected")
        .unwrap();
    assert_eq!(stalled["pattern"], "same_action");
    assert_eq!(stalled["steps"].as_array().unwrap().len(), 3);
    let done = events.iter().find(|e| e["type"] == "done").unwrap();
    assert_eq!(done["status"], "stalled");
    // The verification comes right before `done`, which stays last.
    assert_eq!(events[events.len() - 2]["type"], "verification");
    assert_eq!(events.last().unwrap()["type"], "done");
    // The note reached the model with the third click's result; the run then asked nobody
    // and ended: with N = 3, no more than N + 1 requests.
    let requests = api.accepted();
    assert!(requests.len() <= 3 + 1, "{} requests", requests.len());
    assert!(last_results_text(&requests[3].body).contains("You seem to be stuck"));
    assert!(
        last_results_text(&requests[1].body)
            .contains("the screen did not change after this left_click")
    );
}

#[test]
fn a_click_that_changes_nothing_says_so_and_a_click_that_opens_a_window_does_not() {
    let Some(_display) = x11::display() else {
        return;
    };
    x11::wait_until_still();
    let dir = tempfile::tempdir().unwrap();
    // A left click on the bare desktop does nothing; a right click opens the window
    // manager's menu; Escape closes it again.
    let api = StandIn::spawn([
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": [30, 740]}),
        ),
        Turn::tool_use(
            "computer",
            json!({"action": "right_click", "coordinate": [30, 740]}),
        ),
        Turn::tool_use("computer", json!({"action": "key", "text": "Escape"})),
        Turn::text("Done."),
    ]);
    let (output, stdout, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--json",
        "--tools",
        "computer",
        "--approve",
        "auto",
        "open the menu",
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let changed: Vec<Value> = json_lines(&stdout)
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["changed"].clone())
        .collect();
    assert_eq!(changed[..2], [json!(false), json!(true)], "{stdout}");
    let requests = api.accepted();
    assert!(last_results_text(&requests[1].body).contains("the screen did not change"));
    assert!(!last_results_text(&requests[2].body).contains("the screen did not change"));
}

#[test]
fn no_stall_check_turns_the_breaker_off() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn(clicks(6, "left_click", [20, 700]));
    let (output, stdout, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--json",
        "--tools",
        "computer",
        "--approve",
        "auto",
        "--max-turns",
        "5",
        "--no-stall-check",
        "click",
    ]));
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(!stdout.contains("stall_detected"));
}

fn check_run(api: &StandIn, dir: &std::path::Path, check: &str) -> (Option<i32>, Vec<Value>) {
    let (output, stdout, stderr) = run(deskhand_at(api, dir).args([
        "ask",
        "--json",
        "--tools",
        "bash",
        "--approve",
        "auto",
        "--check",
        check,
        "do it",
    ]));
    eprintln!("{stderr}");
    (output.status.code(), json_lines(&stdout))
}

#[test]
fn check_gives_verified_or_failed_and_a_failure_goes_back_once() {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([Turn::text("Done.")]);
    let (code, events) = check_run(&api, dir.path(), "true");
    assert_eq!(code, Some(0));
    let v = verification(&events);
    assert_eq!(
        (v["type"].as_str(), v["outcome"].as_str()),
        (Some("verification"), Some("verified"))
    );

    // The model claims success twice; the check's output goes back once, then the run
    // ends `failed` with its own exit code.
    let api = StandIn::spawn([
        Turn::text("Done."),
        Turn::text("Really done."),
        Turn::text("x"),
    ]);
    let (code, events) = check_run(&api, dir.path(), "echo the file is missing; exit 1");
    assert_eq!(code, Some(6));
    let v = verification(&events);
    assert_eq!(v["outcome"], "failed");
    assert_eq!(v["retried"], true);
    let requests = api.accepted();
    assert_eq!(requests.len(), 2, "the failure is sent back once");
    let fed_back = last_results_text(&requests[1].body);
    assert!(fed_back.contains("the file is missing"), "{fed_back}");

    // A check that hangs is killed at its timeout: its own exit code.
    let api = StandIn::spawn([Turn::text("Done.")]);
    let (output, _, _) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--json",
        "--check",
        "sleep 30",
        "--check-timeout",
        "0.5",
        "do it",
    ]));
    assert_eq!(output.status.code(), Some(7));

    // Without a check the run exits 0 as before, and non-zero on request.
    let api = StandIn::spawn([Turn::text("Done."), Turn::text("Done.")]);
    let (output, stdout, _) = run(deskhand_at(&api, dir.path()).args(["ask", "--json", "do it"]));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(verification(&json_lines(&stdout))["outcome"], "unverified");
    let (output, _, _) =
        run(deskhand_at(&api, dir.path()).args(["ask", "--require-verified", "do it"]));
    assert_eq!(output.status.code(), Some(8));
}

#[test]
fn a_check_program_that_does_not_exist_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([Turn::text("Done.")]);
    let (output, _, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--check",
        "no-such-checker-19 --now",
        "do it",
    ]));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("--check: the check's program `no-such-checker-19` was not found"),
        "{stderr}"
    );
    assert!(api.requests().is_empty());
}

/// A session's check goes with it: `ask --session` without `--check` is checked by the one
/// its first task was given, and by one saved with the session elsewhere (the window's
/// Check), as the window's and the API's tasks are.
#[test]
fn a_continued_session_is_checked_by_its_saved_check() {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::text("Done."),
        Turn::text("Done again."),
        Turn::text("Hi."),
        Turn::text("Checked."),
    ]);
    let session_of = |events: &[Value]| events.last().unwrap()["session_id"].clone();
    let continued = |session: &Value| {
        let (output, stdout, stderr) = run(deskhand_at(&api, dir.path()).args([
            "ask",
            "--json",
            "--require-verified",
            "--session",
            session.as_str().unwrap(),
            "and now?",
        ]));
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        verification(&json_lines(&stdout)).clone()
    };
    let check = format!("test -d '{}'", dir.path().display());
    let (code, events) = check_run(&api, dir.path(), &check);
    assert_eq!(code, Some(0));
    assert_eq!(continued(&session_of(&events))["check"], check.as_str());

    let (output, stdout, _) = run(deskhand_at(&api, dir.path()).args(["ask", "--json", "hi"]));
    assert_eq!(output.status.code(), Some(0));
    let session = session_of(&json_lines(&stdout));
    let saved = deskhand_engine::agent::verify::SavedCheck {
        command: "true".into(),
        timeout_secs: 10.0,
    };
    deskhand_engine::store::Store::open(dir.path())
        .unwrap()
        .set_session_check(&session.as_str().unwrap().into(), Some(&saved))
        .unwrap();
    assert_eq!(continued(&session)["check"], "true");
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn eval_reports_two_of_three_verified_and_keeps_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let w = work.display();
    for task in ["alpha", "beta", "gamma"] {
        write(
            &suite.join(format!("{task}.toml")),
            &format!(
                "prompt = \"task-{task}: make the file\"\nsetup = [\"rm -f {w}/{task}\"]\n\
                 check = \"test -f {w}/{task}\"\n[limits]\nmax_turns = 5\ntimeout = 60\n"
            ),
        );
    }
    // The stand-in solves alpha and beta with bash, and only claims to have solved gamma.
    let mut script = deskhand_standin::Script::new([]);
    for task in ["alpha", "beta"] {
        script = script
            .with_rule(
                format!("task-{task}"),
                Reply::new().tool_use(
                    "bash",
                    json!({"command": format!("touch {w}/{task} && echo made-{task}")}),
                ),
            )
            .with_rule(format!("made-{task}"), Reply::new().text("Made it."));
    }
    script = script
        .with_rule("task-gamma", Reply::new().text("Made it."))
        .with_rule("The check", Reply::new().text("Made it, really."));
    let api = StandIn::spawn(script);
    let out = dir.path().join("reports");
    let (output, stdout, stderr) = run(deskhand_at(&api, dir.path()).args([
        "eval",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("**2 of 3 runs verified.**"), "{stdout}");
    assert!(stdout.contains("| gamma | 1 | failed"), "{stdout}");
    let report: Value = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .unwrap();
    assert_eq!(report["verified"], 2);
    // Every run is a session in the history.
    let (_, listed, _) = run(deskhand(dir.path()).args(["sessions", "list", "--json"]));
    for attempt in report["attempts"].as_array().unwrap() {
        let id = attempt["session_id"].as_str().unwrap();
        assert!(listed.contains(id), "{id} not in {listed}");
    }
}

#[test]
fn a_bad_suite_names_the_file_and_field_and_a_failed_setup_is_not_a_model_failure() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    write(
        &suite.join("one.toml"),
        "prompt = \"x\"\ncheck = \"true\"\ncolour = \"red\"\n",
    );
    let api = StandIn::spawn([Turn::text("unused")]);
    let (output, _, stderr) =
        run(deskhand_at(&api, dir.path()).args(["eval", suite.to_str().unwrap()]));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("one.toml") && stderr.contains("colour"),
        "{stderr}"
    );
    // A huge file is refused by its size, before it is read.
    write(
        &suite.join("one.toml"),
        &format!("prompt = \"{}\"\ncheck = \"true\"\n", "x".repeat(100_000)),
    );
    let (output, _, stderr) =
        run(deskhand_at(&api, dir.path()).args(["eval", suite.to_str().unwrap()]));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("one.toml"), "{stderr}");
    write(
        &suite.join("one.toml"),
        "prompt = \"x\"\ncheck = \"no-such-checker-19\"\n",
    );
    let (_, _, stderr) = run(deskhand_at(&api, dir.path()).args(["eval", suite.to_str().unwrap()]));
    assert!(stderr.contains("one.toml: field `check`"), "{stderr}");
    write(
        &suite.join("one.toml"),
        "prompt = \"x\"\ncheck = \"true\"\nsetup = [\"exit 4\"]\n",
    );
    let out = dir.path().join("r");
    let (output, stdout, stderr) = run(deskhand_at(&api, dir.path()).args([
        "eval",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("setup failed"), "{stdout}");
    assert!(api.requests().is_empty(), "nothing reached the model");
}

/// Kills the child when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn xterm(args: &[&str]) -> Killed {
    let child = std::process::Command::new("xterm")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("xterm starts");
    Killed(child)
}

#[test]
fn clicking_between_two_windows_in_turn_is_detected_as_a_cycle() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Two large windows, one white and one black, overlapping; a click raises the one under it.
    let _white = xterm(&[
        "-T",
        "cycle-white",
        "-bg",
        "white",
        "-geometry",
        "180x60+0+0",
    ]);
    x11::window_by_name("cycle-white");
    let _black = xterm(&[
        "-T",
        "cycle-black",
        "-bg",
        "black",
        "-geometry",
        "180x60+700+250",
    ]);
    x11::window_by_name("cycle-black");
    x11::wait_until_still();
    // Screen (100, 100) is only the white one; (1500, 900) only the black one. The model
    // sees 1366 x 768.
    let turns: Vec<Turn> = (0..12)
        .map(|i| {
            let at = if i % 2 == 0 { [71, 71] } else { [1067, 640] };
            Turn::tool_use(
                "computer",
                json!({"action": "left_click", "coordinate": at}),
            )
        })
        .collect();
    let api = StandIn::spawn(turns);
    let (output, stdout, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--json",
        "--tools",
        "computer",
        "--approve",
        "auto",
        "--max-turns",
        "30",
        "switch windows",
    ]));
    assert_eq!(output.status.code(), Some(5), "{stderr}\n{stdout}");
    let first = json_lines(&stdout)
        .into_iter()
        .find(|e| e["type"] == "stall_detected")
        .unwrap();
    assert_eq!(first["pattern"], "cycle", "{first}");
    assert_eq!(first["steps"].as_array().unwrap().len(), 6);
    assert!(api.accepted().len() <= 6 + 2);
}

#[test]
fn resume_after_a_kill_mid_action_shows_the_screen_and_says_it_may_have_run() {
    use std::io::BufRead;
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let api = StandIn::spawn([Turn::tool_use(
        "bash",
        json!({"command": format!("touch {}; sleep 5", marker.display())}),
    )]);
    let child = deskhand_at(&api, dir.path())
        .args([
            "ask",
            "--json",
            "--tools",
            "computer,bash",
            "--approve",
            "auto",
            "make it",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let stdout = child.0.stdout.take().unwrap();
    let mut session = String::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["type"] == "started" {
            session = event["session_id"].as_str().unwrap().to_string();
        }
        if event["type"] == "tool_call" {
            break;
        }
    }
    // SIGKILL once the command has started: its result is never saved.
    let started = std::time::Instant::now();
    while !marker.exists() && started.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.0.kill().unwrap();
    child.0.wait().unwrap();

    let api = StandIn::spawn([Turn::text("I see it ran; nothing more to do.")]);
    let (output, _, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--json",
        "--tools",
        "computer,bash",
        "--approve",
        "auto",
        "--session",
        &session,
        "go on",
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let requests = api.accepted();
    let last = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let blocks = last["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "tool_result");
    let text = last["content"].to_string();
    assert!(text.contains("it may already have happened"), "{text}");
    assert!(text.contains("sleep 5"), "names the action: {text}");
    assert!(
        blocks.iter().any(|b| b["type"] == "image"),
        "a fresh screenshot: {text}"
    );
}

#[test]
fn on_a_terminal_the_person_is_asked_even_in_auto_mode_and_their_hint_reaches_the_model() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn(clicks(12, "left_click", [20, 700]));
    let driver = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pty_run.py");
    let mut command = std::process::Command::new("python3");
    command
        .arg(driver)
        .args([
            "[s]top: ",
            "h use the keyboard instead",
            "--",
            env!("CARGO_BIN_EXE_deskhand"),
        ])
        .args([
            "ask",
            "--tools",
            "computer",
            "--approve",
            "auto",
            "--max-turns",
            "6",
            "click",
        ])
        .env("DESKHAND_DATA_DIR", dir.path())
        .env("DESKHAND_CONFIG_DIR", dir.path())
        .env("ANTHROPIC_API_KEY", crate::support::API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url());
    for variable in crate::support::cli::PROVIDER_VARIABLES {
        if *variable != "ANTHROPIC_API_KEY" && *variable != "ANTHROPIC_BASE_URL" {
            command.env_remove(variable);
        }
    }
    let output = command.output().unwrap();
    let screen = String::from_utf8_lossy(&output.stdout);
    assert!(screen.contains("The agent seems stuck"), "{screen}");
    let requests = api.accepted();
    assert!(
        last_results_text(&requests[4].body)
            .contains("The person was asked and says: use the keyboard instead"),
        "{screen}"
    );
}
