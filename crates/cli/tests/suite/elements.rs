//! The element map, the `ui` tool and named approvals on a real GTK 3 app (the fixture
//! `fixtures/gtk_fixture.py`) on a real X display with a real AT-SPI bus (under
//! `dbus-run-session`, as `scripts/test.sh` runs everything), real Tesseract, and two
//! private desktops at once, each with its own Xvfb and session bus.
//!
//! Skipped with a note where Python's GTK bindings, a session bus or Tesseract's English
//! data are missing; with `DESKHAND_TEST_ELEMENTS` set (test.sh) a missing one is a failure.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::support::cli::{PROMPT_END, on_terminal};
use crate::support::x11;
use deskhand_engine::elements::atspi_tree::AtspiTree;
use deskhand_engine::elements::bus::DesktopBus;
use deskhand_engine::elements::{Rect, Snapshot, Tree};
use deskhand_engine::tools::catalog::ToolSettings;
use deskhand_engine::tools::computer::ComputerTool;
use deskhand_engine::tools::ui::UiTool;
use deskhand_engine::tools::{Tool, ToolContext, ToolOutput};
use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gtk_fixture.py");
/// The system's Python, which Debian's GTK bindings (python3-gi) belong to; a `python3`
/// earlier on PATH (pyenv, a venv) may not have them.
const PYTHON: &str = "/usr/bin/python3";

/// Whether what these tests need is here; a note (or, under test.sh, a panic) if not.
fn prerequisites(need_ocr: bool) -> bool {
    let gtk = Command::new(PYTHON)
        .args(["-c", "import gi; gi.require_version('Gtk', '3.0')"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let bus = std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some();
    let ocr = !need_ocr
        || (std::path::Path::new("/usr/share/tesseract-ocr/5/tessdata/eng.traineddata").exists()
            && Command::new("tesseract")
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()));
    let missing: Vec<&str> = [
        (!gtk, "python3-gi with GTK 3 (python3-gi, gir1.2-gtk-3.0)"),
        (!bus, "a session bus (run under dbus-run-session)"),
        (
            !ocr,
            "Tesseract with its English data (tesseract-ocr, tesseract-ocr-eng)",
        ),
    ]
    .into_iter()
    .filter_map(|(missing, what)| missing.then_some(what))
    .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("DESKHAND_TEST_ELEMENTS").is_none(),
        "DESKHAND_TEST_ELEMENTS is set but these are missing: {}",
        missing.join(", ")
    );
    eprintln!("skipped: missing {}", missing.join(", "));
    false
}

/// The fixture app, killed when dropped; its events arrive as JSON lines.
struct Fixture {
    child: Child,
    events: Receiver<Value>,
    /// GTK's own bounds of each button, in root-window coordinates.
    bounds: Value,
}

