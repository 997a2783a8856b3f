//! Today's Claude models against the stand-in, which speaks and refuses as the current API
//! does: the GA computer toolset's member calls (run in order, stopped at the first failure,
//! answered with their `toolset_name`), the step-down when an endpoint refuses the toolset,
//! adaptive thinking kept byte for byte through the tool loop and across a restart, and no
//! thinking sent to another provider.

use std::sync::{Arc, Mutex};

use crate::support::cli::{deskhand_at, run};
use crate::support::*;
use async_trait::async_trait;
use deskhand_engine::agent::{AgentEvent, ApprovalPolicy, Approver, Decision, FixedApprover};
use deskhand_engine::llm::{AnthropicNativeTool, ToolDefinition};
use deskhand_engine::tools::{
    ActionPlan, ToolContext, ToolError, ToolOutput, ToolRegistry, TypedTool,
};
use deskhand_standin::{Reply, Script, StandIn, Turn};
use serde_json::{Value, json};

fn auto() -> Box<dyn Approver> {
    Box::new(FixedApprover(Decision::Approve))
}

/// A `computer` tool without a screen: offers the GA toolset (falling back to
/// `computer_20251124`), records each action it runs, and fails `key` with an unknown key.
#[derive(Default)]
struct FakeComputer {
    ran: Mutex<Vec<Value>>,
}

fn toolset_definition() -> AnthropicNativeTool {
    AnthropicNativeTool {
        definition: json!({"type": "computer_toolset_20260801"}),
        beta: None,
        fallback: Some(Box::new(AnthropicNativeTool::new(
            json!({"type": "computer_20251124", "name": "computer",
                   "display_width_px": 1280, "display_height_px": 800, "enable_zoom": true}),
            Some("computer-use-2025-11-24"),
        ))),
    }
}

#[async_trait]
impl TypedTool for FakeComputer {
    type Input = Value;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "computer".into(),
            description: "A screen.".into(),
            input_schema: json!({"type": "object", "properties": {"action": {"type": "string"}},
                                 "required": ["action"]}),
            anthropic: Some(toolset_definition()),
        }
    }

    fn read(&self, input: &Value) -> Result<Value, ToolError> {
        Ok(input.clone())
    }

    fn plan(&self, input: &Value) -> Result<ActionPlan, ToolError> {
        Ok(ActionPlan {
            kind: format!("computer.{}", input["action"].as_str().unwrap_or("?")),
            read_only: false,
            summary: input.to_string(),
            detail: Default::default(),
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn run(&self, input: Value, _: &ToolContext) -> ToolOutput {
        self.ran.lock().unwrap().push(input.clone());
        if input["action"] == "key" && input["text"] == "ctrl+Retrun" {
            return ToolOutput::error("unknown key `Retrun`");
        }
        ToolOutput::text(format!("did {}", input["action"]))
    }
}

fn computer_agent(
    api: &StandIn,
    model: &str,
) -> (deskhand_engine::agent::Agent, Arc<FakeComputer>) {
    let computer = Arc::new(FakeComputer::default());
    let mut tools = ToolRegistry::default();
    tools.register(computer.clone()).unwrap();
    let mut agent = agent(&api.url(), tools, ApprovalPolicy::Auto, auto(), 10);
    agent.config.model = model.into();
    (agent, computer)
}

#[tokio::test]
async fn member_calls_run_in_order_stop_at_the_first_failure_and_echo_their_toolset() {
    let api = StandIn::spawn([
        Reply::new()
            .member("left_click", json!({"coordinate": [10, 20]}))
            .member("key", json!({"text": "ctrl+Retrun"}))
            .member("type", json!({"text": "never typed"}))
            .member("key", json!({"text": "Down", "repeat": 2}))
            .into(),
        Turn::text("Done."),
    ]);
    let (agent, computer) = computer_agent(&api, "claude-opus-5-5");
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&agent, &mut history, "click, then press").await;
    assert_eq!(outcome.turns, 2, "{events:?}");
    // Only the click and the failing key ran, as the computer tool's own actions.
    assert_eq!(
        *computer.ran.lock().unwrap(),
        vec![
            json!({"action": "left_click", "coordinate": [10, 20]}),
            json!({"action": "key", "text": "ctrl+Retrun"}),
        ]
    );
    let requests = api.accepted();
    assert_eq!(requests.len(), 2, "{:?}", api.requests());
    assert_eq!(
        requests[0].body["tools"],
        json!([{"type": "computer_toolset_20260801"}])
    );
    assert!(!requests[0].headers.contains_key("anthropic-beta"));
    let results = last_tool_results(&requests[1].body);
    assert_eq!(results.len(), 4);
    assert!(results.iter().all(|r| r["toolset_name"] == "computer"));
    assert_eq!(results[0].get("is_error"), None);
    assert_eq!(results[1]["is_error"], true);
    assert!(result_text(&results[1]).contains("Retrun"));
    for later in &results[2..] {
        assert_eq!(later["is_error"], true);
        assert_eq!(
            result_text(later),
            "Not executed: an earlier computer action in this turn failed."
        );
    }
    // The window and the store see the computer tool's calls, as with the single tool.
    let calls: Vec<(&str, &Value)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { name, input, .. } => Some((name.as_str(), input)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls[2],
        (
            "computer",
            &json!({"action": "type", "text": "never typed"})
        )
    );
    assert_eq!(
        calls[3],
        ("computer", &json!({"action": "key", "text": "Down Down"}))
    );
    // The stored history keeps the calls as the API sent them.
    assert!(
        history[1]
            .tool_uses()
            .all(|c| c.toolset_name == Some("computer"))
    );
}

#[tokio::test]
async fn an_endpoint_refusing_the_toolset_steps_down_once_and_is_remembered() {
    let api = StandIn::spawn(
        Script::new([
            Reply::new()
                .tool_use("computer", json!({"action": "screenshot"}))
                .into(),
            Turn::text("First run done."),
            Turn::text("Second run done."),
        ])
        .refusing_tool_type("computer_toolset_20260801"),
    );
    let (agent, _) = computer_agent(&api, "claude-sonnet-5");
    let mut history = Vec::new();
    let (_, events) = run_prompt(&agent, &mut history, "look").await;
    let requests = api.requests();
    assert!(
        requests[0]
            .rejected
            .as_deref()
            .is_some_and(|r| r.contains("computer_toolset_20260801")),
        "{requests:?}"
    );
    let accepted = api.accepted();
    assert_eq!(accepted.len(), 2);
    assert_eq!(accepted[0].body["tools"][0]["type"], "computer_20251124");
    assert_eq!(
        accepted[0].headers["anthropic-beta"],
        "computer-use-2025-11-24"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Retrying { error, .. }
        if error.contains("offering computer_20251124 instead of computer_toolset_20260801")))
    );
    // The next run offers the older version at once, and says so in `started`.
    let (_, events) = run_prompt(&agent, &mut history, "again").await;
    assert!(
        matches!(&events[0], AgentEvent::Started { tool_fallbacks, .. }
        if tool_fallbacks == &vec!["computer_toolset_20260801 refused with HTTP 400".to_string()])
    );
    assert_eq!(api.requests().len(), 4, "no second refusal");
    assert_eq!(
        api.accepted()[2].body["tools"][0]["type"],
        "computer_20251124"
    );
}

