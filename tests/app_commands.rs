//! The window's IPC commands on Tauri's mock runtime, with the app's real context (its
//! capabilities included) and a stand-in model server over real HTTP/SSE. Channel events are
//! caught by a channel interceptor, as the webview would receive them.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskhand_app::desktop::{Confirmation, Desktop};
use deskhand_app::{AppState, configure, context};
use deskhand_standin::{Reply, Script, StandIn, Turn};
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{App, Url, WebviewWindow, WebviewWindowBuilder};

const KEY: &str = "sk-ant-test-key-wxyz";

/// Tests change process-wide environment variables (the key, the model server): one at a time.
static ENVIRONMENT: Mutex<()> = Mutex::new(());

/// The desktop outside the page, as the person: answers native confirmations as told (yes
/// unless `refuse` was called) and records every question and every link opened.
#[derive(Default)]
struct Person {
    refuses: std::sync::atomic::AtomicBool,
    asked: Mutex<Vec<Confirmation>>,
    opened: Mutex<Vec<Url>>,
    notified: Mutex<Vec<(String, String)>>,
}

impl Person {
    fn refuse(&self, refuses: bool) {
        self.refuses
            .store(refuses, std::sync::atomic::Ordering::SeqCst);
    }

    fn asked(&self) -> Vec<Confirmation> {
        self.asked.lock().unwrap().clone()
    }

    fn opened(&self) -> Vec<Url> {
        self.opened.lock().unwrap().clone()
    }

    fn notified(&self) -> Vec<(String, String)> {
        self.notified.lock().unwrap().clone()
    }
}

