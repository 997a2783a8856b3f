//! Children and clients are bounded (docs/security.md, "Bounded children and clients"):
//! real `deskhand serve` and `deskhand ask` processes on loopback against hostile parts. A
//! fake remote Deskhand that floods, redirects, lies about its cost, keeps its stream open
//! after `done` or serves garbage as screenshots; clients that never read, never send a
//! request, or name another host; two services that delegate to each other; and a child of a
//! parent without the network. Each case checks the service's memory and that its Unix
//! socket still answers where the issue asked for it.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpStream};
use std::time::{Duration, Instant};

use crate::support::cli::deskhand_at;
use crate::support::raw_http::{Answer, RawRequest, RawServer, sse_head};
use crate::support::serve::{Serve, TOKEN};
use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

/// The id the fake remote gives the task it is handed.
const FAKE_TASK: &str = "fake-child-task";

/// How a fake remote's event stream goes.
type EventBody = Box<dyn Iterator<Item = Vec<u8>> + Send>;

/// A hostile fake remote `deskhand serve`: it passes the parent's check and takes the
/// submit, then streams `events()` as the task's events and answers images with `image`.
fn fake_remote(
    events: impl Fn() -> EventBody + Send + Sync + 'static,
    image: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static,
) -> RawServer {
    RawServer::spawn(Ipv4Addr::LOCALHOST, move |_, request: &RawRequest| {
        let line = request.head.lines().next().unwrap_or_default().to_string();
        let json = |status: &str, body: Value| {
            let body = body.to_string();
            Answer::Bytes(
                format!(
                    "HTTP/1.1 {status}\r\ndeskhand-api: 1\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .into_bytes(),
            )
        };
        if line.starts_with("GET /v1/tasks?limit=1 ") {
            json("200 OK", json!({"tasks": []}))
        } else if line.starts_with("POST /v1/tasks ") {
            json("202 Accepted", json!({"id": FAKE_TASK, "state": "running"}))
        } else if line.starts_with(&format!("GET /v1/tasks/{FAKE_TASK}/events ")) {
            Answer::Stream {
                head: sse_head(),
                body: events(),
            }
        } else if let Some(rest) = line.strip_prefix("GET /v1/images/") {
            let hash = rest.split_whitespace().next().unwrap_or_default();
            let bytes = image(hash);
            let mut answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n",
                bytes.len()
            )
            .into_bytes();
            answer.extend_from_slice(&bytes);
            Answer::Bytes(answer)
        } else {
            // The task (still running as far as anyone can tell) and its cancel.
            json("200 OK", json!({"id": FAKE_TASK, "state": "running"}))
        }
    })
}

/// One SSE event as `deskhand serve` writes it.
fn sse(id: usize, event: &Value) -> Vec<u8> {
    format!(
        "id: {id}\nevent: {}\ndata: {event}\n\n",
        event["type"].as_str().unwrap()
    )
    .into_bytes()
}

/// A child's `done` as a remote sends it: done in one turn, at no cost.
fn done_event() -> Value {
    json!({"type": "done", "status": "done", "turns": 1, "session_id": "s", "usage": {},
        "cost_usd": 0.0})
}

/// `deskhand ask --json` whose model delegates `call` to the remote `far` at `url`.
fn ask_delegating(dir: &std::path::Path, url: &str, call: Value) -> (StandIn, Vec<Value>) {
    ask_delegating_with(dir, url, call, &[])
}

