//! `deskhand screenshot`: the screenshot the model would get, written to a file, with the
//! time each stage took.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use deskhand_engine::tools::computer::capture::RealScreen;
use deskhand_engine::tools::computer::pipeline::{self, Format};
use deskhand_engine::tools::computer::screen::{self, Screen};

#[derive(Args)]
pub struct ScreenshotArgs {
    /// The monitor to capture (see `deskhand monitors`; default: the primary one).
    #[arg(long, value_name = "N", env = "DESKHAND_MONITOR")]
    monitor: Option<usize>,
    /// Where to write it: PNG, or JPEG if the name ends in .jpg or .jpeg.
    #[arg(short, long, value_name = "FILE", default_value = "screenshot.png")]
    output: PathBuf,
}

pub fn run(args: ScreenshotArgs) -> Result<()> {
    let format = match args.output.extension().and_then(|e| e.to_str()) {
        Some(ext) if ext.eq_ignore_ascii_case("jpg") || ext.eq_ignore_ascii_case("jpeg") => {
            Format::Jpeg { quality: 80 }
        }
        _ => Format::Png,
    };
    let screen = RealScreen::open()?;
    let monitor = screen::choose(screen.monitors()?, args.monitor)?;
    let shot = pipeline::screenshot(&screen, &monitor, format)?;
    std::fs::write(&args.output, &shot.bytes)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    let t = shot.timings;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    println!("backend {}", screen.backend());
    println!("monitor {} ({})", monitor.index, monitor.name);
    println!("screen  {}", shot.screen);
    println!("model   {}", shot.model);
    println!(
        "capture {:.1} ms, scale {:.1} ms, encode {:.1} ms",
        ms(t.capture),
        ms(t.scale),
        ms(t.encode)
    );
    println!(
        "wrote   {} ({} bytes, {})",
        args.output.display(),
        shot.bytes.len(),
        shot.media_type
    );
    Ok(())
}
