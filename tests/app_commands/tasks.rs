//! Runs are tasks of the core's engine: prepared as the CLI's, one at a time per session
//! across processes, listed and followed from the window.

use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::json;

use crate::support::*;

/// The window's runs are prepared by the core exactly as the CLI's: the enabled plugin
/// servers of mcp.json are offered, `DESKHAND_BASH_TIMEOUT` applies, and "always allow this
/// kind" lasts for the session, not just the run, so the next message does not ask again.
#[test]
fn the_windows_runs_get_the_clis_plugins_and_bash_timeout_and_always_allow_lasts() {
    let server = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "sleep 5"})),
        Turn::text("First done."),
        Turn::tool_use("bash", json!({"command": "echo second-ran"})),
        Turn::text("Second done."),
    ]);
    let app = window(Some(&server));
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/cli/tests/fixtures/mcp_fixture.py");
    std::fs::write(
        app._config.path().join("mcp.json"),
        json!({"mcpServers": {"fixture": {"command": "python3", "args": [fixture]}}}).to_string(),
    )
    .unwrap();
    // SAFETY: the window holds ENVIRONMENT for the whole test.
    unsafe { std::env::set_var("DESKHAND_BASH_TIMEOUT", "0.5") };
    let session = app.send(None, "sleep a while").unwrap();
    let id = approvals_asked(&app, 1)[0]["tool_use_id"].clone();
    app.person.refuse(false);
    app.call(
        "approve",
        json!({"toolUseId": id, "decision": {"decision": "approve_kind"}}),
    )
    .unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    unsafe { std::env::remove_var("DESKHAND_BASH_TIMEOUT") };
    let result = app.wait_for("tool_result");
    assert!(
        result["text"].as_str().unwrap().contains("0.5"),
        "the bash timeout of DESKHAND_BASH_TIMEOUT: {result}"
    );
    let first = &server.accepted()[0].body;
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"fixture__echo"), "{tools:?}");

    app.events.lock().unwrap().clear();
    app.send(session.as_str(), "again").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert!(
        !app.events().iter().any(|e| e["type"] == "approval_needed"),
        "always allow was forgotten: {:#?}",
        app.events()
    );
    assert_eq!(app.wait_for("approval_decided")["by"], "session_rule");
    assert!(
        app.wait_for("tool_result")["text"]
            .as_str()
            .unwrap()
            .contains("second-ran")
    );
}

/// The window and a `deskhand ask` process never run one session together: the CLI is
/// refused `busy` while the window's task runs it, and writes nothing to it.
#[test]
fn the_cli_is_refused_a_session_the_window_is_running() {
    let server = StandIn::spawn([
        Turn::hang(Reply::new().text("Working on it"), 4),
        Turn::text("Never asked for"),
    ]);
    let app = window(Some(&server));
    let session = app.send(None, "a long job").unwrap();
    app.wait_for("text_delta");
    // The CLI of this build: target/debug/deskhand, beside this test's deps/ directory.
    let exe = std::env::current_exe().unwrap();
    let cli = exe.parent().unwrap().parent().unwrap().join("deskhand");
    let output = std::process::Command::new(cli)
        .args([
            "ask",
            "--session",
            session.as_str().unwrap(),
            "from the cli",
        ])
        .env("DESKHAND_DATA_DIR", app.data.path())
        .env("DESKHAND_CONFIG_DIR", app._config.path())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", server.url())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("deskhand runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is busy"), "{stderr}");
    app.call("stop", json!({})).unwrap();
    assert_eq!(app.wait_for("done")["status"], "cancelled");
    assert_eq!(server.accepted().len(), 1, "the CLI sent nothing");
    let loaded = app.call("load_session", json!({"id": session})).unwrap();
    assert!(!loaded.to_string().contains("from the cli"));
}

