//! The computer tool's two costs per step, against the reference implementation's ways,
//! measured in the same run on the same screen:
//!
//! 1. The screenshot pipeline (capture, scale to the model's size, encode, base64) of a
//!    1920x1080 screen with real content (xterms full of text), against `scrot` then
//!    ImageMagick `convert -resize` then base64.
//! 2. A click step (click, settle, screenshot; no approval) on an idle screen, against the
//!    reference's click, fixed 2 s sleep, then `scrot` + `convert`.
//!
//! Also the encoded sizes: PNG (zlib level 1, what the model gets) against PNG in the
//! encoder's fastest mode and JPEG.
//!
//! Run: `cargo bench -p deskhand --bench computer`. Uses `$DISPLAY` if it is set, else
//! starts its own Xvfb (1920x1080) on :37.
//!
//! With `DESKHAND_BENCH_SWAY=1` the same is measured on the wlroots path instead: sway on its
//! headless backend (the test's compositor, `tests/support/sway.rs`, first output 1920x1080)
//! with terminals (`foot`) full of text, against `grim` then `convert` for the screenshot and
//! sway's own `seat - cursor` click, a 2 s sleep, then `grim` + `convert` for the step.
//!
//! With `DESKHAND_BENCH_PORTAL=1`, on the portal path: mutter headless (1280x800) with PipeWire
//! and xdg-desktop-portal (the portal tests' desktop, `tests/support/portal.rs`), terminals
//! full of text. No reference runs there: grim and scrot cannot capture mutter.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

#[path = "../tests/support/sway.rs"]
#[allow(dead_code)] // the tests use more of it
mod sway;

#[path = "../tests/support/portal.rs"]
#[allow(dead_code)] // the tests use more of it
mod portal;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use deskhand_engine::tools::catalog::ToolSettings;
use deskhand_engine::tools::computer::ComputerTool;
use deskhand_engine::tools::computer::capture::RealScreen;
use deskhand_engine::tools::computer::pipeline::{self, Format};
use deskhand_engine::tools::computer::scaling;
use deskhand_engine::tools::computer::screen::{self, Screen};
use deskhand_engine::tools::{Tool, ToolContext};
use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::{ExtendedColorType, ImageEncoder};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Kill(Vec<Child>);

