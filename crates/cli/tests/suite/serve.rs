//! `deskhand serve` as a process, driven with curl over its real Unix socket and a real TCP
//! port (and with httpx-sse, a third-party SSE client from PyPI, when `scripts/test.sh` has
//! installed it), against the validating stand-in: submit, stream, reconnect with
//! `Last-Event-ID`, approve, deny, cancel, access without the token, a second and a stale
//! server, SIGKILL mid-task, and two submitters on one session.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::cli::{deskhand, deskhand_at, on_pty, run};
use crate::support::serve::{Serve, TOKEN, curl, request_args};
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::{Value, json};

fn kinds(events: &[(Option<i64>, String, Value)]) -> Vec<&str> {
    events.iter().map(|(_, kind, _)| kind.as_str()).collect()
}

#[test]
fn tasks_are_submitted_streamed_approved_denied_and_cancelled_over_the_socket() {
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "echo approved-ran"})),
        Turn::tool_use("bash", json!({"command": "echo denied-ran"})),
        Turn::text("All done."),
        Turn::hang(Reply::new().text("Thinking for a long"), 3),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let task = serve.submit(json!({"prompt": "run two commands", "tools": ["bash"]}));
    let id = task["id"].as_str().unwrap().to_string();
    assert_eq!(task["origin"], "api");

    let waiting = serve.wait_for(&id, "waiting_for_approval");
    assert_eq!(
        waiting["waiting_for"]["input"]["command"],
        "echo approved-ran"
    );
    let (status, answered) = serve.curl("POST", &format!("/v1/tasks/{id}/approve"), Some("{}"));
    assert_eq!(status, 200, "{answered}");
    let waiting = serve.wait_for(&id, "waiting_for_approval");
    assert_eq!(
        waiting["waiting_for"]["input"]["command"],
        "echo denied-ran"
    );
    let (status, _) = serve.curl(
        "POST",
        &format!("/v1/tasks/{id}/deny"),
        Some(r#"{"reason": "not that one"}"#),
    );
    assert_eq!(status, 200);
    serve.wait_for(&id, "done");

    // A finished task's stream replays from the store and closes.
    let events = serve.events(&id, None);
    let kinds = kinds(&events);
    assert_eq!(kinds.first(), Some(&"started"));
    assert_eq!(kinds.last(), Some(&"done"));
    let ids: Vec<i64> = events.iter().map(|(id, ..)| id.unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let results: Vec<&Value> = events
        .iter()
        .filter(|(_, kind, _)| kind == "tool_result")
        .map(|(_, _, data)| data)
        .collect();
    assert_eq!(results[0]["text"].as_str().unwrap().trim(), "approved-ran");
    assert_eq!(results[1]["is_error"], true);
    assert!(
        results[1]["text"]
            .as_str()
            .unwrap()
            .contains("not that one")
    );
    // The model was told why, in a request the validating stand-in accepted.
    let last = api.accepted().last().unwrap().body.clone();
    assert!(last.to_string().contains("not that one"), "{last}");

    // A reconnect with Last-Event-ID gets exactly what came after it.
    let resumed = serve.events(&id, Some(ids[2]));
    assert_eq!(resumed, events[3..].to_vec());

    // Cancel: the hanging run ends `cancelled`, and its session stays valid.
    let task = serve.submit(json!({"prompt": "think", "session_id": task["session_id"]}));
    let second = task["id"].as_str().unwrap();
    while api.requests().len() < 4 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (status, cancelled) = serve.curl("POST", &format!("/v1/tasks/{second}/cancel"), None);
    assert_eq!(status, 202, "{cancelled}");
    serve.wait_for(second, "cancelled");
    let events = serve.events(second, None);
    assert_eq!(events.last().unwrap().2["status"], "cancelled");

    // Bad input: a clear error of a known kind, and nothing changes.
    let refusals = [
        (
            "POST",
            "/v1/tasks".to_string(),
            Some("{not json"),
            400,
            "invalid",
        ),
        (
            "POST",
            "/v1/tasks".into(),
            Some(r#"{"prompt": " "}"#),
            400,
            "invalid",
        ),
        (
            "POST",
            "/v1/tasks".into(),
            Some(r#"{"prompt": "x", "tools": 3}"#),
            400,
            "invalid",
        ),
        (
            "POST",
            "/v1/tasks".into(),
            Some(r#"{"prompt": "x", "share": ["/tmp"]}"#),
            400,
            "invalid",
        ),
        (
            "POST",
            "/v1/tasks".into(),
            Some(r#"{"prompt": "x", "desktop": "elsewhere"}"#),
            400,
            "invalid",
        ),
        (
            "POST",
            "/v1/tasks".into(),
            Some(r#"{"prompt": "x", "session_id": "nope"}"#),
            404,
            "not_found",
        ),
        (
            "POST",
            "/v1/tasks".into(),
            Some(r#"{"prompt": "x", "session_id": ""}"#),
            400,
            "invalid",
        ),
        (
            "GET",
            "/v1/tasks/no-such-task".into(),
            None,
            404,
            "not_found",
        ),
        (
            "GET",
            "/v1/tasks/no-such-task/events".into(),
            None,
            404,
            "not_found",
        ),
        (
            "POST",
            format!("/v1/tasks/{id}/approve"),
            Some("{}"),
            409,
            "finished",
        ),
        (
            "POST",
            format!("/v1/tasks/{id}/cancel"),
            None,
            409,
            "finished",
        ),
        (
            "POST",
            format!("/v1/tasks/{id}/deny"),
            Some(r#"{"tool_use_id": 5}"#),
            400,
            "invalid",
        ),
    ];
    for (method, path, body, status, kind) in refusals {
        let (got, error) = serve.curl(method, &path, body);
        assert_eq!(
            (got, error["error"]["kind"].as_str()),
            (status, Some(kind)),
            "{method} {path}: {error}"
        );
        assert!(!error["error"]["message"].as_str().unwrap().is_empty());
    }
    let (status, listed) = serve.curl("GET", "/v1/tasks", None);
    assert_eq!(status, 200);
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 2);
    let (_, sessions) = serve.curl("GET", "/v1/sessions", None);
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1);
    let session = sessions["sessions"][0]["id"].as_str().unwrap();
    let (status, loaded) = serve.curl("GET", &format!("/v1/sessions/{session}"), None);
    assert_eq!(status, 200);
    assert!(loaded["messages"].as_array().unwrap().len() >= 6);
}

#[test]
fn the_socket_is_private_and_tcp_refuses_requests_without_the_token() {
    use std::os::unix::fs::PermissionsExt;
    let api = StandIn::spawn([Turn::text("hi")]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&serve.socket), 0o600);
    assert_eq!(mode(serve.socket.parent().unwrap()), 0o700);
    let url = format!("http://{}/v1/tasks", serve.address);
    for auth in [None, Some("Bearer wrong-token"), Some(TOKEN)] {
        let mut args = request_args("GET", None);
        if let Some(auth) = auth {
            args.extend(["-H".into(), format!("Authorization: {auth}")]);
        }
        args.push(url.clone());
        let (status, body) = curl(&args);
        assert_eq!(status, 401, "{auth:?}: {body}");
        assert_eq!(body["error"]["kind"], "unauthorized");
        assert!(!body.to_string().contains(TOKEN));
    }
    let mut args = request_args("POST", Some(r#"{"prompt": "hello"}"#));
    args.extend(["-H".into(), format!("Authorization: Bearer {TOKEN}"), url]);
    let (status, task) = curl(&args);
    assert_eq!(status, 202, "{task}");
    serve.wait_for(task["id"].as_str().unwrap(), "done");
}

#[test]
fn a_second_serve_is_refused_and_a_socket_left_by_a_crash_is_replaced() {
    let api = StandIn::spawn([]);
    let dir = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(&api, dir.path());
    let (output, _, stderr) = run(deskhand(dir.path())
        .args(["serve"])
        .env("DESKHAND_SOCKET", &serve.socket));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("already serving at"), "{stderr}");
    assert_eq!(
        serve.curl("GET", "/v1/tasks", None).0,
        200,
        "the first one still serves"
    );
    serve.kill();
    assert!(
        serve.socket.exists(),
        "SIGKILL leaves the socket file behind"
    );
    let serve = Serve::start(&api, dir.path());
    assert_eq!(serve.curl("GET", "/v1/tasks", None).0, 200);
    // A file that is not a socket is never removed.
    let other = dir.path().join("not-a-socket");
    std::fs::write(&other, "keep me").unwrap();
    let (output, _, stderr) = run(deskhand(dir.path())
        .args(["serve"])
        .env("DESKHAND_SOCKET", &other));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("is not a socket"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep me");
    // Without a service, the CLI says to start one.
    let (output, _, stderr) = run(deskhand(dir.path())
        .args(["tasks", "list"])
        .env("DESKHAND_SOCKET", dir.path().join("nothing.sock")));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("start one with `deskhand serve`"),
        "{stderr}"
    );
}

#[test]
fn a_task_cut_by_sigkill_is_interrupted_after_a_restart_and_its_session_resumes() {
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "sleep 30"})),
        Turn::text("Carrying on."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(&api, dir.path());
    let task =
        serve.submit(json!({"prompt": "wait a while", "tools": ["bash"], "approve": "auto"}));
    let id = task["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !serve
        .curl(
            "GET",
            &format!("/v1/sessions/{}", task["session_id"].as_str().unwrap()),
            None,
        )
        .1["events"]
        .to_string()
        .contains("tool_call")
    {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    serve.kill();
    let serve = Serve::start(&api, dir.path());
    let task = serve.task(id);
    assert_eq!(task["state"], "interrupted", "{task}");
    // The session was repaired: the next request of a resumed task is valid.
    let again = serve
        .submit(json!({"prompt": "go on", "session_id": task["session_id"], "tools": ["bash"]}));
    serve.wait_for(again["id"].as_str().unwrap(), "done");
    let last = api.accepted().last().unwrap().body.clone();
    assert!(last.to_string().contains("interrupted"), "{last}");
}

/// The API cannot name a check, yet a session it continues is checked by the one saved with
/// it (the window's Check, `deskhand ask --check`), as the window and the CLI do.
#[test]
fn a_session_continued_over_the_api_is_checked_by_its_saved_check() {
    let api = StandIn::spawn([Turn::text("Done."), Turn::text("Done again.")]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let verification = |task: &Value| {
        let id = task["id"].as_str().unwrap();
        serve.wait_for(id, "done");
        let events = serve.events(id, None);
        let (_, _, data) = events
            .into_iter()
            .find(|(_, kind, _)| kind == "verification")
            .expect("a verification event");
        data
    };
    let first = serve.submit(json!({"prompt": "do it"}));
    assert_eq!(verification(&first)["outcome"], "unverified");
    let check = format!("test -d '{}'", dir.path().display());
    let saved = deskhand_engine::agent::verify::SavedCheck {
        command: check.clone(),
        timeout_secs: 10.0,
    };
    deskhand_engine::store::Store::open(dir.path())
        .unwrap()
        .set_session_check(&first["session_id"].as_str().unwrap().into(), Some(&saved))
        .unwrap();
    let again = serve.submit(json!({"prompt": "and now?", "session_id": first["session_id"]}));
    let checked = verification(&again);
    assert_eq!(
        (checked["outcome"].as_str(), checked["check"].as_str()),
        (Some("verified"), Some(check.as_str())),
        "{checked}"
    );
}

#[test]
fn two_submitters_of_one_session_never_overlap() {
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "sleep 0.5; echo first"})),
        Turn::text("First done."),
        Turn::text("Second done."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let first = serve.submit(json!({"prompt": "first task", "tools": ["bash"], "approve": "auto"}));
    let session = first["session_id"].as_str().unwrap();
    serve.wait_for(first["id"].as_str().unwrap(), "running");
    // A second process is refused: busy, and it writes nothing.
    let (output, _, stderr) =
        run(deskhand_at(&api, dir.path()).args(["ask", "--session", session, "from the cli"]));
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is busy"), "{stderr}");
    // A second submission through the service waits its turn.
    let second = serve.submit(json!({"prompt": "second task", "session_id": session}));
    assert_eq!(second["state"], "queued");
    serve.wait_for(second["id"].as_str().unwrap(), "done");
    let requests = api.accepted();
    assert_eq!(requests.len(), 3);
    let mentions = |i: usize, text: &str| requests[i].body.to_string().contains(text);
    assert!(
        !mentions(1, "second task"),
        "the second task started before the first ended"
    );
    assert!(mentions(2, "second task") && mentions(2, "First done."));
    assert!(
        !requests
            .iter()
            .any(|r| r.body.to_string().contains("from the cli"))
    );
    let (_, loaded) = serve.curl("GET", &format!("/v1/sessions/{session}"), None);
    assert_eq!(loaded["messages"].as_array().unwrap().len(), 6);
}

/// The same with httpx-sse (`DESKHAND_API_PYTHON`: a Python with httpx and httpx-sse, as
/// `scripts/test.sh` installs them): over TCP with the token, the client reads a task's
/// events, approves from the stream, drops the connection and resumes with Last-Event-ID.
#[test]
fn a_third_party_sse_client_follows_approves_and_resumes() {
    let Some(python) = std::env::var_os("DESKHAND_API_PYTHON") else {
        eprintln!("skipped: DESKHAND_API_PYTHON is not set (scripts/test.sh sets it)");
        return;
    };
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "echo from-httpx"})),
        Turn::text("Finished."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/api/sse_client.py");
    let output: Output = Command::new(python)
        .arg(script)
        .args([serve.url(), TOKEN.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["status"], "done");
    assert_eq!(report["tool_result"].as_str().unwrap().trim(), "from-httpx");
    assert!(report["resumed_from"].as_i64().unwrap() > 0);
    assert_eq!(report["duplicates"], 0);
}

/// docs/openapi.json lists exactly the server's routes: each one the file names is served
/// (an answer of the API's own, never the router's bare 404 or 405), and every other method
/// on those paths is refused with 405. The file is generated from the table the router
/// mounts (`deskhand_api::openapi`, whose test keeps it fresh); this asks the running server.
#[test]
fn the_openapi_file_matches_the_servers_real_routes() {
    let operations = |spec: &Value| -> Vec<(String, String)> {
        let mut operations = Vec::new();
        for (path, item) in spec["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                operations.push((method.to_uppercase(), path.clone()));
            }
        }
        operations
    };
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let documented = operations(&spec);
    assert!(!documented.is_empty());
    assert_eq!(documented, operations(&deskhand_api::openapi()));

    let api = StandIn::spawn([]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    for (method, path) in &documented {
        let path = path.replace("{id}", "no-such-id");
        let body = (method == "POST").then_some("{}");
        let (status, answer) = serve.curl(method, &path, body);
        assert!(
            answer.get("error").is_some()
                || answer.get("tasks").is_some()
                || answer.get("sessions").is_some()
                || answer.get("schedules").is_some(),
            "{method} {path}: {status} {answer}"
        );
        for other in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            if !documented
                .iter()
                .any(|(m, p)| m == other && p.replace("{id}", "no-such-id") == path)
            {
                assert_eq!(serve.curl(other, &path, None).0, 405, "{other} {path}");
            }
        }
    }
}

/// A task whose agent is stuck asks over the API, in auto mode too: `stall_detected` with
/// step `ask` reaches the stream, a bad answer is refused, and a hint posted to
/// `/v1/tasks/{id}/stall` reaches the model. With no question open the route says so.
#[test]
fn a_stall_question_is_answered_over_the_api_and_the_hint_reaches_the_model() {
    let Some(_display) = crate::support::x11::display() else {
        return;
    };
    crate::support::x11::wait_until_still();
    let api = StandIn::spawn(
        (0..8)
            .map(|_| {
                Turn::tool_use(
                    "computer",
                    json!({"action": "left_click", "coordinate": [20, 700]}),
                )
            })
            .collect::<Vec<_>>(),
    );
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let task = serve.submit(json!({
        "prompt": "click the button",
        "tools": ["computer"],
        "approve": "auto",
        "max_turns": 6,
        "stall": {"ask_timeout_secs": 20},
    }));
    let id = task["id"].as_str().unwrap().to_string();
    let stall = format!("/v1/tasks/{id}/stall");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, answer) = serve.curl(
            "POST",
            &stall,
            Some(r#"{"answer": "hint", "text": "use the keyboard instead"}"#),
        );
        if status == 200 {
            assert_eq!(answer["answer"], "hint");
            break;
        }
        assert_eq!(
            (status, answer["error"]["kind"].as_str()),
            (409, Some("not_pending")),
            "{answer}"
        );
        assert!(Instant::now() < deadline, "the task never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, _) = serve.curl("POST", &stall, Some(r#"{"answer": "hint", "text": " "}"#));
    assert_eq!(status, 400, "an empty hint");
    let (status, _) = serve.curl("POST", &stall, Some(r#"{"answer": "no_one"}"#));
    assert_eq!(status, 400, "only a person's answers");
    let events = serve.events(&id, None);
    let rungs: Vec<&str> = events
        .iter()
        .filter(|(_, kind, _)| kind == "stall_detected")
        .map(|(_, _, data)| data["step"].as_str().unwrap())
        .collect();
    assert_eq!(rungs[..2], ["note", "ask"], "{rungs:?}");
    assert!(
        events
            .iter()
            .any(|(_, kind, data)| kind == "stall_answered" && data["answer"] == "hint")
    );
    let hinted = api.accepted().iter().any(|request| {
        request.body["messages"]
            .to_string()
            .contains("The person was asked and says: use the keyboard instead")
    });
    assert!(hinted, "the hint never reached the model");
}

/// `deskhand tasks …` against the service at `serve`: (exit status, stdout, stderr).
fn cli(api: &StandIn, dir: &Path, serve: &Serve, args: &[&str]) -> (Option<i32>, String, String) {
    let (output, stdout, stderr) = run(deskhand_at(api, dir)
        .args(args)
        .env("DESKHAND_SOCKET", &serve.socket));
    (output.status.code(), stdout, stderr)
}

/// Runs `command` (an [`on_pty`]) to the end: its exit status and what the terminal showed.
fn on_terminal(command: &mut Command) -> (Option<i32>, String) {
    let output = command.output().expect("python3 runs the pty driver");
    let screen = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code(), screen)
}

/// A terminal's text without what differs from run to run: the numbers (durations, token
/// counts) and the session id.
fn comparable(screen: &str) -> String {
    let mut screen = screen.to_string();
    screen.retain(|c| !c.is_ascii_digit());
    let at = screen
        .rfind(", session ")
        .expect("the run's last line names its session");
    screen[..at].to_string()
}

/// The CLI as the service's client: `ask --background` prints the task's id and returns
/// while the task waits for a person; `tasks show [--json]`, `approve --always`, `deny
/// REASON` and `cancel` act on it, and what cannot be done is refused with the reason.
#[test]
fn the_cli_submits_in_the_background_then_shows_approves_denies_and_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let refused = dir.path().join("refused.txt");
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "echo first"})),
        Turn::tool_use("bash", json!({"command": "echo second"})),
        Turn::tool_use(
            "str_replace_based_edit_tool",
            json!({"command": "create", "path": refused, "file_text": "no\n"}),
        ),
        Turn::text("Three answers."),
        Turn::hang(Reply::new().text("Thinking for a long"), 3),
    ]);
    let serve = Serve::start(&api, dir.path());
    let path = dir.path();
    let (code, stdout, stderr) = cli(
        &api,
        path,
        &serve,
        &[
            "ask",
            "--background",
            "--tools",
            "bash,editor",
            "do three things",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let id = stdout.trim().to_string();
    assert_eq!(stdout, format!("{id}\n"), "the id alone");
    // It returned before the task could end: nobody has approved its first action yet.
    let state = serve.task(&id)["state"].clone();
    assert!(
        ["queued", "running", "waiting_for_approval"].contains(&state.as_str().unwrap()),
        "{state}"
    );
    serve.wait_for(&id, "waiting_for_approval");

    let (code, shown, stderr) = cli(&api, path, &serve, &["tasks", "show", &id]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        shown.starts_with(&format!("{id}  waiting_for_approval  api  session ")),
        "{shown}"
    );
    assert!(
        shown
            .trim_end()
            .ends_with("do three things  waiting for: bash: echo first"),
        "{shown}"
    );
    let (_, shown, _) = cli(&api, path, &serve, &["tasks", "show", &id, "--json"]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["id"], id.as_str());
    assert_eq!(shown["state"], "waiting_for_approval");
    assert_eq!(shown["waiting_for"]["input"]["command"], "echo first");

    // --always: the next bash command of the session is not asked about; the edit is.
    let (code, _, stderr) = cli(&api, path, &serve, &["tasks", "approve", &id, "--always"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.starts_with("deskhand: approved action "), "{stderr}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let waiting = loop {
        let task = serve.wait_for(&id, "waiting_for_approval");
        if task["waiting_for"]["input"]["command"] != "echo first" {
            break task;
        }
        assert!(Instant::now() < deadline, "{task}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        waiting["waiting_for"]["input"]["command"], "create",
        "{waiting}"
    );
    let (code, _, stderr) = cli(&api, path, &serve, &["tasks", "deny", &id, "not this file"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.starts_with("deskhand: denied action "), "{stderr}");
    serve.wait_for(&id, "done");
    assert!(!refused.exists(), "the denied edit was made");
    let results: Vec<Value> = serve
        .events(&id, None)
        .into_iter()
        .filter(|(_, kind, _)| kind == "tool_result")
        .map(|(_, _, data)| data)
        .collect();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["text"].as_str().unwrap().trim(), "first");
    assert_eq!(results[1]["text"].as_str().unwrap().trim(), "second");
    assert_eq!(results[2]["is_error"], true);
    // The model learns that a program of the local API said no, not the person.
    let denied = results[2]["text"].as_str().unwrap();
    assert!(
        denied.contains("an API client denied this action: not this file"),
        "{denied}"
    );

    // What cannot be done is refused, with the service's reason, and changes nothing.
    let (code, _, stderr) = cli(&api, path, &serve, &["tasks", "approve", &id]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("has already ended (done)"), "{stderr}");
    let (code, _, stderr) = cli(&api, path, &serve, &["tasks", "show", "no-such-task"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("no-such-task"), "{stderr}");
    assert_eq!(serve.task(&id)["state"], "done");

    // Cancel: the next task of the session hangs in the model's stream until it is stopped.
    let session = shown["session_id"].as_str().unwrap();
    let (code, stdout, stderr) = cli(
        &api,
        path,
        &serve,
        &[
            "ask",
            "--background",
            "--session",
            session,
            "--model",
            "claude-opus-5-5",
            "--effort",
            "low",
            "think",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let second = stdout.trim();
    while api.requests().len() < 5 {
        std::thread::sleep(Duration::from_millis(10));
    }
    // The effort went over the local API to the model as the Messages API takes it.
    assert_eq!(
        api.requests()[4].body["output_config"],
        json!({"effort": "low"})
    );
    let (code, stdout, stderr) = cli(&api, path, &serve, &["tasks", "cancel", second]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with(second), "{stdout}");
    serve.wait_for(second, "cancelled");
    let (_, listed, _) = cli(&api, path, &serve, &["tasks", "list", "--json"]);
    let states: Vec<(String, String)> = listed
        .lines()
        .map(|line| {
            let task: Value = serde_json::from_str(line).unwrap();
            (
                task["id"].as_str().unwrap().into(),
                task["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            (second.to_string(), "cancelled".into()),
            (id, "done".into())
        ]
    );
}

/// `deskhand tasks watch ID` on a real terminal (the pty driver) follows a task the API
/// started, asks its approvals there, and prints exactly what `deskhand ask` prints for the
/// same run; it exits with the task's status (3: out of turns).
#[test]
fn watch_follows_a_task_and_answers_its_approvals_on_the_terminal_as_ask_does() {
    let turns = || {
        [
            Turn::tool_use("bash", json!({"command": "echo watched one"})),
            Turn::tool_use("bash", json!({"command": "echo watched two"})),
            Turn::tool_use("bash", json!({"command": "echo never run"})),
        ]
    };
    let api = StandIn::spawn(turns());
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let task = serve.submit(json!({"prompt": "say it twice", "tools": ["bash"], "max_turns": 3}));
    let id = task["id"].as_str().unwrap();
    let (code, watched) = on_terminal(
        on_pty(&api, dir.path(), "y")
            .args(["tasks", "watch", id])
            .env("DESKHAND_SOCKET", &serve.socket),
    );
    assert_eq!(code, Some(3), "{watched}");
    assert_eq!(serve.task(id)["state"], "max_turns");
    assert_eq!(watched.matches("this session: ").count(), 2, "{watched}");
    assert!(
        watched.contains("Allow bash: echo watched two?"),
        "{watched}"
    );
    let results: Vec<String> = serve
        .events(id, None)
        .into_iter()
        .filter(|(_, kind, data)| kind == "tool_result" && data["is_error"] == false)
        .map(|(_, _, data)| data["text"].as_str().unwrap().trim().to_string())
        .collect();
    assert_eq!(results, ["watched one", "watched two"]);

    let api = StandIn::spawn(turns());
    let alone = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(alone.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let (code, asked) = on_terminal(on_pty(&api, alone.path(), "y").args([
        "ask",
        "--tools",
        "bash",
        "--max-turns",
        "3",
        "say it twice",
    ]));
    assert_eq!(code, Some(3), "{asked}");
    assert_eq!(comparable(&watched), comparable(&asked));
}
