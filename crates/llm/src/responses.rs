//! OpenAI's Responses API (`POST /v1/responses`), the one OpenAI API with native computer use:
//! the `computer_use_preview` tool, `computer_call` items answered by `computer_call_output`
//! screenshots, and `pending_safety_checks` a person must acknowledge. Chosen by the OpenAI
//! client for computer-use models ([`is_computer_use_model`]); every other model and server
//! keeps Chat Completions.
//!
//! Requests are stateless (`store: false`): the whole history goes as `input` every time, with
//! the reasoning items kept as they came (`include: ["reasoning.encrypted_content"]`), so a
//! session resumed from the store after a restart sends exactly what a live one would.
//! Wire shapes as in the official `openai` Python SDK 3.57.0 (`ComputerUsePreviewToolParam`,
//! `ResponseComputerToolCall`, `ComputerCallOutput`, `ResponseStreamEvent`).

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::claude::Effort;
use super::http::{ErrorBody, StreamDecoder, decode_error, kind_for_status};
use super::provider::{input_or_noted, parse_tool_input};
use super::{
    ContentBlock, ErrorKind, ImageSource, Message, ModelRequest, ModelResponse, ProviderError,
    Role, SseEvent, StopReason, StreamEvent, ToolDefinition, ToolResultContent, Usage,
};

/// The `environment` declared for the computer: Deskhand drives a Linux desktop.
const ENVIRONMENT: &str = "linux";

/// How long a `wait` action waits, in seconds: the API's `wait` carries no duration.
const WAIT_SECONDS: f64 = 2.0;

/// Pixels of an OpenAI `scroll` per wheel click of the computer tool.
const PIXELS_PER_CLICK: i64 = 100;

/// The native computer tool the Responses API offers a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputerTool {
    /// `computer_use_preview` (display size and environment): each call carries one `action`.
    Preview,
    /// The GA `computer` (`{"type": "computer"}`): a call carries a batched `actions` list.
    Ga,
}

/// The first GPT version that takes the GA `computer` tool: GPT-5.4's published OSWorld
/// result used it.
const FIRST_GA_GPT: (u32, u32) = (5, 4);

/// Which computer tool `model` gets, whatever its case or provider prefix:
/// `computer-use-preview…` the preview tool, `gpt-5.4` and every newer GPT (`gpt-5.5`,
/// `gpt-5.4-mini`, `gpt-6`) the GA tool; anything else none, and with it Chat Completions.
pub fn computer_tool(model: &str) -> Option<ComputerTool> {
    let model = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    if model.starts_with("computer-use-preview") {
        return Some(ComputerTool::Preview);
    }
    let version = model.strip_prefix("gpt-")?;
    let mut numbers = version
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()?
        .split('.');
    let major: u32 = numbers.next()?.parse().ok()?;
    let minor: u32 = numbers.next().map_or(Some(0), |m| m.parse().ok())?;
    ((major, minor) >= FIRST_GA_GPT).then_some(ComputerTool::Ga)
}

/// Whether `--provider openai` talks to `model` through the Responses API: the models that
/// get a native computer tool ([`computer_tool`]).
pub fn is_computer_use_model(model: &str) -> bool {
    computer_tool(model).is_some()
}

/// The JSON body of a streaming request, exactly as sent.
/// `effort` goes as `reasoning.effort` to the GA tool's models (the preview model takes none).
pub fn request_body(
    request: &ModelRequest<'_>,
    effort: Option<Effort>,
) -> Result<Vec<u8>, serde_json::Error> {
    let tool = computer_tool(request.model).unwrap_or(ComputerTool::Preview);
    let mut body = json!({
        "model": request.model,
        "input": input_items(request.messages),
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        // Required by computer-use-preview: the API drops the oldest items instead of failing.
        "truncation": "auto",
        "reasoning": {"summary": "concise"},
        "max_output_tokens": request.max_tokens,
    });
    if let Some(effort) = effort.filter(|_| tool == ComputerTool::Ga) {
        body["reasoning"]["effort"] = json!(effort);
    }
    if !request.system.is_empty() {
        body["instructions"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request.tools.iter().map(|t| wire_tool(t, tool)).collect();
    }
    serde_json::to_vec(&body)
}

/// The computer as the native tool, sized as the computer tool scales its screenshots; every
/// other tool as a function with its JSON Schema.
fn wire_tool(tool: &ToolDefinition, computer: ComputerTool) -> Value {
    if computer == ComputerTool::Ga && tool.name == "computer" {
        // Its coordinates are in the screenshots' pixels, which are the computer tool's.
        return json!({"type": "computer"});
    }
    if let Some((width, height)) = computer_size(tool) {
        return json!({
            "type": "computer_use_preview",
            "display_width": width,
            "display_height": height,
            "environment": ENVIRONMENT,
        });
    }
    json!({
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.input_schema,
        "strict": false,
    })
}

/// The screenshot size the computer tool declares to Anthropic, found in its native definition
/// or the definition it falls back to (the GA toolset declares it on its older fallback).
fn computer_size(tool: &ToolDefinition) -> Option<(u64, u64)> {
    if tool.name != "computer" {
        return None;
    }
    let mut native = tool.anthropic.as_ref();
    while let Some(def) = native {
        let size = |field: &str| def.definition.get(field).and_then(Value::as_u64);
        if let (Some(w), Some(h)) = (size("display_width_px"), size("display_height_px")) {
            return Some((w, h));
        }
        native = def.fallback.as_deref();
    }
    None
}

/// What became of a call, as the history's `tool_result` says.
struct Answer<'a> {
    result: &'a [ToolResultContent],
    is_error: bool,
}