#[async_trait]
impl Desktop for Person {
    async fn confirm(&self, question: Confirmation) -> bool {
        self.asked.lock().unwrap().push(question);
        !self.refuses.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn open_url(&self, url: &Url) -> Result<(), String> {
        self.opened.lock().unwrap().push(url.clone());
        Ok(())
    }

    fn notify(&self, title: &str, body: &str) {
        self.notified
            .lock()
            .unwrap()
            .push((title.into(), body.into()));
    }
}

struct Window {
    _app: App<MockRuntime>,
    person: Arc<Person>,
    window: WebviewWindow<MockRuntime>,
    events: Arc<Mutex<Vec<Value>>>,
    _config: tempfile::TempDir,
    /// The history: a real SQLite store.
    data: tempfile::TempDir,
    _env: MutexGuard<'static, ()>,
}

/// The app on the mock runtime over a new history. `server`: where the model is; `None`
/// leaves no key set.
fn window(server: Option<&StandIn>) -> Window {
    window_in(server, tempfile::tempdir().unwrap())
}

/// The app over the history in `data`.
fn window_in(server: Option<&StandIn>, data: tempfile::TempDir) -> Window {
    let env = ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
    let config = tempfile::tempdir().unwrap();
    // SAFETY: every test that reads or writes the environment holds ENVIRONMENT.
    unsafe {
        std::env::set_var("DESKHAND_CONFIG_DIR", config.path());
        // Keys filed under a keyring service of this window's own: tests never see each
        // other's, nor the developer's.
        std::env::set_var(
            "DESKHAND_KEYRING_SERVICE",
            format!("deskhand-app-test-{}", uuid::Uuid::new_v4()),
        );
        std::env::remove_var("ANTHROPIC_MODEL");
        std::env::remove_var("LLM_PROVIDER");
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
    let person = Arc::new(Person::default());
    let state = AppState::new(config.path(), data.path()).with_desktop(person.clone());
    let app = configure(mock_builder(), state)
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
        person,
        window,
        events,
        _config: config,
        data,
        _env: env,
    }
}

impl Window {
    /// Closes the app and starts it again over the same history, as a person reopening it.
    fn reopen(self, server: Option<&StandIn>) -> Window {
        let Window {
            _app,
            person: _,
            window,
            events,
            _config,
            data,
            _env,
        } = self;
        drop((window, _app, events, _config, _env));
        window_in(server, data)
    }

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

/// The keyring tests need the D-Bus session with gnome-keyring that `scripts/test.sh`
/// starts. Under the test command (`DESKHAND_TEST_HOME` set) a missing bus is a failure; a
/// plain `cargo test` without one skips them with a note.
fn secret_service_available() -> bool {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some() {
        return true;
    }
    assert!(
        std::env::var_os("DESKHAND_TEST_HOME").is_none(),
        "DESKHAND_TEST_HOME is set but there is no D-Bus session: run the keyring tests \
         inside dbus-run-session with gnome-keyring unlocked (scripts/test.sh)"
    );
    eprintln!("skipped: no D-Bus session (run scripts/test.sh for the keyring tests)");
    false
}

#[test]
fn no_key_is_refused_before_anything_is_sent() {
    if !secret_service_available() {
        return;
    }
    let app = window(None);
    let error = app.send(None, "hi").unwrap_err();
    assert_eq!(kind(&error), "no_key", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("ANTHROPIC_API_KEY") && message.contains("Settings"));
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(status["set"], false);
    assert_eq!(status["required"], true);
    assert_eq!(status["keyring_available"], true);
    assert_eq!(status["last4"], Value::Null);
    assert_eq!(app.call("list_sessions", json!({})).unwrap(), json!([]));
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

/// Every file under `dir`, read whole: where a key must not be.
fn files_contain(dir: &std::path::Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_contain(&path, needle));
        } else if std::fs::read(&path)
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
        {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_key_set_in_the_window_goes_to_the_keyring_and_only_to_the_provider() {
    if !secret_service_available() {
        return;
    }
    const STORED: &str = "sk-ant-window-stored-secret-QRST";
    let server = StandIn::spawn([Turn::text("Keyed.")]);
    let app = window(Some(&server));
    // SAFETY: the window holds ENVIRONMENT.
    unsafe { std::env::remove_var("ANTHROPIC_API_KEY") };
    assert_eq!(app.call("key_status", json!({})).unwrap()["set"], false);
    assert_eq!(
        kind(
            &app.call("set_api_key", json!({"provider": "anthropic", "key": "  "}))
                .unwrap_err()
        ),
        "invalid"
    );
    assert_eq!(
        kind(
            &app.call("set_api_key", json!({"provider": "ollama", "key": STORED}))
                .unwrap_err()
        ),
        "invalid"
    );
    let status = app
        .call(
            "set_api_key",
            json!({"provider": "anthropic", "key": STORED}),
        )
        .unwrap();
    assert_eq!(
        (&status["set"], &status["last4"], &status["source"]),
        (&json!(true), &json!("QRST"), &json!("keyring"))
    );
    assert!(!status.to_string().contains(STORED));
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(status["source"], "keyring");
    assert!(!status.to_string().contains(STORED));
    // The CLI's store sees the same key.
    let keyring = deskhand::secrets::OsKeyring::default();
    let anthropic = deskhand::secrets::provider("anthropic").unwrap();
    use deskhand::secrets::SecretStore as _;
    assert_eq!(keyring.get(anthropic).unwrap().unwrap().expose(), STORED);

    app.send(None, "hello").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert_eq!(server.accepted()[0].headers["x-api-key"], STORED);
    let events = serde_json::to_string(&app.events()).unwrap();
    assert!(!events.contains(STORED));
    assert!(files_contain(app.data.path(), STORED).is_empty());
    assert!(files_contain(app._config.path(), STORED).is_empty());
    keyring.delete(anthropic).unwrap();
}

#[test]
fn without_a_keyring_the_window_says_how_to_get_one() {
    let app = window(None);
    let previous = std::env::var_os("DBUS_SESSION_BUS_ADDRESS");
    // SAFETY: the window holds ENVIRONMENT. A bus that is not there: no Secret Service.
    unsafe {
        std::env::set_var(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/deskhand-no-bus",
        )
    };
    let status = app.call("key_status", json!({}));
    let stored = app.call(
        "set_api_key",
        json!({"provider": "anthropic", "key": "sk-ant-nowhere-to-go-ABCD"}),
    );
    let sent = app.send(None, "hi");
    // SAFETY: as above.
    unsafe {
        match previous {
            Some(address) => std::env::set_var("DBUS_SESSION_BUS_ADDRESS", address),
            None => std::env::remove_var("DBUS_SESSION_BUS_ADDRESS"),
        }
    }
    let status = status.unwrap();
    assert_eq!(status["keyring_available"], false);
    let why = status["keyring_error"].as_str().unwrap();
    assert!(
        why.contains("gnome-keyring-daemon") && why.contains("ANTHROPIC_API_KEY"),
        "{why}"
    );
    let error = stored.unwrap_err();
    assert_eq!(kind(&error), "keyring_unavailable");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY")
    );
    assert!(!error.to_string().contains("nowhere-to-go"));
    assert_eq!(kind(&sent.unwrap_err()), "keyring_unavailable");
    assert!(files_contain(app._config.path(), "nowhere-to-go").is_empty());
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
fn settings_are_validated_stored_and_set_the_mode() {
    let app = window(None);
    let mut settings = app.call("get_settings", json!({})).unwrap();
    assert_eq!(settings["approval_mode"], "ask");
    assert_eq!(settings["provider"], "anthropic");
    assert_eq!(settings["max_cost_usd"], Value::Null);
    settings["max_turns"] = json!(0);
    let error = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(kind(&error), "invalid");
    assert!(error["message"].as_str().unwrap().contains("turn limit"));
    settings["max_turns"] = json!(12);
    settings["max_tokens"] = json!(0);
    let error = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert!(error["message"].as_str().unwrap().contains("token limit"));
    settings["max_tokens"] = json!(50_000);
    settings["max_cost_usd"] = json!(1.5);
    settings["approval_mode"] = json!("auto");
    settings["provider"] = json!("vllm");
    settings["model"] = json!("qwen2.5-vl");
    settings["base_url"] = json!("http://127.0.0.1:9/v1");
    settings["monitor"] = json!(0);
    settings["screenshot_size"] = json!({"width": 1024, "height": 768});
    let saved = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(saved, settings);
    assert_eq!(app.call("get_settings", json!({})).unwrap(), settings);
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(app._config.path().join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(on_disk["max_turns"], 12);
    assert_eq!(on_disk["provider"], "vllm");
    // The budget lives in the store, where `deskhand settings` reads and writes it.
    assert!(on_disk.get("max_cost_usd").is_none());
    let store = deskhand::store::Store::open(app.data.path()).unwrap();
    let budget = store.budget().unwrap();
    assert_eq!(
        (budget.max_cost_usd, budget.max_tokens),
        (Some(1.5), Some(50_000))
    );
    store
        .set_setting(deskhand::agent::Budget::MAX_TOKENS_SETTING, &Value::Null)
        .unwrap();
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["max_tokens"],
        Value::Null
    );
    // A local server needs no key.
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(
        (&status["required"], &status["set"]),
        (&json!(false), &json!(false))
    );

    let providers = app.call("list_providers", json!({})).unwrap();
    let ids: Vec<&str> = providers
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    for id in ["anthropic", "openai", "azure", "openrouter", "compatible"] {
        assert!(ids.contains(&id), "{ids:?}");
    }
    assert_eq!(providers[0]["needs_key"], true);
    assert!(
        app.call("set_approval_mode", json!({"mode": "sometimes"}))
            .is_err()
    );
    assert_eq!(
        app.call("set_approval_mode", json!({"mode": "deny"})),
        Ok(Value::Null)
    );
}

#[test]
fn the_window_runs_an_openai_compatible_server_from_its_settings() {
    // A local server asks for no key.
    let server =
        StandIn::spawn(Script::new([Turn::text("Hello over Chat Completions.")]).without_keys());
    let app = window(Some(&server));
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["provider"] = json!("compatible");
    settings["model"] = json!("local-model");
    settings["base_url"] = json!(format!("{}/v1", server.url()));
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    app.send(None, "hi").unwrap();
    let done = app.wait_for("done");
    assert_eq!(done["status"], "done", "{:#?}", app.events());
    let request = &server.accepted()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body["model"], "local-model");
    let started = app.wait_for("started");
    assert_eq!(started["model"], "local-model");
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

#[test]
fn sessions_are_stored_listed_searched_renamed_exported_and_deleted() {
    let server = StandIn::spawn([Turn::text("Booked.")]);
    let app = window(Some(&server));
    let session = app.send(None, "Book a flight to Lisbon").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    let session = session.as_str().unwrap().to_string();

    // Recorded event by event in the store the CLI reads.
    let store = deskhand::store::Store::open(app.data.path()).unwrap();
    let stored = store.session(&session).unwrap();
    assert_eq!(stored.title, "Book a flight to Lisbon");
    assert_eq!(stored.message_count, 2);
    let types: Vec<Value> = store
        .events(&session)
        .unwrap()
        .into_iter()
        .map(|e| e["type"].clone())
        .collect();
    assert_eq!(types.first(), Some(&json!("started")));
    assert_eq!(types.last(), Some(&json!("done")));

    let listed = app.call("list_sessions", json!({})).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], session.as_str());
    assert_eq!(
        listed[0]["usage"]["output_tokens"],
        stored.usage.output_tokens
    );
    let hits = app
        .call("search_sessions", json!({"query": "Lisbon"}))
        .unwrap();
    assert_eq!(hits[0]["id"], session.as_str());
    assert!(hits[0]["snippet"].as_str().unwrap().contains("Lisbon"));
    let none = app
        .call("search_sessions", json!({"query": "Madrid"}))
        .unwrap();
    assert_eq!(none, json!([]));

