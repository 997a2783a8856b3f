//! The agent desktop in the window: the session's choice, a desktop kept after a run, its
//! live view (raw JPEG frames) and the person's take-over input, on a real Xvfb.

use std::time::{Duration, Instant};

use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

use crate::support::*;

fn send_on_agent_desktop(app: &Window, text: &str, keep: bool) -> Value {
    app.call(
        "send_message",
        json!({"sessionId": null, "text": text, "attachments": [],
               "desktop": {"agent": true, "sandbox": false, "keep": keep},
               "onEvent": "__CHANNEL__:7"}),
    )
    .unwrap()
}

/// The display of the agent desktop the run announced.
fn desktop_display(app: &Window) -> String {
    let notice = app.wait_for("notice");
    let message = notice["message"].as_str().unwrap();
    message.split("display ").nth(1).unwrap().to_string()
}

/// Starts the live view of the session's agent desktop, frames 320 pixels wide.
fn watch(app: &Window, session: &str) -> Result<Value, Value> {
    app.call(
        "watch_agent_desktop",
        json!({"sessionId": session, "maxWidth": 320, "onFrame": "__CHANNEL__:9"}),
    )
}

fn set_desktop(app: &Window, session: &str, keep: bool) {
    app.call(
        "set_session_desktop",
        json!({"id": session, "choice": {"agent": true, "sandbox": false, "keep": keep}}),
    )
    .unwrap();
}

