//! Request validation: reject what the real Messages API rejects, with its status, error
//! type and (where known) its wording, so client bugs surface here and not in production.

use std::collections::HashSet;

use axum::http::{HeaderMap, header};
use base64::Engine as _;
use serde_json::{Map, Value};

/// The real API's limit on a request body.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

const BLOCK_TYPES: &[&str] = &[
    "text",
    "image",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
];
const MEDIA_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Why a request was refused, as the HTTP error the API would answer.
#[derive(Debug)]
pub(crate) struct Rejection {
    pub status: u16,
    pub error_type: &'static str,
    pub message: String,
}

pub(crate) fn invalid(message: impl Into<String>) -> Rejection {
    Rejection {
        status: 400,
        error_type: "invalid_request_error",
        message: message.into(),
    }
}

/// Checks headers and body; returns the body as recorded (JSON if it parses, else the raw
/// text) along with the verdict.
pub(crate) fn check(
    headers: &HeaderMap,
    body: &[u8],
    validate_images: bool,
) -> (Value, Result<(), Rejection>) {
    let parsed = serde_json::from_slice::<Value>(body);
    let recorded = match &parsed {
        Ok(value) => value.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()),
    };
    let verdict = check_headers(headers, body.len()).and_then(|()| {
        let value =
            parsed.map_err(|e| invalid(format!("There was an error parsing the body: {e}")))?;
        check_body(&value, &betas(headers), validate_images)
    });
    (recorded, verdict)
}

fn check_headers(headers: &HeaderMap, body_len: usize) -> Result<(), Rejection> {
    if !headers.contains_key("x-api-key") {
        return Err(Rejection {
            status: 401,
            error_type: "authentication_error",
            message: "x-api-key header is required".into(),
        });
    }
    if !headers.contains_key("anthropic-version") {
        return Err(invalid("anthropic-version: header is required"));
    }
    check_json_upload(headers, body_len)
}

/// A JSON body within the size limit, as both APIs require.
pub(crate) fn check_json_upload(headers: &HeaderMap, body_len: usize) -> Result<(), Rejection> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = content_type.split(';').next().unwrap_or("").trim();
    if !mime.eq_ignore_ascii_case("application/json") {
        return Err(invalid(format!(
            "content-type must be application/json, got {content_type:?}"
        )));
    }
    if body_len > MAX_BODY_BYTES {
        return Err(Rejection {
            status: 413,
            error_type: "request_too_large",
            message: "Request exceeds the maximum allowed number of bytes.".into(),
        });
    }
    Ok(())
}

/// The `anthropic-beta` header's comma-separated entries, over all its occurrences.
fn betas(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all("anthropic-beta")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty())
        .collect()
}

fn check_body(body: &Value, betas: &[String], images: bool) -> Result<(), Rejection> {
    let body = body
        .as_object()
        .ok_or_else(|| invalid("request body must be a JSON object"))?;
    match body.get("model") {
        None => return Err(invalid("model: Field required")),
        Some(Value::String(model)) if !model.is_empty() => {}
        Some(_) => return Err(invalid("model: Input should be a valid, non-empty string")),
    }
    match body.get("max_tokens") {
        None => return Err(invalid("max_tokens: Field required")),
        Some(v) if v.as_u64().is_some_and(|n| n > 0) => {}
        Some(_) => return Err(invalid("max_tokens: Input should be a positive integer")),
    }
    if body.get("stream").is_some_and(|s| !s.is_boolean()) {
        return Err(invalid("stream: Input should be a valid boolean"));
    }
    check_system(body.get("system"))?;
    check_messages(body.get("messages"), images)?;
    check_tools(body.get("tools"), betas)
}

fn check_system(system: Option<&Value>) -> Result<(), Rejection> {
    match system {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                if block.get("type").and_then(Value::as_str) != Some("text")
                    || !block.get("text").is_some_and(Value::is_string)
                {
                    return Err(invalid(format!("system.{i}: Input should be a text block")));
                }
            }
            Ok(())
        }
        Some(_) => Err(invalid(
            "system: Input should be a string or a list of text blocks",
        )),
    }
}