impl Fixture {
    /// The fixture titled `title`; `more` is its size: extra check buttons, table rows.
    fn start(mut command: Command, title: &str, more: &[&str]) -> Fixture {
        let mut child = command
            .arg(FIXTURE)
            .arg(title)
            .args(more)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 starts");
        let stdout = child.stdout.take().unwrap();
        let (send, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let _ = send.send(v);
                }
            }
        });
        let ready = events
            .recv_timeout(Duration::from_secs(20))
            .expect("the fixture reports its bounds");
        Fixture {
            child,
            events,
            bounds: ready["ready"].clone(),
        }
    }

    fn on_display(desk: &Desk, title: &str) -> Fixture {
        Fixture::start(desk.bus.command(PYTHON), title, &[])
    }

    fn rect(&self, name: &str) -> Rect {
        let b = &self.bounds[name];
        let n = |i: usize| b[i].as_i64().unwrap() as i32;
        Rect {
            x: n(0),
            y: n(1),
            width: n(2),
            height: n(3),
        }
    }

    /// Watches the fixture for `window` and fails at the first event that is `forbidden`:
    /// "nothing happened" holds for as long as the thing would take to show (a double
    /// click's interval, a click's round trip), not for one look after a guessed sleep.
    fn none_within(&self, window: Duration, forbidden: impl Fn(&Value) -> bool, what: &str) {
        let deadline = Instant::now() + window;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.events.recv_timeout(left) {
                Ok(event) => assert!(!forbidden(&event), "{what}: {event}"),
                Err(_) => break,
            }
        }
    }

    /// The next event matching `wanted`, within 5 s.
    fn expect(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(5);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.events.recv_timeout(left) {
                Ok(v) if wanted(&v) => return v,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        panic!("the fixture did not report the expected event");
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test display with a session bus of the test's own, so its accessibility bus is the
/// test's alone: another program's accessibility bus for the same display and home would
/// replace the socket file they share (seen in the whole suite, where every test found the
/// bus gone).
struct Desk {
    _runtime: tempfile::TempDir,
    bus: DesktopBus,
}

impl Desk {
    fn new() -> Desk {
        let runtime = tempfile::tempdir().unwrap();
        let display = std::env::var("DISPLAY").expect("the test display");
        let bus = DesktopBus::start(&display, &runtime.path().join("run")).unwrap();
        Desk {
            _runtime: runtime,
            bus,
        }
    }

    fn tree(&self) -> AtspiTree {
        AtspiTree::on_bus(self.bus.address())
    }

    /// The bus's environment, for a `deskhand` run on this desk.
    fn env(&self) -> Vec<(&'static str, String)> {
        self.bus.program_env()
    }
}

/// The test display (held while the test runs) and a desk on it, or `None` (with a note)
/// where something the tests need is missing.
fn on_desk(need_ocr: bool) -> Option<(std::sync::MutexGuard<'static, ()>, Desk)> {
    let display = x11::display()?;
    prerequisites(need_ocr).then(|| (display, Desk::new()))
}

/// A snapshot once `title`'s window is in the tree (the bridge takes a moment to register,
/// and a large app keeps the registry too busy to answer in time while it does).
fn snapshot_with(tree: &dyn Tree, title: &str) -> Snapshot {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let snapshot = tree.snapshot();
        if let Ok(snapshot) = &snapshot
            && snapshot.elements.iter().any(|e| e.window == title)
        {
            return snapshot.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no window {title:?} in {snapshot:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn tools(desk: &Desk) -> (ComputerTool, UiTool) {
    let computer = ComputerTool::open(&ToolSettings {
        model: "claude-sonnet-4-5".into(),
        ..ToolSettings::default()
    })
    .expect("the computer tool works on this display")
    .with_tree(Arc::new(desk.tree()));
    let ui = UiTool::new(computer.clone(), computer.tree().unwrap());
    (computer, ui)
}

fn run(tool: &dyn Tool, input: Value) -> ToolOutput {
    tool.plan(&input)
        .map_err(|e| format!("{input}: {e}"))
        .map(|_| ())
        .ok();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(tool.run(&input, &ToolContext::new(CancellationToken::new())))
}

fn text_of(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|c| match c {
            deskhand_engine::llm::ToolResultContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn found(ui: &UiTool, input: Value) -> Vec<Value> {
    let out = run(ui, input.clone());
    assert!(!out.is_error, "{input}: {}", text_of(&out));
    let answer: Value = serde_json::from_str(&text_of(&out)).unwrap();
    answer["elements"].as_array().cloned().unwrap_or_default()
}

#[test]
fn find_returns_the_buttons_with_gtks_own_bounds() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements find");
    let tree = desk.tree();
    let snapshot = snapshot_with(&tree, "Elements find");
    for name in ["Delete", "Cancel", "Save"] {
        let button = snapshot
            .elements
            .iter()
            .find(|e| e.window == "Elements find" && e.name == name && e.role == "push button")
            .unwrap_or_else(|| panic!("no {name} button"));
        assert_eq!(
            button.bounds,
            fixture.rect(name),
            "{name}: AT-SPI's bounds are GTK's"
        );
    }
    // Through the tool: the same bounds, in the model's coordinates.
    let (computer, ui) = tools(&desk);
    let buttons = found(
        &ui,
        json!({"action": "find", "query": "Delete", "role": "push button"}),
    );
    let ours: Vec<&Value> = buttons
        .iter()
        .filter(|b| b["window"] == "Elements find")
        .collect();
    assert_eq!(ours.len(), 1, "{buttons:?}");
    let want = fixture
        .rect("Delete")
        .to_model(&computer.mapping())
        .unwrap();
    assert_eq!(ours[0]["bounds"], json!(want));
    assert_eq!(ours[0]["sensitive"], json!(true));
}

#[test]
fn click_by_role_and_name_presses_that_button_and_a_stale_ref_is_refused() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements click");
    snapshot_with(&desk.tree(), "Elements click");
    let (_computer, ui) = tools(&desk);
    let out = run(
        &ui,
        json!({"action": "click", "role": "push button", "name": "Cancel"}),
    );
    assert!(!out.is_error, "{}", text_of(&out));
    assert!(
        text_of(&out).contains("**Cancel** (push button)"),
        "{}",
        text_of(&out)
    );
    fixture.expect(|e| e["clicked"] == "Cancel");

    let none = run(
        &ui,
        json!({"action": "click", "role": "push button", "name": "Nope"}),
    );
    assert!(
        none.is_error && text_of(&none).contains("Cancel"),
        "lists the candidates: {}",
        text_of(&none)
    );

    let save = found(
        &ui,
        json!({"action": "find", "query": "Save", "role": "push button"}),
    );
    let reference = save[0]["ref"].as_str().unwrap().to_string();
    // Dropping the fixture kills it and waits for it: its accessible objects are gone.
    drop(fixture);
    let stale = run(&ui, json!({"action": "click", "ref": reference}));
    assert!(stale.is_error, "a click on a gone element must not happen");
    assert!(
        text_of(&stale).contains("no longer exists"),
        "{}",
        text_of(&stale)
    );
}

#[test]
fn type_into_the_entry_changes_its_text_which_read_returns() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements type");
    snapshot_with(&desk.tree(), "Elements type");
    let (_computer, ui) = tools(&desk);
    let entries = found(
        &ui,
        json!({"action": "find", "query": "Title", "role": "text"}),
    );
    let entry = entries
        .iter()
        .find(|e| e["window"] == "Elements type")
        .expect("the entry");
    let reference = entry["ref"].as_str().unwrap();
    let out = run(
        &ui,
        json!({"action": "type", "ref": reference, "text": "hello grounding"}),
    );
    assert!(!out.is_error, "{}", text_of(&out));
    fixture.expect(|e| e["entry"] == "hello grounding");
    let read = run(&ui, json!({"action": "read", "ref": reference}));
    let answer: Value = serde_json::from_str(&text_of(&read)).unwrap();
    assert_eq!(answer["text"], "hello grounding");
}

#[test]
fn double_click_by_role_and_name_and_by_ref_opens_the_file_a_single_click_does_not() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements double");
    snapshot_with(&desk.tree(), "Elements double");
    let (_computer, ui) = tools(&desk);
    // A single click opens nothing.
    let out = run(
        &ui,
        json!({"action": "click", "role": "push button", "name": "Report.txt"}),
    );
    assert!(!out.is_error, "{}", text_of(&out));
    // Longer than GTK's double-click time (400 ms): a second click would have come by then.
    fixture.none_within(
        Duration::from_millis(700),
        |e| e.get("opened").is_some(),
        "a single click opened a file",
    );

    let out = run(
        &ui,
        json!({"action": "double_click", "role": "push button", "name": "Report.txt"}),
    );
    assert!(!out.is_error, "{}", text_of(&out));
    assert!(
        text_of(&out).contains("double-clicked **Report.txt** (push button)"),
        "{}",
        text_of(&out)
    );
    fixture.expect(|e| e["opened"] == "Report.txt");

    let rows = found(
        &ui,
        json!({"action": "find", "query": "Budget", "role": "push button"}),
    );
    let row = rows
        .iter()
        .find(|e| e["window"] == "Elements double")
        .unwrap_or_else(|| panic!("no Budget.ods button in {rows:?}"));
    let out = run(&ui, json!({"action": "double_click", "ref": row["ref"]}));
    assert!(!out.is_error, "{}", text_of(&out));
    fixture.expect(|e| e["opened"] == "Budget.ods");
}

#[test]
fn the_approval_for_a_computer_click_names_the_button_under_it() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements approval");
    let tree = desk.tree();
    let snapshot = snapshot_with(&tree, "Elements approval");
    // The point query behind an approval finds what the whole map finds there.
    for name in ["Delete", "Cancel", "Save", "drawing"] {
        let (x, y) = fixture.rect(name).centre();
        let at = tree.at(x, y).unwrap().map(|e| (e.key, e.name, e.role));
        let in_map = snapshot
            .at(x, y)
            .map(|e| (e.key.clone(), e.name.clone(), e.role.clone()));
        assert!(at.is_some(), "nothing found at the centre of {name}");
        assert_eq!(at, in_map, "{name}");
    }
    assert!(tree.at(1900, 1060).unwrap().is_none());
    let (computer, _ui) = tools(&desk);
    let (cx, cy) = fixture.rect("Delete").centre();
    let (mx, my) = computer.mapping().to_model(cx, cy).unwrap();
    let plan = computer
        .plan(&json!({"action": "left_click", "coordinate": [mx, my]}))
        .unwrap();
    let target = plan.target.expect("a click has a target");
    assert_eq!(
        (target.name.as_str(), target.role.as_str()),
        ("Delete", "push button")
    );
    assert!(target.known && target.sensitive);
    assert!(
        plan.summary.contains("**Delete** (push button)"),
        "{}",
        plan.summary
    );
    // Where nothing is known, it says so.
    let (ex, ey) = computer.mapping().to_model(1900, 1060).unwrap();
    let plan = computer
        .plan(&json!({"action": "left_click", "coordinate": [ex, ey]}))
        .unwrap();
    assert!(!plan.target.unwrap().known);
    assert!(plan.summary.contains("unknown target"), "{}", plan.summary);
}

#[test]
fn ocr_finds_a_drawn_word_and_a_click_on_it_lands_inside_its_box() {
    let Some((_display, desk)) = on_desk(true) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements ocr");
    snapshot_with(&desk.tree(), "Elements ocr");
    let (computer, ui) = tools(&desk);
    let words = found(&ui, json!({"action": "find", "query": "ZEBRA"}));
    let drawing = fixture.rect("drawing");
    let word = words
        .iter()
        .find(|w| w["source"] == "ocr")
        .unwrap_or_else(|| panic!("OCR found no ZEBRA: {words:?}"));
    let [x, y, w, h] = [0, 1, 2, 3].map(|i| word["bounds"][i].as_u64().unwrap() as u32);
    let (left, top) = computer.mapping().to_screen(x, y);
    let (right, bottom) = computer.mapping().to_screen(x + w, y + h);
    assert!(
        drawing.contains(left, top) && drawing.contains(right, bottom),
        "{word} in {drawing:?}"
    );
    let out = run(&ui, json!({"action": "click", "ref": word["ref"]}));
    assert!(!out.is_error, "{}", text_of(&out));
    let (px, py) = x11::pointer();
    assert!(
        (left..=right).contains(&px) && (top..=bottom).contains(&py),
        "the pointer at ({px}, {py}) is inside the word's box ({left}, {top})–({right}, {bottom})"
    );
    // A word's ref holds while the word is where it was: a window coming up elsewhere (as the
    // app's bar is up while an action is planned) leaves it good, one over the word does not.
    let xterm = |title: &str, geometry: String| {
        let (program, id) = x11::xterm(title, &["-bg", "black", "-geometry", &geometry]);
        (program, x11::window_geometry(&id))
    };
    let words = found(&ui, json!({"action": "find", "query": "ZEBRA"}));
    let word = words.iter().find(|w| w["source"] == "ocr").unwrap();
    let (_elsewhere, (ex, ey, ew, eh)) = xterm("elements-elsewhere", "80x3-0+0".into());
    let apart = ex > right || ey > bottom || ex + ew as i32 <= left || ey + eh as i32 <= top;
    assert!(apart, "the window at ({ex}, {ey}) is clear of the word");
    let out = run(&ui, json!({"action": "click", "ref": word["ref"]}));
    assert!(!out.is_error, "{}", text_of(&out));
    let (_over, _) = xterm("elements-over", format!("20x3+{left}+{top}"));
    let out = run(&ui, json!({"action": "click", "ref": word["ref"]}));
    assert!(out.is_error, "{}", text_of(&out));
    assert!(
        text_of(&out).contains("the screen changed since `find` read the word"),
        "{}",
        text_of(&out)
    );
}

/// A private Xvfb on the first free display number from 140.
struct Xvfb(Child, String);

impl Xvfb {
    fn start() -> Xvfb {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(140);
        let n = loop {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if !std::path::Path::new(&format!("/tmp/.X{n}-lock")).exists() {
                break n;
            }
        };
        let display = format!(":{n}");
        let child = Command::new("Xvfb")
            .args([
                display.as_str(),
                "-screen",
                "0",
                "800x600x24",
                // Not reset when its last client leaves: the pointer stays where it was put.
                "-noreset",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts");
        let socket = format!("/tmp/.X11-unix/X{n}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::path::Path::new(&socket).exists() {
            assert!(Instant::now() < deadline, "Xvfb {display} did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Xvfb(child, display)
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn two_private_desktops_at_once_each_see_only_their_own_apps() {
    if !prerequisites(false) {
        return;
    }
    let runtime = tempfile::tempdir().unwrap();
    let desktops: Vec<(Xvfb, DesktopBus, &str)> = ["Desktop one", "Desktop two"]
        .into_iter()
        .enumerate()
        .map(|(i, title)| {
            let x = Xvfb::start();
            let bus = DesktopBus::start(&x.1, &runtime.path().join(i.to_string())).unwrap();
            (x, bus, title)
        })
        .collect();
    let fixtures: Vec<Fixture> = desktops
        .iter()
        .map(|(_, bus, title)| Fixture::start(bus.command(PYTHON), title, &[]))
        .collect();
    for (i, (_, bus, title)) in desktops.iter().enumerate() {
        let tree: Arc<dyn Tree> = Arc::new(AtspiTree::on_bus(bus.address()));
        let snapshot = snapshot_with(tree.as_ref(), title);
        let other = desktops[1 - i].2;
        assert!(
            !snapshot.elements.iter().any(|e| e.window == other),
            "{title} sees {other}'s window"
        );
        assert!(snapshot.elements.iter().any(|e| e.name == "Delete"));
    }
    drop(fixtures);
}

/// The model point at the centre of the fixture's `name` button.
fn centre_of(computer: &ComputerTool, fixture: &Fixture, name: &str) -> Value {
    let (x, y) = fixture.rect(name).centre();
    let (mx, my) = computer.mapping().to_model(x, y).unwrap();
    json!([mx, my])
}

/// `deskhand ask --json --tools computer --approve <approve> <prompt>` on a terminal where
/// `answer` is typed at each approval prompt: the terminal's text (prompts included) and the
/// `approval_needed` events, after checking that the run ended well.
fn computer_ask_on_terminal(
    data: &std::path::Path,
    env: &[(&str, String)],
    answer: &str,
    approve: &str,
    prompt: &str,
) -> (String, Vec<Value>) {
    let args = [
        "ask",
        "--json",
        "--tools",
        "computer",
        "--approve",
        approve,
        prompt,
    ];
    let (status, screen) = on_terminal(data, env, answer, &args);
    let text = String::from_utf8_lossy(&screen).into_owned();
    assert_eq!(status, 0, "{text}");
    let asked = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim_end()).ok())
        .filter(|e| e["type"] == "approval_needed")
        .collect();
    (text, asked)
}

#[test]
fn the_terminal_names_delete_and_auto_mode_asks_for_delete_but_not_for_cancel() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements terminal");
    snapshot_with(&desk.tree(), "Elements terminal");
    let (computer, _ui) = tools(&desk);
    let click = |name: &str| {
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": centre_of(&computer, &fixture, name)}),
        )
    };
    let data = tempfile::tempdir().unwrap();
    let env = |api: &StandIn| {
        vec![
            ("ANTHROPIC_API_KEY", crate::support::API_KEY.to_string()),
            ("ANTHROPIC_BASE_URL", api.url()),
        ]
        .into_iter()
        .chain(desk.env())
        .collect::<Vec<_>>()
    };
    // Ask mode: the terminal's prompt names the button; the answer is no, so nothing runs.
    let api = StandIn::spawn([click("Delete"), Turn::text("done")]);
    let (text, _) = computer_ask_on_terminal(data.path(), &env(&api), "n", "ask", "delete it");
    let prompt = text
        .lines()
        .find(|l| l.contains(PROMPT_END.trim_end()))
        .unwrap_or_else(|| panic!("no approval prompt:\n{text}"));
    // On a terminal the name is bold (ANSI), never the summary's markup.
    assert!(
        prompt.contains("\u{1b}[1mDelete\u{1b}[22m (push button)") && !prompt.contains("**"),
        "{prompt}"
    );

    // Auto mode: Cancel is clicked without asking; Delete asks (and is denied).
    let api = StandIn::spawn([click("Cancel"), click("Delete"), Turn::text("done")]);
    let (text, asked) = computer_ask_on_terminal(data.path(), &env(&api), "n", "auto", "tidy");
    assert_eq!(asked.len(), 1, "only Delete asks: {text}");
    let target = &asked[0]["request"]["target"];
    assert_eq!(target["name"], "Delete");
    assert_eq!(target["role"], "push button");
    assert_eq!(target["sensitive"], true);
    fixture.expect(|e| e["clicked"] == "Cancel");
    // The Cancel click arrived after the denial; a Delete click would have been as quick.
    fixture.none_within(
        Duration::from_millis(300),
        |e| e["clicked"] == "Delete",
        "the denied Delete was clicked",
    );
}

#[test]
fn deskhand_elements_prints_the_map_as_text_and_json() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements cli");
    snapshot_with(&desk.tree(), "Elements cli");
    let (computer, _ui) = tools(&desk);
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_deskhand"))
            .envs(desk.env())
            .arg("elements")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&run(&["--json"])).unwrap();
    let delete = json["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["window"] == "Elements cli" && e["name"] == "Delete")
        .unwrap_or_else(|| panic!("no Delete in {json}"));
    let want = fixture
        .rect("Delete")
        .to_model(&computer.mapping())
        .unwrap();
    assert_eq!(delete["bounds"], json!(want));
    assert_eq!(delete["role"], "push button");
    let text = run(&[]);
    let line = text
        .lines()
        .find(|l| l.contains("\"Delete\"") && l.contains("Elements cli"))
        .unwrap_or_else(|| panic!("no Delete line in {text}"));
    assert!(
        line.contains("push button") && line.contains("(sensitive)"),
        "{line}"
    );
}

/// The tool result in the last message of a request the stand-in received.
fn last_tool_result(request: &Value) -> Value {
    let last = request["messages"].as_array().unwrap().last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "tool_result")
        .cloned()
        .unwrap_or_else(|| panic!("no tool_result in {last}"))
}

/// The texts and the first image (decoded) of the tool result in the last message of a
/// request the stand-in received.
fn tool_result_of(request: &Value) -> (String, image::RgbaImage) {
    let result = last_tool_result(request);
    let parts = result["content"].as_array().unwrap();
    let texts = parts
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let data = parts
        .iter()
        .find(|p| p["type"] == "image")
        .and_then(|p| p["source"]["data"].as_str())
        .expect("a screenshot");
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    (texts, image::load_from_memory(&bytes).unwrap().to_rgba8())
}

#[test]
fn ask_set_of_marks_numbers_the_buttons_on_the_screenshots_the_model_gets() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Elements marks");
    snapshot_with(&desk.tree(), "Elements marks");
    let (computer, _ui) = tools(&desk);
    let data = tempfile::tempdir().unwrap();
    let look = |flags: &[&str]| {
        let api = StandIn::spawn([
            Turn::tool_use("computer", json!({"action": "screenshot"})),
            Turn::text("seen"),
        ]);
        let out = crate::support::cli::deskhand_at(&api, data.path())
            .envs(desk.env())
            .args(["ask", "--tools", "computer", "--approve", "deny"])
            .args(flags)
            .arg("look")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tool_result_of(&api.accepted()[1].body)
    };
    let [x, y, _, _] = fixture
        .rect("Delete")
        .to_model(&computer.mapping())
        .unwrap();
    // The mark's number tag fills the box's top-left corner with magenta.
    let magenta = image::Rgba([255, 0, 255, 255]);

    let (plain_text, plain) = look(&[]);
    assert!(
        !plain_text.contains("Marks on this screenshot"),
        "{plain_text}"
    );
    assert_ne!(
        plain.get_pixel(x + 1, y + 1),
        &magenta,
        "no mark by default"
    );

    let (marked_text, marked) = look(&["--set-of-marks"]);
    assert_eq!(marked.dimensions(), plain.dimensions(), "the same size");
    let line = marked_text
        .lines()
        .find(|l| l.ends_with("push button \"Delete\""))
        .unwrap_or_else(|| panic!("Delete is not in the marks: {marked_text}"));
    assert!(
        line.split(" = ").nth(1).is_some_and(|r| r.starts_with('e')),
        "a mark names a ref the ui tool takes: {line}"
    );
    assert_eq!(marked.get_pixel(x + 1, y + 1), &magenta, "Delete is marked");
}

/// How long a snapshot or a hit test may take while an app misbehaves: the tree's 500 ms
/// timeout, and room for a loaded machine.
const FAULT_LIMIT: Duration = Duration::from_millis(1500);

/// `f`'s answer and how long it took.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let answer = f();
    (answer, started.elapsed())
}