    let prefix = &session[..8];
    app.call("rename_session", json!({"id": prefix, "title": "Trip"}))
        .unwrap();
    assert_eq!(
        kind(
            &app.call("rename_session", json!({"id": prefix, "title": " "}))
                .unwrap_err()
        ),
        "invalid"
    );
    let loaded = app.call("load_session", json!({"id": prefix})).unwrap();
    assert_eq!(loaded["session"]["title"], "Trip");
    assert_eq!(loaded["messages"].as_array().unwrap().len(), 2);
    assert_eq!(loaded["messages"][1]["content"][0]["text"], "Booked.");
    let replayed: Vec<&Value> = loaded["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "message")
        .collect();
    assert_eq!(replayed.len(), 2, "{loaded:#}");

    // Exports go to new files in the Downloads folder.
    let home = tempfile::tempdir().unwrap();
    // SAFETY: this test holds ENVIRONMENT.
    unsafe {
        std::env::set_var("HOME", home.path());
        std::env::remove_var("XDG_CONFIG_HOME");
    }
    let export = |format: &str| {
        let path = app
            .call("export_session", json!({"id": session, "format": format}))
            .unwrap();
        std::path::PathBuf::from(path.as_str().unwrap())
    };
    let markdown = export("markdown");
    assert_eq!(markdown, home.path().join("Downloads/Trip.md"));
    assert!(
        std::fs::read_to_string(&markdown)
            .unwrap()
            .contains("Booked.")
    );
    assert_eq!(
        export("markdown"),
        home.path().join("Downloads/Trip (2).md")
    );
    let json: Value = serde_json::from_slice(&std::fs::read(export("json")).unwrap()).unwrap();
    assert_eq!(json["format"], deskhand::store::EXPORT_FORMAT);
    assert_eq!(
        kind(
            &app.call("export_session", json!({"id": session, "format": "pdf"}))
                .unwrap_err()
        ),
        "invalid"
    );

    app.call("delete_session", json!({"id": session})).unwrap();
    assert_eq!(app.call("list_sessions", json!({})).unwrap(), json!([]));
    assert_eq!(
        kind(
            &app.call("load_session", json!({"id": session}))
                .unwrap_err()
        ),
        "not_found"
    );
}

#[test]
fn a_reopened_window_continues_a_session_from_the_store_with_its_images() {
    let server = StandIn::spawn([
        Turn::text("A tiny image."),
        Turn::hang(Reply::new().text("Cut off here"), 4),
        Turn::text("Going on."),
    ]);
    let app = window(Some(&server));
    let attached: Value = app
        .call_with("attach_image", InvokeBody::Raw(PNG.to_vec()))
        .unwrap()
        .deserialize()
        .unwrap();
    let session = app
        .call(
            "send_message",
            json!({"sessionId": null, "text": "look", "attachments": [{"id": attached["id"]}], "onEvent": "__CHANNEL__:1"}),
        )
        .unwrap();
    app.wait_for("done");
    app.events.lock().unwrap().clear();
    app.send(session.as_str(), "and now?").unwrap();
    app.wait_for("text_delta");
    app.call("stop", json!({})).unwrap();
    assert_eq!(app.wait_for("done")["status"], "cancelled");

    // A new window over the same history: the image comes back from its file, the text cut
    // off by the stop is the assistant's message.
    let app = app.reopen(Some(&server));
    let loaded = app.call("load_session", json!({"id": session})).unwrap();
    let sha = attached["sha256"].as_str().unwrap();
    assert_eq!(loaded["messages"][0]["content"][1]["source"]["sha256"], sha);
    match app
        .call_with("get_image", InvokeBody::Json(json!({"sha256": sha})))
        .unwrap()
    {
        InvokeResponseBody::Raw(bytes) => assert_eq!(bytes, PNG),
        other => panic!("get_image answered JSON: {other:?}"),
    }
    assert_eq!(app.send(session.as_str(), "go on").unwrap(), session);
    assert_eq!(app.wait_for("done")["status"], "done");
    let last = server.accepted().last().unwrap().body.clone();
    let sent = last["messages"].as_array().unwrap();
    assert_eq!(sent.len(), 5, "{sent:#?}");
    assert_eq!(sent[0]["content"][1]["source"]["type"], "base64");
    let kept = sent[3]["content"][0]["text"].as_str().unwrap();
    assert!(
        !kept.is_empty() && "Cut off here".starts_with(kept),
        "{kept}"
    );
}

/// Whether the X display the capture tests use works. With `DESKHAND_TEST_DISPLAY` set (as
/// `scripts/test.sh` does), a display that does not work is a failure, not a skip.
fn display_available() -> bool {
    let works = std::env::var_os("DISPLAY").is_some()
        && std::process::Command::new("xdpyinfo")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !works {
        assert!(
            std::env::var_os("DESKHAND_TEST_DISPLAY").is_none(),
            "DESKHAND_TEST_DISPLAY is set but no X display works"
        );
        eprintln!("skipped: no X display (run scripts/test.sh, or set DISPLAY)");
    }
    works
}

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
    let bytes = match app
        .call_with(
            "get_image",
            InvokeBody::Json(json!({"sha256": shot["sha256"]})),
        )
        .unwrap()
    {
        InvokeResponseBody::Raw(bytes) => bytes,
        other => panic!("get_image answered JSON: {other:?}"),
    };
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
    let sha = result["images"][0]["sha256"].clone();
    let bytes = match app
        .call_with("get_image", InvokeBody::Json(json!({"sha256": sha})))
        .unwrap()
    {
        InvokeResponseBody::Raw(bytes) => bytes,
        other => panic!("get_image answered JSON: {other:?}"),
    };
    let size = imagesize::blob_size(&bytes).unwrap();
    assert_eq!(
        (size.width as u64, size.height as u64),
        expected,
        "the screenshot the model got"
    );
}

/// Waits until `n` approvals have been asked for, and returns their requests.
fn approvals_asked(app: &Window, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let asked: Vec<Value> = app
            .events()
            .into_iter()
            .filter(|e| e["type"] == "approval_needed")
            .map(|e| e["request"].clone())
            .collect();
        if asked.len() >= n {
            return asked;
        }
        assert!(Instant::now() < deadline, "{:#?}", app.events());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_decision_names_its_call_and_one_for_another_call_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let touch = |name: &str| json!({"command": format!("touch {}/{name}", dir.path().display())});
    // Two calls in one response: the harmless one first.
    let server = StandIn::spawn([
        Turn::tool_uses([("bash", touch("listed")), ("bash", touch("piped-to-sh"))]),
        Turn::text("Done."),
    ]);
    let app = window(Some(&server));
    app.send(None, "tidy up").unwrap();
    let first = approvals_asked(&app, 1)[0]["tool_use_id"].clone();
    let second_id = {
        let calls: Vec<Value> = app
            .events()
            .into_iter()
            .filter(|e| e["type"] == "tool_call")
            .map(|e| e["id"].clone())
            .collect();
        calls.into_iter().find(|id| *id != first)
    };
    // A decision for the second call while the first is the one shown: refused, whether
    // the id is known from the response (when the core announced it) or made up.
    for id in second_id.into_iter().chain([json!("toolu_made_up")]) {
        let refused = app
            .call(
                "approve",
                json!({"toolUseId": id, "decision": {"decision": "approve"}}),
            )
            .unwrap_err();
        assert_eq!(kind(&refused), "not_found", "{refused}");
    }
    app.call(
        "approve",
        json!({"toolUseId": first, "decision": {"decision": "approve"}}),
    )
    .unwrap();
    let second = approvals_asked(&app, 2)[1]["tool_use_id"].clone();
    assert_ne!(second, first);
    app.call(
        "approve",
        json!({"toolUseId": second, "decision": {"decision": "deny", "reason": null}}),
    )
    .unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert!(dir.path().join("listed").exists());
    assert!(!dir.path().join("piped-to-sh").exists());
}

#[test]
fn always_allowing_bash_needs_a_native_confirmation() {
    let server = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "true"})),
        Turn::text("Done."),
    ]);
    let app = window(Some(&server));
    app.send(None, "run it").unwrap();
    let id = approvals_asked(&app, 1)[0]["tool_use_id"].clone();
    app.person.refuse(true);
    let refused = app
        .call(
            "approve",
            json!({"toolUseId": id, "decision": {"decision": "approve_kind"}}),
        )
        .unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    let asked = app.person.asked();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].message.contains("any bash command"), "{asked:?}");
    // The call still waits, and a plain approval needs no confirmation.
    app.call(
        "approve",
        json!({"toolUseId": id, "decision": {"decision": "approve"}}),
    )
    .unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert_eq!(app.person.asked().len(), 1);
}

