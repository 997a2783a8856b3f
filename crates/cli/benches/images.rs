//! A screenshot on its way into the history: the `tool_result` event that keeps it, then the
//! `message` that carries it. The message takes the ref the event kept, because its base64
//! text is known, so the image is decoded and hashed once. Baselines in the same run: the same
//! message where the image is not known (how every message was recorded before), and one
//! SHA-256 of the image.
//!
//! Run: `cargo bench -p deskhand --bench images`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use deskhand_engine::agent::{AgentEvent, ToolStatus};
use deskhand_engine::images::content_hash;
use deskhand_engine::llm::{ContentBlock, ImageSource, Message, ToolResultContent};
use deskhand_engine::store::{Recorder, Store};
use rand::{Rng, SeedableRng};
use serde_json::json;
use support::median;

const STEPS: usize = 60;
/// About a PNG screenshot at the model's size.
const IMAGE_BYTES: usize = 300_000;

fn timed(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}

/// A screenshot's tool call and its answer, as the loop records them.
fn step(id: &str, source: &ImageSource) -> (Message, AgentEvent, Message) {
    let call = Message::assistant(vec![ContentBlock::tool_use(
        id,
        "computer",
        json!({"action": "screenshot"}),
    )]);
    let event = AgentEvent::ToolResult {
        id: id.into(),
        name: "computer".into(),
        is_error: false,
        status: Some(ToolStatus::Ok),
        text: String::new(),
        images: vec![source.clone()],
        duration_ms: 1,
        changed: None,
    };
    let answer = Message::user(vec![ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: vec![ToolResultContent::Image {
            source: source.clone(),
        }],
        is_error: false,
        toolset_name: None,
    }]);
    (call, event, answer)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut with_event = Recorder::create(&store, &"with-event".into()).unwrap();
    let mut without = Recorder::create(&store, &"without-event".into()).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (mut known, mut unknown, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..STEPS {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend((8..IMAGE_BYTES).map(|_| rng.random::<u8>()));
        let source = ImageSource::Base64 {
            media_type: "image/png".into(),
            data: BASE64.encode(&bytes),
        };
        let id = format!("toolu_{n}");
        let (call, event, answer) = step(&id, &source);
        let message = |message: &Message| AgentEvent::Message {
            message: message.clone(),
        };
        with_event.record(&message(&call)).unwrap();
        with_event.record(&event).unwrap();
        known.push(timed(|| {
            with_event.record(&message(&answer)).unwrap();
        }));
        // The same message where no event kept the image: it is decoded and hashed again
        // (its file is there already, as it was for every message before).
        without.record(&message(&call)).unwrap();
        unknown.push(timed(|| {
            without.record(&message(&answer)).unwrap();
        }));
        hashes.push(timed(|| {
            std::hint::black_box(content_hash(&bytes));
        }));
    }
    let (known, unknown, hash) = (median(known), median(unknown), median(hashes));
    println!("a screenshot's message ({IMAGE_BYTES} bytes, {STEPS} steps), medians:");
    println!(
        "  its image known from the tool_result event: {}",
        ms(known)
    );
    println!(
        "  its image not known (the baseline):          {}",
        ms(unknown)
    );
    println!(
        "  one SHA-256 of the image:                    {}",
        ms(hash)
    );
    println!(
        "  saved per message: {} ({:.2} of a SHA-256); ratio known / not known {:.2}",
        ms(unknown.saturating_sub(known)),
        unknown.saturating_sub(known).as_secs_f64() / hash.as_secs_f64(),
        known.as_secs_f64() / unknown.as_secs_f64()
    );
}
