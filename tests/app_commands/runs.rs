//! `send_message` and `stop`: runs from the window, recorded, stopped and budgeted.

use std::time::{Duration, Instant};

use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::{Value, json};
use tauri::ipc::InvokeBody;

use crate::support::*;

#[test]
fn a_message_streams_text_and_the_session_continues() {
    let server = StandIn::spawn([
        Reply::new()
            .text("Hello from ")
            .text("the stand-in.")
            .into(),
        Turn::text("Second answer."),
    ]);
    let app = window(Some(&server));
    let session = app.send(None, "hi").unwrap();
    let done = app.wait_for("done");
    assert_eq!(done["status"], "done");
    assert_eq!(done["session_id"], session);
    let events = app.events();
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello from the stand-in.");
    assert_eq!(events[0]["type"], "started");

    app.events.lock().unwrap().clear();
    assert_eq!(app.send(session.as_str(), "more").unwrap(), session);
    app.wait_for("done");
    let request = &server.accepted()[1].body;
    assert_eq!(
        request["messages"].as_array().unwrap().len(),
        3,
        "the history went along"
    );
    assert_eq!(
        app.send(Some("no-such-session"), "x")
            .map_err(|e| kind(&e).to_string()),
        Err("not_found".into())
    );
}

#[test]
fn stop_ends_a_run_mid_stream_and_the_session_goes_on() {
    let server = StandIn::spawn([
        Turn::hang(Reply::new().text("I will never finish"), 4),
        Turn::text("After the stop."),
    ]);
    let app = window(Some(&server));
    let session = app.send(None, "go").unwrap();
    app.wait_for("text_delta");
    assert_eq!(kind(&app.send(None, "again").unwrap_err()), "busy");
    app.call("stop", json!({})).unwrap();
    assert_eq!(app.wait_for("done")["status"], "cancelled");
    // The partial text is kept and the session goes on with a valid history.
    app.events.lock().unwrap().clear();
    app.send(session.as_str(), "continue").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    let messages = server.accepted().last().unwrap().body["messages"].clone();
    let kept = messages[1]["content"][0]["text"].as_str().unwrap();
    assert!(
        !kept.is_empty() && "I will never finish".starts_with(kept),
        "{kept}"
    );
    assert_eq!(
        app.call("stop", json!({})),
        Ok(Value::Null),
        "a stop with no run is a no-op"
    );
}

#[test]
fn the_tray_stop_item_stops_a_run_mid_stream() {
    let server = StandIn::spawn([Turn::hang(Reply::new().text("Still going"), 4)]);
    let app = window(Some(&server));
    app.send(None, "go").unwrap();
    app.wait_for("text_delta");
    let clicked = Instant::now();
    deskhand_app::tray::on_item(app._app.handle(), deskhand_app::tray::STOP);
    assert_eq!(app.wait_for("done")["status"], "cancelled");
    assert!(
        clicked.elapsed() < Duration::from_secs(2),
        "the stand-in hangs for 4 s; the stop must not wait for it"
    );
    // Items that are not the tray's do nothing.
    deskhand_app::tray::on_item(app._app.handle(), "no-such-item");
}

#[test]
fn the_stored_budget_stops_runs_from_the_window_and_the_meter_reads_the_store() {
    let server = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "true"})),
        Turn::text("never reached"),
    ]);
    let app = window(Some(&server));
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["max_tokens"] = json!(1);
    settings["approval_mode"] = json!("auto");
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    let session = app.send(None, "go").unwrap();
    assert_eq!(app.wait_for("done")["status"], "budget");
    assert_eq!(server.accepted().len(), 1, "the budget stopped the run");
    let listed = app.call("list_sessions", json!({})).unwrap();
    let usage = app.wait_for("done")["usage"].clone();
    assert_eq!(listed[0]["id"], session);
    assert_eq!(listed[0]["usage"], usage);
    assert!(listed[0]["cost_usd"].as_f64().unwrap() > 0.0, "{listed}");

    // A cost limit needs the model's price.
    settings["max_tokens"] = Value::Null;
    settings["max_cost_usd"] = json!(1.0);
    settings["model"] = json!("unpriced-model-7");
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    let error = app.send(None, "go").unwrap_err();
    assert_eq!(kind(&error), "invalid");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("unpriced-model-7")
    );
}