#[tokio::test]
async fn opus_5_5_refuses_the_old_computer_tool_and_no_tool_choice_is_sent() {
    // The stand-in refuses computer_20251124 for Opus 5.5 as the API does: a client that sent
    // it (the Bedrock fallback row, say) gets the 400 naming it.
    let api = StandIn::spawn([Turn::text("never")]);
    let tools = {
        let mut tools = ToolRegistry::default();
        tools.register(Arc::new(EchoTool::default())).unwrap();
        tools
    };
    let mut agent = agent(&api.url(), tools, ApprovalPolicy::Auto, auto(), 3);
    agent.config.model = "claude-opus-5-5".into();
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages", api.url()))
        .header("x-api-key", API_KEY)
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "computer-use-2025-11-24")
        .json(&json!({"model": "claude-opus-5-5", "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "computer_20251124", "name": "computer",
                       "display_width_px": 1280, "display_height_px": 800}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.text().await.unwrap().contains("computer_20251124"));
    // And the client never forces a tool: the same model takes a plain run.
    let mut history = Vec::new();
    let (outcome, _) = run_prompt(&agent, &mut history, "hi").await;
    assert_eq!(outcome.turns, 1);
    let body = &api.accepted()[0].body;
    assert!(body.get("tool_choice").is_none());
}

#[tokio::test]
async fn thinking_is_adaptive_and_comes_back_byte_for_byte_through_the_tool_loop() {
    let thinking = "I should click the \u{1F600} button — carefully.\n\tThen check.";
    let api = StandIn::spawn([
        Reply::new()
            .thinking(thinking, "sig/abc+==")
            .text("Clicking.")
            .member("left_click", json!({"coordinate": [1, 2]}))
            .into(),
        Reply::new()
            .thinking("Done, it seems.", "sig2")
            .member("screenshot", json!({}))
            .into(),
        Turn::text("All done."),
    ]);
    let (agent, _) = computer_agent(&api, "claude-opus-5-5");
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&agent, &mut history, "click").await;
    assert_eq!(outcome.turns, 3, "{:?}", api.requests());
    let requests = api.accepted();
    assert_eq!(requests.len(), 3, "{:?}", api.requests());
    for request in &requests {
        assert_eq!(
            request.body["thinking"],
            json!({"type": "adaptive", "display": "summarized"})
        );
        assert_eq!(request.body["output_config"], json!({"effort": "high"}));
        assert!(request.body.get("tool_choice").is_none());
    }
    // Both earlier responses' thinking is in the last request, exactly as sent.
    let last = &requests[2].body["messages"];
    assert_eq!(
        last[1]["content"][0],
        json!({"type": "thinking", "thinking": thinking, "signature": "sig/abc+=="})
    );
    assert_eq!(
        last[3]["content"][0],
        json!({"type": "thinking", "thinking": "Done, it seems.", "signature": "sig2"})
    );
    // Thinking is progress, not answer text.
    assert!(!streamed_text(&events).contains("carefully"));
    let thought: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ThinkingDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thought, format!("{thinking}Done, it seems."));
}

