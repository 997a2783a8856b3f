//! Scripted replies come out in the API's wire format.

use std::time::{Duration, Instant};

use crate::common::*;
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::json;

#[tokio::test]
async fn text_reply_reassembles_in_order() {
    let text = "Hello from the stand-in, streamed in small pieces.";
    let api = StandIn::spawn([Turn::text(text)]);
    let response = post(&api, &body(true)).await;
    assert_eq!(response.headers()["request-id"], "req_standin_1");
    let events = parse_sse(&response.text().await.unwrap());

    let names = names(&events);
    assert_eq!(names[..3], ["message_start", "ping", "content_block_start"]);
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(
        names[3..names.len() - 3]
            .iter()
            .all(|n| *n == "content_block_delta")
    );
    assert!(names.len() - 6 > 3, "the text is split into several deltas");

    let start = &events[0].1["message"];
    assert_eq!(start["model"], MODEL);
    assert_eq!(start["id"], "msg_standin_1");
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["stop_reason"], json!(null));
    assert!(start["usage"]["input_tokens"].as_u64().unwrap() >= 1);
    assert_eq!(
        events[2].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(concat_deltas(&events, "text_delta", "text"), text);
    let delta = &events[events.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["output_tokens"], (text.len() / 4) as u64);
    assert_eq!(api.accepted().len(), 1);
    assert_eq!(api.remaining_turns(), 0);
}

#[tokio::test]
async fn tool_use_input_concatenates_to_the_json() {
    let input = json!({"action": "left_click", "coordinate": [640, 400], "text": "shift"});
    let api = StandIn::spawn([Turn::tool_use("computer", input.clone())]);
    let events = stream_events(&api, &body(true)).await;

    let start = events
        .iter()
        .find(|(n, _)| n == "content_block_start")
        .unwrap();
    assert_eq!(
        start.1["content_block"],
        json!({"type": "tool_use", "id": "toolu_standin_1", "name": "computer", "input": {}})
    );
    let pieces = events
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .count();
    assert!(pieces > 1, "input split into pieces");
    let json = concat_deltas(&events, "input_json_delta", "partial_json");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json).unwrap(),
        input
    );
    let delta = events.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn parallel_tools_empty_input_and_raw_json() {
    let api = StandIn::spawn([
        Turn::tool_uses([
            ("computer", json!({"action": "screenshot"})),
            ("noop", json!({})),
        ]),
        Reply::new()
            .tool_use_raw("bash", r#"{"command": "ls"#)
            .into(),
    ]);
    let events = stream_events(&api, &body(true)).await;
    let starts: Vec<_> = events
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .collect();
    assert_eq!(starts[0].1["index"], 0);
    assert_eq!(starts[1].1["index"], 1);
    assert_eq!(starts[1].1["content_block"]["id"], "toolu_standin_2");
    let empty: Vec<_> = events
        .iter()
        .filter(|(n, d)| n == "content_block_delta" && d["index"] == 1)
        .collect();
    assert_eq!(empty.len(), 1, "an empty input still sends one delta");
    assert_eq!(empty[0].1["delta"]["partial_json"], "");

    let events = stream_events(&api, &body(true)).await;
    assert_eq!(
        concat_deltas(&events, "input_json_delta", "partial_json"),
        r#"{"command": "ls"#
    );
}

#[tokio::test]
async fn thinking_then_text() {
    let api = StandIn::spawn([Reply::new()
        .thinking("I should look at the screen first.", "sig-123")
        .text("Looking.")
        .into()]);
    let events = stream_events(&api, &body(true)).await;
    let start = events
        .iter()
        .find(|(n, _)| n == "content_block_start")
        .unwrap();
    assert_eq!(start.1["content_block"]["type"], "thinking");
    assert_eq!(
        concat_deltas(&events, "thinking_delta", "thinking"),
        "I should look at the screen first."
    );
    assert_eq!(
        concat_deltas(&events, "signature_delta", "signature"),
        "sig-123"
    );
    assert_eq!(concat_deltas(&events, "text_delta", "text"), "Looking.");
}

#[tokio::test]
async fn unknown_events_and_extra_pings_are_interleaved() {
    let api = StandIn::spawn([Reply::new().text("hi").with_unknown_events().into()]);
    let events = stream_events(&api, &body(true)).await;
    let names = names(&events);
    assert!(names.contains(&"deskhand_future_event"));
    assert!(names.iter().filter(|n| **n == "ping").count() > 2);
    assert_eq!(names.last(), Some(&"message_stop"));
    assert_eq!(concat_deltas(&events, "text_delta", "text"), "hi");
}

#[tokio::test]
async fn scripted_usage_and_stop_reason_win() {
    let api = StandIn::spawn([Reply::new()
        .text("cut")
        .usage(1234, 56)
        .stop_reason("max_tokens")
        .into()]);
    let events = stream_events(&api, &body(true)).await;
    assert_eq!(events[0].1["message"]["usage"]["input_tokens"], 1234);
    let delta = events.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "max_tokens");
    assert_eq!(delta.1["usage"]["output_tokens"], 56);
}

#[tokio::test]
async fn without_stream_the_whole_message_comes_as_json() {
    let api = StandIn::spawn([Reply::new()
        .text("Clicking.")
        .tool_use_with_id(
            "toolu_x",
            "computer",
            json!({"action": "left_click", "coordinate": [1, 2]}),
        )
        .into()]);
    let response = post(&api, &body(false)).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("request-id"));
    let message: serde_json::Value = response.json().await.unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(message["model"], MODEL);
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["stop_sequence"], json!(null));
    assert_eq!(
        message["content"][0],
        json!({"type": "text", "text": "Clicking."})
    );
    assert_eq!(message["content"][1]["id"], "toolu_x");
    assert_eq!(message["content"][1]["input"]["coordinate"], json!([1, 2]));
    assert!(message["usage"]["output_tokens"].as_u64().unwrap() >= 1);
}

#[tokio::test]
async fn chunk_delay_paces_the_events() {
    let api = StandIn::spawn([Reply::new().text("0123456789abcdef").delay_ms(20).into()]);
    let started = Instant::now();
    let events = stream_events(&api, &body(true)).await;
    // 8 events, 7 pauses.
    assert_eq!(events.len(), 8);
    assert!(started.elapsed() >= Duration::from_millis(130));
}
