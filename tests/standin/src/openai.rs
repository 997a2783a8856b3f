//! The Chat Completions side (`POST …/chat/completions`, as OpenAI, OpenRouter, local servers
//! and Azure's per-deployment URL address it): the same script, answered as
//! `chat.completion.chunk`s over SSE (each tool call announced with its id and name, then its
//! arguments in pieces, then `[DONE]`), errors in OpenAI's shape, and validation of what the
//! real API rejects (no key, tool calls without tool messages, images outside user messages).

use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::script::{Reply, ReplyBlock};
use crate::server::{Rendered, Shared, or_stock, status_of};
use crate::sse::{JSON_CHUNK, TEXT_CHUNK, chunks};
use crate::validate::{Rejection, check_image_data, check_json_upload, invalid};

/// Azure addresses a deployment rather than a model.
fn is_azure(uri: &Uri) -> bool {
    uri.path().starts_with("/openai/deployments/")
}

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
    let azure = is_azure(uri);
    let verdict = check_access(uri, headers, azure, shared.open_access)
        .and_then(|()| check_json_upload(headers, body.len()))
        .and_then(|()| {
            let value = parsed.map_err(|e| {
                invalid(format!(
                    "We could not parse the JSON body of your request. ({e})"
                ))
            })?;
            check_body(&value, azure, shared.validate_images)
        });
    (recorded, verdict)
}

fn unauthorized(message: &str) -> Rejection {
    Rejection {
        status: 401,
        error_type: "authentication_error",
        message: message.into(),
    }
}

pub(crate) fn check_access(
    uri: &Uri,
    headers: &HeaderMap,
    azure: bool,
    open_access: bool,
) -> Result<(), Rejection> {
    if azure {
        if headers.get("api-key").is_none_or(|k| k.is_empty()) {
            return Err(unauthorized(
                "Access denied due to invalid subscription key or wrong API endpoint. Make sure \
                 to provide a valid key for an active subscription and use a correct regional \
                 API endpoint for your resource.",
            ));
        }
        let has_version = uri.query().unwrap_or("").split('&').any(|pair| {
            pair.strip_prefix("api-version=")
                .is_some_and(|v| !v.is_empty())
        });
        if !has_version {
            return Err(Rejection {
                status: 404,
                error_type: "not_found_error",
                message: "Resource not found".into(),
            });
        }
        return Ok(());
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|key| !key.trim().is_empty());
    if !bearer && !open_access {
        return Err(unauthorized(
            "You didn't provide an API key. You need to provide your API key in an \
             Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        ));
    }
    Ok(())
}

fn check_body(body: &Value, azure: bool, images: bool) -> Result<(), Rejection> {
    let body = body
        .as_object()
        .ok_or_else(|| invalid("The request body must be a JSON object."))?;
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    if !azure && model.is_empty() {
        return Err(invalid("you must provide a model parameter"));
    }
    if body.get("stream").is_some_and(|s| !s.is_boolean()) {
        return Err(invalid(
            "Invalid type for 'stream': expected a boolean, but got another type instead.",
        ));
    }
    if body.contains_key("stream_options") && body.get("stream") != Some(&Value::Bool(true)) {
        return Err(invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        ));
    }
    for field in ["max_tokens", "max_completion_tokens"] {
        if body
            .get(field)
            .is_some_and(|v| v.as_u64().is_none_or(|n| n == 0))
        {
            return Err(invalid(format!(
                "Invalid '{field}': expected a positive integer."
            )));
        }
    }
    if body.contains_key("max_tokens") && body.contains_key("max_completion_tokens") {
        return Err(invalid(
            "max_tokens and max_completion_tokens cannot both be set; use max_completion_tokens.",
        ));
    }
    check_messages(body.get("messages"), images)?;
    check_tools(body.get("tools"))
}

fn check_messages(messages: Option<&Value>, images: bool) -> Result<(), Rejection> {
    let messages = match messages {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        Some(Value::Array(_)) => {
            return Err(invalid(
                "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            ));
        }
        _ => return Err(invalid("Missing required parameter: 'messages'.")),
    };
    // Tool calls of the last assistant message that no tool message has answered yet, and
    // whether tool messages may come now.
    let mut open: Vec<&str> = Vec::new();
    let mut answering = false;
    for (i, message) in messages.iter().enumerate() {
        let path = format!("messages[{i}]");
        let message = message
            .as_object()
            .ok_or_else(|| invalid(format!("Invalid type for '{path}': expected an object.")))?;
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if !open.is_empty() && role != "tool" {
            return Err(unanswered(&open));
        }
        let content = message.get("content");
        match role {
            "system" | "developer" => check_text_content(&path, content, role)?,
            "user" => check_user_content(&path, content, images)?,
            "assistant" => {
                open = check_assistant(&path, message)?;
                answering = !open.is_empty();
                continue;
            }
            "tool" => {
                if !answering {
                    return Err(invalid(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    ));
                }
                let id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        invalid(format!(
                            "Missing required parameter: '{path}.tool_call_id'."
                        ))
                    })?;
                let Some(position) = open.iter().position(|open_id| *open_id == id) else {
                    return Err(invalid(format!(
                        "Invalid parameter: '{path}.tool_call_id' ({id}) does not answer a tool call of the preceding assistant message, or answers it twice."
                    )));
                };
                open.remove(position);
                check_text_content(&path, content, role)?;
                continue;
            }
            other => {
                return Err(invalid(format!(
                    "Invalid value: '{other}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."
                )));
            }
        }
        answering = false;
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(unanswered(&open))
    }
}

fn unanswered(open: &[&str]) -> Rejection {
    invalid(format!(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
        open.join(", ")
    ))
}

/// A string, or text parts only: what system, developer and tool messages may carry.
fn check_text_content(path: &str, content: Option<&Value>, role: &str) -> Result<(), Rejection> {
    match content {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => check_text_part(&format!("{path}.content[{j}]"), part)?,
                    Some("image_url") => {
                        return Err(invalid(format!(
                            "Image URLs are only allowed for messages with role 'user', but this message with role '{role}' contains an image URL."
                        )));
                    }
                    _ => {
                        return Err(invalid(format!(
                            "Invalid value for '{path}.content[{j}].type': expected 'text'."
                        )));
                    }
                }
            }
            Ok(())
        }
        _ => Err(invalid(format!(
            "Invalid type for '{path}.content': expected a string or an array of text parts."
        ))),
    }
}

