//! What provenance adds to one step (issue 34): indexing the step's tool output in the run's
//! ledger and checking the next action's decisive argument against it, as the context grows
//! to 100k tokens of untrusted text (about 400,000 characters, 100 results of 4,000); and,
//! once, indexing a resumed session's 100k-token history as a run starts.
//!
//! Run: `cargo bench --workspace --locked --features deskhand-app/custom-protocol --bench provenance --profile dev`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

use std::time::{Duration, Instant};

use deskhand_engine::agent::{ApprovalGate, ApprovalPolicy, Decision, FixedApprover};
use deskhand_engine::llm::{ContentBlock, Message, ToolResultContent};
use deskhand_engine::tools::{ActionDetail, ActionPlan};
use serde_json::json;

const STEPS: usize = 100;
const RESULT_CHARS: usize = 4_000;

/// Output that looks like a build log: words, paths and numbers, never repeating exactly.
fn output(step: usize) -> String {
    const WORDS: [&str; 12] = [
        "compiling",
        "warning",
        "src/lib.rs",
        "finished",
        "target",
        "debug",
        "module",
        "version",
        "error:",
        "--release",
        "checking",
        "0.4.12",
    ];
    let mut text = String::with_capacity(RESULT_CHARS + 64);
    let mut seed = step as u64 * 7_919 + 1;
    while text.len() < RESULT_CHARS {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        text.push_str(WORDS[(seed >> 33) as usize % WORDS.len()]);
        text.push(if seed.is_multiple_of(9) { '\n' } else { ' ' });
        if seed.is_multiple_of(5) {
            text.push_str(&format!("{}", seed % 100_000));
            text.push(' ');
        }
    }
    text
}

fn command_plan(command: &str) -> ActionPlan {
    ActionPlan {
        kind: "bash".into(),
        read_only: false,
        summary: String::new(),
        detail: ActionDetail::Command {
            command: command.into(),
            timeout_s: 30.0,
        },
        on_screen: false,
        safety_checks: Vec::new(),
        target: None,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let gate = ApprovalGate::new(
        ApprovalPolicy::Auto,
        Box::new(FixedApprover(Decision::Approve)),
    );
    gate.ledger().heard(
        &[],
        &[ContentBlock::text("build the project and fix the warnings")],
    );
    let command = "cargo build --release 2>&1 | grep -n warning | head -50 && make install-docs";
    let (input, plan) = (json!({ "command": command }), command_plan(command));
    let (mut index, mut check, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let mut history = Vec::new();
    for step in 0..STEPS {
        let content = vec![ToolResultContent::Text { text: output(step) }];
        let t0 = Instant::now();
        gate.ledger().result(
            Some(step as u32),
            "bash",
            &json!({"command": "cargo build"}),
            &content,
        );
        let t1 = Instant::now();
        let derived = gate.derived("bash", &input, &plan);
        let t2 = Instant::now();
        assert!(derived.is_none(), "{derived:?}");
        index.push(t1 - t0);
        check.push(t2 - t1);
        total.push(t2 - t0);
        history.push(Message::assistant(vec![ContentBlock::ToolUse {
            id: format!("t{step}").into(),
            name: "bash".into(),
            input: json!({"command": "cargo build"}),
            toolset_name: None,
        }]));
        history.push(Message::user(vec![ContentBlock::ToolResult {
            tool_use_id: format!("t{step}").into(),
            content,
            is_error: false,
            toolset_name: None,
        }]));
    }
    // The last tenth of the steps, with 90k–100k tokens of context behind them.
    let late = STEPS - STEPS / 10;
    println!(
        "{STEPS} steps of {RESULT_CHARS} characters of output (the last {} at 90k–100k tokens): median / p90 / max",
        STEPS - late
    );
    for (name, times) in [
        ("index the step's output", &mut index),
        ("check the next command", &mut check),
        ("total added per step", &mut total),
    ] {
        let mut late: Vec<Duration> = times[late..].to_vec();
        late.sort();
        println!(
            "  {name:<26} {:>8.3} ms {:>8.3} ms {:>8.3} ms",
            ms(percentile(&late, 0.5)),
            ms(percentile(&late, 0.9)),
            ms(*late.last().unwrap())
        );
    }
    // A run on a session with 100k tokens behind it indexes them once as it starts.
    let resumed = ApprovalGate::new(
        ApprovalPolicy::Auto,
        Box::new(FixedApprover(Decision::Approve)),
    );
    let t0 = Instant::now();
    resumed
        .ledger()
        .heard(&history, &[ContentBlock::text("go on")]);
    println!(
        "  start of a run on a 100k-token session: {:.1} ms ({} spans)",
        ms(t0.elapsed()),
        resumed.ledger().spans()
    );
}