#[test]
fn an_app_that_hangs_on_dbus_is_left_out_by_name_and_the_others_still_answer() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let hung = Fixture::on_display(&desk, "Elements hung");
    let awake = Fixture::on_display(&desk, "Elements awake");
    let tree = desk.tree();
    snapshot_with(&tree, "Elements hung");
    snapshot_with(&tree, "Elements awake");
    let pid = hung.child.id();
    // Stopped, the app keeps its bus name and its window but answers nothing.
    x11::run("kill", &["-STOP", &pid.to_string()]);

    let (snapshot, took) = timed(|| tree.snapshot().expect("the tree answers"));
    assert!(took < FAULT_LIMIT, "the snapshot took {took:?}");
    assert!(
        snapshot.notes.iter().any(|n| n.contains(&format!(
            "(python3, pid {pid}) did not answer within 500 ms and is left out"
        ))),
        "{:?}",
        snapshot.notes
    );
    assert!(
        !snapshot
            .elements
            .iter()
            .any(|e| e.window == "Elements hung")
    );
    assert!(
        snapshot
            .elements
            .iter()
            .any(|e| e.window == "Elements awake" && e.name == "Save")
    );

    // The hit test behind an approval answers in time too, with the awake app's button.
    let (x, y) = awake.rect("Save").centre();
    let (hit, took) = timed(|| tree.at(x, y).expect("the hit test answers"));
    assert!(took < FAULT_LIMIT, "the hit test took {took:?}");
    let hit = hit.expect("an element at Save");
    assert_eq!(
        (hit.name.as_str(), hit.window.as_str()),
        ("Save", "Elements awake")
    );

    // The run goes on: the ui tool clicks the awake app's Save by name.
    let (_computer, ui) = tools(&desk);
    let out = run(
        &ui,
        json!({"action": "click", "role": "push button", "name": "Save"}),
    );
    assert!(!out.is_error, "{}", text_of(&out));
    awake.expect(|e| e["clicked"] == "Save");
}