/// [`ask_delegating`] with more arguments for the parent.
fn ask_delegating_with(
    dir: &std::path::Path,
    url: &str,
    call: Value,
    args: &[&str],
) -> (StandIn, Vec<Value>) {
    let api = StandIn::spawn([
        Turn::tool_use("delegate", call),
        Turn::text("The parent is done."),
    ]);
    let (output, stdout, stderr) = crate::support::cli::run(
        deskhand_at(&api, dir)
            .args(["ask", "--json", "--approve", "auto", "--tools", "delegate"])
            .args(args)
            .arg("--delegate-to")
            .arg(format!("far={url}"))
            .env("DESKHAND_DELEGATE_TOKEN_FAR", TOKEN)
            .arg("hand this on"),
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    (api, crate::support::cli::json_lines(&stdout))
}

/// The delegate client follows no redirect: a remote that answers 302 to another host is
/// an error result, and the other host never sees the token (or anything).
#[test]
fn the_delegate_client_follows_no_redirect() {
    let sink = RawServer::always(Ipv4Addr::LOCALHOST, || {
        Answer::Bytes(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_vec())
    });
    let elsewhere = sink.url();
    let redirecting = RawServer::always(Ipv4Addr::LOCALHOST, move || {
        Answer::Bytes(
            format!(
                "HTTP/1.1 302 Found\r\nlocation: {elsewhere}/v1/tasks?limit=1\r\n\
                 deskhand-api: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            .into_bytes(),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let (_api, events) = ask_delegating(
        dir.path(),
        &redirecting.url(),
        json!({"prompt": "go", "to": "far"}),
    );
    let result = crate::support::delegate_result(&events);
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result["text"].as_str().unwrap().contains("302"), "{result}");
    assert_eq!(sink.connections(), 0, "the redirect was followed");
}

/// A child's `done` ends the following even when its stream stays open, and a negative
/// cost counts as unknown: the parent's spend is its own turns' alone.
#[test]
fn done_ends_the_following_and_a_negative_cost_is_unknown() {
    let remote = fake_remote(
        || {
            let events = [
                json!({"type": "started", "session_id": "s", "provider": "p", "model": "m"}),
                json!({"type": "message", "message": {"role": "assistant",
                    "content": [{"type": "text", "text": "the child answers"}]}}),
                json!({"type": "done", "status": "done", "turns": 1, "session_id": "s",
                    "usage": {}, "cost_usd": -5.0}),
            ];
            let sent: Vec<Vec<u8>> = events
                .iter()
                .enumerate()
                .map(|(i, e)| sse(i + 1, e))
                .collect();
            // Then the stream stays open, silent, for far longer than the test.
            Box::new(sent.into_iter().chain(std::iter::from_fn(|| {
                std::thread::sleep(Duration::from_secs(60));
                None
            })))
        },
        |_| Vec::new(),
    );
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (_api, events) = ask_delegating(
        dir.path(),
        &remote.url(),
        json!({"prompt": "go", "to": "far", "timeout_secs": 30}),
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the parent waited on an open stream after done: {:?}",
        started.elapsed()
    );
    let result = crate::support::delegate_result(&events);
    let text = result["text"].as_str().unwrap();
    assert!(text.contains("ended `done`"), "{text}");
    assert!(text.contains("it cost unknown"), "{text}");
    assert!(text.contains("the child answers"), "{text}");
    // The child's -5 counts as nothing.
    crate::support::assert_cost_is_own_plus(&events, 0.0);
    let done = events.iter().rev().find(|e| e["type"] == "done").unwrap();
    assert!(done["cost_usd"].as_f64().unwrap() >= 0.0, "{done}");
}

/// A remote's "screenshots" are kept only if their bytes are an image the API takes: 40
/// refs answered with `text/html` garbage (with the right hashes) leave nothing in the
/// parent's history, and at most [`MAX_IMAGES_PER_EVENT`] of one event are even fetched.
#[test]
fn remote_images_are_sniffed_and_capped() {
    let garbage = |i: usize| format!("<html>{i} {}</html>", "x".repeat(4096)).into_bytes();
    let hashes: Vec<String> = (0..40)
        .map(|i| deskhand_engine::images::content_hash(&garbage(i)))
        .collect();
    let by_hash: std::collections::HashMap<String, Vec<u8>> =
        (0..40).map(|i| (hashes[i].clone(), garbage(i))).collect();
    let refs: Vec<Value> = hashes
        .iter()
        .map(|h| json!({"sha256": h, "media_type": "image/png", "bytes": 4110}))
        .collect();
    let remote = fake_remote(
        move || {
            let events = [
                json!({"type": "tool_result", "id": "c1", "name": "computer", "text": "",
                    "is_error": false, "images": refs, "duration_ms": 1}),
                done_event(),
            ];
            Box::new(
                events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| sse(i + 1, e))
                    .collect::<Vec<_>>()
                    .into_iter(),
            )
        },
        move |hash| by_hash.get(hash).cloned().unwrap_or_default(),
    );
    let dir = tempfile::tempdir().unwrap();
    let (_api, events) = ask_delegating(
        dir.path(),
        &remote.url(),
        json!({"prompt": "look", "to": "far"}),
    );
    assert_eq!(crate::support::delegate_result(&events)["is_error"], false);
    let fetched = remote
        .requests()
        .iter()
        .filter(|r| r.head.starts_with("GET /v1/images/"))
        .count();
    assert_eq!(fetched, deskhand_engine::delegate::MAX_IMAGES_PER_EVENT);
    let store = deskhand_engine::store::Store::open(dir.path()).unwrap();
    for hash in &hashes {
        assert!(store.image(hash).is_err(), "garbage kept as image {hash}");
    }
    let shots = dir.path().join(deskhand_engine::store::SCREENSHOTS_DIR);
    let kept = std::fs::read_dir(&shots).map(|d| d.count()).unwrap_or(0);
    assert_eq!(kept, 0, "files in {}", shots.display());
}

/// A remote child is submitted with at most its parent's rights (its approval mode, and
/// for a sandboxed parent the sandbox and its network) and with its lineage: one hop, from
/// the parent's task.
#[test]
fn a_remote_child_is_submitted_with_the_parents_bounds_and_lineage() {
    let remote = fake_remote(
        || Box::new(std::iter::once(sse(1, &done_event()))),
        |_| Vec::new(),
    );
    let dir = tempfile::tempdir().unwrap();
    let (_api, events) = ask_delegating_with(
        dir.path(),
        &remote.url(),
        json!({"prompt": "go", "to": "far"}),
        &["--sandbox", "--no-network"],
    );
    assert_eq!(crate::support::delegate_result(&events)["is_error"], false);
    let submit = remote
        .requests()
        .into_iter()
        .find(|r| r.head.starts_with("POST /v1/tasks "))
        .expect("the child was submitted")
        .json();
    assert_eq!(submit["approve"], "auto", "{submit}");
    assert_eq!(submit["sandbox"], true, "{submit}");
    assert_eq!(submit["network"], false, "{submit}");
    assert!(submit.get("share").is_none(), "{submit}");
    assert_eq!(submit["delegation"]["hops"], 1, "{submit}");
    let parent_task = deskhand_engine::store::Store::open(dir.path())
        .unwrap()
        .tasks(10)
        .unwrap();
    assert_eq!(
        submit["delegation"]["chain"],
        json!([parent_task[0].id]),
        "{submit}"
    );
}

/// The approval mode a child gets is the parent's as it is when the call runs: a parent
/// switched from auto to ask mid-run (as the window's toggle does) asks before it
/// delegates, says so, and submits its child with `ask`, never the `auto` it started with.
#[tokio::test(flavor = "multi_thread")]
async fn a_child_gets_the_parents_approval_mode_as_it_is_now() {
    use deskhand_engine::agent::{Answerer, ApprovalPolicy, DecidedBy, Decision};
    use deskhand_engine::tasks::{Engine, Origin, RunSettings, TaskSpec, TaskUpdate};
    let remote = fake_remote(
        || Box::new(std::iter::once(sse(1, &done_event()))),
        |_| Vec::new(),
    );
    // The same value for every test of this binary that reads it.
    // SAFETY: no other thread of this binary writes the environment.
    unsafe { std::env::set_var("DESKHAND_DELEGATE_TOKEN_FAR", TOKEN) };
    let api = StandIn::spawn([
        Turn::from(
            deskhand_standin::Reply::new()
                .tool_use("delegate", json!({"prompt": "go", "to": "far"}))
                .delay_ms(1000),
        ),
        Turn::text("The parent is done."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::new(deskhand_engine::store::Store::open(dir.path()).unwrap());
    let settings = RunSettings {
        provider: deskhand_engine::llm::config::ProviderSettings {
            provider: Some("anthropic".into()),
            model: None,
            base_url: Some(api.url()),
            effort: None,
        },
        api_key: Some(deskhand_engine::secrets::ApiKey::new(crate::support::API_KEY).unwrap()),
        tools: Some(vec!["delegate".into()]),
        approval: ApprovalPolicy::Auto,
        delegate_to: vec![
            deskhand_engine::delegate::RemoteTarget::parse(&format!("far={}", remote.url()))
                .unwrap(),
        ],
        ..RunSettings::default()
    };
    let task = engine
        .submit(TaskSpec {
            session: None,
            input: vec![deskhand_engine::llm::ContentBlock::text("hand it on")],
            settings,
            origin: Origin::Api,
            window: None,
        })
        .await
        .unwrap();
    let mut watch = engine.watch(&task.id, 0).unwrap();
    let next = async |watch: &mut deskhand_engine::tasks::Watch, kind: &str| loop {
        let update = tokio::time::timeout(Duration::from_secs(20), watch.next())
            .await
            .expect("in time")
            .expect("the task goes on");
        if let TaskUpdate::Event { event, .. } = update
            && event.kind() == kind
        {
            return serde_json::to_value(event).unwrap();
        }
    };
    next(&mut watch, "started").await;
    engine.set_policy(&task.id, ApprovalPolicy::Ask).unwrap();
    let asked = next(&mut watch, "approval_needed").await;
    let summary = asked["request"]["summary"].as_str().unwrap().to_string();
    assert!(
        summary.contains("(the child may: approvals asked of you"),
        "{summary}"
    );
    engine
        .answer(
            &task.id,
            None,
            Decision::Approve,
            Answerer::new(DecidedBy::Terminal),
        )
        .expect("the delegate call waits");
    let done = next(&mut watch, "done").await;
    assert_eq!(done["status"], "done", "{done}");
    let submit = remote
        .requests()
        .into_iter()
        .find(|r| r.head.starts_with("POST /v1/tasks "))
        .expect("the child was submitted")
        .json();
    assert_eq!(submit["approve"], "ask", "{submit}");
}

/// Sizes of the history's files, in MB.
fn history_mb(dir: &std::path::Path) -> f64 {
    let db = deskhand_engine::store::DB_FILE;
    [db.to_string(), format!("{db}-wal")]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len() as f64)
        .sum::<f64>()
        / 1e6
}

/// Asserts the socket answers within 1 s now, and returns how long it took.
fn socket_answers(serve: &Serve) -> Duration {
    let took = serve.socket_answer_time();
    assert!(took < Duration::from_secs(1), "the socket took {took:?}");
    took
}

/// Target: a remote child that streams 64 KB events as fast as it can, for 8 s, under a
/// parent `deskhand serve`. The parent keeps at most the capped number of events and
/// bytes, stores a summary and says so; the service stays under 300 MB and its socket
/// answers within 1 s throughout.
#[test]
fn a_flooding_remote_child_is_capped() {
    let remote = fake_remote(
        || {
            let text = "x".repeat(64 * 1024);
            Box::new((1..).map(move |i| {
                sse(
                    i,
                    &json!({"type": "tool_result", "id": format!("c{i}"), "name": "bash",
                        "text": text, "is_error": false, "images": [], "duration_ms": 1}),
                )
            }))
        },
        |_| Vec::new(),
    );
    let dir = tempfile::tempdir().unwrap();
    deskhand_engine::store::Store::open(dir.path())
        .unwrap()
        .set_setting("delegate.targets", &json!({"far": remote.url()}))
        .unwrap();
    let api = StandIn::spawn([
        Turn::tool_use(
            "delegate",
            json!({"prompt": "flood me", "to": "far", "timeout_secs": 8}),
        ),
        Turn::text("The child flooded."),
    ]);
    let serve = Serve::start_with_env(&api, dir.path(), &[("DESKHAND_DELEGATE_TOKEN_FAR", TOKEN)]);
    let task = serve.submit(json!({"prompt": "go", "tools": ["delegate"], "approve": "auto"}));
    let id = task["id"].as_str().unwrap();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    while serve.task(id)["state"] != "done" {
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "{}",
            serve.task(id)
        );
        slowest = slowest.max(socket_answers(&serve));
        std::thread::sleep(Duration::from_millis(250));
    }
    let (rss, peak) = serve.memory_mb();
    let history = history_mb(dir.path());
    eprintln!(
        "flooding child: peak {peak:.0} MB (now {rss:.0} MB), history {history:.1} MB, \
         slowest socket answer {slowest:?}, {:?}",
        started.elapsed()
    );
    assert!(peak < 300.0, "peak {peak} MB");
    let events = serve.events(id, None);
    let children = events
        .iter()
        .filter(|(_, kind, _)| kind == "child_event")
        .count();
    assert!(
        children <= deskhand_engine::delegate::MAX_CHILD_EVENTS + 2,
        "{children} child events kept"
    );
    let cap_mb = deskhand_engine::delegate::MAX_CHILD_EVENT_BYTES as f64 / 1e6;
    assert!(history < cap_mb + 8.0, "history {history} MB");
    let summary = events
        .iter()
        .find(|(_, kind, data)| kind == "child_event" && data["event"]["type"] == "error")
        .expect("a summary of what was left out");
    assert!(
        summary.2["event"]["message"]
            .as_str()
            .unwrap()
            .contains("were left out"),
        "{:?}",
        summary.2
    );
    let result = events
        .iter()
        .find(|(_, kind, data)| kind == "tool_result" && data["name"] == "delegate")
        .unwrap();
    assert!(
        result.2["text"].as_str().unwrap().contains("were left out"),
        "{:?}",
        result.2
    );
}

/// Target: six clients that ask for the whole event stream of a task with 160 MB of stored
/// events and never read. Each replay holds a page at a time, so the service stays under
/// 300 MB and its socket answers within 1 s. A task takes 16 streams; a 17th is refused.
#[test]
fn six_clients_that_never_read_a_long_replay_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let task_id = "long-task";
    {
        let store = deskhand_engine::store::Store::open(dir.path()).unwrap();
        store
            .insert_task(&deskhand_engine::tasks::TaskInfo {
                id: task_id.into(),
                session_id: "long-session".into(),
                state: deskhand_engine::tasks::TaskState::Done,
                origin: deskhand_engine::tasks::Origin::Api,
                prompt: "long".into(),
                pid: 1,
                waiting_for: None,
                error: None,
                created_at: String::new(),
                updated_at: String::new(),
            })
            .unwrap();
        let mut recorder = deskhand_engine::store::Recorder::create(&store, &"long-session".into())
            .unwrap()
            .for_task(&task_id.into());
        let text = "y".repeat(64 * 1024);
        for i in 0..2500 {
            recorder
                .record(&deskhand_engine::agent::AgentEvent::ChildEvent {
                    task: "child".into(),
                    event: Box::new(deskhand_engine::agent::AgentEvent::ToolResult {
                        id: format!("c{i}").into(),
                        name: "bash".into(),
                        is_error: false,
                        status: None,
                        text: text.clone(),
                        images: Vec::new(),
                        duration_ms: 1,
                        changed: None,
                    }),
                })
                .unwrap();
        }
    }
    let api = StandIn::spawn([]);
    let serve = Serve::start(&api, dir.path());
    let before = serve.memory_mb().0;
    let watch = |_: usize| {
        let mut client = std::os::unix::net::UnixStream::connect(&serve.socket).unwrap();
        client
            .write_all(
                format!("GET /v1/tasks/{task_id}/events HTTP/1.1\r\nhost: deskhand\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
        client
    };
    let clients: Vec<std::os::unix::net::UnixStream> = (0..6).map(watch).collect();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    while started.elapsed() < Duration::from_secs(6) {
        slowest = slowest.max(socket_answers(&serve));
        std::thread::sleep(Duration::from_millis(250));
    }
    let (rss, peak) = serve.memory_mb();
    eprintln!(
        "six non-reading replays: peak {peak:.0} MB (now {rss:.0} MB, {before:.0} MB before), \
         history {:.0} MB, slowest socket answer {slowest:?}",
        history_mb(dir.path())
    );
    assert!(peak < 300.0, "peak {peak} MB");
    // A seventh reader of the end of the stream still gets it.
    let tail = serve.events(task_id, Some(2495));
    // Sixteen streams may be open on one task; the seventeenth is refused, saying why.
    let more: Vec<_> = (6..deskhand_api::MAX_WATCHERS_PER_TASK)
        .map(watch)
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (status, error) = serve.curl("GET", &format!("/v1/tasks/{task_id}/events"), None);
    assert_eq!(status, 429, "{error}");
    assert_eq!(error["error"]["kind"], "too_many_watchers", "{error}");
    drop(more);
    assert_eq!(
        tail.len(),
        5,
        "{:?}",
        tail.iter().map(|e| e.0).collect::<Vec<_>>()
    );
    drop(clients);
}

/// Holds `count` idle TCP connections to `address` in a Python process of its own (one
/// process may hold at most 20,000 files here, and root cannot raise that in a container).
/// Once they are open it reads what the server sent on the last 100 within 30 s, prints
/// `{"held": N, "refused": R, "answer": A}` (R of them refused past the caps, A the first
/// refusal), and holds them until its stdin closes.
///
/// Not just the last one: on a loaded machine connecting takes longer than the header
/// deadline, whose expiry frees up to [`deskhand_api::MAX_CONNECTIONS_PER_PEER`] places, and
/// the last connection may take one of them.
fn hold_connections(address: &str, count: usize) -> std::process::Child {
    const HOLDER: &str = r#"
import json, resource, select, socket, sys, time
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = [socket.create_connection((host, port)) for _ in range(count)]
last = {s.fileno(): s for s in held[-100:]}
poller = select.poll()
for fd in last:
    poller.register(fd, select.POLLIN)
answers = []
deadline = time.monotonic() + 30
while len(answers) < len(last) and time.monotonic() < deadline:
    for fd, _ in poller.poll(1000):
        try:
            answers.append(last[fd].recv(4096).decode(errors="replace"))
        except OSError:
            answers.append("")
        poller.unregister(fd)
refused = [a for a in answers if a.startswith("HTTP/1.1 503") and "too_many_connections" in a]
print(json.dumps({"held": len(held), "refused": len(refused), "answer": (refused or [""])[0]}), flush=True)
sys.stdin.read()
"#;
    let (host, port) = address.rsplit_once(':').unwrap();
    std::process::Command::new("python3")
        .args(["-c", HOLDER, host, port, &count.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs")
}

/// Target: 20,000 idle TCP connections that never send a request (two client processes of
/// 10,000). Past the caps they are answered 503 and closed; the held ones are closed when
/// their header deadline passes. The service stays under 300 MB, its socket answers within
/// 1 s throughout, and it takes TCP requests again afterwards.
#[test]
fn twenty_thousand_idle_connections_are_bounded() {
    use std::io::BufRead as _;
    let api = StandIn::spawn([]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let started = Instant::now();
    let mut holders: Vec<std::process::Child> = (0..2)
        .map(|_| hold_connections(&serve.address, 10_000))
        .collect();
    let reports: Vec<_> = holders
        .iter_mut()
        .map(|holder| {
            let stdout = holder.stdout.take().unwrap();
            std::thread::spawn(move || {
                let mut line = String::new();
                std::io::BufReader::new(stdout)
                    .read_line(&mut line)
                    .unwrap();
                line
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    while !reports.iter().all(|r| r.is_finished()) {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "still connecting"
        );
        slowest = slowest.max(socket_answers(&serve));
        std::thread::sleep(Duration::from_millis(100));
    }
    let connected = started.elapsed();
    slowest = slowest.max(socket_answers(&serve));
    for report in reports {
        let report: Value = serde_json::from_str(&report.join().unwrap()).unwrap();
        assert_eq!(report["held"], 10_000, "{report}");
        // The last ones of each were past the caps and were told why; at most one
        // deadline's worth of places was free among them.
        let refused = report["refused"].as_u64().unwrap();
        assert!(
            refused >= (100 - deskhand_api::MAX_CONNECTIONS_PER_PEER) as u64,
            "{report}"
        );
    }
    let (rss, peak) = serve.memory_mb();
    eprintln!(
        "20000 idle connections: peak {peak:.0} MB (now {rss:.0} MB), connected in \
         {connected:?}, slowest socket answer {slowest:?}"
    );
    assert!(peak < 300.0, "peak {peak} MB");
    // The held ones are closed at their header deadline; then TCP answers again.
    std::thread::sleep(deskhand_api::HEADER_TIMEOUT + Duration::from_secs(2));
    let mut args = crate::support::serve::request_args("GET", None);
    args.extend([
        "-H".into(),
        format!("Authorization: Bearer {TOKEN}"),
        format!("{}/v1/tasks?limit=1", serve.url()),
    ]);
    assert_eq!(crate::support::serve::curl(&args).0, 200);
    for mut holder in holders {
        drop(holder.stdin.take());
        let _ = holder.wait();
    }
}

/// A client that connects and sends no request head, or half of one, is closed at the
/// header deadline; one that sends a head and withholds its body is answered 408 at the
/// body deadline.
#[test]
fn header_and_body_reads_time_out() {
    let api = StandIn::spawn([]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&api, dir.path());
    let deadline = deskhand_api::HEADER_TIMEOUT;
    let closed_after = |sent: &'static str| {
        let address = serve.address.clone();
        std::thread::spawn(move || {
            let mut stream = TcpStream::connect(address).unwrap();
            stream.write_all(sent.as_bytes()).unwrap();
            stream
                .set_read_timeout(Some(deadline + Duration::from_secs(10)))
                .unwrap();
            let started = Instant::now();
            let mut answer = Vec::new();
            let read = stream.read_to_end(&mut answer);
            (
                read.is_ok(),
                started.elapsed(),
                String::from_utf8_lossy(&answer).into_owned(),
            )
        })
    };
    let silent = closed_after("");
    let half = closed_after("GET /v1/tasks HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    let no_body = closed_after(
        "POST /v1/tasks HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer test-api-token-5f1d\r\n\
         content-type: application/json\r\ncontent-length: 100\r\n\r\n{\"prompt\"",
    );
    for (what, client) in [("silent", silent), ("half a head", half)] {
        let (closed, after, _) = client.join().unwrap();
        assert!(closed, "{what}: still open after {after:?}");
        assert!(
            after >= deadline - Duration::from_secs(1) && after < deadline + Duration::from_secs(5),
            "{what}: closed after {after:?}"
        );
    }
    let (_, after, answer) = no_body.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"timeout\""), "{answer}");
    assert!(
        after >= deskhand_api::BODY_TIMEOUT - Duration::from_secs(1),
        "{after:?}"
    );
}

/// On TCP, a `Host` that is not a loopback name (or one given with `--allow-host` or
/// `$DESKHAND_ALLOW_HOST`) is refused, and so is a browser's `Origin` unless given with
/// `--allow-origin`, token or not.
#[test]
fn tcp_refuses_other_hosts_and_browser_origins() {
    let api = StandIn::spawn([]);
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start_with(
        &api,
        dir.path(),
        &[("DESKHAND_ALLOW_HOST", "deskhand.lan,other.lan")],
        &["--allow-origin", "https://ok.example"],
    );
    let port = serve.address.rsplit_once(':').unwrap().1.to_string();
    let get = |headers: &[String]| {
        let mut args = crate::support::serve::request_args("GET", None);
        args.extend(["-H".into(), format!("Authorization: Bearer {TOKEN}")]);
        for header in headers {
            args.extend(["-H".into(), header.clone()]);
        }
        args.push(format!("{}/v1/tasks?limit=1", serve.url()));
        crate::support::serve::curl(&args)
    };
    for fine in [
        vec![],
        vec![format!("Host: localhost:{port}")],
        vec![format!("Host: [::1]:{port}")],
        vec![format!("Host: deskhand.lan:{port}")],
        vec!["Host: OTHER.lan".to_string()],
        vec!["Origin: https://ok.example".to_string()],
    ] {
        assert_eq!(get(&fine).0, 200, "{fine:?}");
    }
    let (status, error) = get(&[format!("Host: attacker.example:{port}")]);
    assert_eq!(status, 421, "{error}");
    assert_eq!(error["error"]["kind"], "wrong_host", "{error}");
    let (status, error) = get(&["Origin: https://attacker.example".to_string()]);
    assert_eq!(status, 403, "{error}");
    assert_eq!(error["error"]["kind"], "forbidden_origin", "{error}");
    // Without the token too: refused before anything else.
    let mut args = crate::support::serve::request_args("GET", None);
    args.extend([
        "-H".into(),
        "Origin: null".into(),
        format!("{}/v1/tasks", serve.url()),
    ]);
    assert_eq!(crate::support::serve::curl(&args).0, 403);
}

/// Every `tool_use` of a stored session has its `tool_result`.
fn assert_every_call_answered(session: &Value) {
    let messages = session["messages"]
        .as_array()
        .expect("the session's messages");
    let blocks = |kind: &str, field: &str| -> Vec<String> {
        messages
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == kind)
            .filter_map(|b| b[field].as_str().map(str::to_string))
            .collect()
    };
    let calls = blocks("tool_use", "id");
    let results = blocks("tool_result", "tool_use_id");
    assert!(!calls.is_empty(), "{session}");
    for call in &calls {
        assert!(
            results.contains(call),
            "tool_use {call} has no result: {session}"
        );
    }
}

/// Target: two services that delegate to each other. The root task's child is refused when
/// it hands the task back (its chain holds the root, a task of the first service): the loop
/// ends after two hops with a clear error, and the root session is valid. A submit past
/// [`MAX_HOPS`] is refused too.
#[test]
fn a_delegation_loop_between_two_services_ends_with_a_clear_error() {
    let first_api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "pass it on", "to": "second"})),
        Turn::text("The root is done."),
    ]);
    let second_api = StandIn::spawn([
        Turn::tool_use("delegate", json!({"prompt": "pass it back", "to": "first"})),
        Turn::text("The middle is done."),
    ]);
    let (first_dir, second_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tokens = [
        ("DESKHAND_DELEGATE_TOKEN_FIRST", TOKEN),
        ("DESKHAND_DELEGATE_TOKEN_SECOND", TOKEN),
    ];
    let first = Serve::start_with_env(&first_api, first_dir.path(), &tokens);
    let second = Serve::start_with_env(&second_api, second_dir.path(), &tokens);
    for (dir, name, other) in [
        (first_dir.path(), "second", &second),
        (second_dir.path(), "first", &first),
    ] {
        deskhand_engine::store::Store::open(dir)
            .unwrap()
            .set_setting("delegate.targets", &json!({name: other.url()}))
            .unwrap();
    }
    let root = first.submit(json!({"prompt": "loop", "tools": ["delegate"], "approve": "auto"}));
    let root_id = root["id"].as_str().unwrap();
    let ended = first.wait_for(root_id, "done");
    // One task on each service: the loop's third never started.
    let count = |serve: &Serve| {
        serve.curl("GET", "/v1/tasks", None).1["tasks"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!((count(&first), count(&second)), (1, 1));
    let middle = &second.curl("GET", "/v1/tasks", None).1["tasks"][0];
    assert_eq!(middle["state"], "done", "{middle}");
    let middle_session = second
        .curl(
            "GET",
            &format!("/v1/sessions/{}", middle["session_id"].as_str().unwrap()),
            None,
        )
        .1;
    assert!(
        middle_session.to_string().contains("a delegation loop"),
        "{middle_session}"
    );
    let root_session = first
        .curl(
            "GET",
            &format!("/v1/sessions/{}", ended["session_id"].as_str().unwrap()),
            None,
        )
        .1;
    assert_every_call_answered(&root_session);
    assert!(root_session.to_string().contains("The root is done."));

    // A chain past the hop limit, or one whose count is wrong, is refused outright.
    let chain: Vec<String> = (0..=deskhand_engine::tasks::MAX_HOPS)
        .map(|i| format!("t{i}"))
        .collect();
    let submit = |delegation: Value| {
        let body = json!({"prompt": "deep", "delegation": delegation}).to_string();
        second.curl("POST", "/v1/tasks", Some(&body))
    };
    let (status, error) = submit(json!({"hops": chain.len(), "chain": chain}));
    assert_eq!(status, 400, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 4"),
        "{error}"
    );
    let (status, error) = submit(json!({"hops": 3, "chain": ["a"]}));
    assert_eq!(status, 400, "{error}");
    assert_eq!(count(&second), 1);
}

/// A child never has more than its parent (issue 31): the local child of a parent whose
/// sandbox has no network has none either, so it cannot reach a server on 127.0.0.1 (what
/// the approval says is checked in `tools::delegate`'s unit tests).
#[test]
fn the_child_of_a_parent_without_the_network_has_none() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let api = StandIn::spawn([
        Turn::tool_use(
            "delegate",
            json!({"prompt": "reach the host", "max_turns": 4}),
        ),
        Turn::tool_use(
            "bash",
            json!({"command": format!(
                "exec 3<>/dev/tcp/127.0.0.1/{port} && echo REACHED || echo UNREACHABLE"
            )}),
        ),
        Turn::text("The child tried."),
        Turn::text("The parent is done."),
    ]);
    let (output, stdout, stderr) = crate::support::cli::run(
        deskhand_at(&api, dir.path())
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("DESKHAND_FIRST_DISPLAY", "281")
            .args([
                "ask",
                "--json",
                "--approve",
                "auto",
                "--tools",
                "delegate",
                "--sandbox",
                "--no-network",
            ])
            .arg("hand this on"),
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let events = crate::support::cli::json_lines(&stdout);
    let bash = events
        .iter()
        .filter(|e| e["type"] == "child_event")
        .find(|e| e["event"]["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no child bash result: {events:?}"));
    let text = bash["event"]["text"].as_str().unwrap();
    assert!(text.contains("UNREACHABLE"), "{text}");
    assert!(
        listener.accept().is_err(),
        "the child of a parent without the network reached 127.0.0.1:{port}"
    );
}
