//! Shared by the benches: a provider that answers at once, a tool that does nothing, an agent
//! over them, and medians.
#![allow(dead_code)] // each bench uses its own part of this module

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use deskhand_engine::agent::{
    Agent, AgentConfig, ApprovalGate, ApprovalPolicy, Decision, FixedApprover,
};
use deskhand_engine::llm::{
    ContentBlock, ModelRequest, ModelResponse, Provider, ProviderError, StopReason, StreamEvent,
    ToolDefinition, Usage,
};
use deskhand_engine::tools::{
    ActionPlan, ToolContext, ToolError, ToolOutput, ToolRegistry, TypedTool,
};
use serde_json::{Value, json};

pub struct NoopTool;

#[async_trait]
impl TypedTool for NoopTool {
    type Input = Value;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "noop".into(),
            description: "Does nothing.".into(),
            input_schema: json!({"type": "object", "properties": {"step": {"type": "integer"}}, "required": ["step"]}),
            anthropic: None,
        }
    }
    fn read(&self, input: &Value) -> Result<Value, ToolError> {
        Ok(input.clone())
    }

    fn plan(&self, _: &Value) -> Result<ActionPlan, ToolError> {
        Ok(ActionPlan {
            kind: "noop".into(),
            read_only: false,
            summary: "noop".into(),
            detail: Default::default(),
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }
    async fn run(&self, input: Value, _: &ToolContext) -> ToolOutput {
        ToolOutput::text(format!("step {} done", input["step"]))
    }
}

/// Answers at once: a tool call per request for `steps` requests, then a closing text.
pub struct InstantProvider {
    calls: AtomicUsize,
    steps: usize,
}

impl InstantProvider {
    pub fn new(steps: usize) -> Self {
        Self {
            calls: AtomicUsize::new(0),
            steps,
        }
    }
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
        let (content, stop_reason) = if n < self.steps {
            (
                vec![
                    ContentBlock::text(format!("Step {n}. ")),
                    ContentBlock::ToolUse {
                        id: format!("toolu_{n}").into(),
                        name: "noop".into(),
                        input: json!({"step": n}),
                        toolset_name: None,
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

pub fn agent(provider: Arc<dyn Provider>) -> Agent {
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
            system: "bench".into(),
            max_turns: 1000,
            max_tokens: 1024,
            ..AgentConfig::new("bench")
        },
    }
}

pub fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

pub fn percentile(mut values: Vec<Duration>, p: f64) -> Duration {
    values.sort();
    values[((values.len() - 1) as f64 * p) as usize]
}
