//! OpenAI's Chat Completions over SSE, for OpenAI, Azure OpenAI, OpenRouter and any server
//! that speaks it (vLLM, Ollama, LM Studio): the history translated from its Messages shape,
//! tools as functions with their JSON Schemas, tool calls whose arguments stream in pieces,
//! and each service's URL and header shape.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::claude::Effort;
use super::http::{
    ErrorBody, HttpApi, HttpRequest, StreamDecoder, decode_error, kind_for_status, parse_event,
    stream_failure,
};
use super::provider::{input_or_noted, parse_tool_input};
use super::responses;
use super::{
    ContentBlock, ErrorKind, ImageSource, Message, ModelRequest, ModelResponse, Provider,
    ProviderError, RetryPolicy, Role, SseEvent, StopReason, StreamEvent, ToolDefinition,
    ToolResultContent, Usage,
};
use crate::secrets::ApiKey;

pub use crate::providers::{OPENAI_BASE_URL, OPENROUTER_BASE_URL};
/// A generally available Azure OpenAI API version with tools, images and streamed usage.
pub const AZURE_API_VERSION: &str = "2024-10-21";

/// Which service speaks Chat Completions, which decides its URL, headers and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Service {
    OpenAi,
    /// Addressed by deployment, not by model; the key goes in an `api-key` header.
    Azure {
        deployment: String,
        api_version: String,
    },
    OpenRouter,
    /// Any server at a base URL (vLLM, Ollama, LM Studio, …); it may need no key.
    Compatible,
}

impl Service {
    pub fn name(&self) -> &'static str {
        match self {
            Self::OpenAi => "OpenAI",
            Self::Azure { .. } => "Azure OpenAI",
            Self::OpenRouter => "OpenRouter",
            Self::Compatible => "OpenAI-compatible server",
        }
    }
}

#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    pub service: Service,
    /// The `…/v1` base URL, or for Azure the resource endpoint (`https://NAME.openai.azure.com`).
    pub base_url: String,
    /// `None` for a local server that needs none.
    pub api_key: Option<ApiKey>,
    pub retry: RetryPolicy,
    /// `reasoning.effort` for the Responses API's GA computer models; `None` leaves the
    /// service's default.
    pub effort: Option<Effort>,
}

pub struct OpenAi {
    config: OpenAiConfig,
    api: HttpApi,
}

impl OpenAi {
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let request_ids = &["x-request-id", "apim-request-id", "request-id"];
        let api = HttpApi::new(config.service.name(), config.retry.clone(), request_ids)?;
        Ok(Self { config, api })
    }

    /// Whether requests for `model` go to the Responses API: OpenAI's own service and a
    /// computer-use model. Every other model and server speaks Chat Completions.
    pub fn uses_responses_api(&self, model: &str) -> bool {
        self.config.service == Service::OpenAi && responses::is_computer_use_model(model)
    }

    /// Where requests for `model` go.
    pub fn endpoint(&self, model: &str) -> String {
        let base = self.config.base_url.trim_end_matches('/');
        if self.uses_responses_api(model) {
            return format!("{base}/responses");
        }
        match &self.config.service {
            Service::Azure {
                deployment,
                api_version,
            } => format!(
                "{base}/openai/deployments/{deployment}/chat/completions?api-version={api_version}"
            ),
            _ => format!("{base}/chat/completions"),
        }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        let key = self.config.api_key.as_ref().map(ApiKey::expose);
        match (&self.config.service, key) {
            (Service::Azure { .. }, key) => {
                headers.push(("api-key", key.unwrap_or_default().to_string()))
            }
            (_, Some(key)) => headers.push(("authorization", format!("Bearer {key}"))),
            (_, None) => {}
        }
        if self.config.service == Service::OpenRouter {
            // OpenRouter's app attribution.
            headers.push(("x-title", "Deskhand".into()));
        }
        headers
    }
}

