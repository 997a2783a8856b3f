//! The `delegate` tool between two real Deskhands on this machine: a parent `deskhand ask`
//! (against one stand-in) hands a task to a `deskhand serve` over TCP with its token
//! (against another stand-in, which scripts the child). The parent sees the child's events,
//! answer and cost; a stop of the parent cancels the child; a wrong token, a service that is
//! not Deskhand and an unreachable URL are error results, at once, and the parent's history
//! stays valid (the stand-in refuses a request with an unanswered `tool_use`). Also: another
//! API version, a timeout, the child's approvals asked of the parent's person, its cost
//! against the parent's budget, and a local child on a new agent desktop.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::deskhand_at;
use crate::support::serve::{Serve, TOKEN};
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::{Value, json};

/// `deskhand ask --json` that may delegate to `far` (the service at `url`) with `token`.
fn parent(api: &StandIn, dir: &std::path::Path, url: &str, token: &str) -> Command {
    let mut command = deskhand_at(api, dir);
    command
        .args(["ask", "--json", "--approve", "auto", "--tools", "delegate"])
        .arg("--delegate-to")
        .arg(format!("far={url}"))
        .env("DESKHAND_DELEGATE_TOKEN_FAR", token);
    command
}

/// Starts `command` with its stdout piped: the process, and its JSON events as they come.
fn spawned(command: &mut Command) -> (std::process::Child, impl Iterator<Item = Value> + use<>) {
    let mut run = command.stdout(Stdio::piped()).spawn().unwrap();
    let events = BufReader::new(run.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok());
    (run, events)
}

/// Runs `command` to its end: its exit status, its JSON events and its stderr.
fn finished(command: &mut Command) -> (Option<i32>, Vec<Value>, String) {
    let (output, stdout, stderr) = crate::support::cli::run(command);
    let events = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (output.status.code(), events, stderr)
}

/// A remote child: a `deskhand serve` against its own stand-in scripted with `turns`, with
/// the stand-in and the service's directory, which must live as long as it.
fn remote(turns: impl Into<deskhand_standin::Script>) -> (Serve, StandIn, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn(turns);
    (Serve::start(&api, dir.path()), api, dir)
}

/// The child's events as the parent passed them on (`child_event`).
fn child_events(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "child_event")
        .collect()
}

/// Each task `serve` lists, as (origin, state).
fn stored_tasks(serve: &Serve) -> Vec<(String, String)> {
    let tasks = serve.curl("GET", "/v1/tasks", None).1;
    tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["origin"].as_str().unwrap().into(),
                t["state"].as_str().unwrap().into(),
            )
        })
        .collect()
}

/// The question task `id` waits on once its child asks to run bash: the child's, asked as
/// the parent's.
fn child_bash_question(serve: &Serve, id: &str) -> Value {
    let waiting = serve.wait_for(id, "waiting_for_approval");
    let request = waiting["waiting_for"].clone();
    assert_eq!(request["tool"], "bash", "{waiting}");
    assert!(
        request["summary"]
            .as_str()
            .unwrap()
            .starts_with("[delegated task]"),
        "{request}"
    );
    request
}

