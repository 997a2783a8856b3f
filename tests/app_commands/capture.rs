//! `capture_screen` and the computer tool's monitor, screenshot size and set-of-marks, on the X
//! display.

use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};
use tauri::ipc::InvokeBody;

use crate::support::*;

#[test]
fn capture_screen_attaches_the_configured_monitor_as_the_model_sees_it() {
    if !display_available() {
        return;
    }
    let server = StandIn::spawn([Turn::text("I see your screen.")]);
    let app = window(Some(&server));
    let monitors = app.call("list_monitors", json!({})).unwrap();
    let first = &monitors[0];
    assert_eq!(first["index"], 0);
    let shot: Value = app
        .call_with("capture_screen", InvokeBody::Json(json!({})))
        .unwrap()
        .deserialize()
        .unwrap();
    assert_eq!(shot["media_type"], "image/png");
    assert_eq!(
        (&shot["width"], &shot["height"]),
        (&first["model_width"], &first["model_height"]),
        "{shot} {first}"
    );
    let bytes = app.image(&shot["sha256"]);
    let size = imagesize::blob_size(&bytes).unwrap();
    assert_eq!(json!(size.width), shot["width"]);
    // Removed before sending: it cannot be sent.
    app.call("discard_attachment", json!({"id": shot["id"]}))
        .unwrap();
    let kept: Value = app
        .call_with("capture_screen", InvokeBody::Json(json!({})))
        .unwrap()
        .deserialize()
        .unwrap();
    app.call(
        "send_message",
        json!({"sessionId": null, "text": "what do you see", "attachments": [{"id": kept["id"]}], "onEvent": "__CHANNEL__:3"}),
    )
    .unwrap();
    app.wait_for("done");
    let content = &server.accepted()[0].body["messages"][0]["content"];
    assert_eq!(content[1]["type"], "image", "{content}");

    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["monitor"] = json!(7);
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    let error = app
        .call_with("capture_screen", InvokeBody::Json(json!({})))
        .unwrap_err();
    assert_eq!(kind(&error), "capture_failed");
    assert!(error["message"].as_str().unwrap().contains("no monitor 7"));
}

#[test]
fn the_settings_monitor_and_screenshot_size_reach_the_computer_tool() {
    if !display_available() {
        return;
    }
    let server = StandIn::spawn([
        Turn::tool_use("computer", json!({"action": "screenshot"})),
        Turn::text("Seen."),
    ]);
    let app = window(Some(&server));
    let monitors = app.call("list_monitors", json!({})).unwrap();
    let last = monitors.as_array().unwrap().len() - 1;
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["monitor"] = json!(last);
    settings["screenshot_size"] = json!({"width": 1024, "height": 768});
    // A model whose computer tool declares its size (the default's GA toolset declares none).
    settings["model"] = json!("claude-sonnet-4-5");
    settings["approval_mode"] = json!("auto");
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    let monitor = &app.call("list_monitors", json!({})).unwrap()[last];
    let (width, height) = (
        monitor["width"].as_u64().unwrap(),
        monitor["height"].as_u64().unwrap(),
    );
    // The monitor's aspect ratio within 1024x768.
    let factor = (1024.0 / width as f64).min(768.0 / height as f64).min(1.0);
    let expected = (
        (width as f64 * factor).floor() as u64,
        (height as f64 * factor).floor() as u64,
    );
    assert_eq!(
        (
            monitor["model_width"].as_u64(),
            monitor["model_height"].as_u64()
        ),
        (Some(expected.0), Some(expected.1))
    );
    app.send(None, "look").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    let tools = &server.accepted()[0].body["tools"];
    let computer = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "computer")
        .unwrap_or_else(|| panic!("no computer tool in {tools}"));
    assert_eq!(
        (
            &computer["display_width_px"],
            &computer["display_height_px"]
        ),
        (&json!(expected.0), &json!(expected.1))
    );
    let result = app.wait_for("tool_result");
    let bytes = app.image(&result["images"][0]["sha256"]);
    let size = imagesize::blob_size(&bytes).unwrap();
    assert_eq!(
        (size.width as u64, size.height as u64),
        expected,
        "the screenshot the model got"
    );
}

/// Whether the screenshot's tool result in the last message of `request` carries a
/// set-of-marks line: the marks' list, or why the tree gave none.
fn marked(request: &Value) -> bool {
    let last = request["messages"].as_array().unwrap().last().unwrap();
    last.to_string().contains("arks on this screenshot")
}

#[test]
fn the_set_of_marks_toggle_is_stored_and_the_windows_next_run_marks_its_screenshots() {
    if !display_available() {
        return;
    }
    let look = || {
        [
            Turn::tool_use("computer", json!({"action": "screenshot"})),
            Turn::text("Seen."),
        ]
    };
    let server = StandIn::spawn(look().into_iter().chain(look()).collect::<Vec<_>>());
    let app = window(Some(&server));
    let mut settings = app.call("get_settings", json!({})).unwrap();
    assert_eq!(settings["set_of_marks"], false, "off by default");
    app.send(None, "look").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert!(!marked(&server.accepted()[1].body), "no marks when off");

    settings["set_of_marks"] = json!(true);
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["set_of_marks"],
        true
    );
    // In the store, where `deskhand settings` and `deskhand serve` read it.
    let store = deskhand_engine::store::Store::open(app.data.path()).unwrap();
    assert_eq!(
        store
            .setting(deskhand_engine::elements::marks::SETTING)
            .unwrap(),
        Some(json!(true))
    );
    app.events.lock().unwrap().clear();
    app.send(None, "look again").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert!(
        marked(&server.accepted()[3].body),
        "the window's run marks its screenshots"
    );
}