fn check_text_part(path: &str, part: &Value) -> Result<(), Rejection> {
    if part.get("text").is_some_and(Value::is_string) {
        Ok(())
    } else {
        Err(invalid(format!(
            "Missing required parameter: '{path}.text'."
        )))
    }
}

fn check_user_content(path: &str, content: Option<&Value>, images: bool) -> Result<(), Rejection> {
    let parts = match content {
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(parts)) if !parts.is_empty() => parts,
        _ => {
            return Err(invalid(format!(
                "Invalid type for '{path}.content': expected a string or a non-empty array of content parts."
            )));
        }
    };
    for (j, part) in parts.iter().enumerate() {
        let part_path = format!("{path}.content[{j}]");
        match part.get("type").and_then(Value::as_str) {
            Some("text") => check_text_part(&part_path, part)?,
            Some("image_url") => check_image_url(&part_path, part, images)?,
            other => {
                return Err(invalid(format!(
                    "Invalid value: '{}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.",
                    other.unwrap_or("")
                )));
            }
        }
    }
    Ok(())
}

/// A data URL with base64 image data (checked like the Messages API's images), or a web URL.
fn check_image_url(path: &str, part: &Value, deep: bool) -> Result<(), Rejection> {
    let url = part
        .pointer("/image_url/url")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            invalid(format!(
                "Missing required parameter: '{path}.image_url.url'."
            ))
        })?;
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(());
    }
    let Some((media_type, data)) = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
    else {
        return Err(invalid(format!(
            "Invalid '{path}.image_url.url': expected a URL or a base64 data URL."
        )));
    };
    check_image_data(&format!("{path}.image_url"), media_type, data, deep)
}

