//! The one seam between the agent loop and a model service.

use async_trait::async_trait;
use serde_json::Value;

use super::{ContentBlock, ErrorKind, Message, ProviderError, StopReason, Usage};

/// A tool as offered to a model. Every tool has a plain JSON-Schema definition; tools that
/// Anthropic defines itself (computer, bash, editor) also carry their native definition.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    /// Short usage instructions, for providers that only know plain function tools.
    pub description: String,
    pub input_schema: Value,
    pub anthropic: Option<AnthropicNativeTool>,
}

/// An Anthropic-defined tool (`{"type": "computer_20250124", ...}`) and the beta it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicNativeTool {
    pub definition: Value,
    pub beta: Option<&'static str>,
    /// What to offer instead when an endpoint answers 400 naming this definition's `type`
    /// (the GA computer toolset on an endpoint that only knows `computer_20251124`, say).
    pub fallback: Option<Box<AnthropicNativeTool>>,
}

impl AnthropicNativeTool {
    /// A definition with no fallback.
    pub fn new(definition: Value, beta: Option<&'static str>) -> Self {
        Self {
            definition,
            beta,
            fallback: None,
        }
    }

    /// The definition's `type`, e.g. `computer_toolset_20260801`.
    pub fn tool_type(&self) -> &str {
        self.definition["type"].as_str().unwrap_or_default()
    }
}

/// One request to the model. Borrowed, so the loop never copies the history to send it.
#[derive(Clone, Copy, Debug)]
pub struct ModelRequest<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolDefinition],
    pub max_tokens: u32,
    /// Messages whose last block ends a cacheable prefix. Providers that cache mark these
    /// (and the system prompt and tools before them); others ignore them.
    pub cache_breakpoints: &'a [usize],
}

/// What a provider reports while a response streams in.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    /// A piece of the model's thinking (a progress summary where `display: summarized`).
    ThinkingDelta(String),
    /// A failed attempt that will be retried after `delay_ms`.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        kind: ErrorKind,
        error: String,
    },
}

/// A complete assistant response.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelResponse {
    pub content: Vec<ContentBlock>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    /// `tool_use` ids whose streamed input was not valid JSON, with the parse error. Their
    /// blocks carry `{}` as input so the history stays valid; the loop answers them with an
    /// error result.
    pub malformed_tool_inputs: Vec<(String, String)>,
}

#[async_trait]
pub trait Provider: Send + Sync {
    fn name(&self) -> &'static str;

    /// The key this provider sends, so that the agent loop can keep it out of everything it
    /// stores, shows or sends; `None` for a provider without one.
    fn api_key(&self) -> Option<&str> {
        None
    }

    /// Streams one response, retrying what is retryable before anything was streamed.
    async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError>;

    /// Tool types this provider stopped offering for `model` because its endpoint refused
    /// them, each with why (`computer_toolset_20260801 refused with HTTP 400`), for `started`.
    fn tool_fallbacks(&self, _model: &str) -> Vec<String> {
        Vec::new()
    }
}

/// A call's input, or `{}` in place of one that could not be read, with what was wrong noted
/// under the call's id (a [`ModelResponse`]'s `malformed_tool_inputs`).
pub(crate) fn input_or_noted(
    id: &str,
    input: Result<Value, String>,
    malformed: &mut Vec<(String, String)>,
) -> Value {
    input.unwrap_or_else(|problem| {
        malformed.push((id.to_string(), problem));
        Value::Object(Default::default())
    })
}

/// A tool call's streamed input: `{}` when empty, else a JSON object. The error says what is
/// wrong, with the text, for the model to correct.
pub(crate) fn parse_tool_input(json: &str) -> Result<Value, String> {
    if json.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    // Checked before parsing: deeper JSON could be stored but never read back.
    let depth = deskhand_protocol::json_depth::text_depth(json);
    if depth > deskhand_protocol::json_depth::MAX_TOOL_INPUT_DEPTH {
        return Err(format!(
            "input is nested {depth} levels deep; a tool input may nest at most {} levels",
            deskhand_protocol::json_depth::MAX_TOOL_INPUT_DEPTH
        ));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err("input is not a JSON object".into()),
        Err(e) => Err(format!("input is not valid JSON ({e}): {}", start_of(json))),
    }
}

/// Enough of a malformed input for the model to see what went wrong, and no more: it goes
/// into the history and into every later request.
fn start_of(json: &str) -> String {
    const SHOWN: usize = 1000;
    match json.char_indices().nth(SHOWN) {
        None => json.to_string(),
        Some((end, _)) => format!("{}… ({} bytes in all)", &json[..end], json.len()),
    }
}