#[async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &'static str {
        self.api.provider()
    }

    fn api_key(&self) -> Option<&str> {
        self.config.api_key.as_ref().map(ApiKey::expose)
    }

    async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        let responses = self.uses_responses_api(request.model);
        let body = if responses {
            responses::request_body(&request, self.config.effort)
        } else {
            request_body(&request, &self.config.service)
        };
        let body = body.map_err(|e| {
            ProviderError::new(self.name(), ErrorKind::InvalidRequest, e.to_string())
        })?;
        let http = HttpRequest {
            url: self.endpoint(request.model),
            headers: self.headers(),
            body: body.into(),
        };
        if responses {
            self.api
                .stream::<responses::ResponsesDecoder>(&http, on_event)
                .await
        } else {
            self.api.stream::<ChunkDecoder>(&http, on_event).await
        }
    }
}

/// The JSON body of a streaming request, exactly as sent. Cache breakpoints are not sent:
/// these services cache repeated prefixes by themselves.
pub fn request_body(
    request: &ModelRequest<'_>,
    service: &Service,
) -> Result<Vec<u8>, serde_json::Error> {
    // OpenAI's newer models refuse `max_tokens`; the others know only it.
    let max_tokens_field = match service {
        Service::OpenAi => "max_completion_tokens",
        _ => "max_tokens",
    };
    let mut body = json!({
        "model": request.model,
        "messages": wire_messages(request.system, request.messages),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    body[max_tokens_field] = json!(request.max_tokens);
    if !request.tools.is_empty() {
        body["tools"] = request.tools.iter().map(wire_tool).collect();
    }
    serde_json::to_vec(&body)
}

fn wire_tool(tool: &ToolDefinition) -> Value {
    json!({"type": "function", "function": {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.input_schema,
    }})
}

/// The history in Chat Completions' shape: the system prompt first, each assistant message
/// with its `tool_calls`, and each user message split into one `tool` message per result
/// followed by a user message with the rest (text, images, and the images the tools returned,
/// which a `tool` message cannot carry).
fn wire_messages(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message.role {
            Role::Assistant => out.push(wire_assistant(message)),
            Role::User => wire_user(message, &mut out),
        }
    }
    out
}

fn wire_assistant(message: &Message) -> Value {
    let text = message.text();
    let calls: Vec<Value> = message
        .tool_uses()
        .map(|call| {
            json!({"id": call.id, "type": "function", "function": {
                "name": call.name,
                "arguments": call.input.to_string(),
            }})
        })
        .collect();
    if calls.is_empty() {
        return json!({"role": "assistant", "content": text});
    }
    let content = if text.is_empty() {
        Value::Null
    } else {
        Value::String(text)
    };
    json!({"role": "assistant", "content": content, "tool_calls": calls})
}

fn wire_user(message: &Message, out: &mut Vec<Value>) {
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text } => parts.push(text_part(text)),
            ContentBlock::Image { source } => parts.push(image_part(source)),
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => {
                let mut texts = Vec::new();
                let mut images = Vec::new();
                for item in content {
                    match item {
                        ToolResultContent::Text { text } => texts.push(text.as_str()),
                        ToolResultContent::Image { source } => images.push(image_part(source)),
                    }
                }
                let mut text = texts.join("\n");
                if *is_error {
                    text = format!("Error: {text}");
                }
                if !images.is_empty() {
                    let what = match images.len() {
                        1 => "The image this tool returned follows".to_string(),
                        n => format!("The {n} images this tool returned follow"),
                    };
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&format!("[{what} in the next user message.]"));
                    parts.push(text_part(&format!(
                        "Image returned by tool call {tool_use_id}:"
                    )));
                    parts.extend(images);
                }
                out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": text}));
            }
            // Thinking belongs to its provider, and a user message has no tool calls.
            ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::OpenAiItem { .. }
            | ContentBlock::ToolUse { .. } => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    // Plain text goes as a string, which every server takes; images need the parts form.
    let content = if parts.iter().all(|p| p["type"] == "text") {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        Value::String(texts.join("\n"))
    } else {
        Value::Array(parts)
    };
    out.push(json!({"role": "user", "content": content}));
}