#[test]
fn a_remote_child_runs_and_its_events_answer_and_cost_reach_the_parent() {
    let (serve, _child_api, _child_dir) = remote([
        Turn::tool_use("bash", json!({"command": "echo child-was-here"})),
        Turn::text("The child ran echo and saw child-was-here."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use(
            "delegate",
            json!({"prompt": "run echo child-was-here", "to": "far", "max_turns": 5}),
        ),
        Turn::text("The child is done."),
    ]);
    let (code, events, stderr) =
        finished(parent(&api, dir.path(), &serve.url(), TOKEN).arg("hand this on"));
    assert_eq!(code, Some(0), "{}", stderr);
    let child = child_events(&events);
    let child_kinds: Vec<&str> = child
        .iter()
        .filter_map(|e| e["event"]["type"].as_str())
        .collect();
    for kind in ["started", "tool_call", "tool_result", "done"] {
        assert!(
            child_kinds.contains(&kind),
            "no child {kind}: {child_kinds:?}"
        );
    }
    assert!(
        !child_kinds.contains(&"text_delta"),
        "streaming pieces are not passed on"
    );
    let bash = child
        .iter()
        .find(|e| e["event"]["type"] == "tool_result")
        .unwrap();
    assert!(
        bash["event"]["text"]
            .as_str()
            .unwrap()
            .contains("child-was-here")
    );
    let child_done = &child.last().unwrap()["event"];
    assert_eq!(child_done["type"], "done");
    let child_cost = child_done["cost_usd"].as_f64().expect("the child's cost");

    let result = crate::support::delegate_result(&events);
    assert_eq!(result["is_error"], false, "{result}");
    let text = result["text"].as_str().unwrap();
    assert!(text.contains("ended `done`"), "{text}");
    assert!(
        text.contains("The child ran echo and saw child-was-here."),
        "{text}"
    );
    // The result reached the parent's model.
    let last = api.requests().last().unwrap().body.to_string();
    assert!(last.contains("The child ran echo and saw child-was-here."));

    // The parent's cost counts the child's.
    crate::support::assert_cost_is_own_plus(&events, child_cost);

    // The child task is on the child's service, done.
    let tasks = serve.curl("GET", "/v1/tasks", None).1;
    let task_id = child[0]["task"].as_str().unwrap();
    let task = tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == task_id)
        .expect("the child task is on the child service");
    assert_eq!(task["state"], "done");
}

#[test]
fn stopping_the_parent_cancels_the_remote_child() {
    let (serve, _child_api, _child_dir) =
        remote([Turn::hang(Reply::new().text("Working on it"), 2)]);
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([Turn::tool_use(
        "delegate",
        json!({"prompt": "take your time", "to": "far"}),
    )]);
    let (mut run, mut events) =
        spawned(parent(&api, dir.path(), &serve.url(), TOKEN).arg("hand this on"));
    // Wait until the parent shows the child's first event: the child runs.
    let task = events
        .find(|e| e["type"] == "child_event")
        .expect("the child's events reach the parent")["task"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(serve.task(&task)["state"], "running");
    let pid = run.id() as i32;
    // SAFETY: a signal to the child process this test started.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let rest: Vec<Value> = events.collect();
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    serve.wait_for(&task, "cancelled");
    let result = crate::support::delegate_result(&rest);
    assert_eq!(result["is_error"], true);
    let done = rest.iter().rev().find(|e| e["type"] == "done").unwrap();
    assert_eq!(done["status"], "cancelled");
}

/// Each refusal is an error result within seconds, and the parent's model goes on.
#[test]
fn a_wrong_token_a_stranger_and_an_unreachable_url_are_error_results_at_once() {
    let (serve, _child_api, _child_dir) = remote(Vec::<Turn>::new());
    let stranger = StandIn::spawn(Vec::<Turn>::new());
    // A port nothing listens on: bound, then released.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let cases = [
        (serve.url(), "wrong-token", "refused the token"),
        (stranger.url(), TOKEN, "is not a Deskhand service"),
        (closed_url, TOKEN, "is unreachable"),
    ];
    for (url, token, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let api = StandIn::spawn([
            Turn::tool_use("delegate", json!({"prompt": "anything", "to": "far"})),
            Turn::text("It could not be delegated."),
        ]);
        let started = Instant::now();
        let (code, events, stderr) =
            finished(parent(&api, dir.path(), &url, token).arg("hand this on"));
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{url}: too slow"
        );
        assert_eq!(code, Some(0), "{url}: {stderr}");
        let result = crate::support::delegate_result(&events);
        assert_eq!(result["is_error"], true, "{url}: {result}");
        let text = result["text"].as_str().unwrap();
        assert!(text.contains(expected), "{url}: {text}");
        assert!(!text.contains(TOKEN), "the token is never shown");
        // The model got the error and answered: the history stayed valid.
        assert_eq!(api.remaining_turns(), 0, "{url}");
    }
    let tasks = serve.curl("GET", "/v1/tasks", None).1;
    assert_eq!(tasks["tasks"], json!([]), "nothing was submitted");
}

