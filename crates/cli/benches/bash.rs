//! The bash tool's cost per command: the persistent shell (one bash for the session, the
//! command handed over through a here-document and `eval`, the end found by a marker) against
//! the baseline of starting `bash -c COMMAND` for every command, which cannot keep state.
//! Also the cost of a command whose 10 MB of output is capped to 20,000 bytes.
//!
//! Run: `cargo bench -p deskhand --bench bash`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

use std::time::{Duration, Instant};

use deskhand_engine::tools::bash::{BashTool, DEFAULT_OUTPUT_LIMIT, DEFAULT_TIMEOUT};
use deskhand_engine::tools::{Tool, ToolContext};
use serde_json::json;
use support::{median, percentile};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 300;
const COMMAND: &str = "echo hello";

#[tokio::main]
async fn main() {
    let ctx = ToolContext::new(CancellationToken::new());
    let tool = BashTool::new(DEFAULT_TIMEOUT, DEFAULT_OUTPUT_LIMIT);
    tool.run(&json!({"command": "true"}), &ctx).await; // the shell starts once
    let mut persistent = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let output = tool.run(&json!({"command": COMMAND}), &ctx).await;
        persistent.push(started.elapsed());
        assert!(!output.is_error);
    }
    let mut spawned = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let output = tokio::process::Command::new("bash")
            .args(["--noprofile", "--norc", "-c", COMMAND])
            .output()
            .await
            .unwrap();
        spawned.push(started.elapsed());
        assert!(output.status.success());
    }
    let mut capped = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let output = tool
            .run(&json!({"command": "yes x | head -c 10000000"}), &ctx)
            .await;
        capped.push(started.elapsed());
        assert!(!output.is_error);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (p, s) = (median(persistent.clone()), median(spawned.clone()));
    println!("bash tool, {RUNS} runs of `{COMMAND}` (median / p90):");
    println!(
        "  persistent shell (Deskhand):  {:.3} ms / {:.3} ms",
        ms(p),
        ms(percentile(persistent, 0.9))
    );
    println!(
        "  new `bash -c` per command:    {:.3} ms / {:.3} ms",
        ms(s),
        ms(percentile(spawned, 0.9))
    );
    println!("  ratio persistent / spawned:   {:.2}x", ms(p) / ms(s));
    println!(
        "  10 MB of output capped to {DEFAULT_OUTPUT_LIMIT} bytes: {:.1} ms median of 20",
        ms(median(capped))
    );
}
