//! Helpers shared by the stand-in's tests: a raw client and a tiny SSE parser.

use deskhand_standin::StandIn;
use serde_json::{Value, json};

pub const MODEL: &str = "claude-standin-test";

/// A minimal valid request body.
pub fn body(stream: bool) -> Value {
    json!({
        "model": MODEL,
        "max_tokens": 1024,
        "stream": stream,
        "messages": [{"role": "user", "content": "hello"}],
    })
}

/// A valid body with the given messages.
pub fn with_messages(messages: Value) -> Value {
    let mut body = body(true);
    body["messages"] = messages;
    body
}

/// POSTs with the headers the real client sends.
pub async fn post(api: &StandIn, body: &Value) -> reqwest::Response {
    post_raw(
        api,
        &[
            ("x-api-key", "sk-test"),
            ("anthropic-version", "2023-06-01"),
            ("content-type", "application/json"),
        ],
        body.to_string(),
    )
    .await
}

pub async fn post_raw(api: &StandIn, headers: &[(&str, &str)], body: String) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{}/v1/messages", api.url()))
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("the stand-in answers")
}

/// Parses `event: NAME\ndata: JSON\n\n` frames.
pub fn parse_sse(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let mut lines = frame.lines();
            let name = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            assert!(lines.next().is_none(), "one data line per event: {frame:?}");
            (name.to_owned(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

/// Streams a request to its end and returns its events.
pub async fn stream_events(api: &StandIn, body: &Value) -> Vec<(String, Value)> {
    let response = post(api, body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    parse_sse(&response.text().await.unwrap())
}

pub fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

/// The concatenated `field` of every delta of type `delta_type`.
pub fn concat_deltas(events: &[(String, Value)], delta_type: &str, field: &str) -> String {
    events
        .iter()
        .filter(|(name, data)| name == "content_block_delta" && data["delta"]["type"] == delta_type)
        .map(|(_, data)| data["delta"][field].as_str().unwrap().to_owned())
        .collect()
}