#[test]
fn switching_to_auto_needs_a_native_confirmation() {
    let app = window(None);
    app.person.refuse(true);
    let refused = app
        .call("set_approval_mode", json!({"mode": "auto"}))
        .unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["approval_mode"] = json!("auto");
    let refused = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["approval_mode"],
        "ask"
    );
    assert_eq!(app.person.asked().len(), 2);
    assert!(app.person.asked()[0].title.contains("Auto"));
    // Other modes need no question; a yes switches.
    app.call("set_approval_mode", json!({"mode": "deny"}))
        .unwrap();
    assert_eq!(app.person.asked().len(), 2);
    app.person.refuse(false);
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["approval_mode"],
        "auto"
    );
}

#[test]
fn a_new_base_url_for_a_provider_with_a_key_needs_a_native_confirmation() {
    let server = StandIn::spawn([Turn::text("unused")]);
    // The key comes from ANTHROPIC_API_KEY here.
    let app = window(Some(&server));
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["base_url"] = json!("https://collector.evil.example");
    app.person.refuse(true);
    let refused = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["base_url"],
        Value::Null
    );
    let asked = app.person.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0]
            .message
            .contains("Anthropic API key will be sent to\n\nhttps://collector.evil.example"),
        "{asked:?}"
    );
    app.person.refuse(false);
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    // The same URL again, or a provider without a key, asks nothing.
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    settings["provider"] = json!("vllm");
    settings["base_url"] = json!("http://127.0.0.1:9/v1");
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(app.person.asked().len(), 2);
}

