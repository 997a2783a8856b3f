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
    let notice = app.wait_for("notice");
    let display = notice["message"]
        .as_str()
        .unwrap()
        .split("display ")
        .nth(1)
        .unwrap()
        .to_string();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert_eq!(
        app.call("get_session_desktop", json!({"id": session}))
            .unwrap(),
        json!({"agent": true, "sandbox": false, "keep": true})
    );

    // Kept after the run: the live view shows it, a frame at once.
    let watching = app
        .call(
            "watch_agent_desktop",
            json!({"sessionId": session, "maxWidth": 320, "onFrame": "__CHANNEL__:9"}),
        )
        .unwrap();
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

    // No longer kept: it ends, and the commands say there is none.
    app.call(
        "set_session_desktop",
        json!({"id": session, "choice": {"agent": true, "sandbox": true, "keep": false}}),
    )
    .unwrap();
    let number = display.trim_start_matches(':');
    assert!(!std::path::Path::new(&format!("/tmp/.X{number}-lock")).exists());
    for (command, args) in [
        (
            "watch_agent_desktop",
            json!({"sessionId": session, "maxWidth": 320, "onFrame": "__CHANNEL__:9"}),
        ),
        (
            "take_over_input",
            json!({"sessionId": session, "input": {"kind": "text", "text": "x"}}),
        ),
    ] {
        assert_eq!(kind(&app.call(command, args).unwrap_err()), "not_found");
    }
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