/// The stand-in refuses what the API refuses, so the test above can fail: an altered or a
/// dropped thinking block, and a forced `tool_choice` on a Claude 5 model.
#[tokio::test]
async fn the_stand_in_refuses_altered_or_dropped_thinking_and_a_forced_tool_choice() {
    let api = StandIn::spawn([
        Reply::new()
            .thinking("plan", "sig")
            .tool_use_with_id("toolu_1", "echo", json!({"text": "a"}))
            .into(),
        Turn::text("ok"),
    ]);
    let client = reqwest::Client::new();
    let send = |body: Value| {
        client
            .post(format!("{}/v1/messages", api.url()))
            .header("x-api-key", API_KEY)
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
    };
    let first = send(json!({"model": "claude-opus-5", "max_tokens": 10,
        "messages": [{"role": "user", "content": "go"}]}))
    .await
    .unwrap();
    assert_eq!(first.status(), 200);
    let conversation = |thinking: Option<Value>| {
        let mut assistant = vec![
            json!({"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "a"}}),
        ];
        if let Some(t) = thinking {
            assistant.insert(0, t);
        }
        json!({"model": "claude-opus-5", "max_tokens": 10, "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]},
        ]})
    };
    for (thinking, wanted) in [
        (None, "must be passed back"),
        (
            Some(json!({"type": "thinking", "thinking": "plan!", "signature": "sig"})),
            "cannot be modified",
        ),
    ] {
        let response = send(conversation(thinking)).await.unwrap();
        assert_eq!(response.status(), 400);
        assert!(response.text().await.unwrap().contains(wanted));
    }
    let mut forced = conversation(Some(
        json!({"type": "thinking", "thinking": "plan", "signature": "sig"}),
    ));
    forced["tool_choice"] = json!({"type": "any"});
    let response = send(forced).await.unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.text().await.unwrap().contains("tool_choice"));
    let response = send(conversation(Some(
        json!({"type": "thinking", "thinking": "plan", "signature": "sig"}),
    )))
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
}

/// A thinking session through the CLI, resumed by a new process: the resumed request carries
/// the stored thinking unchanged (the stand-in checks it), and the same session continued
/// through another provider sends none of it.
#[test]
fn a_thinking_session_resumed_after_a_restart_keeps_its_thinking_for_claude_only() {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Reply::new()
            .thinking("Let me list the files.", "sig-resume")
            .tool_use("bash", json!({"command": "echo hi"}))
            .into(),
        Turn::text("Listed."),
        Turn::text("Resumed."),
        Turn::text("From another provider."),
    ]);
    let ask = |args: &[&str]| {
        let mut command = deskhand_at(&api, dir.path());
        command.args(["ask", "--json", "--tools", "bash", "--approve", "auto"]);
        command.args(args);
        run(&mut command)
    };
    let (output, stdout, stderr) = ask(&["--model", "claude-opus-5-5", "list"]);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let done: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let session = done["session_id"].as_str().unwrap().to_string();
    let (output, _, stderr) = ask(&["--model", "claude-opus-5-5", "--session", &session, "more"]);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let resumed = &api.accepted()[2].body["messages"];
    assert_eq!(
        resumed[1]["content"][0],
        json!({"type": "thinking", "thinking": "Let me list the files.", "signature": "sig-resume"})
    );
    // The JSON export keeps the block as stored.
    let mut export = crate::support::cli::deskhand(dir.path());
    export.args(["sessions", "export", &session, "--format", "json", "-o"]);
    export.arg(dir.path().join("export.json"));
    let (output, _, stderr) = run(&mut export);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let exported = std::fs::read_to_string(dir.path().join("export.json")).unwrap();
    let exported: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(
        exported["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Let me list the files.", "signature": "sig-resume"}),
        "{exported}"
    );
    // The streamed pieces were dropped once the message that holds them was stored.
    assert!(
        !exported.to_string().contains("thinking_delta"),
        "{exported}"
    );
    let mut openai = crate::support::cli::ask_over_openai(&api, dir.path());
    openai.args([
        "--tools",
        "bash",
        "--approve",
        "auto",
        "--session",
        &session,
        "other",
    ]);
    let (output, _, stderr) = run(&mut openai);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let requests = api.accepted();
    let chat = requests.last().unwrap();
    assert!(chat.path.ends_with("/chat/completions"), "{}", chat.path);
    let sent = chat.body.to_string();
    assert!(
        !sent.contains("sig-resume") && !sent.contains("Let me list"),
        "{sent}"
    );
}