/// A target the person did not configure is refused before anything runs, and the model is
/// told which targets there are.
#[test]
fn an_unknown_target_is_refused_with_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "anything", "to": "elsewhere"})),
        Turn::text("No such target."),
    ]);
    let (code, events, stderr) =
        finished(parent(&api, dir.path(), "http://127.0.0.1:9", TOKEN).arg("hand this on"));
    assert_eq!(code, Some(0), "{stderr}");
    let result = crate::support::delegate_result(&events);
    assert_eq!(result["is_error"], true);
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains("no target `elsewhere`; the targets are: local, far"),
        "{result}"
    );
}

/// A remote child's screenshot is read from its service into the parent's history, so the
/// parent's side panel finds it by hash as it finds a local child's; the service answers an
/// image by its hash, and 404 for a hash it does not hold.
#[test]
fn a_remote_childs_screenshots_are_kept_in_the_parents_history() {
    let Some(_display) = crate::support::x11::display() else {
        return;
    };
    let (serve, _child_api, child_dir) = remote([
        Turn::tool_use("computer", json!({"action": "screenshot"})),
        Turn::text("I looked."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "look", "to": "far"})),
        Turn::text("Seen."),
    ]);
    let (code, events, stderr) =
        finished(parent(&api, dir.path(), &serve.url(), TOKEN).arg("hand this on"));
    assert_eq!(code, Some(0), "{stderr}");
    let shot = child_events(&events)
        .iter()
        .find(|e| e["event"]["type"] == "tool_result")
        .and_then(|e| e["event"]["images"][0]["sha256"].as_str())
        .expect("the child's screenshot reached the parent")
        .to_string();
    let store = |dir: &std::path::Path| deskhand_engine::store::Store::open(dir).unwrap();
    let (_, ours) = store(dir.path())
        .image(&shot)
        .expect("the parent's history holds the child's screenshot");
    let (media_type, theirs) = store(child_dir.path()).image(&shot).unwrap();
    assert_eq!(ours, theirs);
    assert!(media_type.starts_with("image/"), "{media_type}");
    let (found, _) = serve.curl("GET", &format!("/v1/images/{shot}"), None);
    assert_eq!(found, 200);
    let (missing, error) = serve.curl("GET", &format!("/v1/images/{}", "0".repeat(64)), None);
    assert_eq!(missing, 404, "{error}");
    assert_eq!(error["error"]["kind"], "not_found", "{error}");
}

/// A service that answers everything with another API version: refused before anything is
/// submitted, naming the versions.
#[test]
fn a_remote_of_another_api_version_is_an_error_result_at_once() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        let body = r#"{"tasks":[]}"#;
        let answer = format!(
            "HTTP/1.1 200 OK\r\nDeskhand-Api: 2\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).unwrap();
        String::from_utf8_lossy(&request).into_owned()
    });
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "anything", "to": "far"})),
        Turn::text("Another version."),
    ]);
    let started = Instant::now();
    let (code, events, stderr) =
        finished(parent(&api, dir.path(), &url, TOKEN).arg("hand this on"));
    assert!(started.elapsed() < Duration::from_secs(15), "too slow");
    assert_eq!(code, Some(0), "{stderr}");
    let result = crate::support::delegate_result(&events).clone();
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("speaks Deskhand API 2; this Deskhand speaks 1"),
        "{text}"
    );
    // The one request was the check, with the token; nothing was submitted.
    let request = server.join().unwrap();
    assert!(request.starts_with("GET /v1/tasks?limit=1 "), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains(&format!("authorization: bearer {TOKEN}")),
        "{request}"
    );
    assert_eq!(api.remaining_turns(), 0);
}