fn text_part(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn image_part(source: &ImageSource) -> Value {
    match source.data_url() {
        Some(url) => json!({"type": "image_url", "image_url": {"url": url}}),
        None => text_part(deskhand_protocol::images::MISSING_IMAGE),
    }
}

/// One `chat.completion.chunk`, or an error in its place. Servers send `null` for what they
/// leave out, so every field may be absent.
#[derive(Deserialize)]
struct Chunk {
    /// Free-form: each service shapes it differently ([`ErrorBody`] reads them all).
    error: Option<Value>,
    usage: Option<WireUsage>,
    choices: Option<Vec<Choice>>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<ChoiceDelta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceDelta {
    content: Option<String>,
    tool_calls: Option<Vec<CallPiece>>,
}

/// A piece of a tool call: OpenAI sends the id and name once, then argument pieces.
#[derive(Deserialize)]
struct CallPiece {
    index: Option<u64>,
    id: Option<String>,
    function: Option<FunctionPiece>,
}

#[derive(Deserialize)]
struct FunctionPiece {
    name: Option<String>,
    arguments: Option<Arguments>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Arguments {
    Piece(String),
    /// A server that sends the arguments as an object sends them whole.
    Whole(serde_json::Map<String, Value>),
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

/// Builds the response from `chat.completion.chunk`s.
#[derive(Default)]
struct ChunkDecoder {
    text: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
}

#[derive(Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

impl StreamDecoder for ChunkDecoder {
    fn apply(
        &mut self,
        event: &SseEvent,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Option<ModelResponse>, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.check_calls()?;
            return Ok(Some(self.finish()));
        }
        if data.is_empty() {
            return Ok(None);
        }
        let chunk: Chunk = parse_event("a stream chunk", data)?;
        if let Some(error) = chunk.error {
            return Err(stream_error(error));
        }
        if let Some(usage) = chunk.usage {
            self.read_usage(usage);
        }
        // One choice was asked for; its index is 0.
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(None); // Azure's content-filter preamble, the usage chunk
        };
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                self.text.push_str(&text);
                on_event(StreamEvent::TextDelta(text));
            }
            for call in delta.tool_calls.into_iter().flatten() {
                self.apply_call(call);
            }
        }
        if let Some(reason) = choice.finish_reason {
            if reason == "error" {
                return Err(decode_error(
                    ErrorKind::StreamCut,
                    "the service ended the response with an error",
                ));
            }
            self.check_calls()?;
            self.finish_reason = Some(reason);
        }
        Ok(None)
    }

    /// Some servers end the body without `[DONE]`; once a finish reason came, nothing is lost.
    fn at_end_of_body(&mut self) -> Option<ModelResponse> {
        self.finish_reason.is_some().then(|| self.finish())
    }
}

impl ChunkDecoder {
    /// A call whose pieces never named it (arguments for an index that never started) could
    /// be neither run nor sent back: the API refuses a nameless call in the history.
    fn check_calls(&self) -> Result<(), ProviderError> {
        let Some(call) = self.calls.iter().find(|call| call.name.is_empty()) else {
            return Ok(());
        };
        let index = call.index.map_or("none".into(), |i| i.to_string());
        let message = format!("a tool call without a name (index {index})");
        Err(decode_error(ErrorKind::Protocol, message))
    }

    /// Adds one piece of a tool call. OpenAI sends the id and name once and then argument
    /// pieces by `index`; some servers repeat the id, reuse index 0 for every parallel call,
    /// or send no index at all, so a new id always starts a new call, and so does a new name
    /// where there is neither.
    fn apply_call(&mut self, piece: CallPiece) {
        let index = piece.index;
        let id = piece.id.filter(|id| !id.is_empty());
        let (name, arguments) = piece
            .function
            .map_or((None, None), |f| (f.name, f.arguments));
        let named = name.as_ref().is_some_and(|n| !n.is_empty());
        let slot = match (&id, index) {
            (Some(id), _) => self.calls.iter().position(|c| &c.id == id),
            (None, Some(index)) => self.calls.iter().rposition(|c| c.index == Some(index)),
            // Without id or index, a name starts the next call and arguments continue one.
            (None, None) => self
                .calls
                .len()
                .checked_sub(1)
                .filter(|&last| !named || self.calls[last].name.is_empty()),
        };
        let slot = slot.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                index,
                id: id.unwrap_or_default(),
                ..PartialCall::default()
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[slot];
        if let Some(name) = name
            && call.name.is_empty()
        {
            call.name = name;
        }
        match arguments {
            Some(Arguments::Piece(text)) => call.arguments.push_str(&text),
            Some(Arguments::Whole(object)) => call.arguments = Value::Object(object).to_string(),
            Some(Arguments::Other(_)) | None => {}
        }
    }

