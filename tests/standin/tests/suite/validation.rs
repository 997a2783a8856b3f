//! The stand-in rejects what the real API rejects, records why, and consumes no turn.

use crate::common::*;
use base64::Engine as _;
use deskhand_standin::{Script, StandIn, Turn};
use serde_json::{Value, json};

const HEADERS: [(&str, &str); 3] = [
    ("x-api-key", "sk-test"),
    ("anthropic-version", "2023-06-01"),
    ("content-type", "application/json"),
];

/// Sends and expects a rejection with `status` whose message contains `needle`.
async fn rejects(api: &StandIn, headers: &[(&str, &str)], body: String, status: u16, needle: &str) {
    let before = api.remaining_turns();
    let response = post_raw(api, headers, body).await;
    assert_eq!(
        response.status(),
        status,
        "expected {status} for {needle:?}"
    );
    assert!(response.headers().contains_key("request-id"));
    let error: Value = response.json().await.unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(needle),
        "{message:?} should contain {needle:?}"
    );
    let recorded = api.requests().pop().unwrap();
    assert_eq!(recorded.rejected.as_deref(), Some(message));
    assert_eq!(
        api.remaining_turns(),
        before,
        "a rejection consumes no turn"
    );
}

async fn rejects_body(api: &StandIn, body: Value, needle: &str) {
    rejects(api, &HEADERS, body.to_string(), 400, needle).await;
}

fn png() -> String {
    base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
}

fn image(media_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
}

/// user, assistant calling `ids`, then a user message of `results`.
fn tool_history(ids: &[&str], results: Value) -> Value {
    let calls: Vec<Value> = ids
        .iter()
        .map(|id| json!({"type": "tool_use", "id": id, "name": "computer", "input": {"action": "screenshot"}}))
        .collect();
    json!([
        {"role": "user", "content": "open the browser"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": results},
    ])
}

fn result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
}

#[tokio::test]
async fn header_rules() {
    let api = StandIn::spawn([Turn::text("never served")]);
    let body = body(true).to_string();
    rejects(
        &api,
        &HEADERS[1..],
        body.clone(),
        401,
        "x-api-key header is required",
    )
    .await;
    let no_version = [HEADERS[0], HEADERS[2]];
    rejects(&api, &no_version, body.clone(), 400, "anthropic-version").await;
    let text = [HEADERS[0], HEADERS[1], ("content-type", "text/plain")];
    rejects(&api, &text, body, 400, "content-type").await;
    rejects(&api, &HEADERS, "{not json".into(), 400, "parsing").await;
    let recorded = api.requests();
    assert_eq!(recorded.len(), 4);
    assert_eq!(recorded[3].body, Value::String("{not json".into()));
    assert!(api.accepted().is_empty());
}

#[tokio::test]
async fn body_rules() {
    let api = StandIn::spawn([Turn::text("never served")]);
    let without = |field: &str| {
        let mut body = body(true);
        body.as_object_mut().unwrap().remove(field);
        body
    };
    let with = |field: &str, value: Value| {
        let mut body = body(true);
        body[field] = value;
        body
    };
    rejects_body(&api, without("model"), "model: Field required").await;
    rejects_body(&api, with("model", json!(3)), "model").await;
    rejects_body(&api, without("max_tokens"), "max_tokens: Field required").await;
    rejects_body(&api, with("max_tokens", json!(0)), "max_tokens").await;
    rejects_body(&api, with("max_tokens", json!("1024")), "max_tokens").await;
    rejects_body(&api, without("messages"), "messages: Field required").await;
    rejects_body(&api, with("messages", json!([])), "at least one message").await;
    let assistant_first = json!([{"role": "assistant", "content": "hi"}]);
    rejects_body(
        &api,
        with_messages(assistant_first),
        "first message must use the \"user\" role",
    )
    .await;
    let twice = json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]);
    rejects_body(&api, with_messages(twice), "roles must alternate").await;
    let unknown = json!([{"role": "user", "content": [{"type": "video", "url": "x"}]}]);
    rejects_body(&api, with_messages(unknown), "messages.0.content.0.type").await;
    let empty = json!([{"role": "user", "content": []}]);
    rejects_body(&api, with_messages(empty), "non-empty content").await;
    assert_eq!(api.remaining_turns(), 1);
}