/// A child that does not finish in `timeout_secs` is cancelled, and the parent's model is
/// told so: the parent never hangs on it.
#[test]
fn a_child_that_takes_too_long_is_cancelled_after_the_timeout() {
    let (serve, _child_api, _child_dir) =
        remote([Turn::hang(Reply::new().text("Working on it"), 2)]);
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use(
            "delegate",
            json!({"prompt": "take your time", "to": "far", "timeout_secs": 2}),
        ),
        Turn::text("The child took too long."),
    ]);
    let started = Instant::now();
    let (code, events, stderr) =
        finished(parent(&api, dir.path(), &serve.url(), TOKEN).arg("hand this on"));
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(15),
        "{elapsed:?}"
    );
    assert_eq!(code, Some(0), "{}", stderr);
    // The child's progress was shown while the parent waited.
    let task = events
        .iter()
        .find(|e| e["type"] == "child_event" && e["event"]["type"] == "started")
        .and_then(|e| e["task"].as_str())
        .expect("the child's start reached the parent")
        .to_string();
    let result = crate::support::delegate_result(&events);
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("no answer within 2 s") && text.contains("it was cancelled"),
        "{text}"
    );
    serve.wait_for(&task, "cancelled");
    assert_eq!(api.remaining_turns(), 0, "the parent's model went on");
    let done = events.iter().rev().find(|e| e["type"] == "done").unwrap();
    assert_eq!(done["status"], "done");
}

/// The child's cost counts against the parent's budget: a child that spends more than the
/// parent's `--max-cost` ends the parent with `budget` before its next model request.
#[test]
fn the_childs_cost_counts_against_the_parents_budget() {
    let child_dir = tempfile::tempdir().unwrap();
    // A million input tokens: $2 at the default model's price.
    let child_api = StandIn::spawn([Turn::from(
        Reply::new().text("Expensive answer.").usage(1_000_000, 10),
    )]);
    let serve = Serve::start(&child_api, child_dir.path());
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "spend", "to": "far"})),
        Turn::text("Never asked for."),
    ]);
    let (code, events, stderr) = finished(
        parent(&api, dir.path(), &serve.url(), TOKEN)
            .args(["--max-cost", "1"])
            .arg("hand this on"),
    );
    let result = crate::support::delegate_result(&events);
    assert_eq!(result["is_error"], false, "{result}");
    let done = events.iter().rev().find(|e| e["type"] == "done").unwrap();
    assert_eq!(done["status"], "budget", "{done}");
    assert!(done["cost_usd"].as_f64().unwrap() > 2.0, "{done}");
    assert_eq!(code, Some(4), "{stderr}");
    assert_eq!(
        api.remaining_turns(),
        1,
        "no request after the budget was spent"
    );
}