impl Answer<'_> {
    fn image(&self) -> Option<&ImageSource> {
        self.result.iter().find_map(|part| match part {
            ToolResultContent::Image { source } => Some(source),
            ToolResultContent::Text { .. } => None,
        })
    }

    fn text(&self) -> String {
        let texts: Vec<&str> = self
            .result
            .iter()
            .filter_map(|part| match part {
                ToolResultContent::Text { text } => Some(text.as_str()),
                ToolResultContent::Image { .. } => None,
            })
            .collect();
        let text = texts.join("\n");
        if self.is_error {
            format!("Error: {text}")
        } else {
            text
        }
    }
}

/// The raw `computer_call` item `call_id` of `message`.
fn raw_call<'a>(message: &'a Message, call_id: &str) -> Option<&'a Value> {
    message.content.iter().find_map(|block| match block {
        ContentBlock::OpenAiItem { item }
            if item["type"] == "computer_call" && item["call_id"] == call_id =>
        {
            Some(item)
        }
        _ => None,
    })
}

/// The id of action `index` (from 0) of the batched computer call `call_id`: each action of
/// a batch is a call of the computer tool of its own, so it passes the gate on its own.
fn batch_member_id(call_id: &str, index: usize) -> String {
    format!("{call_id}#{}", index + 1)
}

/// The batched computer call of `message` that call `id` is an action of, with the action's
/// index (from 0); `None` for every other call.
pub fn batch_of<'a>(message: &'a Message, id: &str) -> Option<(&'a str, usize)> {
    let (call_id, number) = id.rsplit_once('#')?;
    let index = number.parse::<usize>().ok()?.checked_sub(1)?;
    let call = raw_call(message, call_id)?;
    let actions = call["actions"].as_array()?;
    (index < actions.len())
        .then(|| call["call_id"].as_str().map(|parent| (parent, index)))
        .flatten()
}

/// The safety checks the service raised about call `id` of `message` (empty for most). A
/// batched call's checks are asked with its first action; when the person refuses them, that
/// action fails and the batch's later actions do not run.
pub fn pending_safety_checks<'a>(message: &'a Message, id: &str) -> &'a [Value] {
    let call = match batch_of(message, id) {
        Some((parent, 0)) => raw_call(message, parent),
        Some(_) => None,
        None => raw_call(message, id),
    };
    call.and_then(|item| item["pending_safety_checks"].as_array())
        .map_or(&[], Vec::as_slice)
}

/// What the encoder needs to know about the whole history: each call's answer, the raw
/// `computer_call` items, the actions of batched ones, and which calls are the computer's.
struct Index<'a> {
    answers: HashMap<&'a str, Answer<'a>>,
    raw_calls: HashMap<&'a str, &'a Value>,
    /// A batched call's actions' ids, in order.
    batches: HashMap<&'a str, Vec<String>>,
    /// Each batched action's call and index.
    members: HashMap<String, (&'a str, usize)>,
    computer_calls: HashSet<&'a str>,
}

impl<'a> Index<'a> {
    fn of(messages: &'a [Message]) -> Self {
        let mut index = Index {
            answers: HashMap::new(),
            raw_calls: HashMap::new(),
            batches: HashMap::new(),
            members: HashMap::new(),
            computer_calls: HashSet::new(),
        };
        for block in messages.iter().flat_map(|m| &m.content) {
            match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } => {
                    let answer = Answer {
                        result: content,
                        is_error: *is_error,
                    };
                    index.answers.insert(tool_use_id.as_str(), answer);
                }
                ContentBlock::OpenAiItem { item } if item["type"] == "computer_call" => {
                    if let Some(id) = item["call_id"].as_str() {
                        index.raw_calls.insert(id, item);
                        if let Some(actions) = item["actions"].as_array().filter(|a| !a.is_empty())
                        {
                            let ids: Vec<String> =
                                (0..actions.len()).map(|i| batch_member_id(id, i)).collect();
                            for (i, member) in ids.iter().enumerate() {
                                index.members.insert(member.clone(), (id, i));
                            }
                            index.batches.insert(id, ids);
                        }
                    }
                }
                ContentBlock::ToolUse { id, name, .. } if name == "computer" => {
                    index.computer_calls.insert(id.as_str());
                }
                _ => {}
            }
        }
        index
    }

    /// A computer call goes back as the API's own `computer_call` and `computer_call_output`
    /// pair only when its raw item is kept and its result carries a screenshot (the output
    /// is one), and, if it had safety checks, it ran (the person acknowledged them). One not
    /// run, failed, from another provider, or whose screenshot the context budget dropped
    /// goes as text: the API refuses an output without an image, and a call whose checks the
    /// output does not acknowledge.
    ///
    /// A batched call (`id` the call's or one of its actions') goes natively only when every
    /// action ran without error and the last one's result carries the screenshot: one failed
    /// action, and the later ones not run, go as text, each action's result in order.
    fn native(&self, id: &str) -> bool {
        let id = self.call_of(id);
        let Some(call) = self.raw_calls.get(id) else {
            return false;
        };
        if let Some(members) = self.batches.get(id) {
            let answers: Option<Vec<&Answer<'_>>> = members
                .iter()
                .map(|m| self.answers.get(m.as_str()))
                .collect();
            return answers.is_some_and(|answers| {
                answers.iter().all(|a| !a.is_error)
                    && answers.last().is_some_and(|a| a.image().is_some())
            });
        }
        let Some(answer) = self.answers.get(id) else {
            return false;
        };
        let checks = call["pending_safety_checks"]
            .as_array()
            .is_some_and(|c| !c.is_empty());
        answer.image().is_some() && !(checks && answer.is_error)
    }

    /// The computer call that call `id` belongs to: its batch's, or its own.
    fn call_of<'s>(&'s self, id: &'s str) -> &'s str {
        self.members.get(id).map_or(id, |(call, _)| call)
    }

    /// What the model asked for with call `id`, as it asked: its action, or its batch's.
    fn asked<'s>(&'s self, id: &str, input: &'s Value) -> &'s Value {
        if let Some((call, index)) = self.members.get(id) {
            return self
                .raw_calls
                .get(call)
                .map_or(input, |c| &c["actions"][*index]);
        }
        self.raw_calls.get(id).map_or(input, |call| &call["action"])
    }
}

