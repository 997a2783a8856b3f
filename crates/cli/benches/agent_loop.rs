//! The agent loop's own cost per step, over a 200-step tool session.
//!
//! 1. Against the stand-in Messages API on loopback (real HTTP, real SSE, zero model latency):
//!    the per-step wall time, which includes the server's own parsing and validation.
//! 2. Against an in-process provider that answers at once: the loop alone (history, events,
//!    schema validation, approval gate, tool dispatch), and how resident memory grows per
//!    step compared with the history itself.
//!
//! Run: `cargo bench -p deskhand --bench agent_loop`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use deskhand_engine::agent::{Agent, AgentEvent};
use deskhand_engine::llm::anthropic::{Anthropic, AnthropicConfig};
use deskhand_engine::llm::{ContentBlock, Message, RetryPolicy};
use deskhand_standin::{StandIn, Turn};
use serde_json::json;
use support::{InstantProvider, agent, median, percentile};
use tokio_util::sync::CancellationToken;

const STEPS: usize = 200;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

struct Measured {
    step_times: Vec<Duration>,
    rss_samples: Vec<(usize, u64)>,
    history: Vec<Message>,
}

async fn measure(agent: &Agent) -> Measured {
    let mut history = Vec::new();
    let mut last = Instant::now();
    let mut step_times = Vec::new();
    let mut rss_samples = vec![(0, rss_kib())];
    let mut sink = |event: AgentEvent| {
        if let AgentEvent::ToolCall { .. } = event {
            let now = Instant::now();
            step_times.push(now - last);
            last = now;
            if step_times.len() % 20 == 0 {
                rss_samples.push((step_times.len(), rss_kib()));
            }
        }
    };
    let outcome = agent
        .run(
            &"bench".into(),
            &mut history,
            vec![ContentBlock::text("go")],
            &mut sink,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(outcome.turns as usize, STEPS + 1, "{outcome:?}");
    step_times.remove(0); // the first includes connection set-up
    Measured {
        step_times,
        rss_samples,
        history,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut turns: Vec<Turn> = (0..STEPS)
        .map(|i| Turn::tool_use("noop", json!({"step": i})))
        .collect();
    turns.push(Turn::text("Done."));
    let api = StandIn::spawn(turns);
    let provider = Anthropic::new(AnthropicConfig {
        api_key: deskhand_engine::secrets::ApiKey::new("bench").unwrap(),
        base_url: api.url(),
        retry: RetryPolicy::default(),
        effort: None,
        fallbacks: Default::default(),
    })
    .unwrap();
    let http = runtime.block_on(measure(&agent(Arc::new(provider))));
    drop(api);

    let instant = runtime.block_on(measure(&agent(Arc::new(InstantProvider::new(STEPS)))));
    let history_bytes = serde_json::to_vec(&instant.history).unwrap().len() as u64;
    let (first_step, first_rss) = instant.rss_samples[1];
    let (last_step, last_rss) = *instant.rss_samples.last().unwrap();
    let growth_per_step =
        (last_rss.saturating_sub(first_rss) * 1024) as f64 / (last_step - first_step) as f64;
    let history_per_step = history_bytes as f64 / STEPS as f64;
    let peak = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_string()))
        .unwrap_or_default();

    println!("agent loop, {STEPS}-step tool session");
    println!(
        "  stand-in over HTTP/SSE:   median {:>8.3} ms/step   p90 {:>8.3} ms",
        median(http.step_times.clone()).as_secs_f64() * 1e3,
        percentile(http.step_times, 0.9).as_secs_f64() * 1e3
    );
    println!(
        "  in-process provider:      median {:>8.3} ms/step   p90 {:>8.3} ms",
        median(instant.step_times.clone()).as_secs_f64() * 1e3,
        percentile(instant.step_times, 0.9).as_secs_f64() * 1e3
    );
    println!(
        "  history after {STEPS} steps:  {history_bytes} bytes as JSON ({history_per_step:.0} bytes/step)"
    );
    println!(
        "  resident memory growth:   {growth_per_step:.0} bytes/step (steps {first_step}..{last_step}); peak RSS {peak}"
    );
    println!("  RSS samples (step, KiB):  {:?}", instant.rss_samples);
}
