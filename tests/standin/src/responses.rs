//! OpenAI's Responses API (`POST /v1/responses`), the side with native computer use: the same
//! script answered as Responses stream events (`response.created`, `response.output_item.added`,
//! `response.output_text.delta`, `response.output_item.done`, `response.completed`, …), a
//! `thinking` block as a reasoning item with its summary, a `computer_call` block as the
//! API's `computer_call` with its `pending_safety_checks`, other tool uses as function calls.
//! It rejects, with HTTP 400 in OpenAI's error shape, what the API rejects: a computer call
//! without its output, an output for no call, an output that does not acknowledge the call's
//! safety checks, a computer output that is not a screenshot, a reasoning item with nothing
//! after it, and the computer tool without `truncation: "auto"` or with a malformed size.
//! Shapes as in the official `openai` Python SDK 3.57.0.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::http::{HeaderMap, Uri};
use serde_json::{Value, json};

use crate::openai::check_access;
use crate::script::{Reply, ReplyBlock};
use crate::server::{Rendered, Shared};
use crate::sse::{JSON_CHUNK, TEXT_CHUNK, chunks};
use crate::validate::{Rejection, check_image_data, check_json_upload, invalid};

/// Checks headers and body; returns the body as recorded along with the verdict.
pub(crate) fn check(
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    shared: &Shared,
) -> (Value, Result<(), Rejection>) {
    let parsed = serde_json::from_slice::<Value>(body);
    let recorded = match &parsed {
        Ok(value) => value.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()),
    };
    let verdict = check_access(uri, headers, false, shared.open_access)
        .and_then(|()| check_json_upload(headers, body.len()))
        .and_then(|()| {
            let value = parsed.map_err(|e| {
                invalid(format!(
                    "We could not parse the JSON body of your request. ({e})"
                ))
            })?;
            check_body(&value, shared.validate_images)
        });
    (recorded, verdict)
}

fn check_body(body: &Value, images: bool) -> Result<(), Rejection> {
    let body = body
        .as_object()
        .ok_or_else(|| invalid("The request body must be a JSON object."))?;
    if body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        return Err(invalid("Missing required parameter: 'model'."));
    }
    if body.get("stream").is_some_and(|s| !s.is_boolean()) {
        return Err(invalid(
            "Invalid type for 'stream': expected a boolean, but got another type instead.",
        ));
    }
    if body
        .get("max_output_tokens")
        .is_some_and(|v| v.as_u64().is_none_or(|n| n < 16))
    {
        return Err(invalid(
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16.",
        ));
    }
    let computer = check_tools(body.get("tools"))?;
    if computer && body.get("truncation") != Some(&json!("auto")) {
        return Err(invalid(
            "The computer_use_preview tool requires the 'truncation' parameter to be set to 'auto'.",
        ));
    }
    check_input(body.get("input"), images)
}

/// Whether the computer tool is offered.
fn check_tools(tools: Option<&Value>) -> Result<bool, Rejection> {
    let Some(tools) = tools else {
        return Ok(false);
    };
    let tools = tools
        .as_array()
        .ok_or_else(|| invalid("Invalid type for 'tools': expected an array."))?;
    let mut computer = false;
    for (i, tool) in tools.iter().enumerate() {
        match tool["type"].as_str() {
            Some("computer_use_preview") => {
                for field in ["display_width", "display_height"] {
                    if tool[field].as_u64().is_none_or(|n| n == 0) {
                        return Err(invalid(format!(
                            "Missing required parameter: 'tools[{i}].{field}'."
                        )));
                    }
                }
                let environments = ["windows", "mac", "linux", "ubuntu", "browser"];
                if !tool["environment"]
                    .as_str()
                    .is_some_and(|e| environments.contains(&e))
                {
                    return Err(invalid(format!(
                        "Invalid value for 'tools[{i}].environment': expected one of {}.",
                        environments.join(", ")
                    )));
                }
                computer = true;
            }
            // The GA tool: nothing but its type (unknown keys are refused).
            Some("computer") => {
                if let Some(key) = tool
                    .as_object()
                    .and_then(|fields| fields.keys().find(|k| k.as_str() != "type"))
                {
                    return Err(invalid(format!("Unknown parameter: 'tools[{i}].{key}'.")));
                }
            }
            Some("function") => {
                if tool["name"].as_str().is_none_or(str::is_empty) {
                    return Err(invalid(format!(
                        "Missing required parameter: 'tools[{i}].name'."
                    )));
                }
            }
            Some(other) => {
                return Err(invalid(format!(
                    "Invalid value: '{other}'. Supported values are: 'function', 'computer' and 'computer_use_preview'."
                )));
            }
            None => {
                return Err(invalid(format!(
                    "Missing required parameter: 'tools[{i}].type'."
                )));
            }
        }
    }
    Ok(computer)
}