/// The history as the Responses API's `input` items.
fn input_items(messages: &[Message]) -> Vec<Value> {
    let index = Index::of(messages);
    let mut out = Vec::new();
    for message in messages {
        match message.role {
            Role::Assistant => assistant_items(message, &index, &mut out),
            Role::User => user_items(message, &index, &mut out),
        }
    }
    out
}

fn assistant_items(message: &Message, index: &Index<'_>, out: &mut Vec<Value>) {
    // A reasoning item must be followed by the items it led to; when one of them goes as
    // text, the message's reasoning is left out.
    let keep_reasoning = message.tool_uses().all(|call| {
        let id = call.id.as_str();
        !index.raw_calls.contains_key(index.call_of(id)) || index.native(id)
    });
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut Vec<Value>| {
        if !text.is_empty() {
            out.push(json!({"role": "assistant", "content": std::mem::take(text)}));
        }
    };
    for block in &message.content {
        match block {
            ContentBlock::Text { text: t } => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(t);
            }
            ContentBlock::OpenAiItem { item } => {
                flush(&mut text, out);
                let wanted = match item["type"].as_str() {
                    Some("reasoning") => keep_reasoning,
                    Some("computer_call") => {
                        item["call_id"].as_str().is_some_and(|id| index.native(id))
                    }
                    _ => true,
                };
                if wanted {
                    out.push(item.clone());
                }
            }
            ContentBlock::ToolUse {
                id, name, input, ..
            } => {
                flush(&mut text, out);
                if name != "computer" {
                    out.push(json!({
                        "type": "function_call",
                        "call_id": id,
                        "name": name,
                        "arguments": input.to_string(),
                    }));
                } else if !index.native(id.as_str()) {
                    let asked = index.asked(id.as_str(), input);
                    out.push(json!({"role": "assistant",
                        "content": format!("[computer call {id}: {asked}]")}));
                }
            }
            // Claude's thinking stays with Claude.
            ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::Image { .. }
            | ContentBlock::ToolResult { .. } => {}
        }
    }
    flush(&mut text, out);
}

fn user_items(message: &Message, index: &Index<'_>, out: &mut Vec<Value>) {
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text } => parts.push(json!({"type": "input_text", "text": text})),
            ContentBlock::Image { source } => parts.push(input_image(source)),
            ContentBlock::ToolResult { tool_use_id, .. } => {
                let id = tool_use_id.as_str();
                let Some(answer) = index.answers.get(id) else {
                    continue;
                };
                let call_id = index.call_of(id);
                if let Some(call) = index.raw_calls.get(call_id).filter(|_| index.native(id)) {
                    // A batch has one output, its last action's screenshot.
                    let last = index.batches.get(call_id).and_then(|m| m.last());
                    if last.is_none_or(|last| last == id) {
                        out.push(computer_call_output(call_id, call, answer));
                    }
                } else if index.computer_calls.contains(id) {
                    let text = format!("[result of computer call {id}] {}", answer.text());
                    parts.push(json!({"type": "input_text", "text": text}));
                    parts.extend(answer.image().map(input_image));
                } else {
                    out.push(function_call_output(id, answer));
                }
            }
            ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::ToolUse { .. }
            | ContentBlock::OpenAiItem { .. } => {}
        }
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": parts}));
    }
}

/// The answer to a computer call: its screenshot, and the safety checks it reported, which
/// reach this point only after the person acknowledged them (see `agent::run`).
fn computer_call_output(id: &str, call: &Value, answer: &Answer<'_>) -> Value {
    let mut output = json!({
        "type": "computer_call_output",
        "call_id": id,
        "output": {
            "type": "computer_screenshot",
            "image_url": answer.image().and_then(ImageSource::data_url).unwrap_or_default(),
        },
    });
    if let Some(checks) = call["pending_safety_checks"]
        .as_array()
        .filter(|c| !c.is_empty())
    {
        output["acknowledged_safety_checks"] = Value::Array(
            checks
                .iter()
                .map(|c| json!({"id": c["id"], "code": c["code"], "message": c["message"]}))
                .collect(),
        );
    }
    output
}

fn function_call_output(id: &str, answer: &Answer<'_>) -> Value {
    let text = answer.text();
    let images: Vec<Value> = answer
        .result
        .iter()
        .filter_map(|part| match part {
            ToolResultContent::Image { source } => Some(input_image(source)),
            ToolResultContent::Text { .. } => None,
        })
        .collect();
    let output = if images.is_empty() {
        Value::String(text)
    } else {
        let mut parts = vec![json!({"type": "input_text", "text": text})];
        parts.extend(images);
        Value::Array(parts)
    };
    json!({"type": "function_call_output", "call_id": id, "output": output})
}

fn input_image(source: &ImageSource) -> Value {
    match source.data_url() {
        Some(url) => json!({"type": "input_image", "image_url": url, "detail": "auto"}),
        None => json!({"type": "input_text", "text": deskhand_protocol::images::MISSING_IMAGE}),
    }
}

