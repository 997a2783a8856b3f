//! The window on the mock runtime, the person at its native dialogs, and what the tests share.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskhand_app::desktop::{Confirmation, Desktop};
use deskhand_app::{AppState, configure, context};
use deskhand_standin::StandIn;
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{App, Url, WebviewWindow, WebviewWindowBuilder};

pub const KEY: &str = "sk-ant-test-key-wxyz";

/// Tests change process-wide environment variables (the key, the model server): one at a time.
pub static ENVIRONMENT: Mutex<()> = Mutex::new(());

/// The desktop outside the page, as the person: answers native confirmations as told (yes
/// unless `refuse` was called) and records every question and every link opened.
#[derive(Default)]
pub struct Person {
    refuses: std::sync::atomic::AtomicBool,
    asked: Mutex<Vec<Confirmation>>,
    opened: Mutex<Vec<Url>>,
    notified: Mutex<Vec<(String, String)>>,
}

impl Person {
    pub fn refuse(&self, refuses: bool) {
        self.refuses
            .store(refuses, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn asked(&self) -> Vec<Confirmation> {
        self.asked.lock().unwrap().clone()
    }

    pub fn opened(&self) -> Vec<Url> {
        self.opened.lock().unwrap().clone()
    }

    pub fn notified(&self) -> Vec<(String, String)> {
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

pub struct Window {
    pub _app: App<MockRuntime>,
    pub person: Arc<Person>,
    window: WebviewWindow<MockRuntime>,
    pub events: Arc<Mutex<Vec<Value>>>,
    /// Raw bytes sent over channels: the live view's frames.
    pub frames: Arc<Mutex<Vec<Vec<u8>>>>,
    pub _config: tempfile::TempDir,
    /// The history: a real SQLite store.
    pub data: tempfile::TempDir,
    _env: MutexGuard<'static, ()>,
}

/// The app on the mock runtime over a new history. `server`: where the model is; `None`
/// leaves no key set.
pub fn window(server: Option<&StandIn>) -> Window {
    window_in(server, tempfile::tempdir().unwrap())
}

/// The app over the history in `data`.
pub fn window_in(server: Option<&StandIn>, data: tempfile::TempDir) -> Window {
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
        std::env::remove_var("DESKHAND_SET_OF_MARKS");
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
    let frames = Arc::new(Mutex::new(Vec::new()));
    let framed = frames.clone();
    let person = Arc::new(Person::default());
    let state = AppState::new(config.path(), data.path()).with_desktop(person.clone());
    let app = configure(mock_builder(), state)
        .channel_interceptor(move |_, _, _, body| {
            match body {
                InvokeResponseBody::Json(json) => caught
                    .lock()
                    .unwrap()
                    .push(serde_json::from_str(json).unwrap()),
                InvokeResponseBody::Raw(bytes) => framed.lock().unwrap().push(bytes.clone()),
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
        frames,
        _config: config,
        data,
        _env: env,
    }
}

impl Window {
    /// Closes the app and starts it again over the same history, as a person reopening it.
    pub fn reopen(self, server: Option<&StandIn>) -> Window {
        let Window {
            _app,
            person: _,
            window,
            events,
            frames,
            _config,
            data,
            _env,
        } = self;
        drop((window, _app, events, frames, _config, _env));
        window_in(server, data)
    }

    pub fn call_with(&self, command: &str, body: InvokeBody) -> Result<InvokeResponseBody, Value> {
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

    pub fn call(&self, command: &str, args: Value) -> Result<Value, Value> {
        self.call_with(command, InvokeBody::Json(args))
            .map(|body| body.deserialize::<Value>().unwrap())
    }

    /// `get_image`'s answer: the image's bytes, never JSON.
    pub fn image(&self, sha256: &Value) -> Vec<u8> {
        let body = InvokeBody::Json(json!({ "sha256": sha256 }));
        match self.call_with("get_image", body).unwrap() {
            InvokeResponseBody::Raw(bytes) => bytes,
            other => panic!("get_image answered JSON: {other:?}"),
        }
    }

    pub fn send(&self, session: Option<&str>, text: &str) -> Result<Value, Value> {
        self.call(
            "send_message",
            json!({"sessionId": session, "text": text, "attachments": [], "onEvent": "__CHANNEL__:7"}),
        )
    }

    /// `send_message` starting a new session with `check` (as `set_session_check` takes it).
    pub fn send_checked(&self, text: &str, check: Value) -> Result<Value, Value> {
        self.call(
            "send_message",
            json!({"sessionId": null, "text": text, "attachments": [], "check": check, "onEvent": "__CHANNEL__:7"}),
        )
    }

    pub fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    /// Waits until an event of `kind` has arrived (at most 20 s), and returns it.
    pub fn wait_for(&self, kind: &str) -> Value {
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

pub fn kind(error: &Value) -> &str {
    error["kind"].as_str().unwrap_or_default()
}

/// The keyring tests need the D-Bus session with gnome-keyring that `scripts/test.sh`
/// starts. Under the test command (`DESKHAND_TEST_HOME` set) a missing bus is a failure; a
/// plain `cargo test` without one skips them with a note.
pub fn secret_service_available() -> bool {
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

/// Every file under `dir`, read whole: where a key must not be.
pub fn files_contain(dir: &std::path::Path, needle: &str) -> Vec<std::path::PathBuf> {
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

/// The smallest valid PNG: 1x1.
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44, 0x41, 0x54,
    0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// Whether the X display the capture tests use works. With `DESKHAND_TEST_DISPLAY` set (as
/// `scripts/test.sh` does), a display that does not work is a failure, not a skip.
pub fn display_available() -> bool {
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

/// Waits until `n` approvals have been asked for, and returns their requests.
pub fn approvals_asked(app: &Window, n: usize) -> Vec<Value> {
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