    /// `prompt_tokens` includes the cached ones; they are counted once, as cache reads.
    fn read_usage(&mut self, usage: WireUsage) {
        let prompt = usage.prompt_tokens.unwrap_or(0);
        let details = usage.prompt_tokens_details.and_then(|d| d.cached_tokens);
        let cached = details.unwrap_or(0).min(prompt);
        self.usage = Usage {
            input_tokens: prompt - cached,
            output_tokens: usage.completion_tokens.unwrap_or(0),
            cache_read_input_tokens: cached,
            ..Usage::default()
        };
    }

    fn finish(&mut self) -> ModelResponse {
        let mut content = Vec::new();
        let text = std::mem::take(&mut self.text);
        if !text.is_empty() {
            content.push(ContentBlock::Text { text });
        }
        let mut malformed = Vec::new();
        let stop_reason = match self.finish_reason.as_deref() {
            _ if !self.calls.is_empty() => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            _ => StopReason::EndTurn,
        };
        for mut call in std::mem::take(&mut self.calls) {
            // A server that sends no id still needs one for the result to answer.
            if call.id.is_empty() {
                call.id = format!("call_{}", uuid::Uuid::new_v4().simple());
            }
            let input = parse_tool_input(&call.arguments);
            let input = input_or_noted(&call.id, input, &mut malformed);
            content.push(ContentBlock::tool_use(call.id, call.name, input));
        }
        ModelResponse {
            content,
            stop_reason,
            usage: self.usage,
            malformed_tool_inputs: malformed,
        }
    }
}

