//! The computer tool on a real wlroots compositor: sway on its headless backend, two outputs
//! (the second at scale 1.5), with `deskhand` run as the unprivileged client. What reached the
//! screen is read back from `wev` (pointer events) and from a terminal (`foot`) that writes
//! what was typed into a file. Skipped, with a note, where sway is not installed.

use crate::support::sway::{self, wait_for_file};
use base64::Engine as _;
use deskhand_engine::tools::computer::wlroots::Wlroots;
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::json;

fn image_size(bytes: &[u8]) -> (usize, usize) {
    let size = imagesize::blob_size(bytes).expect("an image");
    (size.width, size.height)
}

fn output(command: &mut std::process::Command) -> (bool, String, String) {
    let out = command.output().expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn monitors_and_screenshots_report_wlroots_and_each_output_at_its_size() {
    let Some(sway) = sway::start() else {
        return;
    };
    let (ok, stdout, stderr) = output(sway.deskhand().arg("monitors"));
    assert!(ok, "{stderr}");
    assert!(stdout.contains("backend wayland-wlroots"), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("0* HEADLESS-1: 1920x1080 at (0, 0), scale 1,"),
        "{stdout}"
    );
    // Scale 1.5: 1920x1080 pixels, 1280x720 logical, placed after the first output.
    assert!(
        lines[1].starts_with("1  HEADLESS-2: 1920x1080 at (1920, 0), scale 1.5,"),
        "{stdout}"
    );
    for monitor in ["0", "1"] {
        let png = sway.path(&format!("shot{monitor}.png"));
        let (ok, stdout, stderr) = output(
            sway.deskhand()
                .args(["screenshot", "--monitor", monitor, "-o"])
                .arg(&png),
        );
        assert!(ok, "{stderr}");
        assert!(stdout.contains("backend wayland-wlroots"), "{stdout}");
        assert!(stdout.contains("screen  1920x1080"), "{stdout}");
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(image_size(&bytes), (1366, 768), "monitor {monitor}");
    }
}

#[test]
fn a_rotated_output_is_captured_upright() {
    let Some(sway) = sway::start() else {
        return;
    };
    // A background red on the left half, blue on the right, green along the top.
    let background = sway.path("background.png");
    let image = image::RgbaImage::from_fn(1920, 1080, |x, y| match (x, y) {
        (_, 0..100) => image::Rgba([0, 255, 0, 255]),
        (0..960, _) => image::Rgba([255, 0, 0, 255]),
        _ => image::Rgba([0, 0, 255, 255]),
    });
    image.save(&background).unwrap();
    let bg = background.to_str().unwrap();
    sway.msg(&["output", "HEADLESS-1", "bg", bg, "stretch"]);
    sway.msg(&["output", "HEADLESS-1", "transform", "90"]);
    sway.wait_for_screen("HEADLESS-1", "the rotated background", |shot| {
        shot.height() > shot.width() && shot.get_pixel(shot.width() / 4, 10).0 == [0, 255, 0]
    });
    let (ok, stdout, stderr) = output(sway.deskhand().arg("monitors"));
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with("0* HEADLESS-1: 1080x1920 at (0, 0)"),
        "{stdout}"
    );
    let png = sway.path("rotated.png");
    let (ok, _, stderr) = output(
        sway.deskhand()
            .args(["screenshot", "--monitor", "0", "-o"])
            .arg(&png),
    );
    assert!(ok, "{stderr}");
    let shot = image::open(&png).unwrap().to_rgb8();
    let (w, h) = shot.dimensions();
    assert!(h > w, "portrait: {w}x{h}");
    let at = |x: u32, y: u32| shot.get_pixel(x, y).0;
    assert_eq!(at(w / 4, h / 2), [255, 0, 0], "left");
    assert_eq!(at(w * 3 / 4, h / 2), [0, 0, 255], "right");
    assert_eq!(at(w / 4, 10), [0, 255, 0], "top");
}

