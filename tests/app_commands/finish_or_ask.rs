//! Issue 19 in the window: the stall breaker's question answered with `answer_stall`, and
//! the check saved with a session (`send_message`'s `check`, `get/set_session_check`).

use std::time::{Duration, Instant};

use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

use crate::support::*;

/// Waits until the run has asked `n` stall questions (`stall_detected` at step `ask`).
fn stall_asks(app: &Window, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while app
        .events()
        .iter()
        .filter(|e| e["type"] == "stall_detected" && e["step"] == "ask")
        .count()
        < n
    {
        assert!(Instant::now() < deadline, "{:#?}", app.events());
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn answer_stall(app: &Window, answer: Value) -> Result<Value, Value> {
    app.call("answer_stall", json!({ "answer": answer }))
}

/// A model that clicks the same empty spot of the still desktop forever, in auto mode: the
/// stall breaker notes it, then asks; the window's hint goes on (and reaches the model), the
/// stall goes on and is asked again, and the window's stop ends the run `stalled`.
#[test]
fn a_stall_question_is_answered_from_the_window_with_a_hint_then_stop() {
    if !display_available() {
        return;
    }
    let click = json!({"action": "left_click", "coordinate": [20, 700]});
    let server = StandIn::spawn(vec![Turn::tool_use("computer", click); 20]);
    let app = window(Some(&server));
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["approval_mode"] = json!("auto");
    app.call("set_settings", json!({ "settings": settings }))
        .unwrap();
    assert_eq!(
        kind(&answer_stall(&app, json!({"answer": "continue"})).unwrap_err()),
        "not_found",
        "nothing runs, nothing asks"
    );
    app.send(None, "click the button").unwrap();
    stall_asks(&app, 1);
    for refused in [
        json!({"answer": "no_one"}),
        json!({"answer": "hint", "text": "  "}),
        json!({"answer": "hint", "text": "x".repeat(2_001)}),
        json!({"answer": "later"}),
    ] {
        assert!(answer_stall(&app, refused.clone()).is_err(), "{refused}");
    }
    answer_stall(
        &app,
        json!({"answer": "hint", "text": "use the keyboard instead"}),
    )
    .unwrap();
    assert_eq!(
        kind(&answer_stall(&app, json!({"answer": "continue"})).unwrap_err()),
        "not_found",
        "the question is answered once"
    );
    stall_asks(&app, 2);
    answer_stall(&app, json!({"answer": "stop"})).unwrap();
    assert_eq!(app.wait_for("done")["status"], "stalled");

    let events = app.events();
    let rungs: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "stall_detected")
        .map(|e| e["step"].as_str().unwrap())
        .collect();
    assert_eq!(rungs, ["note", "ask", "note", "ask", "stalled"]);
    let answers: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "stall_answered")
        .map(|e| e["answer"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["hint", "stop"]);
    // With N = 3: a note and a question per stall, 4 clicks each, and nothing after the stop.
    let requests = server.accepted();
    assert_eq!(requests.len(), 2 * (3 + 1), "{} requests", requests.len());
    let hinted = requests
        .iter()
        .position(|r| {
            r.body["messages"].as_array().unwrap().last().unwrap()["content"]
                .to_string()
                .contains("The person was asked and says: use the keyboard instead")
        })
        .expect("the hint reached the model");
    assert_eq!(
        hinted, 4,
        "with the result of the click that was asked about"
    );
}

/// A check given with a new chat runs after that run and is saved with the session; its later
/// runs are checked by it until it is removed. A check that cannot run is refused up front,
/// before anything is sent or saved.
#[test]
fn a_check_saved_with_a_session_decides_its_runs_and_a_bad_one_is_refused() {
    let files = tempfile::tempdir().unwrap();
    let marker = files.path().join("done.txt");
    let check = json!({"command": format!("test -e '{}'", marker.display()), "timeout_secs": 10.0});
    let server = StandIn::spawn([
        Turn::text("Done."),
        Turn::text("Really done."),
        Turn::text("Done now."),
        Turn::text("Nothing to check."),
    ]);
    let app = window(Some(&server));

    let missing = json!({"command": "no-such-checker-19 --now", "timeout_secs": 10.0});
    let error = app
        .send_checked("make the file", missing.clone())
        .unwrap_err();
    assert_eq!(kind(&error), "invalid", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("no-such-checker-19"),
        "{error}"
    );
    let zero = json!({"command": "true", "timeout_secs": 0.0});
    assert_eq!(
        kind(&app.send_checked("x", zero.clone()).unwrap_err()),
        "invalid"
    );
    assert!(server.requests().is_empty(), "nothing half-ran");
    assert_eq!(app.call("list_sessions", json!({})).unwrap(), json!([]));

    // The file is not there: the failure goes back to the model once, then the run is failed.
    let session = app.send_checked("make the file", check.clone()).unwrap();
    let session = session.as_str().unwrap();
    let verification = app.wait_for("verification");
    assert_eq!(
        (
            &verification["outcome"],
            &verification["retried"],
            &verification["exit_code"]
        ),
        (&json!("failed"), &json!(true), &json!(1)),
        "{verification}"
    );
    assert_eq!(verification["check"], check["command"]);
    assert_eq!(server.accepted().len(), 2);
    assert_eq!(
        app.call("get_session_check", json!({"id": session}))
            .unwrap(),
        check
    );

    // Refused changes keep the saved check.
    for (bad, expected) in [(&missing, "invalid"), (&zero, "invalid")] {
        let error = app
            .call("set_session_check", json!({"id": session, "check": bad}))
            .unwrap_err();
        assert_eq!(kind(&error), expected, "{error}");
    }
    let error = app
        .call(
            "set_session_check",
            json!({"id": "no-such-session", "check": check}),
        )
        .unwrap_err();
    assert_eq!(kind(&error), "not_found", "{error}");
    assert_eq!(
        kind(
            &app.call("get_session_check", json!({"id": "no-such-session"}))
                .unwrap_err()
        ),
        "not_found"
    );
    assert_eq!(
        app.call("get_session_check", json!({"id": session}))
            .unwrap(),
        check
    );

    // The next run of the session, with no check passed, is checked by the saved one.
    std::fs::write(&marker, "made").unwrap();
    app.events.lock().unwrap().clear();
    app.send(Some(session), "and now?").unwrap();
    let verification = app.wait_for("verification");
    assert_eq!(verification["outcome"], "verified", "{verification}");
    assert_eq!(app.wait_for("done")["status"], "done");

    // Removed: the session's runs are unverified again.
    app.call("set_session_check", json!({"id": session, "check": null}))
        .unwrap();
    assert_eq!(
        app.call("get_session_check", json!({"id": session}))
            .unwrap(),
        Value::Null
    );
    app.events.lock().unwrap().clear();
    app.send(Some(session), "once more").unwrap();
    let verification = app.wait_for("verification");
    assert_eq!(
        (&verification["outcome"], &verification["check"]),
        (&json!("unverified"), &Value::Null)
    );
    assert_eq!(server.accepted().len(), 4);
}

/// A session another front end started with a check (a second engine over the same history,
/// as `deskhand ask --check` runs one) is checked by it when the window continues it: the
/// engine keeps a session's rules, whoever runs its tasks.
#[test]
fn a_session_started_elsewhere_with_a_check_is_checked_by_it_in_the_window() {
    let server = StandIn::spawn([Turn::text("Done elsewhere."), Turn::text("Done here.")]);
    let app = window(Some(&server));
    let check = format!("test -d '{}'", app.data.path().display());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let other = deskhand_engine::tasks::Engine::new(
        deskhand_engine::store::Store::open(app.data.path()).unwrap(),
    );
    let session = runtime.block_on(async {
        let settings = deskhand_engine::tasks::RunSettings {
            check: Some(
                deskhand_engine::agent::verify::Check::new(&check, Duration::from_secs(10))
                    .unwrap(),
            ),
            ..deskhand_engine::tasks::RunSettings::default()
        };
        let task = other
            .submit(deskhand_engine::tasks::TaskSpec {
                session: None,
                input: vec![deskhand_engine::llm::ContentBlock::text("make the folder")],
                settings,
                origin: deskhand_engine::tasks::Origin::Cli,
                window: None,
            })
            .await
            .unwrap();
        let mut watch = other.watch(&task.id, 0).unwrap();
        while watch.next().await.is_some() {}
        task.session_id.to_string()
    });
    app.send(Some(&session), "and now?").unwrap();
    let verification = app.wait_for("verification");
    assert_eq!(
        (&verification["outcome"], &verification["check"]),
        (&json!("verified"), &json!(check)),
        "{verification}"
    );
    assert_eq!(app.wait_for("done")["status"], "done");
}