fn has_lock_file(display: &str) -> bool {
    let number = display.trim_start_matches(':');
    std::path::Path::new(&format!("/tmp/.X{number}-lock")).exists()
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_kept_desktop_is_shown_live_takes_input_and_ends_when_no_longer_kept() {
    if !display_available() {
        return;
    }
    let server = StandIn::spawn([Turn::text("Ready."), Turn::text("Again.")]);
    let app = window(Some(&server));
    let runtime = tempfile::tempdir().unwrap();
    // SAFETY: `window` holds ENVIRONMENT for this test.
    unsafe {
        std::env::set_var("XDG_RUNTIME_DIR", runtime.path());
        std::env::set_var("DESKHAND_FIRST_DISPLAY", "241");
    }
    let session = send_on_agent_desktop(&app, "start", true);
    let session = session.as_str().unwrap().to_string();
    let display = desktop_display(&app);
    assert_eq!(app.wait_for("done")["status"], "done");
    assert_eq!(
        app.call("get_session_desktop", json!({"id": session}))
            .unwrap(),
        json!({"agent": true, "sandbox": false, "keep": true})
    );

    // Kept after the run: the live view shows it, a frame at once.
    let watching = watch(&app, &session).unwrap();
    assert_eq!(watching["display"], display.as_str());
    assert_eq!(watching["screen"], json!({"width": 1280, "height": 800}));
    wait_until("a first frame", || !app.frames.lock().unwrap().is_empty());
    assert_eq!(&app.frames.lock().unwrap()[0][..2], &[0xff, 0xd8]);

    // Take-over types into an xterm there; the live view sends the change.
    let typed = runtime.path().join("typed.txt");
    let script = format!("read line; echo \"$line\" > {}", typed.display());
    let mut xterm = std::process::Command::new("xterm")
        .args([
            "-title",
            "windowterm",
            "-geometry",
            "80x20+0+0",
            "-e",
            "sh",
            "-c",
            &script,
        ])
        .env("DISPLAY", &display)
        .spawn()
        .unwrap();
    wait_until("the xterm on the agent desktop", || {
        std::process::Command::new("xdotool")
            .args(["search", "--onlyvisible", "--name", "windowterm"])
            .env("DISPLAY", &display)
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let before = app.frames.lock().unwrap().len();
    for input in [
        json!({"kind": "click", "x": 100, "y": 100}),
        json!({"kind": "text", "text": "from the window"}),
        json!({"kind": "key", "keys": "Return"}),
    ] {
        app.call(
            "take_over_input",
            json!({"sessionId": session, "input": input}),
        )
        .unwrap();
    }
    wait_until("the typed line", || {
        std::fs::read_to_string(&typed).is_ok_and(|t| !t.is_empty())
    });
    assert_eq!(
        std::fs::read_to_string(&typed).unwrap(),
        "from the window\n"
    );
    wait_until("a frame after the change", || {
        app.frames.lock().unwrap().len() > before
    });
    let bad = app
        .call(
            "take_over_input",
            json!({"sessionId": session, "input": {"kind": "key", "keys": "NoSuchKey"}}),
        )
        .unwrap_err();
    assert_eq!(kind(&bad), "invalid");
    let _ = xterm.kill();
    let _ = xterm.wait();
    app.call("unwatch_agent_desktop", json!({})).unwrap();

    // A message whose run cannot start (a broken setting) leaves the kept desktop as it was.
    let store = deskhand_engine::store::Store::open(app.data.path()).unwrap();
    store
        .set_setting("delegate.targets", &json!("not a map"))
        .unwrap();
    app.events.lock().unwrap().clear();
    app.send(Some(&session), "broken").unwrap();
    let done = app.wait_for("done");
    assert_eq!(done["status"], "error", "{done}");
    let error = app.wait_for("error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("`delegate.targets` setting must map names to URLs"),
        "{error}"
    );
    assert!(
        has_lock_file(&display),
        "the kept desktop ended with a run that never started"
    );
    store.set_setting("delegate.targets", &Value::Null).unwrap();

    // The next message works on the same desktop.
    app.events.lock().unwrap().clear();
    app.send(Some(&session), "again").unwrap();
    assert!(
        app.wait_for("notice")["message"]
            .as_str()
            .unwrap()
            .ends_with(&display)
    );
    app.wait_for("done");

    // No longer kept: it ends (at once, or with the run if "done" came before the run let
    // go of it), and the commands say there is none.
    set_desktop(&app, &session, false);
    wait_until("the desktop's end", || !has_lock_file(&display));
    assert_eq!(kind(&watch(&app, &session).unwrap_err()), "not_found");
    let input = json!({"sessionId": session, "input": {"kind": "text", "text": "x"}});
    assert_eq!(
        kind(&app.call("take_over_input", input).unwrap_err()),
        "not_found"
    );
}

#[test]
fn a_change_of_mind_during_a_run_decides_whether_its_desktop_stays() {
    if !display_available() {
        return;
    }
    let server = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "true"})),
        Turn::text("Let go."),
        Turn::tool_use("bash", json!({"command": "true"})),
        Turn::text("Kept."),
    ]);
    let app = window(Some(&server));
    let runtime = tempfile::tempdir().unwrap();
    // SAFETY: `window` holds ENVIRONMENT for this test.
    unsafe {
        std::env::set_var("XDG_RUNTIME_DIR", runtime.path());
        std::env::set_var("DESKHAND_FIRST_DISPLAY", "251");
    }
    let approve_when_asked = |then: &dyn Fn()| {
        let asked = app.wait_for("approval_needed");
        then();
        app.call(
            "approve",
            json!({"toolUseId": asked["request"]["tool_use_id"],
                   "decision": {"decision": "approve"}}),
        )
        .unwrap();
        assert_eq!(app.wait_for("done")["status"], "done");
    };

    // Kept when the run started, let go while it waits: the run keeps it to its end only.
    let session = send_on_agent_desktop(&app, "start", true);
    let session = session.as_str().unwrap().to_string();
    let display = desktop_display(&app);
    approve_when_asked(&|| {
        set_desktop(&app, &session, false);
        assert!(has_lock_file(&display), "ended under its run");
    });
    wait_until("the desktop's end", || !has_lock_file(&display));

    // Not kept when the run started, kept while it waits: it stays for the next run.
    app.events.lock().unwrap().clear();
    app.send(Some(&session), "again").unwrap();
    let display = desktop_display(&app);
    approve_when_asked(&|| set_desktop(&app, &session, true));
    std::thread::sleep(Duration::from_millis(500));
    assert!(has_lock_file(&display), "a kept desktop ended");
    let watching = watch(&app, &session).unwrap();
    assert_eq!(watching["display"], display.as_str());
    app.call("unwatch_agent_desktop", json!({})).unwrap();
    set_desktop(&app, &session, false);
    wait_until("the desktop's end", || !has_lock_file(&display));
}

#[test]
fn a_session_works_on_the_persons_screen_until_told_otherwise() {
    let server = StandIn::spawn([Turn::text("Hi.")]);
    let app = window(Some(&server));
    let session = app.send(None, "hi").unwrap();
    app.wait_for("done");
    let id = session.as_str().unwrap();
    assert_eq!(
        app.call("get_session_desktop", json!({"id": id})).unwrap(),
        json!({"agent": false, "sandbox": true, "keep": false})
    );
    let unknown = app.call(
        "set_session_desktop",
        json!({"id": id, "choice": {"agent": true, "remote": true}}),
    );
    // Refused before anything is saved, naming the field.
    assert!(unknown.unwrap_err().to_string().contains("remote"));
    assert_eq!(
        app.call("get_session_desktop", json!({"id": id})).unwrap()["agent"],
        false
    );
    app.call(
        "set_session_desktop",
        json!({"id": id, "choice": {"agent": true}}),
    )
    .unwrap();
    assert_eq!(
        app.call("get_session_desktop", json!({"id": id})).unwrap(),
        json!({"agent": true, "sandbox": true, "keep": false})
    );
    assert_eq!(
        kind(
            &app.call("get_session_desktop", json!({"id": "nope"}))
                .unwrap_err()
        ),
        "not_found"
    );
}
