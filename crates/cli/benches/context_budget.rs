//! Input tokens billed for a 60-step session with a screenshot every step, under four
//! context policies, billed by the stand-in's model of Anthropic's prompt cache (reads 0.1×,
//! writes 1.25×):
//! - keep every screenshot, no caching;
//! - Anthropic's reference demo with `only_n_most_recent_images=3` (its filter, which drops
//!   images in chunks of 3 and keeps 3 to 5), no caching;
//! - the reference with prompt caching on (cache_control on the last 3 user turns and the
//!   system prompt), which in the reference turns trimming off;
//! - Deskhand's policy: at most 3 screenshots, dropped in chunks of 2, breakpoints on the
//!   newest turns and the pruning boundary.
//!
//! Run: `cargo bench -p deskhand --bench context_budget`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

use base64::Engine as _;
use deskhand_engine::agent::context::ContextPolicy;
use deskhand_engine::llm::anthropic::request_body;
use deskhand_engine::llm::{ContentBlock, ImageSource, Message, ModelRequest, ToolResultContent};
use deskhand_standin::PromptCache;
use deskhand_test_support::fake_screenshot_png;
use serde_json::{Value, json};

const STEPS: usize = 60;
const SYSTEM: &str = "You are Deskhand, an assistant that works on the user's computer through the tools you are given.";

/// The history before request `k`: the prompt, then `k` screenshot steps.
fn histories() -> Vec<Vec<Message>> {
    let mut history = vec![Message::user(vec![ContentBlock::text(
        "Open the settings and turn on dark mode.",
    )])];
    let mut all = vec![history.clone()];
    for step in 0..STEPS {
        let id = format!("toolu_{step:03}");
        history.push(Message::assistant(vec![
            ContentBlock::text(format!("Step {step}: I will click the next control.")),
            ContentBlock::ToolUse {
                id: id.clone().into(),
                name: "computer".into(),
                input: json!({"action": "left_click", "coordinate": [640, 400]}),
                toolset_name: None,
            },
        ]));
        let data = base64::engine::general_purpose::STANDARD.encode(fake_screenshot_png(
            1280,
            800,
            step as u64,
        ));
        history.push(Message::user(vec![ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: vec![ToolResultContent::Image {
                source: ImageSource::Base64 {
                    media_type: "image/png".into(),
                    data,
                },
            }],
            is_error: false,
            toolset_name: None,
        }]));
        all.push(history.clone());
    }
    all
}

fn body(messages: &[Message], breakpoints: &[usize]) -> Value {
    let request = ModelRequest {
        model: "claude-sonnet-4-5",
        system: SYSTEM,
        messages,
        tools: &[],
        max_tokens: 4096,
        cache_breakpoints: breakpoints,
    };
    serde_json::from_slice(&request_body(&request).unwrap()).unwrap()
}

/// The reference's `_maybe_filter_to_n_most_recent_images(messages, 3, min_removal_threshold=3)`.
fn reference_filter(body: &mut Value, keep: usize, threshold: usize) {
    let mut results: Vec<&mut Value> = body["messages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|m| m["content"].as_array_mut().unwrap().iter_mut())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    let total: usize = results
        .iter()
        .map(|r| {
            r["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["type"] == "image")
                .count()
        })
        .sum();
    let mut remove = total.saturating_sub(keep);
    remove -= remove % threshold;
    for result in results.iter_mut() {
        result["content"].as_array_mut().unwrap().retain(|c| {
            if c["type"] == "image" && remove > 0 {
                remove -= 1;
                false
            } else {
                true
            }
        });
    }
}

/// The reference's `_inject_prompt_caching`: the last block of the last 3 user turns, and the system prompt.
fn reference_caching(body: &mut Value) {
    body["system"] =
        json!([{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]);
    let mut left = 3;
    for message in body["messages"].as_array_mut().unwrap().iter_mut().rev() {
        if message["role"] == "user" && left > 0 {
            left -= 1;
            let blocks = message["content"].as_array_mut().unwrap();
            blocks.last_mut().unwrap()["cache_control"] = json!({"type": "ephemeral"});
        }
    }
}

struct Bill {
    uncached: u64,
    written: u64,
    read: u64,
}

impl Bill {
    fn billed(&self) -> f64 {
        self.uncached as f64 + 1.25 * self.written as f64 + 0.1 * self.read as f64
    }
}

fn bill(requests: impl Iterator<Item = Value>) -> Bill {
    let mut cache = PromptCache::default();
    let mut bill = Bill {
        uncached: 0,
        written: 0,
        read: 0,
    };
    for request in requests {
        let usage = cache.bill(&request);
        bill.uncached += usage.input_tokens;
        bill.written += usage.cache_creation_input_tokens;
        bill.read += usage.cache_read_input_tokens;
    }
    bill
}

fn main() {
    let histories = histories();
    let keep_all = bill(histories.iter().map(|h| body(h, &[])));
    let reference_trim = bill(histories.iter().map(|h| {
        let mut body = body(h, &[]);
        reference_filter(&mut body, 3, 3);
        body
    }));
    let reference_cache = bill(histories.iter().map(|h| {
        let mut body = body(h, &[]);
        reference_caching(&mut body);
        body
    }));
    let policy = ContextPolicy::default();
    let ours = bill(histories.iter().map(|h| {
        let shaped = policy.shape(h, None);
        body(&shaped.messages, &shaped.cache_breakpoints)
    }));

    println!(
        "input tokens billed, {STEPS}-step session with a 1280x800 screenshot per step ({} requests)",
        STEPS + 1
    );
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>12} {:>9}",
        "policy", "uncached", "written", "read", "billed", "vs all"
    );
    let base = keep_all.billed();
    for (name, b) in [
        ("keep every screenshot", &keep_all),
        ("reference: newest 3, no caching", &reference_trim),
        ("reference: caching on (no trimming)", &reference_cache),
        ("deskhand: newest <=3 in chunks of 2 + cache", &ours),
    ] {
        println!(
            "{name:<44} {:>10} {:>10} {:>10} {:>12.0} {:>8.1}%",
            b.uncached,
            b.written,
            b.read,
            b.billed(),
            100.0 * b.billed() / base
        );
    }
    println!(
        "deskhand vs reference: {:.2}x of 'newest 3', {:.2}x of 'caching on'",
        ours.billed() / reference_trim.billed(),
        ours.billed() / reference_cache.billed()
    );
}
