//! The computer tool through the CLI on a real X display: `deskhand screenshot`,
//! `deskhand monitors`, and whole `deskhand ask --tools computer` runs driven by the stand-in
//! model server, checking what the server received and what happened on the screen.

use crate::support::cli::{ask_over_openai, deskhand, deskhand_at, run};
use crate::support::x11::{self, Xev};
use base64::Engine as _;
use deskhand_standin::{Recorded, Reply, StandIn, Turn};
use serde_json::{Value, json};

fn image_size(bytes: &[u8]) -> (usize, usize) {
    let size = imagesize::blob_size(bytes).expect("an image");
    (size.width, size.height)
}

#[test]
fn screenshot_writes_the_model_sized_image_and_reports_each_stage() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("shot.png");
    let (output, stdout, stderr) = run(deskhand(dir.path()).arg("screenshot").arg("-o").arg(&png));
    assert!(output.status.success(), "{stderr}");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..4], b"\x89PNG");
    assert_eq!(image_size(&bytes), (1366, 768));
    assert!(stdout.contains("backend x11"), "{stdout}");
    assert!(stdout.contains("screen  1920x1080"), "{stdout}");
    assert!(stdout.contains("model   1366x768"), "{stdout}");
    for stage in ["capture", "scale", "encode"] {
        assert!(stdout.contains(&format!("{stage} ")), "{stdout}");
    }

    let jpg = dir.path().join("shot.jpg");
    let (output, _, stderr) = run(deskhand(dir.path())
        .args(["screenshot", "--monitor", "0", "-o"])
        .arg(&jpg));
    assert!(output.status.success(), "{stderr}");
    let bytes = std::fs::read(&jpg).unwrap();
    assert_eq!(&bytes[..3], b"\xFF\xD8\xFF");
    assert_eq!(image_size(&bytes), (1366, 768));

    let (output, _, stderr) = run(deskhand(dir.path())
        .args(["screenshot", "--monitor", "7", "-o"])
        .arg(&png));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("there is no monitor 7"), "{stderr}");
}

#[test]
fn monitors_lists_the_display() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (output, stdout, stderr) = run(deskhand(dir.path()).arg("monitors"));
    assert!(output.status.success(), "{stderr}");
    let first = stdout.lines().next().unwrap_or_default();
    assert!(first.starts_with("0* "), "{stdout}");
    assert!(first.contains("1920x1080 at (0, 0)"), "{stdout}");
    assert!(first.contains("model sees 1366x768"), "{stdout}");
    assert!(stdout.contains("\nbackend x11"), "{stdout}");
}

