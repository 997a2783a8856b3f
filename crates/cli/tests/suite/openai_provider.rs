//! The OpenAI-compatible provider against the stand-in's Chat Completions side, over real
//! HTTP and SSE: streaming, tool calls in pieces, parallel calls, screenshots in tool results,
//! each service's URL and header shape, faults as typed errors, and malformed arguments. The
//! stand-in rejects what OpenAI rejects, so every accepted request is a valid one.

use std::sync::Arc;

use crate::support::*;
use deskhand_engine::agent::{
    AgentEvent, ApprovalPolicy, Approver, Decision, FixedApprover, RunStatus,
};
use deskhand_engine::llm::openai::Service;
use deskhand_engine::llm::{
    ContentBlock, ErrorKind, Message, ModelRequest, Provider, ProviderError, StreamEvent, Usage,
};
use deskhand_engine::tools::ToolRegistry;
use deskhand_standin::{Recorded, Reply, Script, StandIn, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn auto() -> Box<dyn Approver> {
    Box::new(FixedApprover(Decision::Approve))
}

fn openai(api: &StandIn) -> Harness {
    let mut h = harness_with(
        openai_provider(&format!("{}/v1", api.url()), Service::OpenAi),
        ApprovalPolicy::Auto,
        auto(),
        50,
    );
    h.agent.config.model = "gpt-test".into();
    h
}

async fn run(
    h: &Harness,
    prompt: &str,
) -> (
    deskhand_engine::agent::RunOutcome,
    Vec<AgentEvent>,
    Vec<Message>,
) {
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&h.agent, &mut history, prompt).await;
    (outcome, events, history)
}

/// The messages of a request, by role.
fn roles(request: &Recorded) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

fn image_urls(request: &Recorded) -> Vec<String> {
    let mut urls = Vec::new();
    for message in request.body["messages"].as_array().unwrap() {
        for part in message["content"].as_array().into_iter().flatten() {
            if let Some(url) = part.pointer("/image_url/url").and_then(Value::as_str) {
                urls.push(url.to_string());
            }
        }
    }
    urls
}

#[tokio::test]
async fn text_streams_and_the_request_has_the_chat_completions_shape() {
    let api = StandIn::spawn([Reply::new()
        .text("Hello from a Chat Completions model.")
        .usage(40, 9)
        .with_unknown_events()
        .into()]);
    let h = openai(&api);
    let (outcome, events, history) = run(&h, "hi").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(
        streamed_text(&events),
        "Hello from a Chat Completions model."
    );
    let pieces = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::TextDelta { .. }))
        .count();
    assert!(pieces > 1, "text streams in pieces");
    assert!(matches!(&events[0], AgentEvent::Started { provider, .. } if provider == "OpenAI"));
    assert_eq!(
        outcome.usage,
        Usage {
            input_tokens: 40,
            output_tokens: 9,
            ..Usage::default()
        }
    );
    assert_eq!(history[1].text(), "Hello from a Chat Completions model.");

    let request = &api.requests()[0];
    assert_eq!(request.rejected, None);
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.headers["authorization"],
        format!("Bearer {API_KEY}")
    );
    assert!(!request.headers.contains_key("x-api-key"));
    assert!(!request.headers.contains_key("api-key"));
    let body = &request.body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_completion_tokens"], 1024);
    assert!(body.get("max_tokens").is_none());
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": format!("You are a test.\n\n{}", deskhand_engine::agent::spotlight::SYSTEM_NOTE)},
            {"role": "user", "content": "hi"},
        ])
    );
    assert!(!body.to_string().contains("cache_control"));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "echo",
            "description": "Echoes text back.",
            "parameters": h.agent.tools.definitions()[0].input_schema,
        }}])
    );
}

