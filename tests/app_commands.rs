//! The window's IPC commands on Tauri's mock runtime, with the app's real context (its
//! capabilities included) and a stand-in model server over real HTTP/SSE. Channel events are
//! caught by a channel interceptor, as the webview would receive them.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use deskhand_app::{AppState, configure, context};
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{App, WebviewWindow, WebviewWindowBuilder};

const KEY: &str = "sk-ant-test-key-wxyz";

/// Tests change process-wide environment variables (the key, the model server): one at a time.
static ENVIRONMENT: Mutex<()> = Mutex::new(());

struct Window {
    _app: App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    events: Arc<Mutex<Vec<Value>>>,
    _config: tempfile::TempDir,
    _env: MutexGuard<'static, ()>,
}

/// The app on the mock runtime. `server`: where the model is; `None` leaves no key set.
fn window(server: Option<&StandIn>) -> Window {
    let env = ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
    let config = tempfile::tempdir().unwrap();
    // SAFETY: every test that reads or writes the environment holds ENVIRONMENT.
    unsafe {
        std::env::set_var("DESKHAND_CONFIG_DIR", config.path());
        std::env::remove_var("ANTHROPIC_MODEL");
        match server {
            Some(server) => {
                std::env::set_var("ANTHROPIC_API_KEY", KEY);
                std::env::set_var("ANTHROPIC_BASE_URL", server.url());
            }
            None => std::env::remove_var("ANTHROPIC_API_KEY"),
        }
    }
    let events = Arc::new(Mutex::new(Vec::new()));
    let caught = events.clone();
    let app = configure(mock_builder(), AppState::new(config.path()))
        .channel_interceptor(move |_, _, _, body| {
            if let InvokeResponseBody::Json(json) = body {
                caught
                    .lock()
                    .unwrap()
                    .push(serde_json::from_str(json).unwrap());
            }
            true
        })
        .build(context())
        .expect("the app builds on the mock runtime");
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    Window {
        _app: app,
        window,
        events,
        _config: config,
        _env: env,
    }
}

