//! The computer tool through the CLI on a real X display: `deskhand screenshot`,
//! `deskhand monitors`, and whole `deskhand ask --tools computer` runs driven by the stand-in
//! model server, checking what the server received and what happened on the screen.

mod support;

use std::process::{Command, Output, Stdio};

use base64::Engine as _;
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::{Value, json};
use support::API_KEY;
use support::x11::{self, Xev};

fn deskhand() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deskhand"));
    command.env_remove("DESKHAND_MONITOR").stdin(Stdio::null());
    command
}

fn run(command: &mut Command) -> (Output, String, String) {
    let output = command.output().expect("deskhand runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}

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
    let (output, stdout, stderr) = run(deskhand().arg("screenshot").arg("-o").arg(&png));
    assert!(output.status.success(), "{stderr}");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..4], b"\x89PNG");
    assert_eq!(image_size(&bytes), (1366, 768));
    assert!(stdout.contains("screen  1920x1080"), "{stdout}");
    assert!(stdout.contains("model   1366x768"), "{stdout}");
    for stage in ["capture", "scale", "encode"] {
        assert!(stdout.contains(&format!("{stage} ")), "{stdout}");
    }

    let jpg = dir.path().join("shot.jpg");
    let (output, _, stderr) = run(deskhand()
        .args(["screenshot", "--monitor", "0", "-o"])
        .arg(&jpg));
    assert!(output.status.success(), "{stderr}");
    let bytes = std::fs::read(&jpg).unwrap();
    assert_eq!(&bytes[..3], b"\xFF\xD8\xFF");
    assert_eq!(image_size(&bytes), (1366, 768));

    let (output, _, stderr) = run(deskhand()
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
    let (output, stdout, stderr) = run(deskhand().arg("monitors"));
    assert!(output.status.success(), "{stderr}");
    let first = stdout.lines().next().unwrap_or_default();
    assert!(first.starts_with("0* "), "{stdout}");
    assert!(first.contains("1920x1080 at (0, 0)"), "{stdout}");
    assert!(first.contains("model sees 1366x768"), "{stdout}");
}

#[test]
fn without_a_display_the_computer_tool_is_refused_clearly() {
    let api = StandIn::spawn([Turn::text("unused")]);
    let (output, _, stderr) = run(deskhand()
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .args(["ask", "--tools", "computer", "hi"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("the `computer` tool cannot work here: no display"),
        "{stderr}"
    );
    assert!(api.requests().is_empty());
    let (output, _, stderr) = run(deskhand()
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

#[test]
fn ask_drives_the_screen_through_the_stand_in_model() {
    let Some(_display) = x11::display() else {
        return;
    };
    let xev = Xev::open("deskhand-ask", 500, 400, 400, 300);
    let (wx, wy, _, _) = x11::window_geometry(&xev.id);
    // 1920x1080 is shown to the model as 1366x768: aim at the xev window's (100, 80).
    let target = (wx + 100, wy + 80);
    let (mx, my) = (
        (i64::from(target.0) * 1366 * 2 + 1920) / 3840,
        (i64::from(target.1) * 768 * 2 + 1080) / 2160,
    );
    let api = StandIn::spawn([
        Turn::tool_use("computer", json!({"action": "screenshot"})),
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": [mx, my]}),
        ),
        Turn::tool_use("computer", json!({"action": "key", "text": "ctrl+Retrun"})),
        Reply::new().text("Clicked.").into(),
    ]);
    let (output, stdout, stderr) = run(deskhand()
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url())
        .args([
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
    // The click landed on the xev window where the model aimed, within one model pixel.
    let events = xev.wait_for("the click", |e| e.iter().any(|e| e.kind == "ButtonRelease"));
    let press = events.iter().find(|e| e.kind == "ButtonPress").unwrap();
    assert_eq!(press.button, Some(1));
    assert!(
        (press.root.0 - target.0).abs() <= 2 && (press.root.1 - target.1).abs() <= 2,
        "{press:?} vs {target:?}"
    );
    assert!(events.iter().all(|e| e.kind != "KeyPress"), "{events:?}");
}

#[test]
fn newer_models_get_zoom_at_full_resolution() {
    let Some(_display) = x11::display() else {
        return;
    };
    let api = StandIn::spawn([
        Turn::tool_use(
            "computer",
            json!({"action": "zoom", "region": [0, 0, 683, 384]}),
        ),
        Reply::new().text("Zoomed.").into(),
    ]);
    let (output, _, stderr) = run(deskhand()
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url())
        .args([
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