#[tokio::test]
async fn parallel_tool_calls_streamed_in_pieces_are_each_answered_in_order() {
    let api = StandIn::spawn([
        Reply::new()
            .text("Three at once.")
            .tool_use("echo", json!({"text": "the first of three calls"}))
            .tool_use("echo", json!({"text": "the second of three calls"}))
            .tool_use_with_id("call_custom", "echo", json!({"text": "third"}))
            .into(),
        Turn::text("All three done."),
    ]);
    let h = openai(&api);
    let (outcome, events, history) = run(&h, "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(
        *h.echo.ran.lock().unwrap(),
        [
            "the first of three calls",
            "the second of three calls",
            "third"
        ]
    );
    let calls: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["call_standin_1", "call_standin_2", "call_custom"]);
    assert_eq!(history[1].tool_uses().count(), 3);

    let requests = api.accepted();
    assert_eq!(requests.len(), 2, "{:?}", api.requests());
    assert_eq!(
        roles(&requests[1]),
        ["system", "user", "assistant", "tool", "tool", "tool"]
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["content"], "Three at once.");
    assert_eq!(
        messages[2]["tool_calls"][0],
        json!({"id": "call_standin_1", "type": "function", "function": {
            "name": "echo", "arguments": "{\"text\":\"the first of three calls\"}"}})
    );
    for (message, (id, text)) in messages[3..].iter().zip([
        ("call_standin_1", "echo: the first of three calls"),
        ("call_standin_2", "echo: the second of three calls"),
        ("call_custom", "echo: third"),
    ]) {
        assert_eq!(message["tool_call_id"], id);
        assert_eq!(
            deskhand_engine::agent::spotlight::unmarked(message["content"].as_str().unwrap()),
            text
        );
    }
    assert_eq!(api.remaining_turns(), 0);
}

#[tokio::test]
async fn screenshots_go_in_a_user_message_after_the_tool_message_and_only_the_newest_are_sent() {
    let mut turns: Vec<Turn> = (0..5)
        .map(|step| Turn::tool_use("screen", json!({"step": step})))
        .collect();
    turns.push(Turn::text("I have seen enough."));
    let api = StandIn::spawn(Script::new(turns).validating_images());
    let mut tools = ToolRegistry::default();
    tools.register(Arc::new(ScreenshotTool::default())).unwrap();
    let mut h = openai(&api);
    h.agent.tools = Arc::new(tools);
    let (outcome, _, history) = run(&h, "look at the screen").await;

    assert_eq!(outcome.status, RunStatus::Done);
    let requests = api.requests();
    assert!(
        requests.iter().all(|r| r.rejected.is_none()),
        "{requests:?}"
    );
    assert_eq!(requests.len(), 6);

    // After the first screenshot: the tool message says so, and the image follows.
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(
        roles(&requests[1]),
        ["system", "user", "assistant", "tool", "user"]
    );
    let said = messages[3]["content"].as_str().unwrap();
    assert!(
        said.contains("\nscreenshot 0\n</untrusted-data id="),
        "{said}"
    );
    assert!(
        said.ends_with("\n[The image this tool returned follows in the next user message.]"),
        "{said}"
    );
    assert_eq!(
        messages[4]["content"][0],
        json!({"type": "text", "text": "Image returned by tool call call_standin_1:"})
    );
    let url = messages[4]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{}",
        &url[..40]
    );

    // The newest three at most, however many were taken; the stored history keeps all five.
    let sent: Vec<usize> = requests.iter().map(|r| image_urls(r).len()).collect();
    assert_eq!(sent, [0, 1, 2, 3, 2, 3]);
    let stored = history
        .iter()
        .flat_map(|m| &m.content)
        .filter(|b| matches!(b, ContentBlock::ToolResult { content, .. } if content.len() == 2))
        .count();
    assert_eq!(stored, 5);
    let last = requests[5].body["messages"].as_array().unwrap();
    assert!(
        last.iter().any(|m| m["role"] == "tool"
            && m["content"]
                .as_str()
                .unwrap()
                .contains("[older screenshot removed to save context]")),
        "pruned screenshots become text in their tool message"
    );
}

#[tokio::test]
async fn azure_addresses_the_deployment_with_its_api_version_and_api_key_header() {
    let api = StandIn::spawn([
        Turn::tool_use("echo", json!({"text": "azure"})),
        Turn::text("ok"),
    ]);
    let mut h = harness_with(
        openai_provider(
            &format!("{}/", api.url()),
            Service::Azure {
                deployment: "gpt4o-prod".into(),
                api_version: "2024-10-21".into(),
            },
        ),
        ApprovalPolicy::Auto,
        auto(),
        50,
    );
    h.agent.config.model = "gpt-4o".into();
    let (outcome, events, _) = run(&h, "hi").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert!(
        matches!(&events[0], AgentEvent::Started { provider, .. } if provider == "Azure OpenAI")
    );
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.rejected, None);
        assert_eq!(
            request.path,
            "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(request.headers["api-key"], API_KEY);
        assert!(!request.headers.contains_key("authorization"));
        assert_eq!(request.body["max_tokens"], 1024);
        assert!(request.body.get("max_completion_tokens").is_none());
    }
}