#[test]
fn a_link_opens_in_the_browser_only_after_a_confirmation_showing_its_full_address() {
    let app = window(None);
    let link = "https://example.com/a/very/long/path?with=query&and=more#fragment";
    app.person.refuse(true);
    let refused = app.call("open_link", json!({"url": link})).unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    assert!(app.person.opened().is_empty());
    assert!(app.person.asked()[0].message.contains(link));
    app.person.refuse(false);
    app.call("open_link", json!({"url": link})).unwrap();
    assert_eq!(app.person.opened(), [Url::parse(link).unwrap()]);
    // What is not a web or mail link is refused before anything is asked.
    for bad in [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "/relative",
        "tauri://localhost/",
        &format!("https://example.com/{}", "a".repeat(5000)),
    ] {
        let error = app.call("open_link", json!({"url": bad})).unwrap_err();
        assert_eq!(kind(&error), "invalid", "{bad}: {error}");
    }
    assert_eq!(app.person.asked().len(), 2);
    assert_eq!(app.person.opened().len(), 1);
}

#[test]
fn the_csp_allows_no_form_target_base_object_or_frame() {
    let config: Value = serde_json::from_str(include_str!("../tauri.conf.json")).unwrap();
    let csp = config["app"]["security"]["csp"].as_str().unwrap();
    for directive in [
        "form-action 'none'",
        "base-uri 'none'",
        "object-src 'none'",
        "frame-src 'none'",
    ] {
        assert!(csp.split(';').any(|d| d.trim() == directive), "{csp}");
    }
    assert_eq!(config["build"]["devUrl"], "http://127.0.0.1:1420");
    let vite = include_str!("../ui/vite.config.ts");
    assert!(vite.contains("host: '127.0.0.1', port: 1420, strictPort: true"));
}

