//! The stand-in's Responses API side, with a raw client: the event stream of a scripted
//! computer call, and the requests it rejects like OpenAI does (an unacknowledged safety
//! check, a call without its output, an output without its call).

use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::{Value, json};

/// A one-pixel PNG, as a data URL.
const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn check() -> Value {
    json!({"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page says to ignore the task."})
}

fn request(input: Value) -> Value {
    json!({
        "model": "computer-use-preview",
        "stream": true,
        "truncation": "auto",
        "tools": [{"type": "computer_use_preview", "display_width": 1366, "display_height": 768, "environment": "linux"}],
        "input": input,
    })
}

async fn post(api: &StandIn, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/v1/responses", api.url()))
        .header("authorization", "Bearer sk-test")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("the stand-in answers")
}

/// `(event name, data)` of every event of a stream.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let (name, data) = frame.split_once('\n').expect("event and data lines");
            let name = name.strip_prefix("event: ").expect("an event line");
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name, "the event name is the data's type");
            (name.to_string(), data)
        })
        .collect()
}

fn call(checks: Value) -> Value {
    json!({"type": "computer_call", "id": "cu_1", "call_id": "call_1", "status": "completed",
           "action": {"type": "click", "button": "left", "x": 5, "y": 5},
           "pending_safety_checks": checks})
}

fn output(acknowledged: Option<Value>) -> Value {
    let mut output = json!({"type": "computer_call_output", "call_id": "call_1",
        "output": {"type": "computer_screenshot", "image_url": PNG}});
    if let Some(acknowledged) = acknowledged {
        output["acknowledged_safety_checks"] = acknowledged;
    }
    output
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "input_text", "text": text}]})
}

#[tokio::test]
async fn a_computer_call_streams_as_the_responses_events() {
    let api = StandIn::spawn([Reply::new()
        .thinking("Click it.", "enc_1")
        .text("Clicking.")
        .computer_call(
            json!({"type": "click", "button": "left", "x": 5, "y": 5}),
            vec![check()],
        )
        .into()]);
    let response = post(&api, &request(json!([user("go")]))).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = events(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names.last(), Some(&"response.completed"));
    for (n, (_, data)) in events.iter().enumerate() {
        assert_eq!(data["sequence_number"], n);
    }
    let done: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "response.output_item.done")
        .map(|(_, d)| &d["item"])
        .collect();
    let kinds: Vec<&str> = done.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["reasoning", "message", "computer_call"]);
    assert_eq!(done[0]["encrypted_content"], "enc_1");
    assert_eq!(done[2]["pending_safety_checks"], json!([check()]));
    assert_eq!(done[2]["action"]["type"], "click");
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Clicking.");
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"].as_array().unwrap().len(), 3);
    assert!(completed["usage"]["input_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn what_the_api_rejects_is_rejected_with_400() {
    let api = StandIn::spawn([Turn::text("fine")]);
    let cases = [
        (
            json!([user("go"), call(json!([check()])), output(None)]),
            "Safety check cu_sc_1 of computer call call_1 was not acknowledged",
        ),
        (
            json!([
                user("go"),
                call(json!([check()])),
                output(Some(json!([{"id": "cu_sc_9"}])))
            ]),
            "Safety check cu_sc_1 of computer call call_1 was not acknowledged",
        ),
        (
            json!([user("go"), call(json!([])), user("and?")]),
            "No tool output found for computer call call_1.",
        ),
        (
            json!([user("go"), call(json!([]))]),
            "No tool output found for computer call call_1.",
        ),
        (
            json!([user("go"), output(None)]),
            "No tool call found for computer call output with call_id call_1.",
        ),
        (
            json!([user("go"), {"type": "reasoning", "id": "rs_1", "summary": []}]),
            "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
        ),
    ];
    for (input, message) in cases {
        let response = post(&api, &request(input.clone())).await;
        assert_eq!(response.status(), 400, "{input}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(message),
            "{input}: {body}"
        );
    }
    let mut without_truncation = request(json!([user("go")]));
    without_truncation
        .as_object_mut()
        .unwrap()
        .remove("truncation");
    assert_eq!(post(&api, &without_truncation).await.status(), 400);
    // Acknowledged: accepted.
    let input = json!([
        user("go"),
        call(json!([check()])),
        output(Some(json!([check()])))
    ]);
    assert_eq!(post(&api, &request(input)).await.status(), 200);
    assert_eq!(api.accepted().len(), 1);
    assert_eq!(api.remaining_turns(), 0);
}

#[tokio::test]
async fn the_ga_computer_tool_gets_a_batched_call_and_takes_no_other_key() {
    let actions = vec![
        json!({"type": "click", "button": "left", "x": 5, "y": 5}),
        json!({"type": "type", "text": "hi"}),
    ];
    let api = StandIn::spawn([Reply::new()
        .computer_actions(actions.clone(), vec![check()])
        .into()]);
    let mut body = request(json!([user("go")]));
    body["model"] = json!("gpt-5.4");
    body["tools"] = json!([{"type": "computer"}]);
    let response = post(&api, &body).await;
    assert_eq!(response.status(), 200);
    let events = events(&response.text().await.unwrap());
    let call = &events.last().unwrap().1["response"]["output"][0];
    assert_eq!(call["type"], "computer_call");
    assert_eq!(call["actions"], json!(actions));
    assert!(call.get("action").is_none(), "{call}");
    assert_eq!(call["pending_safety_checks"], json!([check()]));

    body["tools"] = json!([{"type": "computer", "display_width": 1366}]);
    let response = post(&api, &body).await;
    assert_eq!(response.status(), 400);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("Unknown parameter: 'tools[0].display_width'.")
    );
}