/// One pointer's events of a kind as `wev` prints them (`[12:      wl_pointer] motion: ...`).
/// wev binds the pointer twice and prints each event for both: only the first is read.
fn wev_events(text: &str, kind: &str) -> Vec<String> {
    let first = text
        .lines()
        .find(|l| l.contains("wl_pointer]"))
        .and_then(|l| l.split(':').next())
        .unwrap_or("none")
        .to_string();
    text.lines()
        .filter(|l| l.starts_with(&first) && l.contains(&format!("wl_pointer] {kind}")))
        .map(str::to_string)
        .collect()
}

/// The surface position of a motion event (`x, y: 960.000000, 540.000000`).
fn xy(block: &str) -> (f64, f64) {
    let at = block
        .find("x, y:")
        .unwrap_or_else(|| panic!("no position in {block}"));
    let mut numbers = block[at + 5..].split(',').map(|n| {
        n.split_whitespace()
            .next()
            .unwrap_or_default()
            .parse::<f64>()
            .unwrap()
    });
    (numbers.next().unwrap(), numbers.next().unwrap())
}

fn number_after(block: &str, label: &str) -> f64 {
    let at = block
        .find(label)
        .unwrap_or_else(|| panic!("no {label} in {block}"));
    block[at + label.len()..]
        .trim_start()
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label} in {block}"))
}