/// A call waiting for its output: its kind and the safety checks its output must acknowledge.
struct Open {
    kind: &'static str,
    checks: Vec<String>,
}

fn check_input(input: Option<&Value>, images: bool) -> Result<(), Rejection> {
    let items = match input {
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => return Err(invalid("Missing required parameter: 'input'.")),
    };
    let mut open: HashMap<String, Open> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("input[{i}]");
        let kind = item["type"].as_str().unwrap_or("message");
        if kind == "reasoning" {
            let next = items.get(i + 1).and_then(|n| n["type"].as_str());
            if next.is_none() || next == Some("reasoning") {
                return Err(invalid(format!(
                    "Item '{}' of type 'reasoning' was provided without its required following item.",
                    item["id"].as_str().unwrap_or("")
                )));
            }
            continue;
        }
        match kind {
            "computer_call" | "function_call" => {
                let id = call_id(item, &path)?;
                let checks = item["pending_safety_checks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["id"].as_str().map(str::to_string))
                    .collect();
                let kind = if kind == "computer_call" {
                    "computer"
                } else {
                    "function"
                };
                open.insert(id.clone(), Open { kind, checks });
                order.push(id);
            }
            "computer_call_output" | "function_call_output" => {
                let id = call_id(item, &path)?;
                let what = if kind == "computer_call_output" {
                    "computer"
                } else {
                    "function"
                };
                let Some(call) = open.remove(&id) else {
                    return Err(invalid(format!(
                        "No tool call found for {what} call output with call_id {id}."
                    )));
                };
                order.retain(|o| *o != id);
                if call.kind != what {
                    return Err(invalid(format!(
                        "The output for call_id {id} is a {what} call output, but the call is a {} call.",
                        call.kind
                    )));
                }
                if what == "computer" {
                    check_screenshot(&format!("{path}.output"), &item["output"], images)?;
                    let acknowledged: Vec<&str> = item["acknowledged_safety_checks"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["id"].as_str())
                        .collect();
                    if let Some(missing) = call
                        .checks
                        .iter()
                        .find(|c| !acknowledged.contains(&c.as_str()))
                    {
                        return Err(invalid(format!(
                            "Safety check {missing} of computer call {id} was not acknowledged. \
                             Pass it in 'acknowledged_safety_checks' once the user has approved it."
                        )));
                    }
                    if let Some(unknown) = acknowledged
                        .iter()
                        .find(|a| !call.checks.iter().any(|c| c == *a))
                    {
                        return Err(invalid(format!(
                            "Invalid 'acknowledged_safety_checks': {unknown} is not a pending safety check of computer call {id}."
                        )));
                    }
                }
            }
            "message" => {
                if let Some(id) = order.first() {
                    let call = &open[id];
                    return Err(invalid(format!(
                        "No tool output found for {} call {id}.",
                        call.kind
                    )));
                }
                check_message(&path, item, images)?;
            }
            other => {
                return Err(invalid(format!(
                    "Invalid value: '{other}'. Supported values for {path}.type are 'message', \
                     'reasoning', 'computer_call', 'computer_call_output', 'function_call' and \
                     'function_call_output'."
                )));
            }
        }
    }
    match order.first() {
        Some(id) => Err(invalid(format!(
            "No tool output found for {} call {id}.",
            open[id].kind
        ))),
        None => Ok(()),
    }
}