impl Drop for Kill {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn spawn(program: &str, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

/// Where the bench runs: an X display, sway, or mutter through the portal.
enum Desktop {
    X11(#[allow(dead_code)] Kill),
    Sway(sway::Sway, #[allow(dead_code)] Vec<sway::Client>),
    Portal(
        #[allow(dead_code)] portal::Desktop,
        #[allow(dead_code)] Vec<sway::Client>,
    ),
}

/// Three terminals full of text.
fn terminals(client: impl Fn() -> Command) -> Vec<sway::Client> {
    let mut clients = Vec::new();
    for command in [
        "ls -la /usr/bin; sleep 600",
        "cat /etc/services; sleep 600",
        "env; sleep 600",
    ] {
        let child = client()
            .args(["sh", "-c", command])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("foot starts");
        clients.push(sway::Client(child));
    }
    std::thread::sleep(Duration::from_secs(2));
    clients
}

impl Desktop {
    fn start() -> Self {
        if std::env::var_os("DESKHAND_BENCH_PORTAL").is_some() {
            let desktop = portal::start().expect("mutter, PipeWire and the portal are installed");
            let clients = terminals(|| desktop.client("foot"));
            // SAFETY: set before any thread that reads the environment is started.
            unsafe {
                for (name, value) in desktop.env() {
                    std::env::set_var(name, value);
                }
                std::env::set_var("DESKHAND_CONFIG_DIR", desktop.path("config"));
            }
            return Self::Portal(desktop, clients);
        }
        if std::env::var_os("DESKHAND_BENCH_SWAY").is_none() {
            return Self::X11(display());
        }
        let sway = sway::start().expect("sway is installed");
        let clients = terminals(|| sway.client("foot"));
        // SAFETY: set before any thread that reads the environment is started.
        unsafe {
            std::env::set_var("WAYLAND_DISPLAY", sway.socket());
            std::env::set_var("XDG_SESSION_TYPE", "wayland");
        }
        Self::Sway(sway, clients)
    }

    /// The reference's screenshot: `scrot` (X11) or `grim` (wlroots), then `convert -resize`
    /// to the model size, then base64.
    fn reference_screenshot(&self, dir: &std::path::Path) -> usize {
        // grim runs as sway's user: it writes into sway's directory.
        let raw = match self {
            Self::Sway(sway, _) => sway.path("raw.png"),
            _ => dir.join("raw.png"),
        };
        let scaled = dir.join("scaled.png");
        let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
        match self {
            Self::X11(_) => ok(Command::new("scrot").arg("-o").arg(&raw)),
            Self::Sway(sway, _) => ok(sway.client("grim").args(["-o", "HEADLESS-1"]).arg(&raw)),
            Self::Portal(..) => unreachable!("no reference on the portal"),
        }
        ok(Command::new("convert")
            .arg(&raw)
            .args(["-resize", "1366x768!"])
            .arg(&scaled));
        BASE64.encode(std::fs::read(&scaled).unwrap()).len()
    }

    /// The reference's click at (1828, 1040) on the first monitor.
    fn reference_click(&self) {
        match self {
            Self::X11(_) => {
                let status = Command::new("xdotool")
                    .args(["mousemove", "1828", "1040", "click", "1"])
                    .status()
                    .unwrap();
                assert!(status.success());
            }
            Self::Portal(..) => unreachable!("no reference on the portal"),
            Self::Sway(sway, _) => {
                for command in [
                    &["seat", "-", "cursor", "set", "1828", "1040"][..],
                    &["seat", "-", "cursor", "press", "button1"],
                    &["seat", "-", "cursor", "release", "button1"],
                ] {
                    sway.msg(command);
                }
            }
        }
    }

    /// What the reference clicks and captures with, where there is one.
    fn reference_tools(&self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::X11(_) => Some(("xdotool", "scrot")),
            Self::Sway(..) => Some(("swaymsg seat cursor", "grim")),
            Self::Portal(..) => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Self::X11(_) => "X11 MIT-SHM",
            Self::Sway(..) => "sway wlr-screencopy",
            Self::Portal(..) => "mutter through the portal, PipeWire",
        }
    }
}

/// A display with real content on it: its own Xvfb unless `$DISPLAY` is set.
fn display() -> Kill {
    let mut children = Vec::new();
    if std::env::var_os("DISPLAY").is_none() {
        children.push(spawn(
            "Xvfb",
            &[
                ":37",
                "-screen",
                "0",
                "1920x1080x24",
                "-noreset",
                "-nolisten",
                "tcp",
            ],
        ));
        // SAFETY: set before any thread that reads the environment is started.
        unsafe { std::env::set_var("DISPLAY", ":37") };
        for _ in 0..50 {
            if Command::new("xdpyinfo")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        children.push(spawn("openbox", &[]));
    }
    for (geometry, command) in [
        ("120x50+0+0", "ls -la /usr/bin; sleep 600"),
        ("100x45+900+100", "cat /etc/services; sleep 600"),
        ("80x30+300+500", "env; sleep 600"),
    ] {
        children.push(spawn(
            "xterm",
            &["-geometry", geometry, "-e", "sh", "-c", command],
        ));
    }
    std::thread::sleep(Duration::from_secs(2));
    Kill(children)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let out = f();
    (out, started.elapsed())
}

fn main() {
    let desktop = Desktop::start();
    let dir = tempfile::tempdir().unwrap();
    let screen = RealScreen::open().expect("a display");
    let monitor = screen::choose(screen.monitors().unwrap(), None).unwrap();

    // 1. The screenshot pipeline.
    const RUNS: usize = 30;
    let mut ours = Vec::new();
    let (mut capture, mut scale, mut encode, mut b64) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut png_bytes = 0;
    for _ in 0..RUNS {
        let ((), total) = time(|| {
            let shot = pipeline::screenshot(&screen, &monitor, Format::Png).unwrap();
            let (data, t) = time(|| BASE64.encode(&shot.bytes));
            png_bytes = shot.bytes.len();
            capture.push(shot.timings.capture);
            scale.push(shot.timings.scale);
            encode.push(shot.timings.encode);
            b64.push(t);
            std::hint::black_box(data);
        });
        ours.push(total);
    }
    // The same frame in the PNG encoder's fastest mode, for its size and time.
    let frame = screen.capture(&monitor).unwrap();
    let scaled = pipeline::resize(&frame, None, scaling::model_size(frame.size)).unwrap();
    let rgb: Vec<u8> = scaled
        .rgba
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    let mut fast = Vec::new();
    let mut fast_bytes = 0;
    for _ in 0..RUNS {
        let (out, t) = time(|| {
            let mut out = Vec::new();
            PngEncoder::new_with_quality(&mut out, CompressionType::Fast, PngFilter::Adaptive)
                .write_image(
                    &rgb,
                    scaled.size.width,
                    scaled.size.height,
                    ExtendedColorType::Rgb8,
                )
                .unwrap();
            out
        });
        fast_bytes = out.len();
        fast.push(t);
    }
    let mut jpeg = Vec::new();
    let mut jpeg_bytes = 0;
    for _ in 0..RUNS {
        let (shot, t) =
            time(|| pipeline::screenshot(&screen, &monitor, Format::Jpeg { quality: 80 }).unwrap());
        jpeg_bytes = shot.bytes.len();
        jpeg.push(t);
    }
    let ours_m = median(ours);
    println!(
        "Screenshot pipeline, {} -> {}, medians:",
        monitor.geometry.pixels, scaled.size
    );
    println!("| way | median | stages |");
    println!("|---|---|---|");
    println!(
        "| Deskhand ({}, fast_image_resize bilinear, PNG zlib 1, base64) | {:.1} ms | capture {:.1}, scale {:.1}, encode {:.1}, base64 {:.1} |",
        desktop.name(),
        ms(ours_m),
        ms(median(capture)),
        ms(median(scale)),
        ms(median(encode)),
        ms(median(b64))
    );
    println!(
        "| Deskhand, JPEG q80 instead of PNG | {:.1} ms | |",
        ms(median(jpeg))
    );
    println!(
        "| (PNG encode alone in the fastest mode) | {:.1} ms | |",
        ms(median(fast))
    );
    if let Some((_, capture_tool)) = desktop.reference_tools() {
        let mut reference = Vec::new();
        for _ in 0..10 {
            let (_, t) = time(|| desktop.reference_screenshot(dir.path()));
            reference.push(t);
        }
        let ref_m = median(reference);
        println!(
            "| reference ({capture_tool}, convert -resize, base64) | {:.1} ms | |",
            ms(ref_m)
        );
        println!(
            "Deskhand is {:.1}x faster than the reference.",
            ref_m.as_secs_f64() / ours_m.as_secs_f64()
        );
    }
    println!(
        "Encoded size: PNG zlib 1 {png_bytes} bytes, PNG fastest {fast_bytes} bytes, JPEG q80 {jpeg_bytes} bytes."
    );

    // 2. A click step on an idle screen.
    let tool = ComputerTool::open(&ToolSettings {
        model: "claude-sonnet-4-5".into(),
        monitor: None,
        ..ToolSettings::default()
    })
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new(CancellationToken::new());
    // An empty corner of the desktop: clicking there changes nothing.
    let corner = [scaled.size.width - 66, scaled.size.height - 28];
    let click = json!({"action": "left_click", "coordinate": corner});
    let mut steps = Vec::new();
    for _ in 0..20 {
        let (out, t) = time(|| runtime.block_on(tool.run(&click, &ctx)));
        assert!(!out.is_error, "{:?}", out.content);
        steps.push(t);
    }
    let step_m = median(steps);
    println!();
    println!("Click step on an idle screen (click, settle, screenshot), medians:");
    println!("| way | median |");
    println!("|---|---|");
    println!(
        "| Deskhand (settle: 50 ms floor, frames 40 ms apart, 1.5 s cap) | {:.0} ms |",
        ms(step_m)
    );
    if let Some((click_tool, capture_tool)) = desktop.reference_tools() {
        let mut reference_steps = Vec::new();
        for _ in 0..3 {
            let (_, t) = time(|| {
                desktop.reference_click();
                std::thread::sleep(Duration::from_secs(2));
                desktop.reference_screenshot(dir.path())
            });
            reference_steps.push(t);
        }
        let ref_step_m = median(reference_steps);
        println!(
            "| reference ({click_tool} click, sleep 2 s, {capture_tool} + convert) | {:.0} ms |",
            ms(ref_step_m)
        );
        println!(
            "Deskhand is {:.1}x faster per step.",
            ref_step_m.as_secs_f64() / step_m.as_secs_f64()
        );
    }
}
