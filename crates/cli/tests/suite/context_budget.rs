//! The context budget over a 60-step screenshot session against the stand-in, which bills
//! input like the API (prompt cache included): at most N screenshots per request, a
//! byte-stable cached prefix between turns, and summaries that keep every request valid.

use std::sync::Arc;

use crate::support::{ScreenshotTool, agent_with, anthropic_provider, run_prompt};
use deskhand_engine::agent::context::{ContextPolicy, PRUNED_SCREENSHOT};
use deskhand_engine::agent::{
    Agent, AgentConfig, AgentEvent, ApprovalPolicy, Budget, Decision, FixedApprover, RunStatus,
};
use deskhand_engine::llm::pricing::PriceTable;
use deskhand_engine::tools::ToolRegistry;
use deskhand_standin::{Recorded, Reply, Script, StandIn, Turn};
use serde_json::{Value, json};

const STEPS: usize = 60;
const SUMMARY_MARKER: &str = "getting too long for the context window";

fn session_script() -> Script {
    let mut turns: Vec<Turn> = (0..STEPS)
        .map(|i| Turn::tool_use("screen", json!({"step": i})))
        .collect();
    turns.push(Turn::text("All done."));
    Script::new(turns).with_rule(
        SUMMARY_MARKER,
        Reply::new().text("Summary: took many screenshots of the desktop."),
    )
}

fn agent(url: &str, config: AgentConfig) -> Agent {
    let mut tools = ToolRegistry::default();
    tools.register(Arc::new(ScreenshotTool::default())).unwrap();
    let approver = Box::new(FixedApprover(Decision::Approve));
    let mut agent = agent_with(
        anthropic_provider(url),
        tools,
        ApprovalPolicy::Auto,
        approver,
        100,
    );
    agent.config = AgentConfig {
        model: "claude-sonnet-4-5".into(),
        system: "Work the screen.".into(),
        max_turns: 100,
        ..config
    };
    agent
}

async fn run(agent: &Agent) -> (RunStatus, Vec<AgentEvent>, usize) {
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(agent, &mut history, "look around").await;
    (outcome.status, events, history.len())
}

fn images_in(request: &Recorded) -> usize {
    request
        .body
        .to_string()
        .matches("\"type\":\"image\"")
        .count()
}

/// The messages as sent, without cache markers (which move every turn by design).
fn messages_without_markers(request: &Recorded) -> Vec<String> {
    let mut messages = request.body["messages"].clone();
    for message in messages.as_array_mut().unwrap() {
        for block in message["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
    }
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect()
}

#[tokio::test]
async fn sixty_steps_send_at_most_n_screenshots_over_a_stable_cached_prefix() {
    let api = StandIn::spawn(session_script());
    let config = AgentConfig {
        price: PriceTable::default().price("claude-sonnet-4-5"),
        ..AgentConfig::new("claude-sonnet-4-5")
    };
    let (status, events, stored) = run(&agent(&api.url(), config)).await;
    assert_eq!(status, RunStatus::Done);
    assert_eq!(stored, 2 * STEPS + 2, "the stored history keeps every turn");

    let requests = api.requests();
    assert_eq!(requests.len(), STEPS + 1);
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    for (i, request) in requests.iter().enumerate() {
        assert!(
            images_in(request) <= 3,
            "request {i} sent {} screenshots",
            images_in(request)
        );
        assert!(
            images_in(request) >= 2.min(i),
            "request {i} keeps the newest screenshots"
        );
    }
    // Between turns the previous request's messages stand unchanged, byte for byte, at the
    // start of the next one, except when a chunk of old screenshots is dropped (every 2nd turn).
    let mut breaks = 0;
    for pair in requests.windows(2) {
        let (before, after) = (
            messages_without_markers(&pair[0]),
            messages_without_markers(&pair[1]),
        );
        if after[..before.len()] != before[..] {
            breaks += 1;
            let pruned = |r: &[String]| {
                r.iter()
                    .map(|m| m.matches(PRUNED_SCREENSHOT).count())
                    .sum::<usize>()
            };
            assert_eq!(
                pruned(&after) - pruned(&before),
                2,
                "a prefix only changes to drop a chunk"
            );
        }
    }
    assert!(breaks <= STEPS / 2, "{breaks} prefix changes");
    // The stand-in read the cache on nearly every request, and the run reported it.
    // The stand-in read the cache on most requests and the run reported it. Early on, the part
    // that pruning leaves stable is under the API's 1,024-token minimum, so a chunk drop then
    // rewrites the cache; later every request reads.
    let reads: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage { turn, .. } => Some(turn.cache_read_input_tokens),
            _ => None,
        })
        .collect();
    assert!(
        reads.iter().filter(|&&r| r > 0).count() >= STEPS * 3 / 4,
        "{reads:?}"
    );
    assert!(reads[STEPS / 2..].iter().all(|&r| r > 0), "{reads:?}");
    let Some(AgentEvent::Done {
        usage,
        cost_usd: Some(cost),
        ..
    }) = events.last()
    else {
        panic!("{:?}", events.last())
    };
    assert!(usage.cache_read_input_tokens > usage.input_tokens);
    assert!(*cost > 0.0);
}

