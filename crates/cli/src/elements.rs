//! `deskhand elements`: the element map of the screen (what the `ui` tool sees), for people
//! and scripts. Bounds are in the model's coordinates for the monitor, as the tool gives them.

use anyhow::Result;
use clap::Args;
use deskhand_engine::elements::refs::RefBook;
use deskhand_engine::elements::{Element, desktop_tree};
use deskhand_engine::tools::computer::capture::RealScreen;
use deskhand_engine::tools::computer::scaling::Mapping;
use deskhand_engine::tools::computer::screen::{self, Screen};
use serde_json::json;

#[derive(Args)]
pub struct ElementsArgs {
    /// The monitor (see `deskhand monitors`; default: the primary one).
    #[arg(long, value_name = "N", env = "DESKHAND_MONITOR")]
    monitor: Option<usize>,
    /// Also read the screen's words with OCR (about half a second on a 1080p screen).
    #[arg(long)]
    ocr: bool,
    /// One JSON object: `{"model_size", "elements": [...], "notes": [...]}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: ElementsArgs) -> Result<()> {
    let screen = RealScreen::open()?;
    let monitor = screen::choose(screen.monitors()?, args.monitor)?;
    let mapping = Mapping::new(monitor.geometry, None);
    let (mut elements, mut notes) = match desktop_tree().snapshot() {
        Ok(snapshot) => (snapshot.elements, snapshot.notes),
        Err(e) => (Vec::new(), vec![e.to_string()]),
    };
    #[cfg(target_os = "linux")]
    if args.ocr {
        use deskhand_engine::elements::ocr;
        let frame = screen.capture(&monitor)?;
        let mut geometry = monitor.geometry;
        geometry.pixels = frame.size;
        match ocr::words(&frame, &geometry) {
            Ok(words) => elements.extend(words),
            Err(e) => notes.push(e.to_string()),
        }
    }
    let shown: Vec<&Element> = elements
        .iter()
        .filter(|e| e.bounds.to_model(&mapping).is_some())
        .collect();
    let mut refs = RefBook::default();
    if args.json {
        let listed: Vec<_> = shown
            .iter()
            .map(|e| e.to_json(&refs.reference(e), &mapping))
            .collect();
        let out = json!({"model_size": mapping.model, "elements": listed, "notes": notes});
        println!("{out}");
        return Ok(());
    }
    for e in &shown {
        let [x, y, w, h] = e.bounds.to_model(&mapping).unwrap_or_default();
        let text = e
            .text
            .as_deref()
            .map(|t| format!(" = {:?}", t.chars().take(60).collect::<String>()))
            .unwrap_or_default();
        println!(
            "{:<5} {:<14} {:<30} [{x}, {y}, {w}, {h}]{text}{}  {} / {}",
            refs.reference(e),
            e.role,
            format!("{:?}", e.name),
            if e.is_sensitive() { " (sensitive)" } else { "" },
            e.app,
            e.window,
        );
    }
    for note in &notes {
        println!("note: {note}");
    }
    println!("{} elements on a {} screen", shown.len(), mapping.model);
    Ok(())
}