#[tokio::test]
async fn openrouter_and_keyless_local_servers_have_their_shapes() {
    let api = StandIn::spawn([Turn::text("routed")]);
    let mut h = harness_with(
        openai_provider(&format!("{}/api/v1", api.url()), Service::OpenRouter),
        ApprovalPolicy::Auto,
        auto(),
        50,
    );
    h.agent.config.model = "anthropic/claude-sonnet-4.5".into();
    let (outcome, _, _) = run(&h, "hi").await;
    assert_eq!(outcome.status, RunStatus::Done);
    let request = &api.requests()[0];
    assert_eq!(request.path, "/api/v1/chat/completions");
    assert_eq!(
        request.headers["authorization"],
        format!("Bearer {API_KEY}")
    );
    assert_eq!(request.headers["x-title"], "Deskhand");
    assert_eq!(request.body["model"], "anthropic/claude-sonnet-4.5");

    // A local server without a key: no Authorization header at all.
    let api = StandIn::spawn(Script::new([Turn::text("local")]).without_keys());
    let provider =
        deskhand_engine::llm::openai::OpenAi::new(deskhand_engine::llm::openai::OpenAiConfig {
            service: Service::Compatible,
            base_url: format!("{}/v1", api.url()),
            api_key: None,
            retry: fast_retries(),
            effort: None,
        })
        .unwrap();
    let h = harness_with(Arc::new(provider), ApprovalPolicy::Auto, auto(), 50);
    let (outcome, events, _) = run(&h, "hi").await;
    assert_eq!(outcome.status, RunStatus::Done);
    assert!(
        matches!(&events[0], AgentEvent::Started { provider, .. } if provider == "OpenAI-compatible server")
    );
    let request = &api.requests()[0];
    assert!(!request.headers.contains_key("authorization"));
    assert_eq!(request.body["max_tokens"], 1024);
}

/// Streams one request straight through the provider, with every event it reports.
async fn stream_once(
    provider: &dyn Provider,
) -> (
    Result<deskhand_engine::llm::ModelResponse, ProviderError>,
    Vec<StreamEvent>,
) {
    let messages = [Message::user(vec![ContentBlock::text("hi")])];
    let request = ModelRequest {
        model: "gpt-test",
        system: "",
        messages: &messages,
        tools: &[],
        max_tokens: 100,
        cache_breakpoints: &[],
    };
    let mut events = Vec::new();
    let result = provider.stream(request, &mut |e| events.push(e)).await;
    (result, events)
}