/// The child's approvals come to the parent's person: with a parent `deskhand serve` in
/// `ask` mode, the child's bash call is the parent task's question, answered over the
/// parent's API, and the answer reaches the child.
#[test]
fn the_childs_approvals_are_asked_of_the_parents_person() {
    let (child, _child_api, _child_dir) = remote([
        Turn::tool_use("bash", json!({"command": "echo approved-child-ran"})),
        Turn::tool_use("bash", json!({"command": "echo denied-child-ran"})),
        Turn::text("One ran, one was refused."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use(
            "delegate",
            json!({"prompt": "run two commands", "to": "far"}),
        ),
        Turn::text("The child is done."),
    ]);
    let set = deskhand_at(&api, dir.path())
        .args(["settings", "set", "delegate-targets"])
        .arg(format!("far={}", child.url()))
        .output()
        .unwrap();
    assert!(set.status.success(), "{set:?}");
    let serve = Serve::start_with_env(&api, dir.path(), &[("DESKHAND_DELEGATE_TOKEN_FAR", TOKEN)]);
    let task =
        serve.submit(json!({"prompt": "hand this on", "approve": "ask", "tools": ["delegate"]}));
    let id = task["id"].as_str().unwrap();
    let answer = |route: &str, body: Value| {
        let (status, answer) = serve.curl(
            "POST",
            &format!("/v1/tasks/{id}/{route}"),
            Some(&body.to_string()),
        );
        assert_eq!(status, 200, "{answer}");
    };
    // The delegation itself is an action the person approves.
    let waiting = serve.wait_for(id, "waiting_for_approval");
    assert_eq!(waiting["waiting_for"]["tool"], "delegate", "{waiting}");
    assert_eq!(waiting["waiting_for"]["kind"], "delegate.far");
    answer("approve", json!({}));
    // Then the child's first command, asked as the parent's, under an id of its own.
    let request = &child_bash_question(&serve, id);
    let first = request["tool_use_id"].as_str().unwrap().to_string();
    assert!(first.contains('.'), "{first}");
    answer("approve", json!({"tool_use_id": first}));
    // The second is denied, with a reason the child's model reads.
    let waiting = loop {
        let waiting = serve.wait_for(id, "waiting_for_approval");
        if waiting["waiting_for"]["tool_use_id"] != first.as_str() {
            break waiting;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let second = waiting["waiting_for"]["tool_use_id"]
        .as_str()
        .unwrap()
        .to_string();
    answer(
        "deny",
        json!({"tool_use_id": second, "reason": "not that one"}),
    );
    serve.wait_for(id, "done");

    // The child ran the approved command only, and heard the reason for the other.
    let child_task = child.curl("GET", "/v1/tasks", None).1["tasks"][0].clone();
    assert_eq!(child_task["state"], "done", "{child_task}");
    let child_id = child_task["id"].as_str().unwrap();
    let results: Vec<Value> = child
        .events(child_id, None)
        .into_iter()
        .filter(|(_, kind, _)| kind == "tool_result")
        .map(|(_, _, event)| event)
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["is_error"], false, "{results:?}");
    assert!(
        results[0]["text"]
            .as_str()
            .unwrap()
            .contains("approved-child-ran")
    );
    assert_eq!(results[1]["status"], "denied", "{results:?}");
    assert!(
        results[1]["text"]
            .as_str()
            .unwrap()
            .contains("not that one")
    );
    // The parent's own history holds the questions and the answers.
    let parent_events: Vec<Value> = serve
        .events(id, None)
        .into_iter()
        .map(|(_, _, event)| event)
        .collect();
    let decided: Vec<&Value> = parent_events
        .iter()
        .filter(|e| e["type"] == "approval_decided")
        .collect();
    assert_eq!(decided.len(), 3, "{decided:?}");
    let last = api.requests().last().unwrap().body.to_string();
    assert!(last.contains("One ran, one was refused."), "{last}");
}

/// `to: local`: the child is a task of the parent's own engine on a new agent desktop
/// (sandboxed), asking the same model; its events, answer and cost reach the parent, and
/// it may not delegate again.
#[test]
fn a_local_child_runs_on_a_new_agent_desktop() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    // One stand-in for both: the parent waits while its child asks.
    let api = StandIn::spawn([
        Turn::tool_use(
            "delegate",
            json!({"prompt": "say where you are", "max_turns": 4}),
        ),
        Turn::tool_use("bash", json!({"command": "echo local-child on $DISPLAY"})),
        Turn::text("The local child saw its display."),
        Turn::text("The child is done."),
    ]);
    let (code, events, stderr) = finished(
        deskhand_at(&api, dir.path())
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("DESKHAND_FIRST_DISPLAY", "241")
            .args(["ask", "--json", "--approve", "auto", "--tools", "delegate"])
            .arg("hand this on"),
    );
    assert_eq!(code, Some(0), "{}", stderr);
    let child = child_events(&events);
    let bash = child
        .iter()
        .find(|e| e["event"]["type"] == "tool_result")
        .expect("the child's bash result reached the parent");
    let text = bash["event"]["text"].as_str().unwrap();
    // A desktop of its own, numbered from DESKHAND_FIRST_DISPLAY, not the person's.
    assert!(text.contains("local-child on :24"), "{text}");
    let result = crate::support::delegate_result(&events);
    assert_eq!(result["is_error"], false, "{result}");
    let answer = result["text"].as_str().unwrap();
    assert!(answer.contains("ended `done`"), "{answer}");
    assert!(
        answer.contains("The local child saw its display."),
        "{answer}"
    );
    // The child was offered no delegate tool: the second request is the child's own.
    let requests = api.requests();
    let tools = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(tools(0), ["delegate"]);
    assert!(tools(1).contains(&"bash".to_string()), "{:?}", tools(1));
    assert!(
        !tools(1).contains(&"delegate".to_string()),
        "{:?}",
        tools(1)
    );
    // The parent's cost holds the child's.
    let child_cost = child.last().unwrap()["event"]["cost_usd"].as_f64().unwrap();
    crate::support::assert_cost_is_own_plus(&events, child_cost);
    // The child task is stored beside the parent's, with its origin.
    let serve = Serve::start(&api, dir.path());
    let tasks = stored_tasks(&serve);
    assert!(
        tasks.contains(&("delegate".into(), "done".into())),
        "{tasks:?}"
    );
    assert!(tasks.contains(&("cli".into(), "done".into())), "{tasks:?}");
}

/// A child whose model fails ends `error`, and a remote that dies while the child runs is
/// an error result at once: neither leaves the parent waiting.
#[test]
fn a_failed_child_and_a_remote_that_dies_are_error_results() {
    // The child's model refuses it.
    let (serve, _child_api, _child_dir) =
        remote([Turn::status(400, "invalid_request_error", None)]);
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "fail", "to": "far"})),
        Turn::text("The child failed."),
    ]);
    let (code, events, stderr) =
        finished(parent(&api, dir.path(), &serve.url(), TOKEN).arg("hand this on"));
    assert_eq!(code, Some(0), "{stderr}");
    let result = crate::support::delegate_result(&events).clone();
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["text"].as_str().unwrap().contains("ended `error`"),
        "{result}"
    );
    assert_eq!(api.remaining_turns(), 0);

    // The remote goes away while its child runs.
    let (mut serve, _child_api, _child_dir) =
        remote([Turn::hang(Reply::new().text("Working on it"), 2)]);
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "take your time", "to": "far"})),
        Turn::text("The remote went away."),
    ]);
    let (mut run, mut events) =
        spawned(parent(&api, dir.path(), &serve.url(), TOKEN).arg("hand this on"));
    events
        .find(|e| e["type"] == "child_event")
        .expect("the child's events reach the parent");
    let killed = Instant::now();
    serve.kill();
    let rest: Vec<Value> = events.collect();
    assert_eq!(run.wait().unwrap().code(), Some(0));
    assert!(killed.elapsed() < Duration::from_secs(15), "too slow");
    let result = crate::support::delegate_result(&rest);
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("did not finish") && text.contains("is unreachable"),
        "{text}"
    );
    assert_eq!(api.remaining_turns(), 0);
}