#[test]
fn attachments_go_with_the_message_and_images_come_back_as_bytes() {
    let server = StandIn::spawn([Turn::text("A tiny image.")]);
    let app = window(Some(&server));
    let error = app
        .call_with("attach_image", InvokeBody::Raw(b"%PDF-1.7".to_vec()))
        .unwrap_err();
    assert_eq!(kind(&error), "invalid");
    let attached: Value = app
        .call_with("attach_image", InvokeBody::Raw(PNG.to_vec()))
        .unwrap()
        .deserialize()
        .unwrap();
    assert_eq!(
        (attached["width"].clone(), attached["height"].clone()),
        (json!(1), json!(1))
    );
    let sha = attached["sha256"].as_str().unwrap();
    assert_eq!(app.image(&json!(sha)), PNG);
    assert_eq!(
        kind(&app.call("get_image", json!({"sha256": "00"})).unwrap_err()),
        "not_found"
    );
    // One attachment is removed before sending, the other goes as an image block.
    let removed: Value = app
        .call_with("attach_image", InvokeBody::Raw(PNG.to_vec()))
        .unwrap()
        .deserialize()
        .unwrap();
    app.call("discard_attachment", json!({"id": removed["id"]}))
        .unwrap();
    app.call(
        "send_message",
        json!({"sessionId": null, "text": "look", "attachments": [{"id": attached["id"]}], "onEvent": "__CHANNEL__:1"}),
    )
    .unwrap();
    app.wait_for("done");
    let content = &server.accepted()[0].body["messages"][0]["content"];
    assert_eq!(content.as_array().unwrap().len(), 2, "{content}");
    assert_eq!(content[1]["type"], "image");
    // The window's copy of that message carries a reference, never the base64.
    let user = app
        .events()
        .into_iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .unwrap();
    assert_eq!(user["message"]["content"][1]["source"]["type"], "ref");
    assert_eq!(user["message"]["content"][1]["source"]["sha256"], sha);
    // Sent, it is no longer held as an attachment: the store gives it back.
    assert_eq!(app.image(&json!(sha)), PNG);
    assert!(
        app.call(
            "send_message",
            json!({"sessionId": null, "text": "again", "attachments": [{"id": attached["id"]}], "onEvent": "__CHANNEL__:2"}),
        )
        .is_err(),
        "an attachment is sent once"
    );
}

/// Opus 5.5 writes its progress between tool calls inside thinking blocks: the window is sent
/// each piece as it streams, between the calls, and the effort chosen in the settings goes
/// as `output_config.effort`.
#[test]
fn progress_between_tool_calls_reaches_the_window_with_the_settings_effort() {
    let server = StandIn::spawn([
        Reply::new()
            .thinking("Listing the folder first.", "sig_1")
            .tool_use("bash", json!({"command": "echo one"}))
            .into(),
        Reply::new()
            .thinking("Now the second look.", "sig_2")
            .text("All done.")
            .into(),
    ]);
    let app = window(Some(&server));
    let mut settings = app.call("get_settings", json!({})).unwrap();
    assert_eq!(settings["effort"], Value::Null);
    settings["model"] = json!("claude-opus-5-5");
    settings["effort"] = json!("low");
    settings["approval_mode"] = json!("auto");
    app.call("set_settings", json!({"settings": settings.clone()}))
        .unwrap();
    app.send(None, "look twice").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    let events = app.events();
    let at = |found: &dyn Fn(&Value) -> bool| {
        events
            .iter()
            .position(found)
            .unwrap_or_else(|| panic!("{events:?}"))
    };
    let call = at(&|e| e["type"] == "tool_call");
    let result = at(&|e| e["type"] == "tool_result");
    // Each progress text streams in pieces, whole before the call it announces or after it.
    let thought = |range: &[Value]| -> String {
        range
            .iter()
            .filter(|e| e["type"] == "thinking_delta")
            .map(|e| e["text"].as_str().unwrap())
            .collect()
    };
    assert_eq!(thought(&events[..call]), "Listing the folder first.");
    assert_eq!(thought(&events[result..]), "Now the second look.");
    let requests = server.accepted();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.body["thinking"],
            json!({"type": "adaptive", "display": "summarized"})
        );
        assert_eq!(request.body["output_config"], json!({"effort": "low"}));
    }
    // The official price's source reaches the window with the run's start.
    let started = &events[at(&|e| e["type"] == "started")];
    assert_eq!(started["price_source"], "official");
    // A level the API does not know is refused by the settings.
    settings["effort"] = json!("extreme");
    let refused = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(kind(&refused), "invalid");
}
