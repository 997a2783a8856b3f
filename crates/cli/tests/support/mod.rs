//! Shared test helpers: an agent wired to a stand-in server, and a scriptable test tool.

pub mod cli;
pub mod portal;
pub mod serve;
pub mod sway;

pub use deskhand_test_support::{
    PNG_1X1, fake_screenshot_png, gone, raw_http, rss, wait_until, wait_until_gone, x11,
};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use deskhand_engine::agent::{
    Agent, AgentConfig, AgentEvent, ApprovalGate, ApprovalPolicy, Approver, RunOutcome,
};
use deskhand_engine::llm::anthropic::{Anthropic, AnthropicConfig};
use deskhand_engine::llm::openai::{OpenAi, OpenAiConfig, Service};
use deskhand_engine::llm::{
    AnthropicNativeTool, ContentBlock, Message, Provider, RetryPolicy, ToolDefinition,
    ToolResultContent,
};
use deskhand_engine::tools::{
    ActionPlan, ToolContext, ToolError, ToolOutput, ToolRegistry, TypedTool,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub const API_KEY: &str = "sk-ant-test-key-0000";

/// A tool for loop tests: echoes `text` after `sleep_ms`, and records what ran.
#[derive(Default)]
pub struct EchoTool {
    pub ran: Mutex<Vec<String>>,
}

#[async_trait]
impl TypedTool for EchoTool {
    type Input = Value;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "echo".into(),
            description: "Echoes text back.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1},
                    "sleep_ms": {"type": "integer", "minimum": 0}
                },
                "required": ["text"],
                "additionalProperties": false
            }),
            anthropic: None::<AnthropicNativeTool>,
        }
    }

    fn read(&self, input: &Value) -> Result<Value, ToolError> {
        Ok(input.clone())
    }

    fn plan(&self, input: &Value) -> Result<ActionPlan, ToolError> {
        Ok(ActionPlan {
            kind: "echo".into(),
            read_only: false,
            summary: format!("echo {}", input["text"]),
            detail: Default::default(),
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn run(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        if let Some(ms) = input["sleep_ms"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let text = input["text"].as_str().unwrap_or_default().to_string();
        self.ran.lock().unwrap().push(text.clone());
        ToolOutput::text(format!("echo: {text}"))
    }
}

/// A tool output's text, with `[image]` where an image is.
pub fn output_text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.as_str(),
            ToolResultContent::Image { .. } => "[image]",
        })
        .collect()
}

pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        ..RetryPolicy::default()
    }
}

pub struct Harness {
    pub agent: Agent,
    pub echo: Arc<EchoTool>,
}

pub fn harness(
    base_url: &str,
    policy: ApprovalPolicy,
    approver: Box<dyn Approver>,
    max_turns: u32,
) -> Harness {
    harness_with(anthropic_provider(base_url), policy, approver, max_turns)
}

/// The echo tool and a test config around any provider.
pub fn harness_with(
    provider: Arc<dyn Provider>,
    policy: ApprovalPolicy,
    approver: Box<dyn Approver>,
    max_turns: u32,
) -> Harness {
    let echo = Arc::new(EchoTool::default());
    let mut tools = ToolRegistry::default();
    tools.register(echo.clone()).unwrap();
    let agent = agent_with(provider, tools, policy, approver, max_turns);
    Harness { agent, echo }
}

/// An agent with these tools, talking to the stand-in at `base_url`.
pub fn agent(
    base_url: &str,
    tools: ToolRegistry,
    policy: ApprovalPolicy,
    approver: Box<dyn Approver>,
    max_turns: u32,
) -> Agent {
    agent_with(
        anthropic_provider(base_url),
        tools,
        policy,
        approver,
        max_turns,
    )
}

/// An agent with these tools and any provider.
pub fn agent_with(
    provider: Arc<dyn Provider>,
    tools: ToolRegistry,
    policy: ApprovalPolicy,
    approver: Box<dyn Approver>,
    max_turns: u32,
) -> Agent {
    Agent {
        provider,
        tools: Arc::new(tools),
        gate: Arc::new(ApprovalGate::new(policy, approver)),
        config: AgentConfig {
            system: "You are a test.".into(),
            max_turns,
            max_tokens: 1024,
            ..AgentConfig::new("claude-test")
        },
    }
}

/// The Anthropic provider at the stand-in's `base_url`, with [`API_KEY`].
pub fn anthropic_provider(base_url: &str) -> Arc<Anthropic> {
    Arc::new(
        Anthropic::new(AnthropicConfig {
            api_key: deskhand_engine::secrets::ApiKey::new(API_KEY).unwrap(),
            base_url: base_url.into(),
            retry: fast_retries(),
            effort: None,
            fallbacks: Default::default(),
        })
        .unwrap(),
    )
}

