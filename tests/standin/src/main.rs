//! `deskhand-standin --script FILE.json [--port N]`: serves a script until killed.
//!
//! Prints exactly one line, `listening on http://127.0.0.1:PORT`, once it accepts
//! connections, so a harness can read the port from stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

use std::io::Write as _;

use anyhow::{Context as _, bail};
use deskhand_standin::{Script, StandIn};

const USAGE: &str = "usage: deskhand-standin --script FILE.json [--port N]";

fn main() -> anyhow::Result<()> {
    let mut script = None;
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--script" => script = Some(args.next().context(USAGE)?),
            "--port" => port = args.next().context(USAGE)?.parse().context("--port")?,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unexpected argument {other:?}\n{USAGE}"),
        }
    }
    let script = Script::load(script.context(USAGE)?)?;
    let standin = StandIn::bind(script, port).context("binding 127.0.0.1")?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {}", standin.url())?;
    stdout.flush()?;
    drop(stdout);
    loop {
        std::thread::park();
    }
}