/// An error chunk after HTTP 200 (OpenRouter, vLLM). Its code is often the HTTP status the
/// failure would have had; anything not clearly final is treated as a cut stream, retried
/// while nothing was shown.
fn stream_error(error: Value) -> ProviderError {
    let body = ErrorBody::from_value(&json!({ "error": error }));
    let kind = if body.is_context_overflow() {
        ErrorKind::ContextTooLong
    } else if let Ok(status) = body.code.parse::<u16>() {
        kind_for_status(status, &body)
    } else if body.code.contains("rate_limit") || body.error_type.contains("rate_limit") {
        ErrorKind::RateLimited
    } else {
        ErrorKind::StreamCut
    };
    stream_failure(kind, body.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(data: Value) -> SseEvent {
        SseEvent {
            id: None,
            event: String::new(),
            data: data.to_string(),
        }
    }

    fn delta(delta: Value) -> SseEvent {
        chunk(json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}))
    }

    fn decode(events: &[SseEvent]) -> (ModelResponse, Vec<StreamEvent>) {
        let mut decoder = ChunkDecoder::default();
        let mut seen = Vec::new();
        for event in events {
            if let Some(done) = decoder.apply(event, &mut |e| seen.push(e)).unwrap() {
                return (done, seen);
            }
        }
        panic!("no [DONE]");
    }

    fn done() -> SseEvent {
        SseEvent {
            id: None,
            event: String::new(),
            data: "[DONE]".into(),
        }
    }

    #[test]
    fn parallel_calls_by_index_with_arguments_in_pieces() {
        let (response, deltas) = decode(&[
            chunk(json!({"choices": [], "prompt_filter_results": []})),
            delta(json!({"role": "assistant", "content": "Let me "})),
            delta(json!({"content": "look."})),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"comm"}}]})),
            delta(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":"}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "and\": \"ls\"}"}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": " \"hi\"}"}}]})),
            chunk(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
            chunk(
                json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 60}}}),
            ),
            done(),
        ]);
        assert_eq!(
            response.content,
            vec![
                ContentBlock::text("Let me look."),
                ContentBlock::ToolUse {
                    id: "call_a".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                    toolset_name: None
                },
                ContentBlock::ToolUse {
                    id: "call_b".into(),
                    name: "echo".into(),
                    input: json!({"text": "hi"}),
                    toolset_name: None
                },
            ]
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 40,
                output_tokens: 7,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 60
            }
        );
        assert_eq!(deltas.len(), 2);
    }

    #[test]
    fn calls_that_reuse_an_index_or_have_none_are_kept_apart() {
        let (response, _) = decode(&[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "echo", "arguments": {"text": "a"}}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c2", "function": {"name": "echo", "arguments": "{\"text\": \"b\"}"}}]}),
            ),
            delta(json!({"tool_calls": [{"function": {"name": "echo", "arguments": "{\"te"}}]})),
            delta(json!({"tool_calls": [{"function": {"arguments": "xt\": \"c\"}"}}]})),
            chunk(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
            done(),
        ]);
        let inputs: Vec<(&str, &Value)> = response
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, input, .. } => Some((id.as_str(), input)),
                _ => None,
            })
            .collect();
        assert_eq!(inputs.len(), 3);
        assert_eq!(inputs[0], ("c1", &json!({"text": "a"})));
        assert_eq!(inputs[1], ("c2", &json!({"text": "b"})));
        assert!(inputs[2].0.starts_with("call_"), "a generated id");
        assert_eq!(inputs[2].1, &json!({"text": "c"}));
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn malformed_arguments_are_reported_not_fatal() {
        let (response, _) = decode(&[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "echo", "arguments": "{\"text\": "}}]}),
            ),
            done(),
        ]);
        assert_eq!(response.malformed_tool_inputs.len(), 1);
        assert_eq!(response.malformed_tool_inputs[0].0, "c1");
        assert!(
            response.malformed_tool_inputs[0]
                .1
                .contains("not valid JSON")
        );
    }

    #[test]
    fn an_error_chunk_becomes_a_typed_error() {
        let mut decoder = ChunkDecoder::default();
        let error = decoder
            .apply(
                &chunk(json!({"error": {"code": 429, "message": "Rate limit exceeded"}})),
                &mut |_| {},
            )
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::RateLimited);
        let error = decoder
            .apply(
                &chunk(json!({"error": {"message": "upstream hiccup", "type": "server_error"}})),
                &mut |_| {},
            )
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::StreamCut);
    }

    #[test]
    fn tool_results_become_tool_messages_and_their_images_a_user_message() {
        let image = ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let history = [
            Message::user(vec![ContentBlock::text("go")]),
            Message::assistant(vec![
                ContentBlock::text("Looking."),
                ContentBlock::ToolUse {
                    id: "c1".into(),
                    name: "computer".into(),
                    input: json!({"action": "screenshot"}),
                    toolset_name: None,
                },
                ContentBlock::ToolUse {
                    id: "c2".into(),
                    name: "bash".into(),
                    input: json!({"command": "false"}),
                    toolset_name: None,
                },
            ]),
            Message::user(vec![
                ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: vec![
                        ToolResultContent::Text {
                            text: "done".into(),
                        },
                        ToolResultContent::Image {
                            source: image.clone(),
                        },
                    ],
                    is_error: false,
                    toolset_name: None,
                },
                ContentBlock::tool_error("c2", "exit 1"),
            ]),
        ];
        let wire = wire_messages("sys", &history);
        assert_eq!(
            Value::Array(wire),
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "computer", "arguments": "{\"action\":\"screenshot\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"false\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "done\n[The image this tool returned follows in the next user message.]"},
                {"role": "tool", "tool_call_id": "c2", "content": "Error: exit 1"},
                {"role": "user", "content": [
                    {"type": "text", "text": "Image returned by tool call c1:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ]},
            ])
        );
    }
}
