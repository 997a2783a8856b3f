//! How long an agent desktop takes to be ready to act: from `AgentDesktop::start` until the
//! computer tool's screen is open on it and a first frame is captured, against the baseline of
//! a bare Xvfb (no bus, no window manager, no registry) until the same screen is open and
//! the same first frame captured: what any private display costs at least.
//!
//! Then, on one agent desktop: the live view's CPU while nothing changes (this process's
//! CPU time over 5 s of an idle desktop, a view running), how long after a change its frame
//! comes (the root window repainted in another colour, until the frame is handed over), and
//! the computer tool's click step there (click, settle, screenshot), against the same step on
//! the person's screen (`$DISPLAY`, when set) as the baseline.
//!
//! Run: `cargo bench -p deskhand --bench desktop` (or, without a release build,
//! `cargo test -p deskhand --bench desktop`, whose dependencies are optimised as well).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

use std::time::{Duration, Instant};

use std::sync::mpsc;

use deskhand_engine::desktop::AgentDesktop;
use deskhand_engine::desktop::live::LiveView;
use deskhand_engine::tools::catalog::ToolSettings;
use deskhand_engine::tools::computer::ComputerTool;
use deskhand_engine::tools::computer::capture::RealScreen;
use deskhand_engine::tools::computer::screen::Screen as _;
use deskhand_engine::tools::{Tool, ToolContext};
use serde_json::json;
use support::median;
use tokio_util::sync::CancellationToken;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{ChangeWindowAttributesAux, ConnectionExt as _};

const RUNS: usize = 15;

#[tokio::main]
async fn main() {
    let runtime = tempfile::tempdir().unwrap();
    // SAFETY: set before any other thread of this program reads the environment.
    unsafe {
        std::env::set_var("XDG_RUNTIME_DIR", runtime.path());
        std::env::set_var("DESKHAND_FIRST_DISPLAY", "240");
    }
    let mut ready = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let desktop = AgentDesktop::start().await.expect("a desktop");
        let screen = RealScreen::open_x11(&desktop.display_name()).expect("its screen");
        let monitor = screen.monitors().unwrap().remove(0);
        screen.capture(&monitor).expect("a frame");
        ready.push(started.elapsed());
        drop(desktop);
    }
    let mut xvfb = Vec::new();
    for _ in 0..RUNS {
        let display = (250..300)
            .find(|n| !std::path::Path::new(&format!("/tmp/.X{n}-lock")).exists())
            .unwrap();
        let started = Instant::now();
        let mut child = std::process::Command::new("Xvfb")
            .args([
                &format!(":{display}"),
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let socket = format!("/tmp/.X11-unix/X{display}");
        while !std::path::Path::new(&socket).exists() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let screen = RealScreen::open_x11(&format!(":{display}")).expect("its screen");
        let monitor = screen.monitors().unwrap().remove(0);
        screen.capture(&monitor).expect("a frame");
        xvfb.push(started.elapsed());
        drop(screen);
        child.kill().unwrap();
        child.wait().unwrap();
        let _ = std::fs::remove_file(format!("/tmp/.X{display}-lock"));
        let _ = std::fs::remove_file(&socket);
    }
    let (ready, xvfb) = (median(ready), median(xvfb));
    println!(
        "agent desktop ready (Xvfb, bus, openbox, screen open, first frame): median {ready:?} over {RUNS}"
    );
    println!("baseline, a bare Xvfb until screen open and first frame: median {xvfb:?}");
    println!("ratio: {:.2}", ready.as_secs_f64() / xvfb.as_secs_f64());
    live_view_and_click_step().await;
}

/// CPU time (user and system) this process has used so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

async fn live_view_and_click_step() {
    let desktop = AgentDesktop::start().await.expect("a desktop");
    let name = desktop.display_name();
    let (frames, arrived) = mpsc::channel::<Instant>();
    let view = LiveView::start(&name, 640, move |_| frames.send(Instant::now()).is_ok())
        .expect("a live view");
    arrived.recv().expect("a first frame");
    std::thread::sleep(Duration::from_millis(500));
    while arrived.try_recv().is_ok() {}

    let mut idle = Vec::new();
    for _ in 0..3 {
        let (cpu, wall) = (cpu_time(), Instant::now());
        std::thread::sleep(Duration::from_secs(5));
        idle.push((cpu_time() - cpu).as_secs_f64() / wall.elapsed().as_secs_f64() * 100.0);
    }
    assert!(arrived.try_recv().is_err(), "frames while idle");
    idle.sort_by(f64::total_cmp);
    println!(
        "live view, idle desktop: {:.3} % of one core (median of 3 x 5 s; all: {idle:.3?})",
        idle[1]
    );

    let (conn, number) = x11rb::connect(Some(&name)).expect("a connection");
    let root = conn.setup().roots[number].root;
    let mut latency = Vec::new();
    for round in 0..20u32 {
        // Past the view's 10-a-second limit, so each change is shown as soon as it can be.
        std::thread::sleep(Duration::from_millis(150));
        let colour = if round % 2 == 0 {
            0x00336699
        } else {
            0x00996633
        };
        conn.change_window_attributes(
            root,
            &ChangeWindowAttributesAux::new().background_pixel(colour),
        )
        .unwrap();
        conn.clear_area(false, root, 0, 0, 0, 0).unwrap();
        conn.flush().unwrap();
        let changed = Instant::now();
        let at = arrived
            .recv_timeout(Duration::from_secs(2))
            .expect("a frame after the change");
        latency.push(at.saturating_duration_since(changed));
        while arrived.try_recv().is_ok() {}
    }
    println!(
        "live view, change to frame: median {:?} over 20",
        median(latency)
    );
    drop(view);

    let agent = click_step(Some(name)).await;
    println!(
        "click step on the agent desktop (click, settle, screenshot): median {agent:?} over 20"
    );
    if std::env::var_os("DISPLAY").is_some() {
        let person = click_step(None).await;
        println!(
            "baseline, the same click step on the person's screen ($DISPLAY): median {person:?} over 20"
        );
        println!("ratio: {:.2}", agent.as_secs_f64() / person.as_secs_f64());
    }
}

/// The computer tool's click step (click, settle, screenshot) on `display`, or on the
/// person's screen: the median of 20, clicking a point where nothing is.
async fn click_step(display: Option<String>) -> Duration {
    let tool = ComputerTool::open(&ToolSettings {
        model: "claude-sonnet-4-5".into(),
        display,
        ..ToolSettings::default()
    })
    .expect("the computer tool");
    let ctx = ToolContext::new(CancellationToken::new());
    let click = json!({"action": "left_click", "coordinate": [1200, 760]});
    let mut steps = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let out = tool.run(&click, &ctx).await;
        assert!(!out.is_error, "{:?}", out.content);
        steps.push(started.elapsed());
    }
    median(steps)
}