/// The assistant message's shape; returns the ids of its tool calls.
fn check_assistant<'a>(
    path: &str,
    message: &'a Map<String, Value>,
) -> Result<Vec<&'a str>, Rejection> {
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(calls)) => calls.as_slice(),
        Some(_) => {
            return Err(invalid(format!(
                "Invalid type for '{path}.tool_calls': expected an array."
            )));
        }
    };
    match message.get("content") {
        None | Some(Value::Null) if calls.is_empty() => {
            return Err(invalid(format!(
                "Invalid value for '{path}.content': expected a string, got null."
            )));
        }
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(content) => check_text_content(path, Some(content), "assistant")?,
    }
    let mut ids = Vec::new();
    for (j, call) in calls.iter().enumerate() {
        let call_path = format!("{path}.tool_calls[{j}]");
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| invalid(format!("Missing required parameter: '{call_path}.id'.")))?;
        if call.get("type").and_then(Value::as_str) != Some("function") {
            return Err(invalid(format!(
                "Invalid value for '{call_path}.type': expected 'function'."
            )));
        }
        if !call.pointer("/function/name").is_some_and(Value::is_string) {
            return Err(invalid(format!(
                "Missing required parameter: '{call_path}.function.name'."
            )));
        }
        match call.pointer("/function/arguments") {
            Some(Value::String(_)) => {}
            Some(_) => {
                return Err(invalid(format!(
                    "Invalid type for '{call_path}.function.arguments': expected a string, but got another type instead."
                )));
            }
            None => {
                return Err(invalid(format!(
                    "Missing required parameter: '{call_path}.function.arguments'."
                )));
            }
        }
        ids.push(id);
    }
    Ok(ids)
}

fn check_tools(tools: Option<&Value>) -> Result<(), Rejection> {
    let tools = match tools {
        None => return Ok(()),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(invalid("Invalid type for 'tools': expected an array.")),
    };
    for (i, tool) in tools.iter().enumerate() {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return Err(invalid(format!(
                "Invalid value for 'tools[{i}].type': expected 'function'."
            )));
        }
        let name = tool
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let valid_name = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            return Err(invalid(format!(
                "Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{{1,64}}$'."
            )));
        }
        if let Some(parameters) = tool.pointer("/function/parameters")
            && parameters.get("type").and_then(Value::as_str) != Some("object")
        {
            return Err(invalid(format!(
                "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"'."
            )));
        }
    }
    Ok(())
}

/// An error in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, from the
/// script's (Messages API) error type; types it does not know become the `code`.
pub(crate) fn error_response(
    status: u16,
    error_type: &str,
    message: &str,
    retry_after: Option<u64>,
) -> Response {
    let (kind, code) = openai_error(status, error_type);
    let body = json!({"error": {
        "message": or_stock(message, error_type),
        "type": kind,
        "param": null,
        "code": code,
    }});
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(secs) = retry_after {
        let headers = response.headers_mut();
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        headers.insert("retry-after-ms", HeaderValue::from(secs * 1000));
    }
    response
}

fn openai_error(status: u16, error_type: &str) -> (&str, Value) {
    match error_type {
        "invalid_request_error" => ("invalid_request_error", Value::Null),
        "authentication_error" => ("invalid_request_error", json!("invalid_api_key")),
        "permission_error" => (
            "invalid_request_error",
            json!("unsupported_country_region_territory"),
        ),
        "not_found_error" => ("invalid_request_error", json!("model_not_found")),
        "rate_limit_error" => ("requests", json!("rate_limit_exceeded")),
        "overloaded_error" | "api_error" | "timeout_error" => ("server_error", Value::Null),
        other if status >= 500 => ("server_error", json!(other)),
        other => ("invalid_request_error", json!(other)),
    }
}

fn data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// A scripted reply with its ids and usage decided.
pub(crate) struct Completion {
    id: String,
    model: String,
    text: String,
    /// `(id, name, arguments as streamed)`.
    calls: Vec<(String, String, String)>,
    finish_reason: &'static str,
    usage: Value,
    /// Whether the request asked for a usage chunk.
    include_usage: bool,
    unknown_events: bool,
}