/// A local child's approval is the parent task's question too, and the answer given over
/// the parent's API reaches the child on the parent's engine.
#[test]
fn a_local_childs_approval_is_asked_of_the_parents_person() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("xdg");
    std::fs::create_dir_all(&runtime).unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "run one command"})),
        Turn::tool_use("bash", json!({"command": "echo local-approved-ran"})),
        Turn::text("It ran."),
        Turn::text("The child is done."),
    ]);
    let runtime = runtime.display().to_string();
    let serve = Serve::start_with_env(
        &api,
        dir.path(),
        &[
            ("XDG_RUNTIME_DIR", runtime.as_str()),
            ("DESKHAND_FIRST_DISPLAY", "251"),
        ],
    );
    let task =
        serve.submit(json!({"prompt": "hand this on", "approve": "ask", "tools": ["delegate"]}));
    let id = task["id"].as_str().unwrap();
    let waiting = serve.wait_for(id, "waiting_for_approval");
    assert_eq!(
        waiting["waiting_for"]["kind"], "delegate.local",
        "{waiting}"
    );
    let approve = |body: Value| {
        let (status, answer) = serve.curl(
            "POST",
            &format!("/v1/tasks/{id}/approve"),
            Some(&body.to_string()),
        );
        assert_eq!(status, 200, "{answer}");
    };
    approve(json!({}));
    let request = &child_bash_question(&serve, id);
    // The child task waits for the same answer.
    let tasks = serve.curl("GET", "/v1/tasks", None).1;
    let child = tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["origin"] == "delegate")
        .expect("the child task is listed")
        .clone();
    assert_eq!(child["state"], "waiting_for_approval", "{child}");
    approve(json!({"tool_use_id": request["tool_use_id"]}));
    serve.wait_for(id, "done");
    let child_id = child["id"].as_str().unwrap();
    assert_eq!(serve.task(child_id)["state"], "done");
    let ran = serve
        .events(child_id, None)
        .into_iter()
        .find(|(_, kind, _)| kind == "tool_result")
        .map(|(_, _, event)| event)
        .unwrap();
    assert!(
        ran["text"].as_str().unwrap().contains("local-approved-ran"),
        "{ran}"
    );
}