/// An OpenAI-compatible provider for `service` at `base_url`, with [`API_KEY`].
pub fn openai_provider(base_url: &str, service: Service) -> Arc<OpenAi> {
    Arc::new(
        OpenAi::new(OpenAiConfig {
            service,
            base_url: base_url.into(),
            api_key: Some(deskhand_engine::secrets::ApiKey::new(API_KEY).unwrap()),
            retry: fast_retries(),
            effort: None,
        })
        .unwrap(),
    )
}

/// Runs one input, collecting events; `on_event` may cancel.
pub async fn run_collect(
    agent: &Agent,
    history: &mut Vec<Message>,
    prompt: &str,
    cancel: &CancellationToken,
    mut on_event: impl FnMut(&AgentEvent) + Send,
) -> (RunOutcome, Vec<AgentEvent>) {
    let mut events = Vec::new();
    let outcome = agent
        .run(
            &"session-test".into(),
            history,
            vec![ContentBlock::text(prompt)],
            &mut |event| {
                on_event(&event);
                events.push(event);
            },
            cancel,
        )
        .await;
    (outcome, events)
}

/// Runs one input to the end, with no stop and nothing watching the events.
pub async fn run_prompt(
    agent: &Agent,
    history: &mut Vec<Message>,
    prompt: &str,
) -> (RunOutcome, Vec<AgentEvent>) {
    run_collect(agent, history, prompt, &CancellationToken::new(), |_| {}).await
}

pub fn streamed_text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The `tool_result` blocks of a request body's last message.
pub fn last_tool_results(body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

/// The text of a `tool_result` the model was sent, each part without the delimiters that
/// mark it as data (`agent::spotlight`).
pub fn result_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .map(deskhand_engine::agent::spotlight::unmarked)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of the first `tool_result` in each request the stand-in accepted, in order: what
/// each step's tool answered the model.
pub fn tool_result_texts(api: &deskhand_standin::StandIn) -> Vec<String> {
    api.accepted()
        .iter()
        .filter_map(|r| {
            let last = r.body["messages"].as_array()?.last()?.clone();
            let block = last["content"]
                .as_array()?
                .iter()
                .find(|b| b["type"] == "tool_result")?
                .clone();
            Some(result_text(&block))
        })
        .collect()
}

/// A stand-in turn that runs `command` in bash.
pub fn bash_turn(command: &str) -> deskhand_standin::Turn {
    deskhand_standin::Turn::tool_use("bash", json!({ "command": command }))
}

/// The `delegate` call's `tool_result` among a run's `--json` events.
pub fn delegate_result(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["name"] == "delegate")
        .expect("the delegate call has a result")
}

/// Asserts that the parent's `done` cost is its own turns' plus the child's.
pub fn assert_cost_is_own_plus(events: &[Value], child_cost: f64) {
    let own: f64 = events
        .iter()
        .filter(|e| e["type"] == "usage")
        .filter_map(|e| e["turn_cost_usd"].as_f64())
        .sum();
    let done = events.iter().rev().find(|e| e["type"] == "done").unwrap();
    let total = done["cost_usd"].as_f64().unwrap();
    assert!(
        (total - (own + child_cost)).abs() < 1e-9,
        "{total} != {own} + {child_cost}"
    );
}

/// A stand-in for the computer tool's screenshot: returns a fresh 1280×800 image per call.
#[derive(Default)]
pub struct ScreenshotTool {
    calls: std::sync::atomic::AtomicU64,
}

#[async_trait]
impl TypedTool for ScreenshotTool {
    type Input = Value;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "screen".into(),
            description: "Takes a screenshot.".into(),
            input_schema: json!({"type": "object", "properties": {"step": {"type": "integer"}}}),
            anthropic: None,
        }
    }

    fn read(&self, input: &Value) -> Result<Value, ToolError> {
        Ok(input.clone())
    }

    fn plan(&self, _: &Value) -> Result<ActionPlan, ToolError> {
        Ok(ActionPlan {
            kind: "screen".into(),
            read_only: true,
            summary: "screenshot".into(),
            detail: Default::default(),
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn run(&self, _: Value, _: &ToolContext) -> ToolOutput {
        use base64::Engine as _;
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let data =
            base64::engine::general_purpose::STANDARD.encode(fake_screenshot_png(1280, 800, n));
        ToolOutput {
            content: vec![
                deskhand_engine::llm::ToolResultContent::Text {
                    text: format!("screenshot {n}"),
                },
                deskhand_engine::llm::ToolResultContent::Image {
                    source: deskhand_engine::llm::ImageSource::Base64 {
                        media_type: "image/png".into(),
                        data,
                    },
                },
            ],
            is_error: false,
            screen: None,
        }
    }
}