/// A message's role and blocks, once its shape is known to be right.
struct Checked<'a> {
    role: &'a str,
    blocks: Vec<&'a Map<String, Value>>,
}

impl Checked<'_> {
    fn tool_use_ids(&self) -> Vec<&str> {
        self.of_type("tool_use", "id").map(|(_, id)| id).collect()
    }

    /// `(block index, field)` of every block of type `ty`.
    fn of_type<'s>(
        &'s self,
        ty: &'s str,
        field: &'s str,
    ) -> impl Iterator<Item = (usize, &'s str)> {
        self.blocks.iter().enumerate().filter_map(move |(j, b)| {
            (b.get("type").and_then(Value::as_str) == Some(ty))
                .then(|| b.get(field).and_then(Value::as_str))
                .flatten()
                .map(|v| (j, v))
        })
    }
}

/// A `messages` list checked by the rules a request's must pass, for tests that keep a
/// history valid without sending it; the error is the API's message.
pub fn check_history(messages: &Value) -> Result<(), String> {
    check_messages(Some(messages), true).map_err(|rejection| rejection.message)
}

fn check_messages(messages: Option<&Value>, images: bool) -> Result<(), Rejection> {
    let messages = match messages {
        None => return Err(invalid("messages: Field required")),
        Some(Value::Array(messages)) => messages,
        Some(_) => return Err(invalid("messages: Input should be a valid list")),
    };
    if messages.is_empty() {
        return Err(invalid("messages: at least one message is required"));
    }
    let last = messages.len() - 1;
    let mut checked: Vec<Checked> = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        let role = match message.get("role").and_then(Value::as_str) {
            Some(role @ ("user" | "assistant")) => role,
            _ => {
                return Err(invalid(format!(
                    "messages.{i}.role: Input should be 'user' or 'assistant'"
                )));
            }
        };
        if i == 0 && role != "user" {
            return Err(invalid(
                r#"messages: first message must use the "user" role"#,
            ));
        }
        if let Some(prev) = checked.last()
            && prev.role == role
        {
            return Err(invalid(format!(
                r#"messages: roles must alternate between "user" and "assistant", but found multiple "{role}" roles in a row"#
            )));
        }
        let blocks = check_content(i, role, message.get("content"), i == last, images)?;
        checked.push(Checked { role, blocks });
    }
    check_tool_pairing(&checked)
}

