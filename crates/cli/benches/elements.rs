//! The element map's costs on a real GTK 3 app (the test fixture with 140 extra check
//! buttons, about 300 accessible nodes) on a real display and AT-SPI bus:
//!
//! 1. the element map (every app's showing elements with bounds), target < 15 ms median;
//! 2. the hit test behind an approval (a computer click's `plan`), target < 10 ms;
//! 3. `find` with the OCR fallback on the whole screen, target < 1 s, and the same OCR on a
//!    busy screen (the window tiled over the whole frame), for which no target is set;
//! 4. a click by name (`ui` click by role and name) against a click by coordinates (the
//!    computer tool's `left_click`), each from the request to the settled screenshot;
//! 5. set-of-marks: how many marks, and the tokens the list adds (the image's do not change).
//!
//! Run under a display and a session bus:
//! `DISPLAY=:NN dbus-run-session -- cargo bench -p deskhand --bench elements`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use deskhand_engine::elements::Tree;
use deskhand_engine::elements::atspi_tree::AtspiTree;
use deskhand_engine::elements::refs::RefBook;
use deskhand_engine::tools::catalog::ToolSettings;
use deskhand_engine::tools::computer::pipeline::Format;
use deskhand_engine::tools::computer::screen::Frame;
use deskhand_engine::tools::computer::{ComputerTool, marks_for};
use deskhand_engine::tools::ui::UiTool;
use deskhand_engine::tools::{Tool, ToolContext};
use serde_json::{Value, json};
use support::median;
use tokio_util::sync::CancellationToken;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gtk_fixture.py");
/// The system's Python, which Debian's GTK bindings (python3-gi) belong to; a `python3`
/// earlier on PATH (pyenv, a venv) may not have them.
const PYTHON: &str = "/usr/bin/python3";

fn timed(runs: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// A frame the size of `frame` covered with copies of the fixture window's part of it (from its
/// first button to its bottom edge, inside its frame), so that no edge is blank.
fn tiled_window(frame: &Frame, bounds: &Value) -> Frame {
    let n = |name: &str, i: usize| bounds[name][i].as_i64().unwrap() as u32;
    let (left, top) = (
        n("Delete", 0).saturating_sub(10),
        n("Delete", 1).saturating_sub(15),
    );
    let right = (n("drawing", 0) + n("drawing", 2) + 10).min(frame.size.width);
    let bottom = (n("drawing", 1) + n("drawing", 3) + 360).min(frame.size.height);
    let (w, h) = (right - left, bottom - top);
    let mut rgba = Vec::with_capacity(frame.rgba.len());
    for y in 0..frame.size.height {
        for x in 0..frame.size.width {
            let (sx, sy) = (left + x % w, top + y % h);
            let i = ((sy * frame.size.width + sx) * 4) as usize;
            rgba.extend_from_slice(&frame.rgba[i..i + 4]);
        }
    }
    Frame {
        size: frame.size,
        rgba,
    }
}

fn main() {
    if std::env::var_os("DISPLAY").is_none()
        || std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none()
    {
        eprintln!("elements bench: needs DISPLAY and a session bus (dbus-run-session); skipped");
        return;
    }
    let mut fixture = Command::new(PYTHON)
        .args([FIXTURE, "Elements bench", "140"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 with GTK 3");
    let mut ready = String::new();
    BufReader::new(fixture.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let bounds: Value = serde_json::from_str::<Value>(&ready).unwrap()["ready"].clone();
    let tree = AtspiTree::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let snapshot = loop {
        let s = tree.snapshot().expect("the accessibility bus answers");
        if s.elements.iter().any(|e| e.window == "Elements bench") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the fixture never showed in the tree"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let showing = snapshot
        .elements
        .iter()
        .filter(|e| e.window == "Elements bench")
        .count();

    let map = timed(30, || {
        tree.snapshot().unwrap();
    });
    println!(
        "element map ({showing} showing elements of the fixture, ~300 nodes): median {}",
        ms(map)
    );

    let computer = ComputerTool::open(&ToolSettings {
        model: "claude-sonnet-4-5".into(),
        ..ToolSettings::default()
    })
    .expect("the computer tool works here");
    let centre = |name: &str| {
        let b = &bounds[name];
        let n = |i: usize| b[i].as_i64().unwrap() as i32;
        computer
            .mapping()
            .to_model(n(0) + n(2) / 2, n(1) + n(3) / 2)
            .unwrap()
    };
    let (dx, dy) = centre("Delete");
    let click_delete = json!({"action": "left_click", "coordinate": [dx, dy]});
    let hit = timed(30, || {
        let plan = computer.plan(&click_delete).unwrap();
        assert!(plan.target.unwrap().name == "Delete");
    });
    println!("hit test behind an approval: median {}", ms(hit));

    let ui = UiTool::new(computer.clone(), computer.tree().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new(CancellationToken::new());
    let run = |tool: &dyn Tool, input: Value| {
        let out = runtime.block_on(tool.run(&input, &ctx));
        assert!(!out.is_error, "{input}: {:?}", out.content);
    };
    let find_zebra = json!({"action": "find", "query": "ZEBRA"});
    let ocr = timed(5, || run(&ui, find_zebra.clone()));
    println!("find with the OCR fallback (1920x1080): median {}", ms(ocr));

    // The same OCR on a screen with no blank edges to cut: the fixture's window tiled over the
    // whole frame, as a busy desktop would be.
    let frame = computer.capture().unwrap();
    let busy = tiled_window(&frame, &bounds);
    let mut geometry = computer.mapping().geometry;
    geometry.pixels = busy.size;
    let words = deskhand_engine::elements::ocr::words(&busy, &geometry)
        .unwrap()
        .len();
    let ocr_busy = timed(5, || {
        deskhand_engine::elements::ocr::words(&busy, &geometry).unwrap();
    });
    println!(
        "OCR of a busy 1920x1080 screen (the window tiled, {words} words): median {}",
        ms(ocr_busy)
    );

    let (cx, cy) = centre("Cancel");
    let by_coordinates = timed(10, || {
        run(
            &computer,
            json!({"action": "left_click", "coordinate": [cx, cy]}),
        )
    });
    let by_name = timed(10, || {
        run(
            &ui,
            json!({"action": "click", "role": "push button", "name": "Cancel"}),
        )
    });
    println!(
        "click to settled screenshot: by coordinates median {}, by name median {} ({:.2}x)",
        ms(by_coordinates),
        ms(by_name),
        by_name.as_secs_f64() / by_coordinates.as_secs_f64()
    );

    let frame = computer.capture().unwrap();
    let snapshot = tree.snapshot().unwrap();
    let refs = Mutex::new(RefBook::default());
    let (_, list) = marks_for(&frame, &snapshot, &computer.mapping(), Format::Png, &refs).unwrap();
    let marks = list.lines().count() - 1;
    let model = computer.mapping().model;
    println!(
        "set-of-marks: {marks} marks; the list adds {} tokens ({:.1} a mark, chars/4 as the \
         context budget counts); the {model} image stays {} tokens",
        list.len() / 4 + 1,
        list.len() as f64 / 4.0 / marks.max(1) as f64,
        model.width * model.height / 750
    );
    let _ = fixture.kill();
    let _ = fixture.wait();
}
