//! Injected faults, the script running out, the record, and the binary.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use deskhand_standin::{Reply, Script, StandIn, Turn};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

#[tokio::test]
async fn status_turn_sends_error_body_and_retry_after() {
    let api = StandIn::spawn([Turn::rate_limited(3), Turn::overloaded()]);
    let response = post(&api, &body(true)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
    assert_eq!(response.headers()["request-id"], "req_standin_1");
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "rate_limit_error");
    assert!(!error["error"]["message"].as_str().unwrap().is_empty());

    let response = post(&api, &body(true)).await;
    assert_eq!(response.status(), 529);
    assert!(!response.headers().contains_key("retry-after"));
    assert_eq!(response.headers()["request-id"], "req_standin_2");
}

#[tokio::test]
async fn drop_mid_stream_cuts_the_connection() {
    let reply = Reply::new().text("This answer never finishes, it is cut.");
    let api = StandIn::spawn([Turn::drop_mid_stream(reply, 4)]);
    let response = post(&api, &body(true)).await;
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "the body ends in an error, not cleanly");
    let events = parse_sse(std::str::from_utf8(&received).unwrap());
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta"
        ]
    );
}

#[tokio::test]
async fn error_event_after_http_200() {
    let api = StandIn::spawn([
        Turn::error_event(1, "overloaded_error", "Overloaded"),
        Turn::ErrorEvent {
            after_events: 4,
            error_type: "api_error".into(),
            message: String::new(),
            reply: Reply::new().text("partial answer"),
        },
    ]);
    let events = stream_events(&api, &body(true)).await;
    assert_eq!(names(&events), ["message_start", "error"]);
    assert_eq!(
        events[1].1,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    let events = stream_events(&api, &body(true)).await;
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "error"
        ]
    );
}

#[tokio::test]
async fn hang_holds_the_stream_until_the_client_leaves() {
    let api = StandIn::spawn([Turn::hang(Reply::new().text("never ends"), 3)]);
    let response = post(&api, &body(true)).await;
    let mut stream = response.bytes_stream();
    let mut received = String::new();
    while parse_sse(&received).len() < 3 {
        let chunk = stream.next().await.unwrap().unwrap();
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let more = tokio::time::timeout(Duration::from_millis(150), stream.next()).await;
    assert!(more.is_err(), "nothing after the third event");
    assert_eq!(api.abandoned_streams(), 0);

    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(2);
    while api.abandoned_streams() == 0 {
        assert!(
            Instant::now() < deadline,
            "the server notices the client leaving"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn exhausted_script_answers_500() {
    let api = StandIn::spawn(Script::default());
    let response = post(&api, &body(true)).await;
    assert_eq!(response.status(), 500);
    assert!(response.headers().contains_key("request-id"));
    let error: Value = response.json().await.unwrap();
    assert_eq!(
        error["error"],
        json!({"type": "api_error", "message": "stand-in script exhausted"})
    );
    assert_eq!(api.accepted().len(), 1);
}

#[tokio::test]
async fn records_are_served_over_http() {
    let api = StandIn::spawn([Turn::text("one")]);
    post(&api, &body(false)).await;
    let recorded: Vec<Value> = reqwest::get(format!("{}/_standin/requests", api.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["headers"]["x-api-key"], "sk-test");
    assert_eq!(recorded[0]["body"]["model"], MODEL);
    assert_eq!(recorded[0]["rejected"], Value::Null);
}

/// A sync test: the server brings its own runtime.
#[test]
fn works_from_sync_tests_and_shuts_down_on_drop() {
    let api = StandIn::spawn([Turn::text("hi")]);
    let addr = api.addr();
    assert!(std::net::TcpStream::connect(addr).is_ok());
    assert!(api.requests().is_empty());
    drop(api);
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn script_files_parse() {
    let script = Script::from_json(
        r#"{"validate_images": true, "turns": [
            {"kind": "reply", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "name": "computer", "input": {"action": "screenshot"}},
                {"type": "tool_use", "id": "toolu_bad", "name": "bash", "raw_input_json": "{"}],
             "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 2},
             "chunk_delay_ms": 5, "hang_after_events": 3, "unknown_events": true},
            {"kind": "status", "status": 429, "error_type": "rate_limit_error", "retry_after": 1},
            {"kind": "drop_mid_stream", "after_events": 4, "reply": {"content": []}},
            {"kind": "error_event", "error_type": "overloaded_error"}
        ]}"#,
    )
    .unwrap();
    assert!(script.validate_images);
    assert_eq!(script.turns.len(), 4);
    let Turn::Reply(reply) = &script.turns[0] else {
        panic!("a reply")
    };
    assert_eq!(reply.content.len(), 4);
    assert_eq!(reply.hang_after_events, Some(3));
    let Turn::ErrorEvent { after_events, .. } = &script.turns[3] else {
        panic!("an error event")
    };
    assert_eq!(*after_events, 1);
    // Round trip through JSON.
    let again = Script::from_json(&serde_json::to_string(&script).unwrap()).unwrap();
    assert_eq!(again.turns.len(), 4);
}

#[tokio::test]
async fn binary_serves_a_script_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(
        &path,
        r#"{"turns": [{"kind": "reply", "content": [{"type": "text", "text": "from a file"}]}]}"#,
    )
    .unwrap();
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_deskhand-standin"))
            .arg("--script")
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim_end()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();

    let client = reqwest::Client::new();
    let text = client
        .post(format!("{url}/v1/messages"))
        .header("x-api-key", "k")
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(body(true).to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        concat_deltas(&parse_sse(&text), "text_delta", "text"),
        "from a file"
    );
    let recorded: Vec<Value> = client
        .get(format!("{url}/_standin/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(recorded.len(), 1);
}

/// Kills the child process even when the test fails.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