#[tokio::test]
async fn near_the_window_older_turns_are_summarized_and_every_request_stays_valid() {
    let api = StandIn::spawn(session_script());
    let context = ContextPolicy {
        context_window: 6_000,
        ..ContextPolicy::default()
    };
    let (status, events, stored) = run(&agent(
        &api.url(),
        AgentConfig {
            context,
            ..AgentConfig::new("claude-sonnet-4-5")
        },
    ))
    .await;
    assert_eq!(status, RunStatus::Done);
    assert_eq!(
        stored,
        2 * STEPS + 2,
        "summaries replace turns in requests, not in the history"
    );

    let summaries: Vec<(usize, u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ContextSummarized {
                upto,
                tokens_before,
                tokens_after,
            } => Some((*upto, *tokens_before, *tokens_after)),
            _ => None,
        })
        .collect();
    assert!(summaries.len() >= 2, "{summaries:?}");
    assert!(
        summaries
            .iter()
            .all(|(_, before, after)| after < before && *before >= 4_800)
    );
    assert!(
        summaries.windows(2).all(|w| w[1].0 > w[0].0),
        "each summary reaches further"
    );

    let requests = api.requests();
    assert!(
        requests.iter().all(|r| r.rejected.is_none()),
        "every request, summaries included, is valid"
    );
    let summarizing = requests
        .iter()
        .filter(|r| r.body.to_string().contains(SUMMARY_MARKER))
        .count();
    assert_eq!(summarizing, summaries.len());
    let last = &requests.last().unwrap().body;
    assert!(
        last["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("took many screenshots")
    );
    assert!(last.to_string().len() < requests[summaries[0].0 / 2].body.to_string().len() * 2);
}

#[tokio::test]
async fn a_token_budget_stops_the_run_cleanly() {
    let api = StandIn::spawn(session_script());
    let budget = Budget {
        max_tokens: Some(10_000),
        max_cost_usd: None,
    };
    let (status, events, _) = run(&agent(
        &api.url(),
        AgentConfig {
            budget,
            ..AgentConfig::new("claude-sonnet-4-5")
        },
    ))
    .await;
    assert_eq!(status, RunStatus::Budget);
    let requests = api.requests();
    assert!(
        requests.len() < 10,
        "stopped early: {} requests",
        requests.len()
    );
    let last_result = events.iter().rev().find_map(|e| match e {
        AgentEvent::ToolResult {
            text,
            is_error: true,
            ..
        } => Some(text),
        _ => None,
    });
    assert!(last_result.unwrap().contains("budget was reached"));
    // The unrun call was answered: the history is valid for a next request.
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Done {
            status: RunStatus::Budget,
            ..
        })
    ));
}
