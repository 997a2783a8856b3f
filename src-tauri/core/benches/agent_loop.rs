//! The agent loop's own cost per step, over a 200-step tool session.
//!
//! 1. Against the stand-in Messages API on loopback (real HTTP, real SSE, zero model latency):
//!    the per-step wall time, which includes the server's own parsing and validation.
//! 2. Against an in-process provider that answers at once: the loop alone (history, events,
//!    schema validation, approval gate, tool dispatch), and how resident memory grows per
//!    step compared with the history itself.
//!
//! Run: `cargo bench -p deskhand --bench agent_loop`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskhand::agent::{
    Agent, AgentConfig, AgentEvent, ApprovalGate, ApprovalPolicy, Decision, FixedApprover,
};
use deskhand::llm::anthropic::{Anthropic, AnthropicConfig};
use deskhand::llm::{
    ContentBlock, Message, ModelRequest, ModelResponse, Provider, ProviderError, RetryPolicy,
    StopReason, StreamEvent, ToolDefinition, Usage,
};
use deskhand::tools::{ActionPlan, Tool, ToolContext, ToolOutput, ToolRegistry};
use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const STEPS: usize = 200;

struct NoopTool;

#[async_trait]
impl Tool for NoopTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "noop".into(),
            description: "Does nothing.".into(),
            input_schema: json!({"type": "object", "properties": {"step": {"type": "integer"}}, "required": ["step"]}),
            anthropic: None,
        }
    }
    fn plan(&self, _: &Value) -> Result<ActionPlan, String> {
        Ok(ActionPlan {
            kind: "noop".into(),
            read_only: false,
            summary: "noop".into(),
            detail: Value::Null,
        })
    }
    async fn run(&self, input: &Value, _: &ToolContext) -> ToolOutput {
        ToolOutput::text(format!("step {} done", input["step"]))
    }
}

/// Answers at once: a tool call per request, then a closing text.
struct InstantProvider {
    calls: AtomicUsize,
}

#[async_trait]
impl Provider for InstantProvider {
    fn name(&self) -> &'static str {
        "instant"
    }
    async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        // Serialise like a real provider does, so that cost is counted.
        std::hint::black_box(serde_json::to_vec(request.messages).unwrap());
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        on_event(StreamEvent::TextDelta(format!("Step {n}. ")));
        let (content, stop_reason) = if n < STEPS {
            (
                vec![
                    ContentBlock::text(format!("Step {n}. ")),
                    ContentBlock::ToolUse {
                        id: format!("toolu_{n}"),
                        name: "noop".into(),
                        input: json!({"step": n}),
                    },
                ],
                StopReason::ToolUse,
            )
        } else {
            (vec![ContentBlock::text("Done.")], StopReason::EndTurn)
        };
        Ok(ModelResponse {
            content,
            stop_reason,
            usage: Usage::default(),
            malformed_tool_inputs: vec![],
        })
    }
}

fn agent(provider: Arc<dyn Provider>) -> Agent {
    let mut tools = ToolRegistry::default();
    tools.register(Arc::new(NoopTool)).unwrap();
    Agent {
        provider,
        tools: Arc::new(tools),
        gate: Arc::new(ApprovalGate::new(
            ApprovalPolicy::Auto,
            Box::new(FixedApprover(Decision::Approve)),
        )),
        config: AgentConfig {
            model: "bench".into(),
            system: "bench".into(),
            max_turns: 1000,
            max_tokens: 1024,
            ..AgentConfig::default()
        },
    }
}

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
            "bench",
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

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn percentile(mut values: Vec<Duration>, p: f64) -> Duration {
    values.sort();
    values[((values.len() - 1) as f64 * p) as usize]
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
        api_key: "bench".into(),
        base_url: api.url(),
        retry: RetryPolicy::default(),
    })
    .unwrap();
    let http = runtime.block_on(measure(&agent(Arc::new(provider))));
    drop(api);

    let instant = runtime.block_on(measure(&agent(Arc::new(InstantProvider {
        calls: AtomicUsize::new(0),
    }))));
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
