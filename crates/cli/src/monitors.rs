//! `deskhand monitors`: the monitors the computer tool can use, and what the model sees of each.

use anyhow::Result;
use deskhand_engine::tools::computer::capture::RealScreen;
use deskhand_engine::tools::computer::scaling::model_size;
use deskhand_engine::tools::computer::screen::Screen;

pub fn run() -> Result<()> {
    let screen = RealScreen::open()?;
    let monitors = screen.monitors()?;
    let default = monitors.iter().position(|m| m.primary).unwrap_or(0);
    for m in &monitors {
        let g = m.geometry;
        println!(
            "{}{} {}: {} at ({}, {}), scale {}, model sees {}{}",
            m.index,
            if m.index == default { "*" } else { " " },
            m.name,
            g.pixels,
            g.x,
            g.y,
            m.scale_factor,
            model_size(g.pixels),
            if m.primary { ", primary" } else { "" },
        );
    }
    println!("backend {}", screen.backend());
    Ok(())
}
