//! The stand-in's Chat Completions side, with a raw client: the chunk stream of a scripted
//! reply, faults in OpenAI's shape, and the requests it rejects like OpenAI does.

use base64::Engine as _;
use deskhand_standin::{Reply, Script, StandIn, Turn};
use serde_json::{Value, json};

const KEY: (&str, &str) = ("authorization", "Bearer sk-test");
const JSON: (&str, &str) = ("content-type", "application/json");

fn body(messages: Value) -> Value {
    json!({
        "model": "gpt-test",
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_completion_tokens": 100,
        "messages": messages,
    })
}

fn hello() -> Value {
    body(json!([{"role": "user", "content": "hello"}]))
}

async fn post(
    api: &StandIn,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{}{path}", api.url()))
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("the stand-in answers")
}

/// The JSON of every `data:` line up to `[DONE]` (which must come last), comments skipped.
fn chunks(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut done = false;
    for frame in text.split("\n\n").filter(|f| !f.trim().is_empty()) {
        if frame.starts_with(':') {
            continue;
        }
        assert!(!done, "nothing after [DONE]");
        let data = frame.strip_prefix("data: ").expect("a data line");
        if data == "[DONE]" {
            done = true;
        } else {
            out.push(serde_json::from_str(data).unwrap());
        }
    }
    assert!(done, "the stream ends with [DONE]");
    out
}

#[tokio::test]
async fn a_reply_streams_as_chunks_with_tool_calls_in_pieces_and_usage() {
    let api = StandIn::spawn([Reply::new()
        .text("Checking both.")
        .tool_use("bash", json!({"command": "ls -la /tmp"}))
        .tool_use_with_id("call_x", "echo", json!({"text": "a longer argument"}))
        .usage(70, 12)
        .into()]);
    let response = post(&api, "/v1/chat/completions", &[KEY, JSON], &hello()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["x-request-id"], "req_standin_1");
    let chunks = chunks(&response.text().await.unwrap());

    assert_eq!(chunks[0]["object"], "chat.completion.chunk");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Checking both.");

    // Each call: announced once with id and name, then argument pieces by index only.
    let pieces: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    let announced: Vec<(u64, &str, &str)> = pieces
        .iter()
        .filter(|p| p.get("id").is_some())
        .map(|p| {
            (
                p["index"].as_u64().unwrap(),
                p["id"].as_str().unwrap(),
                p["function"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        announced,
        [(0, "call_standin_1", "bash"), (1, "call_x", "echo")]
    );
    for (index, expected) in [
        (0, json!({"command": "ls -la /tmp"})),
        (1, json!({"text": "a longer argument"})),
    ] {
        let arguments: String = pieces
            .iter()
            .filter(|p| p["index"] == index)
            .map(|p| p["function"]["arguments"].as_str().unwrap())
            .collect();
        let count = pieces.iter().filter(|p| p["index"] == index).count();
        assert!(count > 2, "arguments come in pieces");
        assert_eq!(serde_json::from_str::<Value>(&arguments).unwrap(), expected);
    }

    let finish = chunks
        .iter()
        .find_map(|c| c["choices"][0]["finish_reason"].as_str())
        .unwrap();
    assert_eq!(finish, "tool_calls");
    let usage = &chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 70);
    assert_eq!(usage["usage"]["completion_tokens"], 12);
    assert_eq!(api.accepted()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn faults_come_in_openai_shape() {
    let api = StandIn::spawn([
        Turn::rate_limited(2),
        Turn::error_event(1, "rate_limit_error", "slow down"),
        Turn::drop_mid_stream(Reply::new().text("cut here please"), 2),
    ]);
    let response = post(&api, "/v1/chat/completions", &[KEY, JSON], &hello()).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    assert_eq!(response.headers()["retry-after-ms"], "2000");
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "rate_limit_exceeded");
    assert_eq!(error["error"]["type"], "requests");

    let response = post(&api, "/v1/chat/completions", &[KEY, JSON], &hello()).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(!text.contains("[DONE]"));
    let last = text
        .trim()
        .lines()
        .last()
        .unwrap()
        .strip_prefix("data: ")
        .unwrap();
    let last: Value = serde_json::from_str(last).unwrap();
    assert_eq!(
        last["error"],
        json!({"message": "slow down", "type": "requests", "code": 429})
    );

    let response = post(&api, "/v1/chat/completions", &[KEY, JSON], &hello()).await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.is_err(), "the body is cut, not ended");
}

#[tokio::test]
async fn azure_and_openrouter_paths_and_their_keys() {
    let api = StandIn::spawn(Script::new([Turn::text("a"), Turn::text("b")]));
    let azure = "/openai/deployments/d1/chat/completions";
    let mut no_model = hello();
    no_model.as_object_mut().unwrap().remove("model");

    let rejected = post(
        &api,
        &format!("{azure}?api-version=2024-10-21"),
        &[KEY, JSON],
        &no_model,
    )
    .await;
    assert_eq!(
        rejected.status(),
        401,
        "Azure wants api-key, not a bearer token"
    );
    let rejected = post(&api, azure, &[("api-key", "k"), JSON], &no_model).await;
    assert_eq!(rejected.status(), 404, "no api-version");
    let accepted = post(
        &api,
        &format!("{azure}?api-version=2024-10-21"),
        &[("api-key", "k"), JSON],
        &no_model,
    )
    .await;
    assert_eq!(accepted.status(), 200);

    let accepted = post(&api, "/api/v1/chat/completions", &[KEY, JSON], &hello()).await;
    assert_eq!(accepted.status(), 200);
    let paths: Vec<String> = api.accepted().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            format!("{azure}?api-version=2024-10-21"),
            "/api/v1/chat/completions".into()
        ]
    );
}