#[tokio::test]
async fn tool_pairing_rules() {
    let api = StandIn::spawn([Turn::text("served once")]);
    // No result at all.
    let history = tool_history(
        &["toolu_a", "toolu_b"],
        json!([result("toolu_a"), {"type": "text", "text": "go on"}]),
    );
    rejects_body(
        &api,
        with_messages(history),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    )
    .await;
    // The tool_use is the last message.
    let mut history = tool_history(&["toolu_a"], json!("unused"));
    history.as_array_mut().unwrap().pop();
    rejects_body(
        &api,
        with_messages(history),
        "without `tool_result` blocks immediately after: toolu_a",
    )
    .await;
    // A result for an id the previous message never used.
    let history = tool_history(
        &["toolu_a"],
        json!([result("toolu_a"), result("toolu_zzz")]),
    );
    rejects_body(
        &api,
        with_messages(history),
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_zzz. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    )
    .await;
    // Results must lead the message.
    let history = tool_history(
        &["toolu_a"],
        json!([{"type": "text", "text": "here"}, result("toolu_a")]),
    );
    rejects_body(&api, with_messages(history), "toolu_a").await;

    // A valid history, including an image inside a tool_result and an is_error result.
    let history = tool_history(
        &["toolu_a", "toolu_b"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": [
                {"type": "text", "text": "screenshot"}, image("image/png", &png())]},
            {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true,
             "content": "cancelled by the user"},
            {"type": "text", "text": "continue"},
        ]),
    );
    let response = post(&api, &with_messages(history)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(api.accepted().len(), 1);
    assert_eq!(api.requests().len(), 5);
}

#[tokio::test]
async fn image_rules() {
    let api = StandIn::spawn(Script::new([Turn::text("ok")]).validating_images());
    let user = |block: Value| with_messages(json!([{"role": "user", "content": [block]}]));
    rejects_body(&api, user(image("image/bmp", &png())), "media_type").await;
    rejects_body(&api, user(image("image/png", "not base64!")), "base64").await;
    rejects_body(
        &api,
        user(image("image/jpeg", &png())),
        "does not match the media type image/jpeg",
    )
    .await;
    let url = json!({"type": "image", "source": {"type": "url", "url": "https://x/y.png"}});
    rejects_body(&api, user(url), "source.type").await;
    let nested =
        json!({"type": "tool_result", "tool_use_id": "t", "content": [image("image/gif", &png())]});
    let history = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "computer", "input": {}}]},
        {"role": "user", "content": [nested]},
    ]);
    rejects_body(
        &api,
        with_messages(history),
        "messages.2.content.0.content.0.source",
    )
    .await;
    let response = post(&api, &user(image("image/png", &png()))).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn tool_definition_rules() {
    let api = StandIn::spawn([Turn::text("ok")]);
    let computer = json!({"type": "computer_20250124", "name": "computer",
        "display_width_px": 1280, "display_height_px": 800});
    let with_tools = |tools: Value| {
        let mut body = body(true);
        body["tools"] = tools;
        body.to_string()
    };
    rejects(
        &api,
        &HEADERS,
        with_tools(json!([computer])),
        400,
        "computer-use-2025-01-24",
    )
    .await;
    let wrong_beta = [
        HEADERS[0],
        HEADERS[1],
        HEADERS[2],
        ("anthropic-beta", "computer-use-2025-11-24"),
    ];
    rejects(
        &api,
        &wrong_beta,
        with_tools(json!([computer])),
        400,
        "computer-use-2025-01-24",
    )
    .await;
    let custom = json!([{"name": "notes", "description": "no schema"}]);
    rejects(&api, &HEADERS, with_tools(custom), 400, "input_schema").await;
    let nameless = json!([{"input_schema": {"type": "object"}}]);
    rejects(&api, &HEADERS, with_tools(nameless), 400, "name").await;

    let beta = [
        HEADERS[0],
        HEADERS[1],
        HEADERS[2],
        (
            "anthropic-beta",
            "prompt-caching-2024-07-31, computer-use-2025-01-24",
        ),
    ];
    let tools = json!([computer, {"type": "bash_20250124", "name": "bash"},
        {"name": "notes", "input_schema": {"type": "object"}}]);
    let response = post_raw(&api, &beta, with_tools(tools)).await;
    assert_eq!(response.status(), 200);
    let recorded = api.accepted().pop().unwrap();
    assert_eq!(
        recorded.headers["anthropic-beta"],
        "prompt-caching-2024-07-31, computer-use-2025-01-24"
    );
}