/// The window lists tasks with what each waits for, and follows one another process runs
/// (here a second engine over the same history, as `deskhand serve` would be) live. A visible
/// window raises no desktop notification (the mock runtime's window is always visible; which
/// events notify is `commands::run`'s unit test).
#[test]
fn the_window_lists_and_follows_tasks_from_elsewhere() {
    let server = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "echo hidden-ran"})),
        Turn::text("Done while hidden."),
        Turn::text("From elsewhere."),
    ]);
    let app = window(Some(&server));
    app.send(None, "work while I am away").unwrap();
    let id = approvals_asked(&app, 1)[0]["tool_use_id"].clone();
    let listed = app.call("list_tasks", json!({})).unwrap();
    assert_eq!(listed[0]["state"], "waiting_for_approval", "{listed}");
    assert_eq!(listed[0]["origin"], "window");
    assert_eq!(listed[0]["waiting_for"]["tool_use_id"], id);
    app.call(
        "approve",
        json!({"toolUseId": id, "decision": {"decision": "approve"}}),
    )
    .unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert_eq!(app.person.notified(), [], "the window is visible");

    // A task another engine runs over the same history: listed, and followed live.
    app.events.lock().unwrap().clear();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let other = deskhand_engine::tasks::Engine::new(
        deskhand_engine::store::Store::open(app.data.path()).unwrap(),
    );
    let task = runtime
        .block_on(other.submit(deskhand_engine::tasks::TaskSpec {
            session: None,
            input: vec![deskhand_engine::llm::ContentBlock::text("from the service")],
            settings: deskhand_engine::tasks::RunSettings::default(),
            origin: deskhand_engine::tasks::Origin::Api,
            window: None,
        }))
        .unwrap();
    let listed = app.call("list_tasks", json!({})).unwrap();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == task.id.as_str())
    );
    let watched = app
        .call(
            "watch_task",
            json!({"taskId": task.id, "onEvent": "__CHANNEL__:9"}),
        )
        .unwrap();
    assert_eq!(watched["origin"], "api");
    assert_eq!(app.wait_for("done")["status"], "done");
    assert!(app.events().iter().any(|e| e["type"] == "started"));
    assert!(
        app.call(
            "watch_task",
            json!({"taskId": "nope", "onEvent": "__CHANNEL__:10"})
        )
        .is_err()
    );
}

/// The schedules `deskhand serve` runs are in the shared history: the window lists them as
/// stored, with their next time and why one paused.
#[test]
fn the_window_lists_the_schedules_of_the_history() {
    use deskhand_engine::schedules::{Clock, ScheduleSpec, Scheduler};

    struct Fixed;
    impl Clock for Fixed {
        fn now_ms(&self) -> i64 {
            1_767_603_600_000 // 2026-01-05T09:00:00Z
        }
    }
    let app = window(None);
    assert_eq!(app.call("list_schedules", json!({})).unwrap(), json!([]));
    let store = deskhand_engine::store::Store::open(app.data.path()).unwrap();
    let engine = deskhand_engine::tasks::Engine::new(store.clone());
    let launcher = std::sync::Arc::new(deskhand_engine::schedules::EngineLauncher::new(engine));
    let (_scheduler, schedules) = Scheduler::new(store, std::sync::Arc::new(Fixed), launcher);
    let spec = |name: &str| -> ScheduleSpec {
        serde_json::from_value(json!({
            "name": name,
            "trigger": {"kind": "every", "seconds": 7200},
            "prompt": "tidy the desk",
        }))
        .unwrap()
    };
    schedules.add(spec("tidy")).unwrap();
    schedules.add(spec("archive")).unwrap();
    schedules.pause("archive").unwrap();
    let listed = app.call("list_schedules", json!({})).unwrap();
    assert_eq!(listed[0]["name"], "archive");
    assert_eq!(listed[0]["paused"], true);
    assert_eq!(listed[0]["paused_reason"], "paused by a person");
    assert_eq!(listed[1]["name"], "tidy");
    assert_eq!(listed[1]["next_due"], "2026-01-05T11:00:00Z");
    assert_eq!(
        listed[1]["trigger"],
        json!({"kind": "every", "seconds": 7200})
    );
}