fn check_content<'a>(
    i: usize,
    role: &str,
    content: Option<&'a Value>,
    is_last: bool,
    images: bool,
) -> Result<Vec<&'a Map<String, Value>>, Rejection> {
    let empty = || {
        invalid(format!(
            "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        ))
    };
    let final_assistant = is_last && role == "assistant";
    match content {
        None => Err(invalid(format!("messages.{i}.content: Field required"))),
        Some(Value::String(text)) if text.is_empty() && !final_assistant => Err(empty()),
        Some(Value::String(_)) => Ok(Vec::new()),
        Some(Value::Array(blocks)) if blocks.is_empty() && !final_assistant => Err(empty()),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .map(|(j, block)| {
                check_block(&format!("messages.{i}.content.{j}"), role, block, images)
            })
            .collect(),
        Some(_) => Err(invalid(format!(
            "messages.{i}.content: Input should be a valid string or a list of content blocks"
        ))),
    }
}

fn check_block<'a>(
    path: &str,
    role: &str,
    block: &'a Value,
    images: bool,
) -> Result<&'a Map<String, Value>, Rejection> {
    let block = block
        .as_object()
        .ok_or_else(|| invalid(format!("{path}: Input should be an object")))?;
    let ty = block
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{path}.type: Field required")))?;
    let string = |field: &str| {
        block
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("{path}.{field}: Field required (a string)")))
    };
    let only_in = |wanted: &str| {
        if role == wanted {
            Ok(())
        } else {
            Err(invalid(format!(
                "{path}: `{ty}` blocks can only be in `{wanted}` messages"
            )))
        }
    };
    match ty {
        "text" => check_text(path, block)?,
        "image" => check_image(path, block, images)?,
        "tool_use" => {
            only_in("assistant")?;
            string("id")?;
            string("name")?;
            if !block.get("input").is_some_and(Value::is_object) {
                return Err(invalid(format!("{path}.input: Input should be an object")));
            }
        }
        "tool_result" => {
            only_in("user")?;
            string("tool_use_id")?;
            if block.get("is_error").is_some_and(|e| !e.is_boolean()) {
                return Err(invalid(format!(
                    "{path}.is_error: Input should be a boolean"
                )));
            }
            check_tool_result_content(path, block.get("content"), images)?;
        }
        "thinking" => {
            only_in("assistant")?;
            string("thinking")?;
            string("signature")?;
        }
        "redacted_thinking" => {
            only_in("assistant")?;
            string("data")?;
        }
        "document" => {
            if !block.get("source").is_some_and(Value::is_object) {
                return Err(invalid(format!("{path}.source: Field required")));
            }
        }
        other => {
            let expected = BLOCK_TYPES
                .iter()
                .map(|t| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(invalid(format!(
                "{path}.type: Input tag '{other}' found using 'type' does not match any of the expected tags: {expected}"
            )));
        }
    }
    Ok(block)
}

fn check_text(path: &str, block: &Map<String, Value>) -> Result<(), Rejection> {
    match block.get("text").and_then(Value::as_str) {
        None => Err(invalid(format!("{path}.text: Field required (a string)"))),
        Some("") => Err(invalid(format!(
            "{path}: text content blocks must be non-empty"
        ))),
        Some(text) if text.trim().is_empty() => Err(invalid(format!(
            "{path}: text content blocks must contain non-whitespace text"
        ))),
        Some(_) => Ok(()),
    }
}

fn check_tool_result_content(
    path: &str,
    content: Option<&Value>,
    images: bool,
) -> Result<(), Rejection> {
    match content {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(blocks)) => {
            for (k, block) in blocks.iter().enumerate() {
                let path = format!("{path}.content.{k}");
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => check_text(&path, block.as_object().expect("has a type"))?,
                    Some("image") => {
                        check_image(&path, block.as_object().expect("has a type"), images)?
                    }
                    _ => {
                        return Err(invalid(format!(
                            "{path}.type: tool_result content blocks must be 'text' or 'image'"
                        )));
                    }
                }
            }
            Ok(())
        }
        Some(_) => Err(invalid(format!(
            "{path}.content: Input should be a valid string or a list of text/image blocks"
        ))),
    }
}

fn check_image(path: &str, block: &Map<String, Value>, deep: bool) -> Result<(), Rejection> {
    let source = block
        .get("source")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid(format!("{path}.source: Field required")))?;
    if source.get("type").and_then(Value::as_str) != Some("base64") {
        return Err(invalid(format!(
            "{path}.source.type: the stand-in only accepts 'base64' image sources"
        )));
    }
    let media_type = source
        .get("media_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let data = source
        .get("data")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{path}.source.data: Field required")))?;
    check_image_data(&format!("{path}.source"), media_type, data, deep)
}

