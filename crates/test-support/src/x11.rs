//! The real X display the computer tests drive (Xvfb under `scripts/test.sh`), and the X
//! programs that report what reached it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Tests in one binary share the display (and its one pointer): they take turns.
static DISPLAY_LOCK: Mutex<()> = Mutex::new(());

/// The display, held for the calling test, or `None` (the test is skipped) when no display is
/// configured. With `DESKHAND_TEST_DISPLAY` set, a display that does not work is a failure.
pub fn display() -> Option<MutexGuard<'static, ()>> {
    let guard = DISPLAY_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let works = std::env::var_os("DISPLAY").is_some()
        && Command::new("xdpyinfo")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if works {
        return Some(guard);
    }
    if std::env::var_os("DESKHAND_TEST_DISPLAY").is_some() {
        panic!(
            "DESKHAND_TEST_DISPLAY is set but no X display works (DISPLAY={:?})",
            std::env::var("DISPLAY").ok()
        );
    }
    eprintln!("skipped: no X display (run scripts/test.sh, or set DISPLAY)");
    None
}

/// Runs a command and returns its stdout; panics with its stderr on failure.
/// Waits (at most 5 s) until two captures of the whole display 200 ms apart are the same: a
/// window that the previous test closed takes a moment to go, and a test about what an
/// action changes on the screen must not see it go.
pub fn wait_until_still() {
    let capture = || {
        Command::new("import")
            .args(["-window", "root", "-depth", "8", "rgb:-"])
            .stderr(Stdio::null())
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut last = capture();
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let next = capture();
        if !next.is_empty() && next == last {
            return;
        }
        last = next;
    }
}

pub fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where the pointer is, as `xdotool getmouselocation` reports it.
pub fn pointer() -> (i32, i32) {
    let out = run("xdotool", &["getmouselocation", "--shell"]);
    let field = |name: &str| -> i32 {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {out}"))
    };
    (field("X"), field("Y"))
}

/// A window's id, waiting for it to be mapped.
pub fn window_by_name(name: &str) -> String {
    let out = run(
        "xdotool",
        &["search", "--sync", "--onlyvisible", "--name", name],
    );
    out.lines().next().expect("a window id").to_string()
}

/// A window's top-left corner and size on the desktop.
pub fn window_geometry(id: &str) -> (i32, i32, u32, u32) {
    let out = run("xdotool", &["getwindowgeometry", "--shell", id]);
    let field = |name: &str| -> i64 {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {out}"))
    };
    (
        field("X") as i32,
        field("Y") as i32,
        field("WIDTH") as u32,
        field("HEIGHT") as u32,
    )
}

/// A process ended when dropped.
pub struct Program(pub Child);

/// An xterm titled `title` (with more of xterm's `args`), and its window's id once it shows.
pub fn xterm(title: &str, args: &[&str]) -> (Program, String) {
    let program = Program(
        Command::new("xterm")
            .args(["-T", title])
            .args(args)
            .spawn()
            .unwrap_or_else(|e| panic!("xterm: {e}")),
    );
    let id = window_by_name(&format!("^{title}$"));
    (program, id)
}

/// Says window `id` is process `pid`'s (`_NET_WM_PID`), as that process's own windows say.
pub fn claim_window(id: &str, pid: u32) {
    let pid = pid.to_string();
    let property = [
        "-id",
        id,
        "-f",
        "_NET_WM_PID",
        "32c",
        "-set",
        "_NET_WM_PID",
        &pid,
    ];
    run("xprop", &property);
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An `xev` window that records the events it receives, one line of text per event.
pub struct Xev {
    _program: Program,
    lines: Arc<Mutex<Vec<String>>>,
    pub id: String,
}

/// One input event as xev reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct XEvent {
    /// `KeyPress`, `ButtonRelease`, `MotionNotify`...
    pub kind: String,
    pub root: (i32, i32),
    pub button: Option<u32>,
    pub keysym: Option<String>,
}

impl Xev {
    /// An xev window at `(x, y)` of `width` x `height`, titled `name`.
    pub fn open(name: &str, x: i32, y: i32, width: u32, height: u32) -> Xev {
        let geometry = format!("{width}x{height}+{x}+{y}");
        let mut child = Command::new("stdbuf")
            .args([
                "-oL",
                "xev",
                "-name",
                name,
                "-geometry",
                &geometry,
                "-event",
                "keyboard",
                "-event",
                "button",
                "-event",
                "mouse",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("xev starts");
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let program = Program(child);
        let id = window_by_name(name);
        Xev {
            _program: program,
            lines,
            id,
        }
    }

    /// The events so far.
    pub fn events(&self) -> Vec<XEvent> {
        let lines = self.lines.lock().unwrap().clone();
        let text = lines.join("\n");
        text.split("\n\n")
            .filter_map(|block| {
                let kind = block.trim_start().split(' ').next()?.to_string();
                let root = block.split("root:(").nth(1).and_then(|r| {
                    let (x, rest) = r.split_once(',')?;
                    let y = rest.split(')').next()?;
                    Some((x.trim().parse().ok()?, y.trim().parse().ok()?))
                })?;
                let button = block
                    .split("button ")
                    .nth(1)
                    .and_then(|b| b.split(',').next()?.trim().parse().ok());
                let keysym = block
                    .split("(keysym ")
                    .nth(1)
                    .and_then(|k| k.split(')').next()?.split(", ").nth(1).map(str::to_string));
                Some(XEvent {
                    kind,
                    root,
                    button,
                    keysym,
                })
            })
            .collect()
    }

    /// Waits until `done` holds for the events (at most 10 s), then returns them.
    pub fn wait_for(&self, what: &str, done: impl Fn(&[XEvent]) -> bool) -> Vec<XEvent> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let events = self.events();
            if done(&events) {
                return events;
            }
            if Instant::now() > until {
                panic!("xev never saw {what}; it saw: {events:#?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