#[test]
fn without_a_display_the_computer_tool_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([Turn::text("unused")]);
    let (output, _, stderr) = run(deskhand_at(&api, dir.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .args(["ask", "--tools", "computer", "hi"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("the `computer` tool cannot work here: no display"),
        "{stderr}"
    );
    assert!(api.requests().is_empty());
    let (output, _, stderr) = run(deskhand(dir.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .arg("monitors"));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("no display"), "{stderr}");
}

/// Every image in the `tool_result`s of a request body's last message, decoded.
fn result_images(body: &Value) -> Vec<Vec<u8>> {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .flat_map(|b| b["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "image")
        .map(|c| {
            base64::engine::general_purpose::STANDARD
                .decode(c["source"]["data"].as_str().unwrap())
                .unwrap()
        })
        .collect()
}

/// The scripted computer session both providers' tests run: a screenshot, a click aimed at
/// an xev window, and a key name with a typo.
struct ComputerSession {
    xev: Xev,
    /// Where on the desktop the click is aimed.
    target: (i32, i32),
    dir: tempfile::TempDir,
}

impl ComputerSession {
    /// The xev window is titled `name`.
    fn open(name: &str) -> Self {
        let xev = Xev::open(name, 500, 400, 400, 300);
        let (wx, wy, _, _) = x11::window_geometry(&xev.id);
        Self {
            xev,
            target: (wx + 100, wy + 80),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn turns(&self) -> Vec<Turn> {
        // 1920x1080 is shown to the model as 1366x768.
        let (mx, my) = (
            (i64::from(self.target.0) * 1366 * 2 + 1920) / 3840,
            (i64::from(self.target.1) * 768 * 2 + 1080) / 2160,
        );
        vec![
            Turn::tool_use("computer", json!({"action": "screenshot"})),
            Turn::tool_use(
                "computer",
                json!({"action": "left_click", "coordinate": [mx, my]}),
            ),
            Turn::tool_use("computer", json!({"action": "key", "text": "ctrl+Retrun"})),
            Reply::new().text("Clicked.").into(),
        ]
    }

    /// The click landed on the xev window where the model aimed, within one model pixel, and
    /// the bad key pressed nothing.
    fn check_screen(&self) {
        let events = self
            .xev
            .wait_for("the click", |e| e.iter().any(|e| e.kind == "ButtonRelease"));
        let press = events.iter().find(|e| e.kind == "ButtonPress").unwrap();
        assert_eq!(press.button, Some(1));
        let target = self.target;
        assert!(
            (press.root.0 - target.0).abs() <= 2 && (press.root.1 - target.1).abs() <= 2,
            "{press:?} vs {target:?}"
        );
        assert!(events.iter().all(|e| e.kind != "KeyPress"), "{events:?}");
    }
}

#[test]
fn ask_drives_the_screen_through_the_stand_in_model() {
    let Some(_display) = x11::display() else {
        return;
    };
    let session = ComputerSession::open("deskhand-ask");
    let api = StandIn::spawn(session.turns());
    let (output, stdout, stderr) = run(deskhand_at(&api, session.dir.path()).args([
        "ask",
        "--tools",
        "computer",
        "--approve",
        "auto",
        "--model",
        "claude-sonnet-4-5",
        "click the window",
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Clicked."), "{stdout}");
    let requests = api.accepted();
    assert_eq!(requests.len(), 4);
    let first = &requests[0];
    assert_eq!(
        first.body["tools"],
        json!([{"type": "computer_20250124", "name": "computer", "display_width_px": 1366, "display_height_px": 768}])
    );
    assert!(first.headers["anthropic-beta"].contains("computer-use-2025-01-24"));
    for (i, request) in requests[1..3].iter().enumerate() {
        let images = result_images(&request.body);
        assert_eq!(images.len(), 1, "request {}", i + 1);
        assert_eq!(image_size(&images[0]), (1366, 768), "request {}", i + 1);
    }
    // The bad key came back as an error naming it, and nothing was pressed.
    let last = &requests[3].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"][0];
    assert_eq!(last["is_error"], true);
    assert!(
        last["content"].to_string().contains("unknown key `Retrun`"),
        "{last}"
    );
    session.check_screen();
}

/// The same session through `--provider openai`: the computer goes out as a function with its
/// JSON Schema, each screenshot answers its call with a `tool` message that says an image
/// follows, and the image, of exactly the size the description declares, comes in the user
/// message after it.
#[test]
fn ask_drives_the_screen_over_chat_completions() {
    let Some(_display) = x11::display() else {
        return;
    };
    let session = ComputerSession::open("deskhand-ask-openai");
    let api = StandIn::spawn(session.turns());
    let (output, stdout, stderr) = run(ask_over_openai(&api, session.dir.path()).args([
        "--tools",
        "computer",
        "--approve",
        "auto",
        "--keep-screenshots",
        "1",
        "click the window",
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Clicked."), "{stdout}");
    let requests = api.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests.iter().all(|r| r.rejected.is_none()),
        "{requests:?}"
    );

    let first = &requests[0];
    assert_eq!(first.path, "/v1/chat/completions");
    assert!(!first.headers.contains_key("anthropic-beta"));
    let tools = first.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["type"], "function");
    let function = &tools[0]["function"];
    assert_eq!(function["name"], "computer");
    let description = function["description"].as_str().unwrap();
    assert!(
        description.contains("The screen is 1366x768 pixels"),
        "{description}"
    );
    let point = json!({"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2});
    assert_eq!(
        function["parameters"],
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": [
                    "screenshot", "left_click", "right_click", "middle_click", "double_click",
                    "triple_click", "mouse_move", "left_click_drag", "left_mouse_down",
                    "left_mouse_up", "scroll", "type", "key", "hold_key", "wait",
                    "cursor_position"
                ]},
                "coordinate": point,
                "start_coordinate": point,
                "text": {"type": "string"},
                "key": {"type": "string"},
                "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
                "scroll_amount": {"type": "integer", "minimum": 1, "maximum": 100},
                "duration": {"type": "number", "minimum": 0, "maximum": 100.0},
            },
            "required": ["action"],
        })
    );
    assert!(!first.body.to_string().contains("computer_2025"));

    // After the screenshot and after the click: the assistant's call, the tool message saying
    // an image follows, and the image in a user message, nothing after it.
    for (i, request) in requests[1..3].iter().enumerate() {
        let messages = request.body["messages"].as_array().unwrap();
        let tail = &messages[messages.len() - 3..];
        assert_eq!(tail[0]["role"], "assistant", "request {}", i + 1);
        let call_id = tail[0]["tool_calls"][0]["id"].as_str().unwrap();
        assert_eq!(tail[0]["tool_calls"][0]["function"]["name"], "computer");
        assert_eq!(tail[1]["role"], "tool");
        assert_eq!(tail[1]["tool_call_id"], call_id, "request {}", i + 1);
        // The result's text reaches the model marked as data (`agent::spotlight`), then the
        // note that its image follows. A click on xev draws nothing, and the result says so
        // (issue 19).
        let content = tail[1]["content"].as_str().unwrap();
        let (text, note) = content.rsplit_once('\n').unwrap_or(("", content));
        assert_eq!(
            note,
            "[The image this tool returned follows in the next user message.]",
            "request {}",
            i + 1
        );
        let said = if i == 1 {
            "the screen did not change after this left_click"
        } else {
            ""
        };
        assert_eq!(
            deskhand_engine::agent::spotlight::unmarked(text),
            said,
            "request {}: {content}",
            i + 1
        );
        assert_eq!(tail[2]["role"], "user");
        let parts = tail[2]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert_eq!(
            parts[0],
            json!({"type": "text", "text": format!("Image returned by tool call {call_id}:")})
        );
        let url = parts[1]["image_url"]["url"].as_str().unwrap();
        let data = url
            .strip_prefix("data:image/png;base64,")
            .expect("a PNG data URL");
        let image = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        assert_eq!(image_size(&image), (1366, 768), "request {}", i + 1);
    }
    // `--keep-screenshots 1`: once the click's screenshot is sent, the first one is not.
    let images = |r: &Recorded| r.body.to_string().matches(r#""type":"image_url""#).count();
    assert_eq!(
        requests.iter().map(images).collect::<Vec<_>>(),
        [0, 1, 1, 1]
    );
    let first_answer = &requests[2].body["messages"].as_array().unwrap()[3];
    assert_eq!(first_answer["role"], "tool");
    assert_eq!(
        deskhand_engine::agent::spotlight::unmarked(first_answer["content"].as_str().unwrap()),
        "[older screenshot removed to save context]"
    );
    // The bad key came back as an error naming it, with no image after it.
    let last = requests[3].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    assert_eq!(last["role"], "tool");
    let content = last["content"].as_str().unwrap();
    assert!(
        content.starts_with("Error: ") && content.contains("unknown key `Retrun`"),
        "{content}"
    );
    session.check_screen();
}

#[test]
fn newer_models_get_zoom_at_full_resolution() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::tool_use(
            "computer",
            json!({"action": "zoom", "region": [0, 0, 683, 384]}),
        ),
        Reply::new().text("Zoomed.").into(),
    ]);
    let (output, _, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--tools",
        "computer",
        "--approve",
        "deny",
        "--model",
        "claude-opus-4-5",
        "zoom in",
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let requests = api.accepted();
    assert_eq!(
        requests[0].body["tools"],
        json!([{"type": "computer_20251124", "name": "computer", "display_width_px": 1366, "display_height_px": 768, "enable_zoom": true}])
    );
    assert!(requests[0].headers["anthropic-beta"].contains("computer-use-2025-11-24"));
    // Read-only: allowed under --approve deny. A quarter of the screen at full resolution.
    let images = result_images(&requests[1].body);
    assert_eq!(images.len(), 1);
    assert_eq!(image_size(&images[0]), (960, 540));
}

/// Where on the 1366x768 model screen a desktop point of the 1920x1080 display is.
fn model_point(desktop: (i32, i32)) -> (i64, i64) {
    (
        (i64::from(desktop.0) * 1366 * 2 + 1920) / 3840,
        (i64::from(desktop.1) * 768 * 2 + 1080) / 2160,
    )
}

/// The GA computer toolset for a Claude 5 model: one `tools` entry with no beta, and member
/// calls (a click, typed text, a zoom) that land on the X display and are answered with their
/// `toolset_name`.
#[test]
fn member_tools_click_type_and_zoom_on_the_display() {
    let Some(_display) = x11::display() else {
        return;
    };
    let session = ComputerSession::open("deskhand-members");
    let (mx, my) = model_point(session.target);
    let api = StandIn::spawn([
        Reply::new().member("screenshot", json!({})).into(),
        Reply::new()
            .member("left_click", json!({"coordinate": [mx, my]}))
            .member("type", json!({"text": "ok"}))
            .into(),
        Reply::new()
            .member("zoom", json!({"region": [0, 0, 683, 384]}))
            .into(),
        Reply::new().text("Typed.").into(),
    ]);
    let (output, stdout, stderr) = run(deskhand_at(&api, session.dir.path()).args([
        "ask",
        "--tools",
        "computer",
        "--approve",
        "auto",
        "--model",
        "claude-opus-5-5",
        "type ok into the window",
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Typed."), "{stdout}");
    let requests = api.accepted();
    assert_eq!(requests.len(), 4, "{:?}", api.requests());
    assert_eq!(
        requests[0].body["tools"],
        json!([{"type": "computer_toolset_20260801"}])
    );
    assert!(!requests[0].headers.contains_key("anthropic-beta"));
    for request in &requests[1..] {
        let last = request.body["messages"].as_array().unwrap().last().unwrap();
        for result in last["content"].as_array().unwrap() {
            assert_eq!(result["toolset_name"], "computer", "{result}");
            assert!(result.get("is_error").is_none(), "{result}");
        }
    }
    assert_eq!(
        image_size(&result_images(&requests[1].body)[0]),
        (1366, 768)
    );
    assert_eq!(image_size(&result_images(&requests[3].body)[0]), (960, 540));
    let events = session.xev.wait_for("the typed text", |e| {
        e.iter().filter(|e| e.kind == "KeyRelease").count() >= 2
    });
    let press = events.iter().find(|e| e.kind == "ButtonPress").unwrap();
    let target = session.target;
    assert!(
        (press.root.0 - target.0).abs() <= 2 && (press.root.1 - target.1).abs() <= 2,
        "{press:?} vs {target:?}"
    );
    let keys: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == "KeyPress")
        .filter_map(|e| e.keysym.as_deref())
        .collect();
    assert_eq!(keys, ["o", "k"], "{events:?}");
}

/// Several member calls in one response with a failure in the middle: the click before it
/// lands, the bad key presses nothing, and the typing after it never happens; the model is
/// told which did not run and why.
#[test]
fn a_failed_member_stops_the_later_ones_on_the_display() {
    let Some(_display) = x11::display() else {
        return;
    };
    let session = ComputerSession::open("deskhand-members-fail");
    let (mx, my) = model_point(session.target);
    let api = StandIn::spawn([
        Reply::new()
            .member("left_click", json!({"coordinate": [mx, my]}))
            .member("key", json!({"text": "ctrl+Retrun"}))
            .member("type", json!({"text": "never"}))
            .into(),
        Reply::new().text("Stopped.").into(),
    ]);
    let (output, _, stderr) = run(deskhand_at(&api, session.dir.path()).args([
        "ask",
        "--tools",
        "computer",
        "--approve",
        "auto",
        "--model",
        "claude-sonnet-5",
        "click and type",
    ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let requests = api.accepted();
    let last = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    let results = last["content"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert!(results[0].get("is_error").is_none());
    assert_eq!(results[1]["is_error"], true);
    assert!(
        results[1]["content"]
            .to_string()
            .contains("unknown key `Retrun`")
    );
    assert_eq!(results[2]["is_error"], true);
    assert_eq!(
        crate::support::result_text(&results[2]),
        "Not executed: an earlier computer action in this turn failed."
    );
    session.check_screen();
}

/// An endpoint that does not serve the GA toolset: the first run steps down to
/// `computer_20251124` after its 400, and the next `deskhand ask` (a new process) offers that
/// at once and names the step-down in `started`.
#[test]
fn a_refused_toolset_is_remembered_by_the_next_process() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn(
        deskhand_standin::Script::new([Turn::text("First."), Turn::text("Second.")])
            .refusing_tool_type("computer_toolset_20260801"),
    );
    let ask = || {
        run(deskhand_at(&api, dir.path()).args([
            "ask",
            "--json",
            "--tools",
            "computer",
            "--approve",
            "deny",
            "--model",
            "claude-sonnet-5",
            "hello",
        ]))
    };
    let (output, stdout, stderr) = ask();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("offering computer_20251124 instead"),
        "{stdout}"
    );
    assert_eq!(api.requests().len(), 2);
    assert!(dir.path().join("tool-fallbacks.json").is_file());
    let (output, stdout, stderr) = ask();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let started: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(started["type"], "started");
    assert_eq!(
        started["tool_fallbacks"],
        json!(["computer_toolset_20260801 refused with HTTP 400"])
    );
    let requests = api.requests();
    assert_eq!(requests.len(), 3, "no second refusal");
    assert!(requests[2].rejected.is_none());
    assert_eq!(requests[2].body["tools"][0]["type"], "computer_20251124");
}