/// Checks base64 image data of a media type; `deep` also checks the magic bytes.
pub(crate) fn check_image_data(
    path: &str,
    media_type: &str,
    data: &str,
    deep: bool,
) -> Result<(), Rejection> {
    if !MEDIA_TYPES.contains(&media_type) {
        return Err(invalid(format!(
            "{path}.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| invalid(format!("{path}.data: invalid base64 data: {e}")))?;
    if bytes.is_empty() {
        return Err(invalid(format!("{path}.data: image data is empty")));
    }
    if deep {
        let found = sniff(&bytes);
        if found != Some(media_type) {
            return Err(invalid(format!(
                "{path}: image data does not match the media type {media_type} (looks like {})",
                found.unwrap_or("none of the supported formats")
            )));
        }
    }
    Ok(())
}

/// The media type that the data's magic bytes announce.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The API's hard rule: each `tool_use` is answered by a `tool_result` at the start of the
/// very next message, and each `tool_result` answers a `tool_use` of the message before.
fn check_tool_pairing(messages: &[Checked]) -> Result<(), Rejection> {
    let mut seen = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        if message.role == "user" {
            let asked = i
                .checked_sub(1)
                .map(|p| messages[p].tool_use_ids())
                .unwrap_or_default();
            for (j, id) in message.of_type("tool_result", "tool_use_id") {
                if !asked.contains(&id) {
                    return Err(invalid(format!(
                        "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )));
                }
            }
            continue;
        }
        for (j, id) in message.of_type("tool_use", "id") {
            if !seen.insert(id) {
                return Err(invalid(format!(
                    "messages.{i}.content.{j}: `tool_use` ids must be unique"
                )));
            }
        }
        // Only tool results that lead the next message count: the API wants them first.
        let answered: Vec<&str> = messages
            .get(i + 1)
            .map(|next| {
                next.blocks
                    .iter()
                    .map_while(|b| {
                        (b.get("type").and_then(Value::as_str) == Some("tool_result"))
                            .then(|| b.get("tool_use_id").and_then(Value::as_str))
                    })
                    .flatten()
                    .collect()
            })
            .unwrap_or_default();
        let missing: Vec<&str> = message
            .tool_use_ids()
            .into_iter()
            .filter(|id| !answered.contains(id))
            .collect();
        if !missing.is_empty() {
            return Err(invalid(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                missing.join(", ")
            )));
        }
    }
    Ok(())
}

fn check_tools(tools: Option<&Value>, betas: &[String]) -> Result<(), Rejection> {
    let tools = match tools {
        None => return Ok(()),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(invalid("tools: Input should be a valid list")),
    };
    let mut names = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let tool = tool
            .as_object()
            .ok_or_else(|| invalid(format!("tools.{i}: Input should be an object")))?;
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        match tool.get("type").and_then(Value::as_str) {
            None | Some("custom") => {
                let valid_name = (1..=64).contains(&name.len())
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                if !valid_name {
                    return Err(invalid(format!(
                        "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                    )));
                }
                if !tool.get("input_schema").is_some_and(Value::is_object) {
                    return Err(invalid(format!(
                        "tools.{i}.custom.input_schema: Field required"
                    )));
                }
            }
            Some(ty) if ty.starts_with("computer_2025") => {
                let beta = match ty {
                    "computer_20250124" => "computer-use-2025-01-24",
                    "computer_20251124" => "computer-use-2025-11-24",
                    _ => return Err(invalid(format!("tools.{i}.type: unknown tool type '{ty}'"))),
                };
                if !betas.iter().any(|b| b == beta) {
                    return Err(invalid(format!(
                        "tools.{i}: the tool type '{ty}' requires the beta header `anthropic-beta: {beta}`"
                    )));
                }
                if name != "computer" {
                    return Err(invalid(format!(
                        "tools.{i}.{ty}.name: Input should be 'computer'"
                    )));
                }
                for field in ["display_width_px", "display_height_px"] {
                    if tool.get(field).and_then(Value::as_u64).unwrap_or(0) == 0 {
                        return Err(invalid(format!(
                            "tools.{i}.{ty}.{field}: Field required (a positive integer)"
                        )));
                    }
                }
            }
            Some(_) if name.is_empty() => {
                return Err(invalid(format!("tools.{i}.name: Field required")));
            }
            Some(_) => {}
        }
        if !names.insert(name) {
            return Err(invalid("tools: Tool names must be unique."));
        }
    }
    Ok(())
}