#[test]
fn ask_clicks_drags_and_scrolls_where_wev_sees_it() {
    let Some(sway) = sway::start() else {
        return;
    };
    let log = sway.path("wev.txt");
    let wev = sway
        .client("stdbuf")
        .args(["-oL", "wev"])
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("wev starts");
    let wev = sway::Client(wev);
    sway.wait_for_focus("wev");
    // wev fills the first output (1920x1080, shown to the model as 1366x768).
    let model = |x: i64, y: i64| json!([(x * 1366 * 2 + 1920) / 3840, (y * 768 * 2 + 1080) / 2160]);
    let api = StandIn::spawn([
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": model(960, 540)}),
        ),
        Turn::tool_use(
            "computer",
            json!({"action": "scroll", "coordinate": model(960, 540), "scroll_direction": "down", "scroll_amount": 2}),
        ),
        Turn::tool_use(
            "computer",
            json!({"action": "scroll", "scroll_direction": "up", "scroll_amount": 1}),
        ),
        Turn::tool_use(
            "computer",
            json!({"action": "scroll", "scroll_direction": "right", "scroll_amount": 1}),
        ),
        Turn::tool_use(
            "computer",
            json!({"action": "left_click_drag", "start_coordinate": model(300, 200), "coordinate": model(600, 400)}),
        ),
        Reply::new().text("Done.").into(),
    ]);
    let (ok, stdout, stderr) = output(
        sway.deskhand()
            .env("ANTHROPIC_API_KEY", crate::support::API_KEY)
            .env("ANTHROPIC_BASE_URL", api.url())
            .args([
                "ask",
                "--tools",
                "computer",
                "--approve",
                "auto",
                "--model",
                "claude-sonnet-4-5",
                "click",
            ]),
    );
    drop(wev);
    assert!(ok, "{stderr}\n{}", sway.log());
    assert!(stdout.contains("Done."), "{stdout}");
    let requests = api.accepted();
    assert_eq!(requests.len(), 6);
    for request in &requests[1..6] {
        let last = request.body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        let result = &last["content"][0];
        assert_ne!(result["is_error"], json!(true), "{result}");
        let image = result["content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "image")
            .map(|c| {
                base64::engine::general_purpose::STANDARD
                    .decode(c["source"]["data"].as_str().unwrap())
                    .unwrap()
            })
            .expect("a screenshot");
        assert_eq!(image_size(&image), (1366, 768));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    // The click: a press of the left button (BTN_LEFT, 272) after motion to (960, 540).
    let buttons = wev_events(&text, "button");
    assert!(buttons.len() >= 4, "{text}");
    assert!(
        buttons[0].contains("272") && buttons[0].contains("pressed"),
        "{}",
        buttons[0]
    );
    let motions = wev_events(&text, "motion");
    let first = &motions[0];
    assert_eq!(xy(first), (960.0, 540.0), "{first}");
    // Scrolls: two wheel clicks down (positive), one up, one right.
    let axes = wev_events(&text, "axis: time");
    assert_eq!(axes.len(), 4, "{text}");
    let value = |block: &str| number_after(block, "value:");
    assert!(
        axes[0].contains("vertical") && value(&axes[0]) > 0.0,
        "{}",
        axes[0]
    );
    assert!(
        axes[1].contains("vertical") && value(&axes[1]) > 0.0,
        "{}",
        axes[1]
    );
    assert!(
        axes[2].contains("vertical") && value(&axes[2]) < 0.0,
        "{}",
        axes[2]
    );
    assert!(
        axes[3].contains("horizontal") && value(&axes[3]) > 0.0,
        "{}",
        axes[3]
    );
    // The drag: pressed at (300, 200), moved while held, released at (600, 400), each within
    // the model's pixel (1920/1366 screen pixels).
    let near = |got: (f64, f64), want: (f64, f64)| {
        (got.0 - want.0).abs() <= 2.0 && (got.1 - want.1).abs() <= 2.0
    };
    let press = motions.iter().rev().find(|m| near(xy(m), (300.0, 200.0)));
    assert!(press.is_some(), "{text}");
    let last_motion = motions.last().unwrap();
    assert!(near(xy(last_motion), (600.0, 400.0)), "{last_motion}");
    assert_eq!(buttons.len(), 4, "{text}");
    assert!(buttons.last().unwrap().contains("released"), "{text}");
}

#[test]
fn ask_types_unicode_into_a_terminal() {
    let Some(sway) = sway::start() else {
        return;
    };
    let typed = sway.path("typed.txt");
    let foot = sway
        .client("foot")
        .args([
            "sh",
            "-c",
            "IFS= read -r line; printf '%s' \"$line\" > typed.txt",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(sway.path("foot.log")).unwrap())
        .spawn()
        .expect("foot starts");
    let foot = sway::Client(foot);
    sway.wait_for_focus("foot");
    let text = "héllo ✓ Ж 你好 ASCII ~!@";
    let api = StandIn::spawn([
        Turn::tool_use("computer", json!({"action": "type", "text": text})),
        Turn::tool_use("computer", json!({"action": "key", "text": "Return"})),
        Reply::new().text("Typed.").into(),
    ]);
    let (ok, _, stderr) = output(
        sway.deskhand()
            .env("ANTHROPIC_API_KEY", crate::support::API_KEY)
            .env("ANTHROPIC_BASE_URL", api.url())
            .args([
                "ask",
                "--tools",
                "computer",
                "--approve",
                "auto",
                "--model",
                "claude-sonnet-4-5",
                "type",
            ]),
    );
    assert!(ok, "{stderr}");
    let got = wait_for_file(&typed, "typed text", |t| !t.is_empty());
    drop(foot);
    assert_eq!(got, text);
}

/// sway 1.7's `output ... disable` leaves a headless output in place (and it has no `unplug`),
/// so an output unplugged mid-run is not exercised here; the compositor going away is.
#[test]
fn a_compositor_gone_mid_run_is_an_error_naming_the_cause() {
    let Some(mut sway) = sway::start() else {
        return;
    };
    let screen = Wlroots::connect_at(&sway.socket()).unwrap();
    let monitors = screen.monitors().unwrap();
    assert_eq!(monitors.len(), 2);
    // Scale 1.5: input in logical units, frames in pixels.
    assert_eq!(monitors[1].geometry.input.width, 1280);
    assert_eq!(monitors[1].geometry.pixels.width, 1920);
    assert!(screen.capture(&monitors[1]).is_ok());
    sway.kill();
    let started = std::time::Instant::now();
    let Err(err) = screen.capture(&monitors[0]) else {
        panic!("a capture worked after the compositor was killed");
    };
    let err = err.to_string();
    assert!(
        err.contains("the Wayland compositor closed the connection"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(6));
    let mut input = screen.input().unwrap();
    use deskhand_engine::tools::computer::input::Input as _;
    let err = input.move_to(10, 10).unwrap_err().to_string();
    assert!(err.contains("closed the connection"), "{err}");
}