/// A stop of the parent cancels a local child too, and its desktop goes with it.
#[test]
fn stopping_the_parent_cancels_the_local_child() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("xdg");
    std::fs::create_dir_all(&runtime).unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "take your time"})),
        Turn::hang(Reply::new().text("Working on it"), 2),
    ]);
    let (mut run, mut events) = spawned(
        deskhand_at(&api, dir.path())
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("DESKHAND_FIRST_DISPLAY", "261")
            .args(["ask", "--json", "--approve", "auto", "--tools", "delegate"])
            .arg("hand this on"),
    );
    events
        .find(|e| e["type"] == "child_event" && e["event"]["type"] == "started")
        .expect("the child starts");
    // The child's model request is under way (the stand-in hangs it).
    let deadline = Instant::now() + Duration::from_secs(20);
    while api.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the child never asked its model");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to the child process this test started.
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let rest: Vec<Value> = events.collect();
    assert_eq!(run.wait().unwrap().code(), Some(130));
    assert_eq!(crate::support::delegate_result(&rest)["is_error"], true);
    let serve = Serve::start(&api, dir.path());
    let tasks = stored_tasks(&serve);
    assert!(
        tasks.contains(&("delegate".into(), "cancelled".into())),
        "{tasks:?}"
    );
    assert!(
        tasks.contains(&("cli".into(), "cancelled".into())),
        "{tasks:?}"
    );
}

/// Without `--json`, `deskhand ask` shows the child's actions and end as `↳ [task …]` lines.
#[test]
fn the_terminal_shows_the_childs_steps() {
    let (serve, _child_api, _child_dir) = remote([
        Turn::tool_use("bash", json!({"command": "echo shown"})),
        Turn::text("Shown."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "show it", "to": "far"})),
        Turn::text("Done."),
    ]);
    let mut command = deskhand_at(&api, dir.path());
    command
        .args(["ask", "--approve", "auto", "--tools", "delegate"])
        .arg("--delegate-to")
        .arg(format!("far={}", serve.url()))
        .env("DESKHAND_DELEGATE_TOKEN_FAR", TOKEN)
        .arg("hand this on");
    let (output, stdout, stderr) = crate::support::cli::run(&mut command);
    assert_eq!(output.status.code(), Some(0));
    let shown = format!("{stdout}{stderr}");
    let lines: Vec<&str> = shown.lines().filter(|l| l.contains("↳ [task ")).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("→ bash") && l.contains("echo shown")),
        "{shown}"
    );
    assert!(
        lines.iter().any(|l| l.contains("[done] 2 turn(s)")),
        "{shown}"
    );
}
