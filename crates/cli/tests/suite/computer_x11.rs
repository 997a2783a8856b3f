//! The computer tool on a real X display (Xvfb under `scripts/test.sh`), checked by real X
//! programs: xterm runs what was typed, xev reports every key, click and scroll, and xdotool
//! says where the pointer is.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::x11::{self, Program, Xev};
use deskhand_engine::tools::catalog::ToolSettings;
use deskhand_engine::tools::computer::ComputerTool;
use deskhand_engine::tools::computer::keys::TABLE;
use deskhand_engine::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn computer(model: &str, monitor: Option<usize>) -> ComputerTool {
    ComputerTool::open(&ToolSettings {
        model: model.into(),
        monitor,
        ..ToolSettings::default()
    })
    .expect("the computer tool works on this display")
}

fn act(tool: &ComputerTool, input: Value) -> ToolOutput {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = runtime.block_on(tool.run(&input, &ToolContext::new(CancellationToken::new())));
    assert!(!out.is_error, "{input}: {:?}", out.content);
    out
}

/// The model point that maps onto desktop point `(x, y)`.
fn model_point(tool: &ComputerTool, x: i32, y: i32) -> Value {
    let (mx, my) = tool.mapping().to_model(x, y).expect("on this monitor");
    json!([mx, my])
}

#[test]
fn moves_clicks_and_drags_land_exactly_where_the_model_aimed() {
    let Some(_display) = x11::display() else {
        return;
    };
    let tool = computer("claude-sonnet-4-5", None);
    let mapping = tool.mapping();
    assert_eq!(
        (mapping.model.width, mapping.model.height),
        (1366, 768),
        "1920x1080 is scaled"
    );
    for (mx, my) in [(0, 0), (1365, 767), (683, 384), (17, 701), (1000, 3)] {
        act(
            &tool,
            json!({"action": "mouse_move", "coordinate": [mx, my]}),
        );
        assert_eq!(
            x11::pointer(),
            mapping.to_screen(mx, my),
            "model ({mx}, {my})"
        );
        // And back: cursor_position reports the point the model asked for.
        let out = act(&tool, json!({"action": "cursor_position"}));
        assert_eq!(
            out.content,
            vec![deskhand_engine::llm::ToolResultContent::Text {
                text: format!("X={mx},Y={my}")
            }]
        );
    }

    let xev = Xev::open("deskhand-clicks", 200, 150, 800, 600);
    let (wx, wy, _, _) = x11::window_geometry(&xev.id);
    let start = model_point(&tool, wx + 40, wy + 30);
    let end = model_point(&tool, wx + 600, wy + 450);
    let screen =
        |p: &Value| mapping.to_screen(p[0].as_u64().unwrap() as u32, p[1].as_u64().unwrap() as u32);
    act(&tool, json!({"action": "left_click", "coordinate": start}));
    act(&tool, json!({"action": "right_click", "coordinate": end}));
    act(
        &tool,
        json!({"action": "left_click_drag", "start_coordinate": start, "coordinate": end}),
    );
    let events = xev.wait_for("the drag's release", |e| {
        e.iter().filter(|e| e.kind == "ButtonRelease").count() >= 3
    });
    let buttons: Vec<(&str, u32, (i32, i32))> = events
        .iter()
        .filter(|e| e.kind.starts_with("Button"))
        .map(|e| (e.kind.as_str(), e.button.unwrap(), e.root))
        .collect();
    assert_eq!(
        buttons,
        vec![
            ("ButtonPress", 1, screen(&start)),
            ("ButtonRelease", 1, screen(&start)),
            ("ButtonPress", 3, screen(&end)),
            ("ButtonRelease", 3, screen(&end)),
            ("ButtonPress", 1, screen(&start)),
            ("ButtonRelease", 1, screen(&end)),
        ]
    );
    // The drag moved through points in between, as a hand would.
    let press = events
        .iter()
        .rposition(|e| e.kind == "ButtonPress")
        .unwrap();
    let moves = events[press..]
        .iter()
        .filter(|e| e.kind == "MotionNotify")
        .count();
    assert!(moves >= 3, "{moves} motion events during the drag");
}

