//! How long an agent desktop takes to be ready to act: from `AgentDesktop::start` until the
//! computer tool's screen is open on it and a first frame is captured, against the baseline of
//! a bare Xvfb (no bus, no window manager, no registry) until the same screen is open and
//! the same first frame captured: what any private display costs at least.
//!
//! Run: `cargo bench -p deskhand --bench desktop` (or, without a release build,
//! `cargo test -p deskhand --bench desktop`, whose dependencies are optimised as well).

mod support;

use std::time::{Duration, Instant};

use deskhand::desktop::AgentDesktop;
use deskhand::tools::computer::screen::{RealScreen, Screen as _};
use support::median;

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
}