#[test]
fn a_tree_too_large_to_read_in_time_gives_its_first_nodes_and_says_so() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    // 6,000 check buttons beside the buttons, and a table of 100,000 rows.
    let big = Fixture::start(
        desk.bus.command(PYTHON),
        "Elements big",
        &["6000", "100000"],
    );
    let tree = desk.tree();
    snapshot_with(&tree, "Elements big");

    let (snapshot, took) = timed(|| tree.snapshot().expect("the tree answers"));
    assert!(took < FAULT_LIMIT, "the snapshot took {took:?}");
    let delete = snapshot
        .elements
        .iter()
        .find(|e| e.window == "Elements big" && e.name == "Delete")
        .unwrap_or_else(|| panic!("the first nodes hold Delete: {:?}", snapshot.notes));
    assert_eq!(delete.bounds, big.rect("Delete"));
    let app = format!("{}: ", delete.app);
    assert!(
        snapshot
            .notes
            .iter()
            .any(|n| n.starts_with(&app) && n.contains("; only the first ")),
        "a note names the cut: {:?}",
        snapshot.notes
    );
    assert!(
        snapshot.elements.len() < 6000,
        "{}",
        snapshot.elements.len()
    );

    let (x, y) = big.rect("Save").centre();
    let (hit, took) = timed(|| tree.at(x, y).expect("the hit test answers"));
    assert!(took < FAULT_LIMIT, "the hit test took {took:?}");
    assert_eq!(hit.map(|e| e.name), Some("Save".to_string()));
}