/// `left_click_drag` with `text: "shift"` holds Shift from before the press until after
/// the release, as xev sees it.
#[test]
fn a_drag_holds_its_modifier_through_the_drag() {
    let Some(_display) = x11::display() else {
        return;
    };
    let tool = computer("claude-sonnet-4-5", None);
    let xev = Xev::open("deskhand-shift-drag", 200, 150, 800, 600);
    let (wx, wy, _, _) = x11::window_geometry(&xev.id);
    let start = model_point(&tool, wx + 40, wy + 30);
    let end = model_point(&tool, wx + 600, wy + 450);
    // A click first, so that the window has the keyboard focus when Shift goes down.
    act(&tool, json!({"action": "left_click", "coordinate": start}));
    act(
        &tool,
        json!({"action": "left_click_drag", "start_coordinate": start, "coordinate": end, "text": "shift"}),
    );
    let events = xev.wait_for("the shift-drag", |e| {
        e.iter()
            .any(|e| e.kind == "KeyRelease" && e.keysym.as_deref() == Some("Shift_L"))
    });
    let seen: Vec<String> = events
        .iter()
        .filter(|e| e.kind.starts_with("Key") || e.kind.starts_with("Button"))
        .map(|e| match (&e.keysym, e.button) {
            (Some(sym), _) => format!("{} {sym}", e.kind),
            (None, Some(button)) => format!("{} {button}", e.kind),
            _ => e.kind.clone(),
        })
        .collect();
    assert_eq!(
        seen,
        [
            "ButtonPress 1",
            "ButtonRelease 1",
            "KeyPress Shift_L",
            "ButtonPress 1",
            "ButtonRelease 1",
            "KeyRelease Shift_L"
        ]
    );
}

#[test]
fn scrolling_sends_wheel_clicks_in_each_direction() {
    let Some(_display) = x11::display() else {
        return;
    };
    let tool = computer("claude-sonnet-4-5", None);
    let xev = Xev::open("deskhand-scroll", 300, 200, 600, 400);
    let (wx, wy, _, _) = x11::window_geometry(&xev.id);
    let at = model_point(&tool, wx + 100, wy + 100);
    for (direction, amount) in [("up", 3), ("down", 2), ("left", 1), ("right", 4)] {
        act(
            &tool,
            json!({"action": "scroll", "coordinate": at, "scroll_direction": direction, "scroll_amount": amount}),
        );
    }
    let events = xev.wait_for("10 wheel clicks", |e| {
        e.iter().filter(|e| e.kind == "ButtonRelease").count() >= 10
    });
    let wheel: Vec<u32> = events
        .iter()
        .filter(|e| e.kind == "ButtonPress")
        .filter_map(|e| e.button)
        .collect();
    // X wheel buttons: 4 up, 5 down, 6 left, 7 right.
    assert_eq!(wheel, vec![4, 4, 4, 5, 5, 6, 7, 7, 7, 7]);
}

/// Toggles are pressed twice so that they are left as they were.
const TOGGLES: &[&str] = &["Caps_Lock", "Num_Lock", "Scroll_Lock"];
/// Keys the window manager grabs, so no application sees them: openbox's default
/// configuration runs `scrot` on Print.
const GRABBED_BY_THE_WM: &[&str] = &["Print"];

#[test]
fn every_key_in_the_table_reaches_an_x_client() {
    let Some(_display) = x11::display() else {
        return;
    };
    let tool = computer("claude-sonnet-4-5", None);
    let xev = Xev::open("deskhand-keys", 100, 100, 500, 400);
    let (wx, wy, _, _) = x11::window_geometry(&xev.id);
    act(
        &tool,
        json!({"action": "left_click", "coordinate": model_point(&tool, wx + 50, wy + 50)}),
    );
    let mut names = Vec::new();
    for (x_name, _, _) in TABLE {
        if GRABBED_BY_THE_WM.contains(x_name) {
            continue;
        }
        names.push(*x_name);
        if TOGGLES.contains(x_name) {
            names.push(*x_name);
        }
    }
    // One key an action, each seen released before the next: a key missing from the keymap
    // is bound to a spare keycode for the press, and a later such key may take that keycode
    // back before xev has looked the first one up (it then reads NoSymbol).
    let mut events = Vec::new();
    for (sent, name) in names.iter().enumerate() {
        act(&tool, json!({"action": "key", "text": name}));
        events = xev.wait_for(name, |e| {
            e.iter().filter(|e| e.kind == "KeyRelease").count() > sent
        });
    }
    let pressed: Vec<String> = events
        .iter()
        .filter(|e| e.kind == "KeyPress")
        .filter_map(|e| e.keysym.clone())
        .collect();
    assert_eq!(pressed, names, "the keysyms xev saw, in order");
}

#[test]
fn combos_hold_their_modifiers_around_the_key() {
    let Some(_display) = x11::display() else {
        return;
    };
    let tool = computer("claude-sonnet-4-5", None);
    let xev = Xev::open("deskhand-combos", 100, 100, 500, 400);
    let (wx, wy, _, _) = x11::window_geometry(&xev.id);
    act(
        &tool,
        json!({"action": "left_click", "coordinate": model_point(&tool, wx + 50, wy + 50)}),
    );
    act(&tool, json!({"action": "key", "text": "ctrl+shift+t"}));
    let events = xev.wait_for("ctrl+shift+t", |e| {
        e.iter().filter(|e| e.kind == "KeyRelease").count() >= 3
    });
    let keys: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.kind.starts_with("Key"))
        .map(|e| (e.kind.clone(), e.keysym.clone().unwrap()))
        .collect();
    let k = |kind: &str, sym: &str| (kind.to_string(), sym.to_string());
    assert_eq!(
        keys,
        vec![
            k("KeyPress", "Control_L"),
            k("KeyPress", "Shift_L"),
            k("KeyPress", "T"),
            k("KeyRelease", "T"),
            k("KeyRelease", "Shift_L"),
            k("KeyRelease", "Control_L"),
        ]
    );
}

