//! The computer tool on the portal path, on Debian's mutter (GNOME's compositor) headless:
//! `deskhand` asks the real xdg-desktop-portal for a RemoteDesktop session with a shared
//! monitor, receives mutter's frames through PipeWire and sends input through the portal into
//! mutter. The one stand-in is the portal backend that would show the consent dialog (see
//! `support/portal.rs`). What reached the screen is read back from Wayland clients of mutter:
//! `foot` (a red terminal that writes what is typed into a file) and `wev` (pointer events).

use crate::support::portal::{self, Consent};
use crate::support::sway::{Client, wait_for_file};
use base64::Engine as _;
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::json;

fn output(command: &mut std::process::Command) -> (bool, String, String) {
    let out = command.output().expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A terminal with a red background running `command`, full screen.
fn red_foot(desktop: &portal::Desktop, command: &str) -> Client {
    let child = desktop
        .client("foot")
        .args(["--fullscreen", "-o", "colors.background=ff0000", "sh", "-c"])
        .arg(format!("echo up > foot-up.txt; {command}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(desktop.path("foot.log")).unwrap())
        .spawn()
        .expect("foot starts");
    // foot makes its window before it starts the shell: the shell's word says both are up.
    wait_for_file(&desktop.path("foot-up.txt"), "foot's shell", |t| {
        t == "up\n"
    });
    Client(child)
}

#[test]
fn monitors_and_screenshots_come_through_the_portal_and_pipewire() {
    let Some(desktop) = portal::start() else {
        return;
    };
    let _foot = red_foot(&desktop, "sleep 60");
    let (ok, stdout, stderr) = output(desktop.deskhand().arg("monitors"));
    assert!(ok, "{stderr}\n{}", desktop.log("xdg-desktop-portal.log"));
    assert!(stdout.contains("backend wayland-portal"), "{stdout}");
    assert!(stdout.starts_with("0* portal stream "), "{stdout}");
    assert!(
        stdout.contains(": 1280x800 at (0, 0), scale 1,"),
        "{stdout}"
    );
    let png = desktop.path("shot.png");
    let (ok, stdout, stderr) = output(desktop.deskhand().args(["screenshot", "-o"]).arg(&png));
    assert!(ok, "{stderr}");
    assert!(stdout.contains("backend wayland-portal"), "{stdout}");
    assert!(stdout.contains("screen  1280x800"), "{stdout}");
    // The terminal's red, drawn by mutter, came through PipeWire.
    let shot = image::open(&png).unwrap().to_rgb8();
    assert_eq!(shot.dimensions(), (1280, 800));
    let red = shot.pixels().filter(|p| p.0 == [255, 0, 0]).count();
    assert!(red > 1280 * 800 / 2, "{red} red pixels");
    // The stand-in asked once per run: this portal (RemoteDesktop version 1) keeps no grant.
    assert_eq!(desktop.times_asked(), 2);
}

#[test]
fn a_refused_request_is_an_error_naming_the_refusal() {
    let Some(desktop) = portal::start() else {
        return;
    };
    desktop.set_consent(Consent::Refuse);
    let started = std::time::Instant::now();
    let (ok, _, stderr) = output(desktop.deskhand().arg("screenshot"));
    assert!(!ok);
    assert!(
        stderr.contains("refused the screen-sharing request"),
        "{stderr}"
    );
    assert!(stderr.contains("wlr-screencopy"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// One pointer's events of a kind as `wev` prints them.
fn wev_events(text: &str, kind: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains(&format!("wl_pointer] {kind}")))
        .map(str::to_string)
        .collect()
}

/// The surface position of a `wev` motion or enter event (`x, y: 960.000000, 540.000000`).
fn xy(line: &str) -> (f64, f64) {
    let at = line.find("x, y:").unwrap_or_else(|| panic!("{line}"));
    let mut n = line[at + 5..]
        .split(',')
        .map(|n| n.split_whitespace().next().unwrap().parse().unwrap());
    (n.next().unwrap(), n.next().unwrap())
}

/// `deskhand ask --tools computer` against the stand-in API, as a client of the desktop.
fn ask_command(desktop: &portal::Desktop, api: &StandIn) -> std::process::Command {
    let mut command = desktop.deskhand();
    command
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
            "go",
        ]);
    command
}

fn ask(desktop: &portal::Desktop, api: &StandIn) -> (bool, String, String) {
    output(&mut ask_command(desktop, api))
}

#[test]
fn ask_moves_and_clicks_where_wev_sees_it() {
    let Some(desktop) = portal::start() else {
        return;
    };
    let log = desktop.path("wev.txt");
    // Line-buffered: wev's output is read after it is killed.
    let wev = desktop
        .client("stdbuf")
        .args(["-oL", "wev"])
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("wev starts");
    let wev = Client(wev);
    wait_for_file(&log, "wev's window", |t| {
        t.contains("wl_pointer] enter") || t.contains("configure")
    });
    // The screen is 1280x800, shown to the model at that size: model points are screen points.
    // wev's window lies somewhere on it; two moves inside it tell where, whatever mutter chose.
    let api = StandIn::spawn([
        Turn::tool_use(
            "computer",
            json!({"action": "mouse_move", "coordinate": [640, 400]}),
        ),
        Turn::tool_use(
            "computer",
            json!({"action": "mouse_move", "coordinate": [660, 430]}),
        ),
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": [650, 410]}),
        ),
        Reply::new().text("Done.").into(),
    ]);
    let (ok, stdout, stderr) = ask(&desktop, &api);
    drop(wev);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Done."), "{stdout}");
    for request in &api.accepted()[1..4] {
        let result = &request.body["messages"].as_array().unwrap().last().unwrap()["content"][0];
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
        let size = imagesize::blob_size(&image).unwrap();
        assert_eq!((size.width, size.height), (1280, 800));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let at: Vec<(f64, f64)> = text
        .lines()
        .filter(|l| l.contains("wl_pointer] enter") || l.contains("wl_pointer] motion"))
        .map(xy)
        .collect();
    assert!(at.len() >= 3, "{text}");
    // The window's origin on the screen, from the first position; each later one agrees.
    let origin = (640.0 - at[0].0, 400.0 - at[0].1);
    let on_screen = |p: (f64, f64)| (p.0 + origin.0, p.1 + origin.1);
    assert!(at.iter().any(|p| on_screen(*p) == (660.0, 430.0)), "{text}");
    assert_eq!(on_screen(*at.last().unwrap()), (650.0, 410.0), "{text}");
    let buttons = wev_events(&text, "button");
    assert_eq!(buttons.len(), 2, "{text}");
    assert!(buttons[0].contains("272") && buttons[0].contains("pressed"));
    assert!(buttons[1].contains("released"));
}

#[test]
fn ask_types_text_into_a_terminal() {
    let Some(desktop) = portal::start() else {
        return;
    };
    let typed = desktop.path("typed.txt");
    let _foot = red_foot(
        &desktop,
        "IFS= read -r line; printf '%s' \"$line\" > typed.txt",
    );
    let text = "hello, World ~!@ 42";
    let api = StandIn::spawn([
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": [640, 400]}),
        ),
        Turn::tool_use("computer", json!({"action": "type", "text": text})),
        Turn::tool_use("computer", json!({"action": "key", "text": "Return"})),
        Reply::new().text("Typed.").into(),
    ]);
    let (ok, _, stderr) = ask(&desktop, &api);
    assert!(ok, "{stderr}");
    let got = wait_for_file(&typed, "typed text", |t| !t.is_empty());
    assert_eq!(got, text, "{}", desktop.log("mutter.log"));
}

#[test]
fn a_compositor_gone_mid_run_is_an_error_result_and_the_run_goes_on() {
    let Some(mut desktop) = portal::start() else {
        return;
    };
    let api = StandIn::spawn([
        Turn::tool_use("computer", json!({"action": "wait", "duration": 3})),
        Turn::tool_use("computer", json!({"action": "screenshot"})),
        Reply::new().text("Done.").into(),
    ]);
    let ask = ask_command(&desktop, &api)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The portal session is up and the model was asked (so the tool has opened): mutter goes,
    // before or during the wait, and both calls fail. Under load the tool opens well after
    // the portal's question.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while desktop.times_asked() == 0 || api.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the portal ({} times) or the model ({} requests) was never asked",
            desktop.times_asked(),
            api.requests().len()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let started = std::time::Instant::now();
    desktop.kill_compositor();
    let out = ask.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Done."), "{stdout}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let requests = api.accepted();
    assert_eq!(requests.len(), 3);
    for request in &requests[1..] {
        let result = &request.body["messages"].as_array().unwrap().last().unwrap()["content"][0];
        assert_eq!(result["is_error"], json!(true), "{result}");
        let text = result.to_string();
        assert!(
            text.contains("stopped sharing") || text.contains("PipeWire"),
            "{text}"
        );
    }
}