/// Sends and expects 400 with `needle` in OpenAI's error message; no turn is used.
async fn rejects(api: &StandIn, body: Value, needle: &str) {
    let response = post(api, "/v1/chat/completions", &[KEY, JSON], &body).await;
    assert_eq!(response.status(), 400, "{needle}");
    let error: Value = response.json().await.unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(needle),
        "{message:?} should contain {needle:?}"
    );
    assert_eq!(
        api.requests().last().unwrap().rejected.as_deref(),
        Some(message)
    );
    assert_eq!(api.remaining_turns(), 1);
}

fn png_url() -> String {
    let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    format!("data:image/png;base64,{png}")
}

fn call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}})
}

#[tokio::test]
async fn what_openai_rejects_is_rejected() {
    let api = StandIn::spawn(Script::new([Turn::text("unused")]).validating_images());
    let response = post(&api, "/v1/chat/completions", &[JSON], &hello()).await;
    assert_eq!(response.status(), 401);
    assert_eq!(api.remaining_turns(), 1);

    let user = json!({"role": "user", "content": "go"});
    let calls =
        json!({"role": "assistant", "content": null, "tool_calls": [call("c1"), call("c2")]});
    let answer = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
    rejects(
        &api,
        body(json!([user, calls, answer("c1")])),
        "did not have response messages: c2",
    )
    .await;
    rejects(
        &api,
        body(json!([user, calls, answer("c1"), user])),
        "did not have response messages: c2",
    )
    .await;
    rejects(
        &api,
        body(json!([user, answer("c1")])),
        "must be a response to a preceeding message",
    )
    .await;
    rejects(
        &api,
        body(json!([user, calls, answer("c1"), answer("c3")])),
        "(c3) does not answer",
    )
    .await;
    rejects(
        &api,
        body(
            json!([user, calls, answer("c1"), {"role": "tool", "tool_call_id": "c2", "content": [
            {"type": "image_url", "image_url": {"url": png_url()}}]}]),
        ),
        "Image URLs are only allowed for messages with role 'user'",
    )
    .await;
    rejects(
        &api,
        body(json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,iVBORw0KGgo="}}]}])),
        "does not match the media type image/jpeg",
    )
    .await;
    rejects(
        &api,
        body(json!([user, {"role": "assistant", "content": null}])),
        "expected a string, got null",
    )
    .await;
    rejects(
        &api,
        body(json!([user, {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}]}])),
        "function.arguments': expected a string",
    )
    .await;
    let mut no_stream = hello();
    no_stream["stream"] = json!(false);
    rejects(&api, no_stream, "only allowed when 'stream' is enabled").await;
    let mut both = hello();
    both["max_tokens"] = json!(10);
    rejects(&api, both, "cannot both be set").await;
    let mut bad_tool = hello();
    bad_tool["tools"] = json!([{"type": "function", "function": {"name": "str replace", "parameters": {"type": "object"}}}]);
    rejects(&api, bad_tool, "does not match pattern").await;
    let mut bad_schema = hello();
    bad_schema["tools"] = json!([{"type": "function", "function": {"name": "bash", "parameters": {"type": "string"}}}]);
    rejects(
        &api,
        bad_schema,
        "schema must be a JSON Schema of 'type: \"object\"'",
    )
    .await;

    // And a valid history with an image after the tool messages passes.
    let valid = body(json!([user, calls, answer("c1"), answer("c2"),
        {"role": "user", "content": [{"type": "text", "text": "the screenshot"}, {"type": "image_url", "image_url": {"url": png_url()}}]}]));
    let response = post(&api, "/v1/chat/completions", &[KEY, JSON], &valid).await;
    assert_eq!(response.status(), 200);
    assert_eq!(api.remaining_turns(), 0);
}