/// The computer tool's input for one of the API's computer actions. Coordinates are in the
/// declared display size, which is the computer tool's model size, so they pass unchanged.
/// Keys held during a click, scroll or drag become the tool's `text` modifiers.
pub fn computer_input(action: &Value) -> Result<Value, String> {
    let kind = action["type"].as_str().unwrap_or_default();
    let point = |at: &Value| -> Result<Value, String> {
        match (at["x"].as_i64(), at["y"].as_i64()) {
            (Some(x), Some(y)) => Ok(json!([x, y])),
            _ => Err(format!("`{kind}` needs integer `x` and `y`")),
        }
    };
    let held = joined_keys(&action["keys"]);
    let mut input = match kind {
        "click" => {
            let name = match action["button"].as_str() {
                Some("left") => "left_click",
                Some("right") => "right_click",
                Some("wheel") => "middle_click",
                other => {
                    return Err(format!(
                        "clicking the {} button is not supported; use left, right or wheel",
                        other.unwrap_or("unnamed")
                    ));
                }
            };
            json!({"action": name, "coordinate": point(action)?, "text": held})
        }
        "double_click" => {
            json!({"action": "double_click", "coordinate": point(action)?, "text": held})
        }
        "move" => json!({"action": "mouse_move", "coordinate": point(action)?}),
        "scroll" => {
            let dx = action["scroll_x"].as_i64().unwrap_or(0);
            let dy = action["scroll_y"].as_i64().unwrap_or(0);
            let (direction, pixels) = if dy.abs() >= dx.abs() {
                (if dy < 0 { "up" } else { "down" }, dy.abs())
            } else {
                (if dx < 0 { "left" } else { "right" }, dx.abs())
            };
            let clicks = ((pixels + PIXELS_PER_CLICK / 2) / PIXELS_PER_CLICK).max(1);
            json!({"action": "scroll", "coordinate": point(action)?,
                "scroll_direction": direction, "scroll_amount": clicks, "text": held})
        }
        "drag" => {
            let path = action["path"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let [first, .., last] = path else {
                return Err("`drag` needs a `path` of at least two points".into());
            };
            json!({"action": "left_click_drag", "start_coordinate": point(first)?,
                "coordinate": point(last)?, "text": held})
        }
        "type" => json!({"action": "type", "text": action["text"]}),
        "keypress" => {
            let keys = joined_keys(&action["keys"]).ok_or("`keypress` needs `keys`")?;
            json!({"action": "key", "text": keys})
        }
        "wait" => json!({"action": "wait", "duration": WAIT_SECONDS}),
        "screenshot" => json!({"action": "screenshot"}),
        other => return Err(format!("unknown computer action `{other}`")),
    };
    // No held keys: no modifier field at all.
    if let Some(fields) = input.as_object_mut() {
        fields.retain(|_, value| !value.is_null());
    }
    Ok(input)
}

/// `["CTRL", "C"]` as the computer tool's combination `CTRL+C` (its key names match without
/// regard to case and know the API's spellings: `ENTER`, `ESC`, `ARROWUP`, `CMD`, …).
fn joined_keys(keys: &Value) -> Option<String> {
    let keys: Vec<&str> = keys.as_array()?.iter().filter_map(Value::as_str).collect();
    (!keys.is_empty()).then(|| keys.join("+"))
}

/// Builds the response from the Responses API's stream events.
#[derive(Default)]
pub(crate) struct ResponsesDecoder {
    /// Finished output items, by `output_index`.
    items: Vec<(u64, Value)>,
}

impl StreamDecoder for ResponsesDecoder {
    fn apply(
        &mut self,
        event: &SseEvent,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Option<ModelResponse>, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(None);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            decode_error(
                ErrorKind::Protocol,
                format!("a stream event is not JSON: {e}"),
            )
        })?;
        match value["type"].as_str().unwrap_or(&event.event) {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(text) = value["delta"].as_str().filter(|t| !t.is_empty()) {
                    on_event(StreamEvent::TextDelta(text.to_string()));
                }
            }
            "response.reasoning_summary_text.delta" => {
                if let Some(text) = value["delta"].as_str().filter(|t| !t.is_empty()) {
                    on_event(StreamEvent::ThinkingDelta(text.to_string()));
                }
            }
            "response.output_item.done" => {
                let index = value["output_index"]
                    .as_u64()
                    .unwrap_or(self.items.len() as u64);
                self.items.push((index, value["item"].clone()));
            }
            "response.completed" | "response.incomplete" => {
                return Ok(Some(self.finish(&value["response"])));
            }
            "response.failed" => {
                let error = &value["response"]["error"];
                return Err(stream_error(error.get("code"), error.get("message")));
            }
            "error" => return Err(stream_error(value.get("code"), value.get("message"))),
            // created, in_progress, output_item.added, content parts, argument deltas (the
            // finished item carries them whole), and anything newer.
            _ => {}
        }
        Ok(None)
    }
}

impl ResponsesDecoder {
    fn finish(&mut self, response: &Value) -> ModelResponse {
        // The final response lists every output item; the streamed ones are a fallback.
        let mut items: Vec<Value> = match response["output"].as_array() {
            Some(output) if !output.is_empty() => output.clone(),
            _ => {
                self.items.sort_by_key(|(index, _)| *index);
                self.items.drain(..).map(|(_, item)| item).collect()
            }
        };
        let mut content = Vec::new();
        let mut malformed = Vec::new();
        for item in items.drain(..) {
            decode_item(item, &mut content, &mut malformed);
        }
        let has_calls = content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. }));
        let stop_reason = match response["incomplete_details"]["reason"].as_str() {
            _ if has_calls => StopReason::ToolUse,
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            _ => StopReason::EndTurn,
        };
        ModelResponse {
            content,
            stop_reason,
            usage: read_usage(&response["usage"]),
            malformed_tool_inputs: malformed,
        }
    }
}

