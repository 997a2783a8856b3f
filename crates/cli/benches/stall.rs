//! What no-op and stall detection add to one computer step at 1080p: comparing the settled
//! frame with the one shown before, hashing it, and the stall breaker's look at the step.
//! The frames are synthetic (text-like stripes), identical (the worst case of the compare:
//! every byte is read); the breaker sees steps that do not stall, as in a run that goes well.
//!
//! Run: `cargo bench --workspace --locked --features deskhand-app/custom-protocol --bench stall`
//! (add `--profile dev` for the unoptimised core with optimised dependencies).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

use std::time::{Duration, Instant};

use deskhand_engine::agent::stall::{StallBreaker, StallPolicy};
use deskhand_engine::agent::{ApprovalGate, ApprovalPolicy, Decision, FixedApprover};
use deskhand_engine::tools::ToolOutput;
use deskhand_engine::tools::computer::fingerprint::{self, ScreenState};
use deskhand_engine::tools::computer::scaling::Size;
use deskhand_engine::tools::computer::screen::Frame;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const STEPS: usize = 300;

fn frame(seed: u32) -> Frame {
    let size = Size::new(1920, 1080);
    let mut rgba = vec![0u8; 1920 * 1080 * 4];
    for (i, px) in rgba.chunks_exact_mut(4).enumerate() {
        let (x, y) = (i as u32 % 1920, i as u32 / 1920);
        let ink = (x / 7 + y / 13 + seed).is_multiple_of(5) && y % 13 < 9;
        let v = if ink { 30 } else { 235 };
        px.copy_from_slice(&[v, v, v, 255]);
    }
    Frame { size, rgba }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let gate = ApprovalGate::new(
        ApprovalPolicy::Auto,
        Box::new(FixedApprover(Decision::Approve)),
    );
    let mut breaker = StallBreaker::new(StallPolicy::default());
    let frames: Vec<(Frame, Frame)> = (0..4).map(|s| (frame(s), frame(s))).collect();
    let cancel = CancellationToken::new();
    let (mut compare, mut hash, mut breaker_step, mut total) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for step in 0..STEPS {
        let (before, after) = &frames[step % frames.len()];
        let t0 = Instant::now();
        let changed = std::hint::black_box(after) != std::hint::black_box(before);
        let t1 = Instant::now();
        let h = fingerprint::perceptual_hash(after);
        let t2 = Instant::now();
        let mut output = ToolOutput {
            screen: Some(ScreenState {
                hash: h ^ step as u64,
                changed: !changed,
            }),
            ..ToolOutput::text("")
        };
        let input = json!({"action": "left_click", "coordinate": [step, step]});
        let stalled = runtime.block_on(breaker.after_step(
            &format!("t{step}").into(),
            "computer",
            &input,
            &mut output,
            &gate,
            &mut |_| {},
            &cancel,
        ));
        let t3 = Instant::now();
        assert!(!stalled);
        compare.push(t1 - t0);
        hash.push(t2 - t1);
        breaker_step.push(t3 - t2);
        total.push(t3 - t0);
    }
    println!("{STEPS} steps at 1920x1080 (median / p90):");
    for (name, times) in [
        ("compare with the frame before", &mut compare),
        ("perceptual hash", &mut hash),
        ("stall breaker", &mut breaker_step),
        ("total added per step", &mut total),
    ] {
        times.sort();
        println!(
            "  {name:<30} {:>8.3} ms  {:>8.3} ms",
            percentile(times, 0.5).as_secs_f64() * 1e3,
            percentile(times, 0.9).as_secs_f64() * 1e3
        );
    }
}