fn retries(events: &[StreamEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                delay_ms, error, ..
            } => Some((*delay_ms, error.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn faults_are_retried_as_the_same_typed_errors() {
    let api = StandIn::spawn([
        Turn::rate_limited(1),
        Turn::status(503, "overloaded_error", None),
        Turn::text("after HTTP errors"),
        Turn::drop_mid_stream(Reply::new().text("this stream is cut short"), 1),
        Turn::error_event(1, "overloaded_error", "Provider returned error"),
        Turn::text("after broken streams"),
    ]);
    let provider = openai_provider(&format!("{}/v1", api.url()), Service::OpenAi);

    let (result, events) = stream_once(provider.as_ref()).await;
    assert_eq!(
        result.unwrap().content,
        vec![ContentBlock::text("after HTTP errors")]
    );
    let retried = retries(&events);
    assert_eq!(retried.len(), 2, "{retried:?}");
    assert_eq!(retried[0].0, 1000, "retry-after-ms is honoured");
    assert!(
        retried[0]
            .1
            .starts_with("OpenAI: rate limited (HTTP 429, request-id req_standin_1)"),
        "{}",
        retried[0].1
    );
    assert!(
        retried[1].1.contains("overloaded (HTTP 503"),
        "{}",
        retried[1].1
    );

    let (result, events) = stream_once(provider.as_ref()).await;
    assert_eq!(
        result.unwrap().content,
        vec![ContentBlock::text("after broken streams")]
    );
    let retried = retries(&events);
    assert_eq!(retried.len(), 2, "{retried:?}");
    assert!(
        retried[0].1.contains("stream broke off"),
        "{}",
        retried[0].1
    );
    assert!(
        retried[1].1.contains("overloaded") && retried[1].1.contains("Provider returned error"),
        "{}",
        retried[1].1
    );
    assert_eq!(api.requests().len(), 6);
    assert_eq!(api.remaining_turns(), 0);
}

#[tokio::test]
async fn final_errors_are_typed_and_not_retried() {
    let cases = [
        (
            Turn::status(401, "authentication_error", None),
            ErrorKind::Auth,
            "authentication failed",
        ),
        (
            Turn::status_with_message(
                400,
                "context_length_exceeded",
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 210345 tokens.",
                None,
            ),
            ErrorKind::ContextTooLong,
            "too long for the model's context window",
        ),
        (
            Turn::status_with_message(
                429,
                "insufficient_quota",
                "You exceeded your current quota",
                None,
            ),
            ErrorKind::Billing,
            "billing",
        ),
        (
            Turn::status(404, "not_found_error", None),
            ErrorKind::NotFound,
            "check the model name",
        ),
    ];
    for (turn, kind, wording) in cases {
        let api = StandIn::spawn([turn, Turn::text("never reached")]);
        let provider = openai_provider(&format!("{}/v1", api.url()), Service::OpenAi);
        let (result, events) = stream_once(provider.as_ref()).await;
        let error = result.unwrap_err();
        assert_eq!(error.kind, kind, "{error}");
        assert!(error.to_string().contains(wording), "{error}");
        assert_eq!(error.request_id.as_deref(), Some("req_standin_1"));
        assert!(retries(&events).is_empty());
        assert_eq!(api.requests().len(), 1);
    }

    // A key the server does not get at all is refused like OpenAI refuses it.
    let api = StandIn::spawn([Turn::text("never reached")]);
    let provider =
        deskhand_engine::llm::openai::OpenAi::new(deskhand_engine::llm::openai::OpenAiConfig {
            service: Service::OpenAi,
            base_url: format!("{}/v1", api.url()),
            api_key: None,
            retry: fast_retries(),
            effort: None,
        })
        .unwrap();
    let error = stream_once(&provider).await.0.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Auth);
    assert!(
        error.message.contains("didn't provide an API key"),
        "{error}"
    );

    // Nothing listening: a network error, retried and then reported.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let provider = openai_provider(&url, Service::OpenAi);
    let (result, events) = stream_once(provider.as_ref()).await;
    assert_eq!(result.unwrap_err().kind, ErrorKind::Network);
    assert_eq!(retries(&events).len(), 3);
}

#[tokio::test]
async fn malformed_arguments_get_an_error_result_and_a_chance_to_fix_them() {
    let api = StandIn::spawn([
        Reply::new()
            .tool_use_raw("echo", "{\"text\": \"unterminated")
            .into(),
        Turn::tool_use("echo", json!({"text": "fixed"})),
        Turn::text("Fixed it."),
    ]);
    let h = openai(&api);
    let (outcome, _, _) = run(&h, "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(*h.echo.ran.lock().unwrap(), ["fixed"]);
    let requests = api.accepted();
    assert_eq!(requests.len(), 3, "{:?}", api.requests());
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["tool_calls"][0]["function"]["arguments"], "{}");
    let answer = messages[3]["content"].as_str().unwrap();
    assert!(
        answer.starts_with("Error: <untrusted-data source=")
            && answer.contains("\nthe tool input could not be read")
            && answer.contains("not valid JSON")
            && answer.contains("unterminated"),
        "{answer}"
    );
    let messages = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(
        deskhand_engine::agent::spotlight::unmarked(
            messages.last().unwrap()["content"].as_str().unwrap()
        ),
        "echo: fixed"
    );
}

#[tokio::test]
async fn a_stop_mid_stream_leaves_a_history_the_next_request_can_send() {
    let api = StandIn::spawn([
        Reply::new()
            .text("Working on it, slowly")
            .tool_use("echo", json!({"text": "never"}))
            .hang_after(4)
            .into(),
        Turn::text("Resumed."),
    ]);
    let h = openai(&api);
    let cancel = CancellationToken::new();
    let mut history = Vec::new();
    let stop = cancel.clone();
    let (outcome, _) = run_collect(&h.agent, &mut history, "go", &cancel, move |event| {
        if matches!(event, AgentEvent::TextDelta { .. }) {
            stop.cancel();
        }
    })
    .await;
    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert!(h.echo.ran.lock().unwrap().is_empty());

    let (outcome, _) = run_prompt(&h.agent, &mut history, "go on").await;
    assert_eq!(outcome.status, RunStatus::Done);
    let requests = api.requests();
    assert_eq!(requests[1].rejected, None, "{:?}", requests[1].rejected);
    assert_eq!(roles(&requests[1]), ["system", "user", "assistant", "user"]);
}