impl Completion {
    pub(crate) fn resolve(shared: &Shared, reply: &Reply, request: &Value) -> Completion {
        let mut text = String::new();
        let mut calls = Vec::new();
        for block in &reply.content {
            match block {
                ReplyBlock::Text { text: t } => text.push_str(t),
                ReplyBlock::ToolUse {
                    id,
                    name,
                    input,
                    raw_input_json,
                    ..
                } => {
                    let id = id.clone().unwrap_or_else(|| {
                        format!(
                            "call_standin_{}",
                            shared.next_tool.fetch_add(1, Ordering::SeqCst)
                        )
                    });
                    let arguments = raw_input_json.clone().unwrap_or_else(|| input.to_string());
                    calls.push((id, name.clone(), arguments));
                }
                // Chat Completions has no thinking blocks, nor a native computer.
                ReplyBlock::Thinking { .. } | ReplyBlock::ComputerCall { .. } => {}
            }
        }
        let finish_reason = match reply.effective_stop_reason() {
            _ if !calls.is_empty() => "tool_calls",
            "max_tokens" => "length",
            "refusal" => "content_filter",
            _ => "stop",
        };
        let usage = match reply.usage {
            Some(u) => {
                let prompt =
                    u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
                usage_json(prompt, u.cache_read_input_tokens, u.output_tokens)
            }
            None => {
                let output = text.len() + calls.iter().map(|c| c.2.len()).sum::<usize>();
                usage_json(estimate_prompt(request), 0, (output as u64 / 4).max(1))
            }
        };
        Completion {
            id: format!(
                "chatcmpl-standin-{}",
                shared.next_message.fetch_add(1, Ordering::SeqCst)
            ),
            model: request
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("azure-deployment")
                .to_string(),
            text,
            calls,
            finish_reason,
            usage,
            include_usage: request.pointer("/stream_options/include_usage") == Some(&json!(true)),
            unknown_events: reply.unknown_events,
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Bytes {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": 1_750_000_000,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        data(&chunk)
    }
}

impl Rendered for Completion {
    /// Every SSE event of the stream, the role chunk to `[DONE]`.
    fn stream(&self) -> Vec<Bytes> {
        let mut events = vec![self.chunk(json!({"role": "assistant", "content": ""}), None)];
        if self.unknown_events {
            // OpenRouter's keep-alive comment, and Azure's content-filter preamble.
            events.push(Bytes::from_static(b": OPENROUTER PROCESSING\n\n"));
            events.push(data(&json!({
                "id": "", "object": "", "created": 0, "model": "", "choices": [],
                "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
            })));
        }
        for piece in chunks(&self.text, TEXT_CHUNK) {
            events.push(self.chunk(json!({"content": piece}), None));
        }
        for (index, (id, name, arguments)) in self.calls.iter().enumerate() {
            events.push(self.chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
            for piece in chunks(arguments, JSON_CHUNK) {
                events.push(self.chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    None,
                ));
            }
        }
        events.push(self.chunk(json!({}), Some(self.finish_reason)));
        if self.include_usage {
            events.push(data(&json!({
                "id": self.id, "object": "chat.completion.chunk", "created": 1_750_000_000,
                "model": self.model, "choices": [], "usage": self.usage,
            })));
        }
        events.push(Bytes::from_static(b"data: [DONE]\n\n"));
        events
    }

    /// The complete `chat.completion` of a request that does not stream.
    fn whole(&self) -> Value {
        let mut message = json!({
            "role": "assistant",
            "content": if self.text.is_empty() { Value::Null } else { json!(self.text) },
        });
        if !self.calls.is_empty() {
            message["tool_calls"] = self
                .calls
                .iter()
                .map(|(id, name, arguments)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                })
                .collect();
        }
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": 1_750_000_000,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        })
    }

    fn stream_with_error(
        &self,
        after_events: usize,
        error_type: &str,
        message: &str,
    ) -> Vec<Bytes> {
        let mut events = self.stream();
        // Never the finish, the usage or `[DONE]` before the error.
        let tail = if self.include_usage { 3 } else { 2 };
        let before_finish = events.len().saturating_sub(tail).max(1);
        events.truncate(after_events.clamp(1, before_finish));
        // As OpenRouter sends it: the error's HTTP status as its code.
        events.push(data(&json!({"error": {
            "message": message,
            "type": openai_error(status_of(error_type), error_type).0,
            "code": status_of(error_type),
        }})));
        events
    }
}

fn usage_json(prompt: u64, cached: u64, completion: u64) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    })
}

/// Text at four bytes a token and 765 tokens an image (a 1280×800 image at high detail).
fn estimate_prompt(request: &Value) -> u64 {
    fn walk(value: &Value, total: &mut u64) {
        match value {
            Value::Object(map) if map.get("type") == Some(&json!("image_url")) => *total += 765,
            Value::Object(map) => map.values().for_each(|v| walk(v, total)),
            Value::Array(items) => items.iter().for_each(|v| walk(v, total)),
            Value::String(s) => *total += s.len() as u64 / 4,
            _ => {}
        }
    }
    let mut total = 0;
    walk(request, &mut total);
    total.max(1)
}