impl Window {
    fn call_with(&self, command: &str, body: InvokeBody) -> Result<InvokeResponseBody, Value> {
        get_ipc_response(
            &self.window,
            InvokeRequest {
                cmd: command.into(),
                callback: CallbackFn(0),
                error: CallbackFn(1),
                url: "tauri://localhost".parse().unwrap(),
                body,
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
    }

    fn call(&self, command: &str, args: Value) -> Result<Value, Value> {
        self.call_with(command, InvokeBody::Json(args))
            .map(|body| body.deserialize::<Value>().unwrap())
    }

    fn send(&self, session: Option<&str>, text: &str) -> Result<Value, Value> {
        self.call(
            "send_message",
            json!({"sessionId": session, "text": text, "attachments": [], "onEvent": "__CHANNEL__:7"}),
        )
    }

    fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    /// Waits until an event of `kind` has arrived (at most 20 s), and returns it.
    fn wait_for(&self, kind: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(event) = self.events().into_iter().find(|e| e["type"] == kind) {
                return event;
            }
            assert!(
                Instant::now() < deadline,
                "no `{kind}` event in {:#?}",
                self.events()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn kind(error: &Value) -> &str {
    error["kind"].as_str().unwrap_or_default()
}

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
fn no_key_is_refused_before_anything_is_sent() {
    let app = window(None);
    let error = app.send(None, "hi").unwrap_err();
    assert_eq!(kind(&error), "no_key");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY")
    );
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(status["set"], false);
    assert_eq!(status["last4"], Value::Null);
}

#[test]
fn the_key_status_shows_the_last_four_characters_only() {
    let server = StandIn::spawn(Vec::<Turn>::new());
    let app = window(Some(&server));
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(status["set"], true);
    assert_eq!(status["last4"], "wxyz");
    assert_eq!(status["source"], "environment");
    assert!(!status.to_string().contains(KEY));
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
fn settings_are_validated_stored_and_set_the_mode() {
    let app = window(None);
    let mut settings = app.call("get_settings", json!({})).unwrap();
    assert_eq!(settings["approval_mode"], "ask");
    assert_eq!(settings["provider"], "anthropic");
    settings["max_turns"] = json!(0);
    let error = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(kind(&error), "invalid");
    assert!(error["message"].as_str().unwrap().contains("turn limit"));
    settings["max_turns"] = json!(12);
    settings["approval_mode"] = json!("auto");
    let saved = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(saved, settings);
    assert_eq!(app.call("get_settings", json!({})).unwrap(), settings);
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(app._config.path().join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(on_disk["max_turns"], 12);
    let providers = app.call("list_providers", json!({})).unwrap();
    assert_eq!(providers[0]["id"], "anthropic");
    assert!(providers[0]["models"].as_array().unwrap().len() > 1);
    assert!(
        app.call("set_approval_mode", json!({"mode": "sometimes"}))
            .is_err()
    );
    assert_eq!(
        app.call("set_approval_mode", json!({"mode": "deny"})),
        Ok(Value::Null)
    );
}

/// The smallest valid PNG: 1x1.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44, 0x41, 0x54,
    0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

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
    match app
        .call_with("get_image", InvokeBody::Json(json!({"sha256": sha})))
        .unwrap()
    {
        InvokeResponseBody::Raw(bytes) => assert_eq!(bytes, PNG),
        other => panic!("get_image answered JSON: {other:?}"),
    }
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
    assert!(
        app.call(
            "send_message",
            json!({"sessionId": null, "text": "again", "attachments": [{"id": attached["id"]}], "onEvent": "__CHANNEL__:2"}),
        )
        .is_err(),
        "an attachment is sent once"
    );
}

#[test]
fn approving_an_unknown_action_is_not_found() {
    let app = window(None);
    let error = app
        .call(
            "approve",
            json!({"toolUseId": "toolu_x", "decision": {"decision": "approve"}}),
        )
        .unwrap_err();
    assert_eq!(kind(&error), "not_found");
}

#[test]
fn capabilities_allow_exactly_the_registered_commands() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src-tauri/capabilities/main.json"
    );
    let capability: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let mut granted: Vec<String> = capability["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert!(
        !granted.is_empty(),
        "the window's capability grants nothing"
    );
    let mut expected: Vec<String> = deskhand_app::commands::COMMANDS
        .iter()
        .map(|c| format!("allow-{}", c.replace('_', "-")))
        .collect();
    granted.sort();
    expected.sort();
    assert_eq!(granted, expected);
    // Through the real context, a granted command answers and an unknown one is refused.
    let app = window(None);
    assert!(app.call("get_settings", json!({})).is_ok());
    let refused = app.call("plugin:fs|read_file", json!({"path": "/etc/passwd"}));
    assert!(refused.is_err(), "{refused:?}");
}

#[test]
fn the_window_approves_denies_and_switches_the_mode_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let touch = |name: &str| json!({"command": format!("touch {}/{name}", dir.path().display())});
    let server = StandIn::spawn([
        Turn::tool_use("bash", touch("approved")),
        Turn::tool_use("bash", touch("denied")),
        Turn::tool_use("bash", touch("approved-then-auto")),
        Turn::tool_use("bash", touch("by-policy")),
        Turn::text("All done."),
    ]);
    let app = window(Some(&server));
    app.send(None, "make files").unwrap();
    let asked = |nth: usize| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let asked: Vec<Value> = app
                .events()
                .into_iter()
                .filter(|e| e["type"] == "approval_needed")
                .collect();
            if asked.len() > nth {
                let request = asked[nth]["request"].clone();
                assert_eq!(
                    (&request["tool"], &request["kind"]),
                    (&json!("bash"), &json!("bash"))
                );
                return request["tool_use_id"].clone();
            }
            assert!(
                Instant::now() < deadline,
                "no approval #{nth}: {:#?}",
                app.events()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let answer = |id: Value, decision: Value| {
        app.call("approve", json!({"toolUseId": id, "decision": decision}))
            .unwrap();
    };
    answer(asked(0), json!({"decision": "approve"}));
    answer(
        asked(1),
        json!({"decision": "deny", "reason": "not that one"}),
    );
    // Switched while the third waits: the fourth sees the new mode and is not asked.
    let third = asked(2);
    app.call("set_approval_mode", json!({"mode": "auto"}))
        .unwrap();
    answer(third, json!({"decision": "approve"}));
    assert_eq!(app.wait_for("done")["status"], "done");

    let exists = |name: &str| dir.path().join(name).exists();
    assert!(exists("approved") && exists("approved-then-auto") && exists("by-policy"));
    assert!(!exists("denied"), "a denied action ran");
    let decided: Vec<(Value, Value)> = app
        .events()
        .into_iter()
        .filter(|e| e["type"] == "approval_decided")
        .map(|e| (e["decision"].clone(), e["by"].clone()))
        .collect();
    assert_eq!(
        decided,
        [
            (json!("approve"), json!("user")),
            (json!("deny"), json!("user")),
            (json!("approve"), json!("user")),
            (json!("approve"), json!("policy")),
        ]
    );
    let denial = server.accepted()[2].body["messages"].to_string();
    assert!(
        denial.contains("the user denied this action: not that one"),
        "{denial}"
    );
}

#[test]
fn stop_while_waiting_for_approval_answers_the_call() {
    let server = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "true"})),
        Turn::text("Resumed."),
    ]);
    let app = window(Some(&server));
    let session = app.send(None, "run it").unwrap();
    let asked = app.wait_for("approval_needed");
    app.call("stop", json!({})).unwrap();
    assert_eq!(app.wait_for("done")["status"], "cancelled");
    let result = app.wait_for("tool_result");
    assert_eq!(result["text"], "cancelled by the user");
    let late = app.call(
        "approve",
        json!({"toolUseId": asked["request"]["tool_use_id"], "decision": {"decision": "approve"}}),
    );
    assert_eq!(kind(&late.unwrap_err()), "not_found");
    app.events.lock().unwrap().clear();
    app.send(session.as_str(), "go on").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
}