#[test]
fn without_tesseract_ocr_says_it_is_not_installed_and_the_run_goes_on() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let _fixture = Fixture::on_display(&desk, "Elements no OCR");
    snapshot_with(&desk.tree(), "Elements no OCR");
    let no_tesseract = tempfile::tempdir().unwrap();
    let path = ("PATH", no_tesseract.path().display().to_string());
    let not_installed = "the `tesseract` program is not installed";

    // `deskhand elements --ocr`: the tree's elements, and a note for the words.
    let out = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .envs(desk.env())
        .env(path.0, &path.1)
        .args(["elements", "--ocr", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let map: Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = map["notes"].to_string();
    assert!(notes.contains(not_installed), "{notes}");
    assert!(
        map["elements"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["window"] == "Elements no OCR" && e["name"] == "Delete"),
        "{map}"
    );

    // A `find` that falls back to OCR is an error result naming the missing program, and
    // the model's next turn finishes the run.
    let api = StandIn::spawn([
        Turn::tool_use("ui", json!({"action": "find", "query": "ZEBRA"})),
        Turn::text("There is no OCR here."),
    ]);
    let data = tempfile::tempdir().unwrap();
    let out = crate::support::cli::deskhand_at(&api, data.path())
        .envs(desk.env())
        .env(path.0, &path.1)
        .args([
            "ask",
            "--json",
            "--tools",
            "ui",
            "--approve",
            "deny",
            "find the zebra",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = last_tool_result(&api.accepted()[1].body);
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result.to_string().contains(not_installed), "{result}");
    let done = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "done")
        .expect("a done event");
    assert_eq!(
        (&done["status"], &done["turns"]),
        (&json!("done"), &json!(2))
    );
}

#[test]
fn with_no_accessibility_bus_the_map_says_so_and_a_click_still_lands_named_unknown() {
    let Some(_display) = x11::display() else {
        return;
    };
    if !prerequisites(false) {
        return;
    }
    // A desktop of its own, with no session bus and no accessibility bus.
    let x = Xvfb::start();
    let no_bus = [
        ("DISPLAY", x.1.clone()),
        (
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/bus".into(),
        ),
        ("AT_SPI_BUS_ADDRESS", "unix:path=/nonexistent/at-spi".into()),
    ];
    let data = tempfile::tempdir().unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .envs(no_bus.clone())
        .args(["elements", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let map: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(map["elements"], json!([]), "{map}");
    assert!(
        map["notes"][0]
            .as_str()
            .is_some_and(|n| n.starts_with("no accessibility bus: ")),
        "{map}"
    );

    // The computer tool works on pixels: the approval says why nothing is known, and the
    // approved click lands (the screen is 800x600, so model and screen points are the same).
    let api = StandIn::spawn([
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": [200, 150]}),
        ),
        Turn::text("done"),
    ]);
    let env: Vec<(&str, String)> = [
        ("ANTHROPIC_API_KEY", crate::support::API_KEY.to_string()),
        ("ANTHROPIC_BASE_URL", api.url()),
    ]
    .into_iter()
    .chain(no_bus.clone())
    .collect();
    let (text, asked) = computer_ask_on_terminal(data.path(), &env, "y", "ask", "click");
    let asked = asked
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no approval_needed in {text}"));
    let target = &asked["request"]["target"];
    assert_eq!(target["known"], false, "{asked}");
    assert_eq!(target["why"], "no accessibility bus", "{asked}");
    assert!(
        asked["request"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("an unknown target (no accessibility bus)")),
        "{asked}"
    );
    let pointer = Command::new("xdotool")
        .env("DISPLAY", &x.1)
        .args(["getmouselocation", "--shell"])
        .output()
        .unwrap();
    let pointer = String::from_utf8_lossy(&pointer.stdout);
    assert!(
        pointer.contains("X=200\n") && pointer.contains("Y=150\n"),
        "{pointer}\n{text}"
    );
}

/// The person's "Banking" window on their screen, beside an agent desktop where the agent
/// starts the same app (sandboxed) as "Agent app", at the same place: a run there lists the
/// agent's app and nothing of the person's (their window, the text they typed), and the
/// approval for a click on the agent desktop, at the very pixel of the person's Delete button,
/// names the agent's Delete, not theirs.
#[test]
fn an_agent_desktop_reads_its_own_tree_and_nothing_of_the_persons_screen() {
    let Some((_display, desk)) = on_desk(false) else {
        return;
    };
    let fixture = Fixture::on_display(&desk, "Banking");
    snapshot_with(&desk.tree(), "Banking");
    // The person types into their window's entry.
    let (_computer, person_ui) = tools(&desk);
    let entry = found(
        &person_ui,
        json!({"action": "find", "query": "Title", "role": "text"}),
    )
    .into_iter()
    .find(|e| e["window"] == "Banking")
    .expect("the person's entry");
    let typed = json!({"action": "type", "ref": entry["ref"], "text": "IBAN DE89 3704"});
    assert!(!run(&person_ui, typed).is_error);
    fixture.expect(|e| e["entry"] == "IBAN DE89 3704");
    let data = tempfile::tempdir().unwrap();
    let share = tempfile::tempdir().unwrap();
    let share = share.path();
    std::fs::copy(FIXTURE, share.join("app.py")).unwrap();
    let start_app = format!(
        "{PYTHON} {}/app.py 'Agent app' >/dev/null 2>&1 & \
         for i in $(seq 100); do xdotool search --onlyvisible --name 'Agent app' && break; \
         sleep 0.1; done; sleep 1",
        share.display()
    );
    // The agent desktop (1280x800) maps model coordinates one to one.
    let (x, y) = fixture.rect("Delete").centre();
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": start_app})),
        Turn::tool_use("ui", json!({"action": "elements"})),
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": [x, y]}),
        ),
        Turn::text("done"),
    ]);
    let runtime = data.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let env: Vec<(&str, String)> = vec![
        ("ANTHROPIC_API_KEY", crate::support::API_KEY.to_string()),
        ("ANTHROPIC_BASE_URL", api.url()),
        ("DESKHAND_FIRST_DISPLAY", "360".into()),
    ]
    .into_iter()
    .chain(desk.env())
    .chain([("XDG_RUNTIME_DIR", runtime.display().to_string())])
    .collect();
    let share_arg = share.display().to_string();
    let args = [
        "ask",
        "--json",
        "--desktop",
        "agent",
        "--share",
        &share_arg,
        "--tools",
        "bash,ui,computer",
        "--approve",
        "ask",
        "look around",
    ];
    // Bash and the click ask; bash is allowed, the click refused.
    let (status, screen) = on_terminal(data.path(), &env, "y", &args);
    let text = String::from_utf8_lossy(&screen).into_owned();
    assert_eq!(status, 0, "{text}");
    let listed = last_tool_result(&api.accepted()[2].body).to_string();
    assert!(
        listed.contains(r#"\"window\":\"Agent app\""#),
        "the agent's own app is in its map: {listed}"
    );
    for label in ["Banking", "IBAN DE89 3704"] {
        assert!(
            !listed.contains(label),
            "the person's {label:?} in the agent desktop's map: {listed}"
        );
    }
    let asked: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim_end()).ok())
        .filter(|e| e["type"] == "approval_needed" && e["request"]["tool"] == "computer")
        .collect();
    assert_eq!(asked.len(), 1, "{text}");
    let target = &asked[0]["request"]["target"];
    // The agent's copy of the app is `app.py`; the person's is `gtk_fixture.py`.
    assert_eq!(target["app"], "app.py", "{target}");
    assert_eq!(target["name"], "Delete", "{target}");
    // A click that went astray reaches a window in milliseconds.
    fixture.none_within(
        Duration::from_millis(300),
        |e| e["clicked"] == "Delete",
        "a click reached the person's window",
    );
}