fn call_id(item: &Value, path: &str) -> Result<String, Rejection> {
    item["call_id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| invalid(format!("Missing required parameter: '{path}.call_id'.")))
}

fn check_screenshot(path: &str, output: &Value, images: bool) -> Result<(), Rejection> {
    if output["type"] != "computer_screenshot" {
        return Err(invalid(format!(
            "Invalid value for '{path}.type': expected 'computer_screenshot'."
        )));
    }
    if output["file_id"].is_string() {
        return Ok(());
    }
    check_image_url(&format!("{path}.image_url"), &output["image_url"], images)
}

fn check_image_url(path: &str, url: &Value, images: bool) -> Result<(), Rejection> {
    let url = url
        .as_str()
        .ok_or_else(|| invalid(format!("Missing required parameter: '{path}'.")))?;
    if url.starts_with("https://") {
        return Ok(());
    }
    let (media_type, data) = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
        .ok_or_else(|| {
            invalid(format!(
                "Invalid '{path}'. Expected a base64-encoded data URL with an image MIME type \
                 (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got unsupported MIME type."
            ))
        })?;
    check_image_data(path, media_type, data, images)
}

fn check_message(path: &str, item: &Value, images: bool) -> Result<(), Rejection> {
    let role = item["role"].as_str().unwrap_or("");
    if !["user", "assistant", "system", "developer"].contains(&role) {
        return Err(invalid(format!(
            "Invalid value for '{path}.role': expected 'user', 'assistant', 'system' or 'developer'."
        )));
    }
    let parts = match &item["content"] {
        Value::String(_) => return Ok(()),
        Value::Array(parts) => parts,
        _ => {
            return Err(invalid(format!(
                "Missing required parameter: '{path}.content'."
            )));
        }
    };
    for (j, part) in parts.iter().enumerate() {
        let part_path = format!("{path}.content[{j}]");
        match (role, part["type"].as_str()) {
            ("user", Some("input_text")) | ("assistant", Some("output_text")) => {}
            ("user", Some("input_image")) => check_image_url(
                &format!("{part_path}.image_url"),
                &part["image_url"],
                images,
            )?,
            (_, other) => {
                return Err(invalid(format!(
                    "Invalid value: '{}'. Supported values for {part_path}.type in a {role} message are: {}.",
                    other.unwrap_or(""),
                    if role == "assistant" {
                        "'output_text'"
                    } else {
                        "'input_text' and 'input_image'"
                    }
                )));
            }
        }
    }
    Ok(())
}

/// A scripted reply with its ids and usage decided, as Responses output items.
pub(crate) struct Response {
    id: String,
    model: String,
    output: Vec<Value>,
    incomplete: Option<&'static str>,
    usage: Value,
}

impl Response {
    pub(crate) fn resolve(shared: &Shared, reply: &Reply, request: &Value) -> Response {
        let next = |prefix: &str| {
            format!(
                "{prefix}_standin_{}",
                shared.next_tool.fetch_add(1, Ordering::SeqCst)
            )
        };
        let mut output = Vec::new();
        let mut text = String::new();
        for block in &reply.content {
            match block {
                ReplyBlock::Text { text: t } => text.push_str(t),
                ReplyBlock::Thinking {
                    thinking,
                    signature,
                } => output.push(json!({
                    "type": "reasoning",
                    "id": next("rs"),
                    "summary": [{"type": "summary_text", "text": thinking}],
                    "encrypted_content": signature,
                })),
                ReplyBlock::ToolUse {
                    id,
                    name,
                    input,
                    raw_input_json,
                    ..
                } => output.push(json!({
                    "type": "function_call",
                    "id": next("fc"),
                    "call_id": id.clone().unwrap_or_else(|| next("call")),
                    "name": name,
                    "arguments": raw_input_json.clone().unwrap_or_else(|| input.to_string()),
                    "status": "completed",
                })),
                ReplyBlock::ComputerCall {
                    id,
                    action,
                    actions,
                    pending_safety_checks,
                } => {
                    let mut item = json!({
                        "type": "computer_call",
                        "id": next("cu"),
                        "call_id": id.clone().unwrap_or_else(|| next("call")),
                        "pending_safety_checks": pending_safety_checks,
                        "status": "completed",
                    });
                    if actions.is_empty() {
                        item["action"] = action.clone();
                    } else {
                        item["actions"] = json!(actions);
                    }
                    output.push(item);
                }
            }
        }
        if !text.is_empty() {
            // The model speaks before it acts: the message leads.
            let message = json!({
                "type": "message",
                "id": next("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            });
            let at = output
                .iter()
                .position(|item| item["type"] != "reasoning")
                .unwrap_or(output.len());
            output.insert(at, message);
        }
        let incomplete = match reply.effective_stop_reason() {
            "max_tokens" => Some("max_output_tokens"),
            "refusal" => Some("content_filter"),
            _ => None,
        };
        let (input, cached, out) = match reply.usage {
            Some(u) => (
                u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens,
                u.cache_read_input_tokens,
                u.output_tokens,
            ),
            None => {
                let size = request["input"].to_string().len() as u64;
                let out = output.iter().map(|i| i.to_string().len()).sum::<usize>() as u64;
                ((size / 4).max(1), 0, (out / 4).max(1))
            }
        };
        Response {
            id: format!(
                "resp_standin_{}",
                shared.next_message.fetch_add(1, Ordering::SeqCst)
            ),
            model: request["model"].as_str().unwrap_or("").to_string(),
            output,
            incomplete,
            usage: json!({
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": out,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input + out,
            }),
        }
    }

    fn object(&self, status: &str, output: &[Value]) -> Value {
        json!({
            "id": self.id,
            "object": "response",
            "created_at": 1_750_000_000,
            "status": status,
            "model": self.model,
            "output": output,
            "incomplete_details": self.incomplete.map(|reason| json!({"reason": reason})),
            "usage": if status == "in_progress" { Value::Null } else { self.usage.clone() },
            "error": null,
        })
    }

    /// The events of the stream, each with its `sequence_number`, and the final one.
    fn events(&self) -> Vec<Value> {
        let mut events = vec![
            json!({"type": "response.created", "response": self.object("in_progress", &[])}),
            json!({"type": "response.in_progress", "response": self.object("in_progress", &[])}),
        ];
        for (index, item) in self.output.iter().enumerate() {
            let mut added = item.clone();
            added["status"] = json!("in_progress");
            match item["type"].as_str() {
                Some("message") => added["content"] = json!([]),
                Some("reasoning") => added["summary"] = json!([]),
                Some("function_call") => added["arguments"] = json!(""),
                _ => {}
            }
            events.push(
                json!({"type": "response.output_item.added", "output_index": index, "item": added}),
            );
            let item_id = &item["id"];
            match item["type"].as_str() {
                Some("message") => {
                    let text = item["content"][0]["text"].as_str().unwrap_or("");
                    let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
                    events.push(
                        json!({"type": "response.content_part.added", "item_id": item_id,
                        "output_index": index, "content_index": 0, "part": part("")}),
                    );
                    for piece in chunks(text, TEXT_CHUNK) {
                        events.push(json!({"type": "response.output_text.delta", "item_id": item_id,
                            "output_index": index, "content_index": 0, "delta": piece, "logprobs": []}));
                    }
                    events.push(
                        json!({"type": "response.output_text.done", "item_id": item_id,
                        "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
                    );
                    events.push(
                        json!({"type": "response.content_part.done", "item_id": item_id,
                        "output_index": index, "content_index": 0, "part": part(text)}),
                    );
                }
                Some("reasoning") => {
                    let text = item["summary"][0]["text"].as_str().unwrap_or("");
                    for piece in chunks(text, TEXT_CHUNK) {
                        events.push(json!({"type": "response.reasoning_summary_text.delta",
                            "item_id": item_id, "output_index": index, "summary_index": 0, "delta": piece}));
                    }
                    events.push(json!({"type": "response.reasoning_summary_text.done",
                        "item_id": item_id, "output_index": index, "summary_index": 0, "text": text}));
                }
                Some("function_call") => {
                    let arguments = item["arguments"].as_str().unwrap_or("");
                    for piece in chunks(arguments, JSON_CHUNK) {
                        events.push(json!({"type": "response.function_call_arguments.delta",
                            "item_id": item_id, "output_index": index, "delta": piece}));
                    }
                    events.push(json!({"type": "response.function_call_arguments.done",
                        "item_id": item_id, "output_index": index, "arguments": arguments}));
                }
                _ => {}
            }
            events.push(
                json!({"type": "response.output_item.done", "output_index": index, "item": item}),
            );
        }
        let (kind, status) = match self.incomplete {
            Some(_) => ("response.incomplete", "incomplete"),
            None => ("response.completed", "completed"),
        };
        events.push(json!({"type": kind, "response": self.object(status, &self.output)}));
        for (n, event) in events.iter_mut().enumerate() {
            event["sequence_number"] = json!(n);
        }
        events
    }
}

/// `event: TYPE\ndata: JSON\n\n`, as the API sends each event.
fn encode(event: &Value) -> Bytes {
    let name = event["type"].as_str().unwrap_or("");
    Bytes::from(format!("event: {name}\ndata: {event}\n\n"))
}

impl Rendered for Response {
    fn stream(&self) -> Vec<Bytes> {
        self.events().iter().map(encode).collect()
    }

    fn whole(&self) -> Value {
        let status = if self.incomplete.is_some() {
            "incomplete"
        } else {
            "completed"
        };
        self.object(status, &self.output)
    }

    fn stream_with_error(
        &self,
        after_events: usize,
        error_type: &str,
        message: &str,
    ) -> Vec<Bytes> {
        let events = self.events();
        let shown = after_events.clamp(1, events.len() - 1);
        let mut out: Vec<Bytes> = events[..shown].iter().map(encode).collect();
        let code = match error_type {
            "rate_limit_error" => "rate_limit_exceeded",
            "overloaded_error" | "api_error" => "server_error",
            other => other,
        };
        out.push(encode(
            &json!({"type": "error", "code": code, "message": message,
            "param": null, "sequence_number": shown}),
        ));
        out
    }
}