#[test]
fn xterm_runs_what_was_typed_unicode_included() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("typed.txt");
    let _xterm = Program(
        Command::new("xterm")
            .args([
                "-u8",
                "-T",
                "deskhand-xterm",
                "-geometry",
                "100x20+400+300",
                "-e",
                "bash",
                "--norc",
                "--noprofile",
            ])
            .env("LC_ALL", "C.UTF-8")
            .env("PS1", "$ ")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("xterm starts"),
    );
    let id = x11::window_by_name("deskhand-xterm");
    let (wx, wy, w, h) = x11::window_geometry(&id);
    let tool = computer("claude-sonnet-4-5", None);
    act(
        &tool,
        json!({"action": "left_click", "coordinate": model_point(&tool, wx + w as i32 / 2, wy + h as i32 / 2)}),
    );
    let text = "héllo ✓ Ж — 日本";
    let command = format!("printf '%s' '{text}' > {}", out_file.display());
    act(&tool, json!({"action": "type", "text": command}));
    act(&tool, json!({"action": "key", "text": "Return"}));
    let until = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&out_file).unwrap_or_default() != text {
        assert!(
            Instant::now() < until,
            "xterm wrote {:?}",
            std::fs::read_to_string(&out_file).ok()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Two RandR monitors splitting the screen, removed again when dropped.
struct SplitScreen;

impl SplitScreen {
    fn new() -> SplitScreen {
        x11::run(
            "xrandr",
            &["--setmonitor", "DH-LEFT", "960/254x1080/286+0+0", "none"],
        );
        x11::run(
            "xrandr",
            &["--setmonitor", "DH-RIGHT", "960/254x1080/286+960+0", "none"],
        );
        SplitScreen
    }
}

impl Drop for SplitScreen {
    fn drop(&mut self) {
        for name in ["DH-LEFT", "DH-RIGHT"] {
            let _ = Command::new("xrandr").args(["--delmonitor", name]).status();
        }
    }
}

#[test]
fn clicks_map_onto_each_of_two_monitors() {
    let Some(_display) = x11::display() else {
        return;
    };
    let _split = SplitScreen::new();
    use deskhand_engine::tools::computer::capture::RealScreen;
    use deskhand_engine::tools::computer::screen::Screen;
    let monitors = RealScreen::open().unwrap().monitors().unwrap();
    let index = |name: &str| {
        monitors
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no {name} in {monitors:?}"))
            .index
    };
    let xev = Xev::open("deskhand-two-monitors", 100, 100, 1700, 600);
    let mut expected = Vec::new();
    for (name, origin) in [("DH-LEFT", 0), ("DH-RIGHT", 960)] {
        let tool = computer("claude-sonnet-4-5", Some(index(name)));
        let mapping = tool.mapping();
        assert_eq!(
            (mapping.geometry.x, mapping.geometry.y),
            (origin, 0),
            "{name}"
        );
        // The screenshot is of this monitor alone.
        let shot = act(&tool, json!({"action": "screenshot"}));
        let deskhand_engine::llm::ToolResultContent::Image { source } = &shot.content[0] else {
            panic!("no image")
        };
        let deskhand_engine::llm::ImageSource::Base64 { data, .. } = source else {
            panic!("a screenshot's bytes are in its result")
        };
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let size = imagesize::blob_size(&png).unwrap();
        assert_eq!(
            (size.width as u32, size.height as u32),
            (mapping.model.width, mapping.model.height)
        );
        for (mx, my) in [(200, 200), (700, 500)] {
            act(
                &tool,
                json!({"action": "left_click", "coordinate": [mx, my]}),
            );
            let screen = mapping.to_screen(mx, my);
            assert_eq!(x11::pointer(), screen, "{name} model ({mx}, {my})");
            assert!(
                screen.0 >= origin && screen.0 < origin + 960,
                "{name}: {screen:?}"
            );
            expected.push(screen);
        }
    }
    let events = xev.wait_for("four clicks", |e| {
        e.iter().filter(|e| e.kind == "ButtonRelease").count() >= 4
    });
    let pressed: Vec<(i32, i32)> = events
        .iter()
        .filter(|e| e.kind == "ButtonPress")
        .map(|e| e.root)
        .collect();
    assert_eq!(pressed, expected);
}