fn decode_item(
    item: Value,
    content: &mut Vec<ContentBlock>,
    malformed: &mut Vec<(String, String)>,
) {
    match item["type"].as_str() {
        Some("message") => {
            for part in item["content"].as_array().into_iter().flatten() {
                let text = part["text"].as_str().or_else(|| part["refusal"].as_str());
                if let Some(text) = text.filter(|t| !t.is_empty()) {
                    content.push(ContentBlock::text(text));
                }
            }
        }
        Some("reasoning") => content.push(ContentBlock::OpenAiItem { item }),
        Some("function_call") => {
            let id = call_id(&item);
            let arguments = item["arguments"].as_str().unwrap_or_default();
            let input = input_or_noted(&id, parse_tool_input(arguments), malformed);
            let name = item["name"].as_str().unwrap_or_default().to_string();
            content.push(ContentBlock::tool_use(id, name, input));
        }
        Some("computer_call") => {
            let id = call_id(&item);
            let mut kept = item;
            kept["call_id"] = json!(id);
            // The GA tool's batch: one call of the computer tool per action, in order.
            let actions = kept["actions"].as_array().filter(|a| !a.is_empty());
            let calls: Vec<(String, Result<Value, String>)> = match actions {
                Some(actions) => actions
                    .iter()
                    .enumerate()
                    .map(|(i, action)| (batch_member_id(&id, i), computer_input(action)))
                    .collect(),
                None => vec![(id.clone(), computer_input(&kept["action"]))],
            };
            content.push(ContentBlock::OpenAiItem { item: kept });
            for (id, input) in calls {
                let input = input_or_noted(&id, input, malformed);
                content.push(ContentBlock::tool_use(id, "computer", input));
            }
        }
        // Items of tools Deskhand does not offer (web search, …) cannot occur; an unknown
        // newer item is kept for this API and shown to no one.
        _ => content.push(ContentBlock::OpenAiItem { item }),
    }
}

fn call_id(item: &Value) -> String {
    item["call_id"]
        .as_str()
        .or_else(|| item["id"].as_str())
        .map_or_else(
            || format!("call_{}", uuid::Uuid::new_v4().simple()),
            str::to_string,
        )
}