#[test]
fn notes_are_managed_from_the_window_and_its_runs_get_them_and_show_the_plan() {
    let server = StandIn::spawn([
        Turn::tool_use(
            "plan",
            json!({"action": "set", "steps": [{"id": "1", "title": "Open the invoices"}]}),
        ),
        Turn::text("Opened."),
    ]);
    let app = window(Some(&server));
    let note = app
        .call(
            "add_note",
            json!({"text": "the invoices are in ~/Documents/Acme"}),
        )
        .unwrap();
    let id = note["id"].as_i64().unwrap();
    assert_eq!(note["session_id"], Value::Null);
    // Bad notes and secrets are refused with the reason; nothing is stored.
    let empty = app.call("add_note", json!({"text": " "})).unwrap_err();
    assert_eq!(kind(&empty), "invalid");
    let secret = app
        .call("add_note", json!({"text": format!("my key: {KEY}")}))
        .unwrap_err();
    assert_eq!(kind(&secret), "invalid");
    assert!(secret["message"].as_str().unwrap().starts_with("refused"));
    let edited = app
        .call(
            "edit_note",
            json!({"id": id, "text": "the invoices are in ~/Documents/Acme/2026"}),
        )
        .unwrap();
    assert_eq!(edited["text"], "the invoices are in ~/Documents/Acme/2026");
    let found = app
        .call("search_notes", json!({"query": "invoic"}))
        .unwrap();
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!(app.call("list_notes", json!({})).unwrap()[0]["id"], id);
    assert_eq!(app.call("get_memory_in_prompt", json!({})).unwrap(), true);

    // A run from the window: the note is in its system prompt, `started` names it, and the
    // plan reaches the window.
    app.send(None, "open my invoices").unwrap();
    let started = app.wait_for("started");
    assert_eq!(started["notes"][0]["id"], id);
    let plan = app.wait_for("plan_updated");
    assert_eq!(plan["steps"][0]["title"], "Open the invoices");
    assert_eq!(plan["changes"][0]["kind"], "added");
    assert_eq!(app.wait_for("done")["status"], "done");
    let system = server.accepted()[0].body["system"].to_string();
    assert!(system.contains("Acme/2026"), "{system}");

    app.call("set_memory_in_prompt", json!({"enabled": false}))
        .unwrap();
    assert_eq!(app.call("get_memory_in_prompt", json!({})).unwrap(), false);
    app.call("delete_note", json!({"id": id})).unwrap();
    assert_eq!(app.call("list_notes", json!({})).unwrap(), json!([]));
    let gone = app.call("delete_note", json!({"id": id})).unwrap_err();
    assert_eq!(kind(&gone), "not_found");
}

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
        .join("src-tauri/core/tests/fixtures/mcp_fixture.py");
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
    let other =
        deskhand::tasks::Engine::new(deskhand::store::Store::open(app.data.path()).unwrap());
    let task = runtime
        .block_on(other.submit(deskhand::tasks::TaskSpec {
            session: None,
            input: vec![deskhand::llm::ContentBlock::text("from the service")],
            settings: deskhand::tasks::RunSettings::default(),
            origin: deskhand::tasks::Origin::Api,
            wrap_tools: None,
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