/// `input_tokens` includes the cached ones; they are counted once, as cache reads.
fn read_usage(usage: &Value) -> Usage {
    let input = usage["input_tokens"].as_u64().unwrap_or(0);
    let cached = usage
        .pointer("/input_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(input);
    Usage {
        input_tokens: input - cached,
        output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
    }
}

/// An `error` event or a failed response after HTTP 200.
fn stream_error(code: Option<&Value>, message: Option<&Value>) -> ProviderError {
    let body = ErrorBody::from_value(&json!({"error": {
        "code": code.cloned().unwrap_or(Value::Null),
        "message": message.cloned().unwrap_or(json!("the response failed")),
    }}));
    let kind = if body.is_context_overflow() {
        ErrorKind::ContextTooLong
    } else if body.code.contains("rate_limit") {
        ErrorKind::RateLimited
    } else if body.code == "server_error" || body.code.is_empty() {
        ErrorKind::StreamCut
    } else {
        kind_for_status(400, &body)
    };
    decode_error(kind, body.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window and docs/ipc.md know the block as `openai_item`; a block the window does
    /// not know by name broke its chat (serde's own name would be `open_ai_item`).
    #[test]
    fn a_kept_item_is_named_openai_item_on_the_wire() {
        let block = ContentBlock::OpenAiItem {
            item: serde_json::json!({"type": "reasoning", "id": "rs_1"}),
        };
        let wire = serde_json::to_value(&block).unwrap();
        assert_eq!(wire["type"], "openai_item");
        assert_eq!(serde_json::from_value::<ContentBlock>(wire).unwrap(), block);
    }

    fn event(value: Value) -> SseEvent {
        SseEvent {
            id: None,
            event: value["type"].as_str().unwrap_or_default().to_string(),
            data: value.to_string(),
        }
    }

    fn decode(events: &[Value]) -> (ModelResponse, Vec<StreamEvent>) {
        let mut decoder = ResponsesDecoder::default();
        let mut seen = Vec::new();
        for value in events {
            if let Some(done) = decoder
                .apply(&event(value.clone()), &mut |e| seen.push(e))
                .unwrap()
            {
                return (done, seen);
            }
        }
        panic!("no response.completed");
    }

    fn image() -> ImageSource {
        ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }
    }

    fn screenshot_result(id: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: vec![ToolResultContent::Image { source: image() }],
            is_error: false,
            toolset_name: None,
        }
    }

    const CHECK: &str = r#"{"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page asks the agent to ignore its task."}"#;

    fn call_item(call_id: &str, action: Value, checks: Value) -> Value {
        json!({"type": "computer_call", "id": format!("cu_{call_id}"), "call_id": call_id,
            "action": action, "pending_safety_checks": checks, "status": "completed"})
    }

    #[test]
    fn a_streamed_computer_call_becomes_the_computer_tools_action_with_its_raw_item_kept() {
        let reasoning = json!({"type": "reasoning", "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Click the button."}],
            "encrypted_content": "gAAAA"});
        let call = call_item(
            "call_1",
            json!({"type": "click", "button": "left", "x": 10, "y": 20, "keys": ["SHIFT"]}),
            json!([serde_json::from_str::<Value>(CHECK).unwrap()]),
        );
        let (response, seen) = decode(&[
            json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "delta": "Click ", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "sequence_number": 1}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning, "sequence_number": 2}),
            json!({"type": "response.output_text.delta", "delta": "On it.", "item_id": "msg_1", "output_index": 1, "content_index": 0, "sequence_number": 3}),
            json!({"type": "response.output_item.done", "output_index": 1, "sequence_number": 4,
                "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": "On it.", "annotations": []}]}}),
            json!({"type": "response.output_item.done", "output_index": 2, "item": call, "sequence_number": 5}),
            json!({"type": "response.completed", "sequence_number": 6, "response": {"id": "resp_1", "status": "completed", "output": [],
                "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40}, "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 3}, "total_tokens": 109}}}),
        ]);
        assert_eq!(
            seen,
            vec![
                StreamEvent::ThinkingDelta("Click ".into()),
                StreamEvent::TextDelta("On it.".into())
            ]
        );
        assert_eq!(
            response.content,
            vec![
                ContentBlock::OpenAiItem { item: reasoning },
                ContentBlock::text("On it."),
                ContentBlock::OpenAiItem { item: call },
                ContentBlock::tool_use(
                    "call_1",
                    "computer",
                    json!({"action": "left_click", "coordinate": [10, 20], "text": "SHIFT"})
                ),
            ]
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.usage.input_tokens, 60);
        assert_eq!(response.usage.cache_read_input_tokens, 40);
        assert_eq!(response.usage.output_tokens, 9);
        let message = Message::assistant(response.content);
        assert_eq!(pending_safety_checks(&message, "call_1").len(), 1);
        assert!(pending_safety_checks(&message, "call_2").is_empty());
    }

    #[test]
    fn every_action_of_the_sdk_maps_to_the_computer_tool() {
        for (action, input) in [
            (
                json!({"type": "click", "button": "right", "x": 1, "y": 2}),
                json!({"action": "right_click", "coordinate": [1, 2]}),
            ),
            (
                json!({"type": "click", "button": "wheel", "x": 1, "y": 2}),
                json!({"action": "middle_click", "coordinate": [1, 2]}),
            ),
            (
                json!({"type": "double_click", "x": 3, "y": 4, "keys": null}),
                json!({"action": "double_click", "coordinate": [3, 4]}),
            ),
            (
                json!({"type": "scroll", "x": 5, "y": 6, "scroll_x": 0, "scroll_y": -300}),
                json!({"action": "scroll", "coordinate": [5, 6], "scroll_direction": "up", "scroll_amount": 3}),
            ),
            (
                json!({"type": "scroll", "x": 5, "y": 6, "scroll_x": 20, "scroll_y": 0}),
                json!({"action": "scroll", "coordinate": [5, 6], "scroll_direction": "right", "scroll_amount": 1}),
            ),
            (
                json!({"type": "type", "text": "hello"}),
                json!({"action": "type", "text": "hello"}),
            ),
            (
                json!({"type": "keypress", "keys": ["CTRL", "L"]}),
                json!({"action": "key", "text": "CTRL+L"}),
            ),
            (
                json!({"type": "wait"}),
                json!({"action": "wait", "duration": 2.0}),
            ),
            (
                json!({"type": "screenshot"}),
                json!({"action": "screenshot"}),
            ),
            (
                json!({"type": "move", "x": 7, "y": 8}),
                json!({"action": "mouse_move", "coordinate": [7, 8]}),
            ),
            (
                json!({"type": "drag", "path": [{"x": 1, "y": 1}, {"x": 5, "y": 5}, {"x": 9, "y": 9}]}),
                json!({"action": "left_click_drag", "start_coordinate": [1, 1], "coordinate": [9, 9]}),
            ),
        ] {
            assert_eq!(computer_input(&action), Ok(input), "{action}");
        }
        for bad in [
            json!({"type": "click", "button": "back", "x": 1, "y": 2}),
            json!({"type": "drag", "path": [{"x": 1, "y": 1}]}),
            json!({"type": "click", "button": "left", "x": "1", "y": 2}),
            json!({"type": "teleport"}),
        ] {
            assert!(computer_input(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_action_it_cannot_map_is_answered_as_malformed_not_dropped() {
        let (response, _) = decode(&[
            json!({"type": "response.output_item.done", "output_index": 0, "sequence_number": 1,
                "item": call_item("call_9", json!({"type": "click", "button": "back", "x": 1, "y": 1}), json!([]))}),
            json!({"type": "response.completed", "sequence_number": 2, "response": {"output": [], "usage": {}}}),
        ]);
        assert_eq!(response.malformed_tool_inputs.len(), 1);
        assert_eq!(response.malformed_tool_inputs[0].0, "call_9");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn errors_in_the_stream_are_typed() {
        let mut decoder = ResponsesDecoder::default();
        let error = decoder
            .apply(
                &event(json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "sequence_number": 1})),
                &mut |_| {},
            )
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::RateLimited);
        let error = decoder
            .apply(
                &event(json!({"type": "response.failed", "sequence_number": 2, "response": {"error": {"code": "server_error", "message": "boom"}}})),
                &mut |_| {},
            )
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::StreamCut);
        let (response, _) = decode(
            &[json!({"type": "response.incomplete", "sequence_number": 3,
            "response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": "cut"}]}],
                         "incomplete_details": {"reason": "max_output_tokens"}, "usage": {}}})],
        );
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
    }

    fn computer_definition() -> ToolDefinition {
        ToolDefinition {
            name: "computer".into(),
            description: "the screen".into(),
            input_schema: json!({"type": "object"}),
            anthropic: Some(crate::AnthropicNativeTool::new(
                json!({"type": "computer_20250124", "name": "computer", "display_width_px": 1280, "display_height_px": 800}),
                Some("computer-use-2025-01-24"),
            )),
        }
    }

    #[test]
    fn the_request_offers_the_native_computer_and_functions_and_acknowledges_approved_checks() {
        let check: Value = serde_json::from_str(CHECK).unwrap();
        let reasoning =
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"});
        let click = call_item(
            "call_1",
            json!({"type": "click", "button": "left", "x": 10, "y": 20}),
            json!([check]),
        );
        let denied = call_item(
            "call_2",
            json!({"type": "type", "text": "rm"}),
            json!([check]),
        );
        let history = [
            Message::user(vec![ContentBlock::text("go")]),
            Message::assistant(vec![
                ContentBlock::OpenAiItem {
                    item: reasoning.clone(),
                },
                ContentBlock::OpenAiItem {
                    item: click.clone(),
                },
                ContentBlock::tool_use(
                    "call_1",
                    "computer",
                    json!({"action": "left_click", "coordinate": [10, 20]}),
                ),
            ]),
            Message::user(vec![screenshot_result("call_1")]),
            Message::assistant(vec![
                ContentBlock::OpenAiItem {
                    item: json!({"type": "reasoning", "id": "rs_2", "summary": []}),
                },
                ContentBlock::OpenAiItem { item: denied },
                ContentBlock::tool_use(
                    "call_2",
                    "computer",
                    json!({"action": "type", "text": "rm"}),
                ),
            ]),
            Message::user(vec![ContentBlock::tool_error(
                "call_2",
                "not run: the user did not acknowledge the safety check",
            )]),
            Message::assistant(vec![
                ContentBlock::Thinking {
                    thinking: "Claude's".into(),
                    signature: "sig".into(),
                },
                ContentBlock::tool_use("call_3", "bash", json!({"command": "ls"})),
            ]),
            Message::user(vec![ContentBlock::ToolResult {
                tool_use_id: "call_3".into(),
                content: vec![ToolResultContent::Text {
                    text: "a.txt".into(),
                }],
                is_error: false,
                toolset_name: None,
            }]),
        ];
        let tools = [
            computer_definition(),
            ToolDefinition {
                name: "bash".into(),
                description: "run".into(),
                input_schema: json!({"type": "object"}),
                anthropic: None,
            },
        ];
        let request = ModelRequest {
            model: "computer-use-preview",
            system: "be careful",
            messages: &history,
            tools: &tools,
            max_tokens: 1024,
            cache_breakpoints: &[0],
        };
        let body: Value =
            serde_json::from_slice(&request_body(&request, Some(Effort::Max)).unwrap()).unwrap();
        // The preview model takes no effort.
        assert_eq!(body["reasoning"], json!({"summary": "concise"}));
        assert_eq!(body["instructions"], "be careful");
        assert_eq!(body["store"], false);
        assert_eq!(body["truncation"], "auto");
        assert_eq!(
            body["tools"],
            json!([
                {"type": "computer_use_preview", "display_width": 1280, "display_height": 800, "environment": "linux"},
                {"type": "function", "name": "bash", "description": "run", "parameters": {"type": "object"}, "strict": false},
            ])
        );
        assert_eq!(
            body["input"],
            json!([
                {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
                reasoning,
                click,
                {"type": "computer_call_output", "call_id": "call_1",
                 "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                 "acknowledged_safety_checks": [check]},
                // Denied: no computer_call (its checks were never acknowledged), no reasoning.
                {"role": "assistant", "content": "[computer call call_2: {\"text\":\"rm\",\"type\":\"type\"}]"},
                {"role": "user", "content": [{"type": "input_text", "text": "[result of computer call call_2] Error: not run: the user did not acknowledge the safety check"}]},
                {"type": "function_call", "call_id": "call_3", "name": "bash", "arguments": "{\"command\":\"ls\"}"},
                {"type": "function_call_output", "call_id": "call_3", "output": "a.txt"},
            ])
        );
    }

    #[test]
    fn gpt_5_4_and_newer_take_the_ga_tool_and_the_preview_model_the_preview_tool() {
        for (model, tool) in [
            ("computer-use-preview", Some(ComputerTool::Preview)),
            ("gpt-5.4", Some(ComputerTool::Ga)),
            ("gpt-5.4-mini-2026-03-05", Some(ComputerTool::Ga)),
            ("openai/GPT-5.5", Some(ComputerTool::Ga)),
            ("gpt-6", Some(ComputerTool::Ga)),
            ("gpt-5.3-codex", None),
            ("gpt-5", None),
            ("gpt-4.1", None),
            ("gpt-realtime", None),
        ] {
            assert_eq!(computer_tool(model), tool, "{model}");
        }
    }

    fn batch_call(call_id: &str, actions: Value, checks: Value) -> Value {
        json!({"type": "computer_call", "id": format!("cu_{call_id}"), "call_id": call_id,
            "actions": actions, "pending_safety_checks": checks, "status": "completed"})
    }

    #[test]
    fn a_batched_call_is_one_computer_call_per_action_and_its_checks_go_with_the_first() {
        let check: Value = serde_json::from_str(CHECK).unwrap();
        let call = batch_call(
            "call_7",
            json!([
                {"type": "click", "button": "left", "x": 1, "y": 2},
                {"type": "click", "button": "back", "x": 1, "y": 2},
                {"type": "type", "text": "hi"},
            ]),
            json!([check]),
        );
        let (response, _) = decode(&[
            json!({"type": "response.output_item.done", "output_index": 0, "item": call, "sequence_number": 1}),
            json!({"type": "response.completed", "sequence_number": 2, "response": {"output": [], "usage": {}}}),
        ]);
        assert_eq!(
            response.content,
            vec![
                ContentBlock::OpenAiItem { item: call.clone() },
                ContentBlock::tool_use(
                    "call_7#1",
                    "computer",
                    json!({"action": "left_click", "coordinate": [1, 2]})
                ),
                ContentBlock::tool_use("call_7#2", "computer", json!({})),
                ContentBlock::tool_use(
                    "call_7#3",
                    "computer",
                    json!({"action": "type", "text": "hi"})
                ),
            ]
        );
        // The action it cannot do is answered as an error, like a single call's.
        assert_eq!(response.malformed_tool_inputs.len(), 1);
        assert_eq!(response.malformed_tool_inputs[0].0, "call_7#2");
        let message = Message::assistant(response.content);
        assert_eq!(batch_of(&message, "call_7#3"), Some(("call_7", 2)));
        assert_eq!(batch_of(&message, "call_7#4"), None);
        assert_eq!(batch_of(&message, "call_7"), None);
        assert_eq!(pending_safety_checks(&message, "call_7#1"), &[check]);
        assert!(pending_safety_checks(&message, "call_7#2").is_empty());
    }

    fn ga_request_body(history: &[Message]) -> Value {
        let tools = [computer_definition()];
        let request = ModelRequest {
            model: "gpt-5.4",
            system: "",
            messages: history,
            tools: &tools,
            max_tokens: 1024,
            cache_breakpoints: &[],
        };
        serde_json::from_slice(&request_body(&request, Some(Effort::Low)).unwrap()).unwrap()
    }

    #[test]
    fn a_batch_that_ran_whole_goes_back_as_its_call_and_one_output() {
        let check: Value = serde_json::from_str(CHECK).unwrap();
        let call = batch_call(
            "call_1",
            json!([{"type": "click", "button": "left", "x": 1, "y": 2}, {"type": "type", "text": "hi"}]),
            json!([check]),
        );
        let history = [
            Message::user(vec![ContentBlock::text("go")]),
            Message::assistant(vec![
                ContentBlock::OpenAiItem { item: call.clone() },
                ContentBlock::tool_use("call_1#1", "computer", json!({"action": "left_click"})),
                ContentBlock::tool_use("call_1#2", "computer", json!({"action": "type"})),
            ]),
            Message::user(vec![
                screenshot_result("call_1#1"),
                screenshot_result("call_1#2"),
            ]),
        ];
        let body = ga_request_body(&history);
        assert_eq!(body["tools"], json!([{"type": "computer"}]));
        assert_eq!(
            body["reasoning"],
            json!({"summary": "concise", "effort": "low"})
        );
        assert_eq!(
            body["input"],
            json!([
                {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
                call,
                {"type": "computer_call_output", "call_id": "call_1",
                 "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                 "acknowledged_safety_checks": [check]},
            ])
        );
    }

    #[test]
    fn a_batch_with_a_failed_action_goes_back_as_text_with_each_result_in_order() {
        let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": []});
        let call = batch_call(
            "call_1",
            json!([
                {"type": "click", "button": "left", "x": 1, "y": 2},
                {"type": "keypress", "keys": ["NOKEY"]},
                {"type": "type", "text": "hi"},
            ]),
            json!([]),
        );
        let history = [
            Message::user(vec![ContentBlock::text("go")]),
            Message::assistant(vec![
                ContentBlock::OpenAiItem { item: reasoning },
                ContentBlock::OpenAiItem { item: call },
                ContentBlock::tool_use("call_1#1", "computer", json!({})),
                ContentBlock::tool_use("call_1#2", "computer", json!({})),
                ContentBlock::tool_use("call_1#3", "computer", json!({})),
            ]),
            Message::user(vec![
                screenshot_result("call_1#1"),
                ContentBlock::tool_error("call_1#2", "unknown key NOKEY"),
                ContentBlock::tool_error("call_1#3", "Not executed"),
            ]),
        ];
        let body = ga_request_body(&history);
        let text = |t: &str| json!({"type": "input_text", "text": t});
        assert_eq!(
            body["input"],
            json!([
                {"role": "user", "content": [text("go")]},
                {"role": "assistant", "content": "[computer call call_1#1: {\"button\":\"left\",\"type\":\"click\",\"x\":1,\"y\":2}]"},
                {"role": "assistant", "content": "[computer call call_1#2: {\"keys\":[\"NOKEY\"],\"type\":\"keypress\"}]"},
                {"role": "assistant", "content": "[computer call call_1#3: {\"text\":\"hi\",\"type\":\"type\"}]"},
                {"role": "user", "content": [
                    text("[result of computer call call_1#1] "),
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
                    text("[result of computer call call_1#2] Error: unknown key NOKEY"),
                    text("[result of computer call call_1#3] Error: Not executed"),
                ]},
            ])
        );
    }

    #[test]
    fn only_computer_use_models_take_the_responses_api() {
        for model in [
            "computer-use-preview",
            "computer-use-preview-2025-03-11",
            "openai/Computer-Use-Preview",
        ] {
            assert!(is_computer_use_model(model), "{model}");
        }
        for model in ["gpt-4.1", "gpt-4o", "o3", "qwen2.5vl:7b", "gpt-5.2"] {
            assert!(!is_computer_use_model(model), "{model}");
        }
    }
}
