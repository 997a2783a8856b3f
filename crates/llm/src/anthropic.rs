//! Anthropic's Messages API over SSE: request building, stream assembly and error mapping.

use std::borrow::Cow;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::claude::{Effort, takes_adaptive_thinking};
use super::http::{HttpApi, HttpRequest, StreamDecoder, decode_error, parse_event, stream_failure};
use super::provider::{input_or_noted, parse_tool_input};
use super::tool_fallbacks::FallbackMemory;
use super::{
    AnthropicNativeTool, ContentBlock, ErrorKind, Message, ModelRequest, ModelResponse, Provider,
    ProviderError, RetryPolicy, Role, SseEvent, StopReason, StreamEvent, ToolDefinition, Usage,
};
use crate::secrets::ApiKey;

const PROVIDER: &str = "Anthropic";
pub use crate::providers::{ANTHROPIC_BASE_URL as DEFAULT_BASE_URL, DEFAULT_MODEL};
const API_VERSION: &str = "2023-06-01";

#[derive(Clone, Debug)]
pub struct AnthropicConfig {
    pub api_key: ApiKey,
    pub base_url: String,
    pub retry: RetryPolicy,
    /// `output_config.effort` for models that take adaptive thinking; `None` is [`DEFAULT_EFFORT`].
    pub effort: Option<Effort>,
    /// Where tool types this endpoint refused are remembered.
    pub fallbacks: FallbackMemory,
}

/// The effort asked of models with adaptive thinking unless the person chose another.
pub const DEFAULT_EFFORT: Effort = Effort::High;

pub struct Anthropic {
    config: AnthropicConfig,
    api: HttpApi,
}

impl Anthropic {
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let api = HttpApi::new(PROVIDER, config.retry.clone(), &["request-id"])?;
        Ok(Self { config, api })
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &'static str {
        PROVIDER
    }

    fn api_key(&self) -> Option<&str> {
        Some(self.config.api_key.expose())
    }

    async fn stream(
        &self,
        request: ModelRequest<'_>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        loop {
            let offered = self.offered_tools(request.model, request.tools);
            let result = self.stream_once(&request, &offered, on_event).await;
            let Err(error) = &result else { return result };
            // A 400 naming a tool type this request offered steps that tool down once.
            let refused = offered.iter().find(|native| {
                error.kind == ErrorKind::InvalidRequest
                    && native.fallback.is_some()
                    && error.message.contains(native.tool_type())
            });
            let Some((native, older)) =
                refused.and_then(|native| Some((native, native.fallback.as_ref()?)))
            else {
                return result;
            };
            let older = older.tool_type();
            on_event(StreamEvent::Retrying {
                attempt: 0,
                delay_ms: 0,
                kind: error.kind,
                error: format!(
                    "{error}; offering {older} instead of {} for {}",
                    native.tool_type(),
                    request.model
                ),
            });
            self.remember_refused(request.model, native.tool_type());
        }
    }

    fn tool_fallbacks(&self, model: &str) -> Vec<String> {
        self.refused_types(model)
            .into_iter()
            .map(|refused| format!("{refused} refused with HTTP 400"))
            .collect()
    }
}

impl Anthropic {
    async fn stream_once(
        &self,
        request: &ModelRequest<'_>,
        offered: &[AnthropicNativeTool],
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        let mut headers = vec![
            ("x-api-key", self.config.api_key.expose().to_string()),
            ("anthropic-version", API_VERSION.to_string()),
        ];
        let betas = betas_for(offered);
        if !betas.is_empty() {
            headers.push(("anthropic-beta", betas));
        }
        let mut wire = WireRequest::new(request);
        wire.tools = wire_tools(request.tools, offered);
        if let Some(config) = &mut wire.output_config {
            config.effort = self.config.effort.unwrap_or(DEFAULT_EFFORT);
        }
        let body = serde_json::to_vec(&wire)
            .map_err(|e| ProviderError::new(PROVIDER, ErrorKind::InvalidRequest, e.to_string()))?;
        let http = HttpRequest {
            url: format!("{}/v1/messages", self.config.base_url.trim_end_matches('/')),
            headers,
            body: body.into(),
        };
        self.api.stream::<StreamAssembler>(&http, on_event).await
    }

    /// The native definitions to send for `model`: each one this endpoint refused replaced by
    /// its fallback, one step per refusal.
    fn offered_tools(&self, model: &str, tools: &[ToolDefinition]) -> Vec<AnthropicNativeTool> {
        let refused = self.refused_types(model);
        tools
            .iter()
            .filter_map(|tool| {
                let mut native = tool.anthropic.as_ref()?;
                while let Some(older) = native
                    .fallback
                    .as_deref()
                    .filter(|_| refused.iter().any(|t| t == native.tool_type()))
                {
                    native = older;
                }
                Some(native.clone())
            })
            .collect()
    }

    fn refused_types(&self, model: &str) -> Vec<String> {
        self.config.fallbacks.refused(&self.config.base_url, model)
    }

    fn remember_refused(&self, model: &str, tool_type: &str) {
        self.config
            .fallbacks
            .remember(&self.config.base_url, model, tool_type);
    }
}

/// The JSON body of a streaming request, exactly as sent.
pub fn request_body(request: &ModelRequest<'_>) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(&WireRequest::new(request))
        .map_err(|e| ProviderError::new(PROVIDER, ErrorKind::InvalidRequest, e.to_string()))
}

/// The request body as the API expects it; tools take their native form where they have one.
#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<WireSystem<'a>>,
    messages: WireMessages<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    /// `adaptive` with progress summaries for the models that cannot turn thinking off.
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig>,
    stream: bool,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Thinking {
    Adaptive { display: &'static str },
}

#[derive(Serialize)]
struct OutputConfig {
    effort: Effort,
}

impl<'a> WireRequest<'a> {
    fn new(request: &ModelRequest<'a>) -> Self {
        let adaptive = takes_adaptive_thinking(request.model);
        let cache = !request.cache_breakpoints.is_empty();
        Self {
            model: request.model,
            max_tokens: request.max_tokens,
            system: (!request.system.is_empty()).then(|| WireSystem::new(request.system, cache)),
            messages: WireMessages {
                messages: request.messages,
                breakpoints: request.cache_breakpoints,
            },
            tools: request.tools.iter().map(wire_tool).collect(),
            thinking: adaptive.then_some(Thinking::Adaptive {
                display: "summarized",
            }),
            output_config: adaptive.then_some(OutputConfig {
                effort: DEFAULT_EFFORT,
            }),
            stream: true,
        }
    }
}

/// Where a cached prefix ends: the API caches everything up to the block that carries it.
#[derive(Clone, Copy, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CacheControl {
    Ephemeral,
}

/// A content block as sent, marked where a cached prefix ends.
#[derive(Serialize)]
struct WireBlock<'a> {
    #[serde(flatten)]
    block: Cow<'a, ContentBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// The system prompt, as a cached text block when caching is on: the cache prefix then holds
/// the tools and the system prompt.
#[derive(Serialize)]
#[serde(untagged)]
enum WireSystem<'a> {
    Text(&'a str),
    Cached([WireBlock<'a>; 1]),
}

impl<'a> WireSystem<'a> {
    fn new(system: &'a str, cache: bool) -> Self {
        if !cache {
            return Self::Text(system);
        }
        Self::Cached([WireBlock {
            block: Cow::Owned(ContentBlock::text(system)),
            cache_control: Some(CacheControl::Ephemeral),
        }])
    }
}

/// The history as sent: messages at a cache breakpoint get `cache_control` on their last block;
/// the rest serialise straight from the history.
struct WireMessages<'a> {
    messages: &'a [Message],
    breakpoints: &'a [usize],
}

/// A message at a cache breakpoint, or one holding items of OpenAI's Responses API, which
/// stay with that API and are left out here, or images by ref, which go as a note (a history
/// for the model has their bytes: see `ImageSource::Ref`).
#[derive(Serialize)]
struct MarkedMessage<'a> {
    role: Role,
    content: Vec<WireBlock<'a>>,
}

impl<'a> MarkedMessage<'a> {
    fn new(message: &'a Message, breakpoint: bool) -> Self {
        let kept: Vec<&ContentBlock> = message
            .content
            .iter()
            .filter(|block| !matches!(block, ContentBlock::OpenAiItem { .. }))
            .collect();
        let last = kept.len().saturating_sub(1);
        let content = kept
            .into_iter()
            .enumerate()
            .map(|(index, block)| WireBlock {
                block: match block.has_refs() {
                    true => {
                        let mut block = block.clone();
                        block.resolve_refs(&mut |_| None);
                        Cow::Owned(block)
                    }
                    false => Cow::Borrowed(block),
                },
                cache_control: (breakpoint && index == last).then_some(CacheControl::Ephemeral),
            });
        Self {
            role: message.role,
            content: content.collect(),
        }
    }
}

impl Serialize for WireMessages<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.messages.len()))?;
        for (index, message) in self.messages.iter().enumerate() {
            let foreign = message
                .content
                .iter()
                .any(|block| matches!(block, ContentBlock::OpenAiItem { .. }) || block.has_refs());
            let breakpoint = self.breakpoints.contains(&index);
            if breakpoint || foreign {
                seq.serialize_element(&MarkedMessage::new(message, breakpoint))?;
            } else {
                seq.serialize_element(message)?;
            }
        }
        seq.end()
    }
}

fn wire_tool(tool: &ToolDefinition) -> Value {
    match &tool.anthropic {
        Some(native) => native.definition.clone(),
        None => json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.input_schema,
        }),
    }
}

/// The tools as sent: each native one as `offered` (in order, after any step-down).
fn wire_tools(tools: &[ToolDefinition], offered: &[AnthropicNativeTool]) -> Vec<Value> {
    let mut natives = offered.iter();
    tools
        .iter()
        .map(|tool| match (&tool.anthropic, &mut natives) {
            (Some(_), natives) => natives.next().map_or(Value::Null, |n| n.definition.clone()),
            (None, _) => wire_tool(tool),
        })
        .collect()
}

/// The `anthropic-beta` header value for these tools: each needed beta once, in order.
fn betas_for(tools: &[AnthropicNativeTool]) -> String {
    let mut betas: Vec<&str> = Vec::new();
    for beta in tools.iter().filter_map(|t| t.beta) {
        if !betas.contains(&beta) {
            betas.push(beta);
        }
    }
    betas.join(",")
}

/// One streamed event, as the API tags it in its data's `type`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: MessageChange,
    },
    ContentBlockStart {
        content_block: StartedBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    MessageDelta {
        delta: MessageChange,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        error: ApiError,
    },
    /// `ping`, `content_block_stop`, and event types newer than this client.
    #[serde(other)]
    Unknown,
}

/// A content block as it starts; its text or input follows in deltas. A block this client
/// does not keep (a server tool's, a newer type) still takes its place: deltas count blocks
/// by index.
#[derive(Deserialize)]
#[serde(untagged)]
enum StartedBlock {
    Kept(ContentBlock),
    Other {
        #[serde(rename = "type")]
        kind: String,
    },
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    /// Citations and other deltas this client does not render.
    #[serde(other)]
    Other,
}

/// `message_start`'s message and `message_delta`'s delta: the part of each read here.
#[derive(Deserialize)]
struct MessageChange {
    stop_reason: Option<StopReason>,
    usage: Option<WireUsage>,
}

/// Usage as the stream reports it: each field present is the total so far.
#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ApiError {
    #[serde(rename = "type", default)]
    error_type: String,
    message: Option<String>,
}

/// Builds the response block by block as SSE events arrive.
#[derive(Default)]
struct StreamAssembler {
    /// Each block as it started, grown by its deltas (`None` for one not kept), and beside
    /// it a tool call's input JSON so far.
    blocks: Vec<(Option<ContentBlock>, String)>,
    usage: Usage,
    stop_reason: Option<StopReason>,
}

impl StreamDecoder for StreamAssembler {
    /// Applies one event; returns the finished response at `message_stop`.
    fn apply(
        &mut self,
        event: &SseEvent,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Option<ModelResponse>, ProviderError> {
        match parse_event(&format!("{} event", event.event), &event.data)? {
            Event::MessageStart { message } => self.merge(message, None),
            Event::ContentBlockStart { content_block } => {
                // A call without a name (or id, or input) could be neither run nor answered.
                let nameless = || Err(protocol_error("a tool_use block without a name"));
                let block = match content_block {
                    StartedBlock::Kept(ContentBlock::ToolUse { name, .. }) if name.is_empty() => {
                        nameless()
                    }
                    StartedBlock::Other { kind } if kind == "tool_use" => nameless(),
                    StartedBlock::Kept(block) => Ok(Some(block)),
                    StartedBlock::Other { .. } => Ok(None),
                };
                self.blocks.push((block?, String::new()));
            }
            Event::ContentBlockDelta { index, delta } => {
                let (block, json) = self.blocks.get_mut(index).ok_or_else(|| {
                    protocol_error(format!("delta for unknown content block {index}"))
                })?;
                match (block, delta) {
                    (Some(ContentBlock::Text { text }), Delta::Text { text: piece }) => {
                        text.push_str(&piece);
                        on_event(StreamEvent::TextDelta(piece));
                    }
                    (Some(ContentBlock::ToolUse { .. }), Delta::InputJson { partial_json }) => {
                        json.push_str(&partial_json);
                    }
                    (
                        Some(ContentBlock::Thinking { thinking, .. }),
                        Delta::Thinking { thinking: piece },
                    ) => {
                        thinking.push_str(&piece);
                        on_event(StreamEvent::ThinkingDelta(piece));
                    }
                    (
                        Some(ContentBlock::Thinking { signature, .. }),
                        Delta::Signature { signature: piece },
                    ) => signature.push_str(&piece),
                    _ => {}
                }
            }
            Event::MessageDelta { delta, usage } => self.merge(delta, usage),
            Event::MessageStop => return Ok(Some(self.finish())),
            Event::Error { error } => {
                let message = error.message.as_deref().unwrap_or("error event in stream");
                return Err(stream_failure(
                    kind_for_error_type(&error.error_type),
                    message,
                ));
            }
            Event::Unknown => {}
        }
        Ok(None)
    }
}

impl StreamAssembler {
    /// Usage fields are cumulative: a later event's value replaces an earlier one.
    fn merge(&mut self, change: MessageChange, usage: Option<WireUsage>) {
        self.stop_reason = change.stop_reason.or(self.stop_reason.take());
        for wire in [change.usage, usage].into_iter().flatten() {
            let total = &mut self.usage;
            total.input_tokens = wire.input_tokens.unwrap_or(total.input_tokens);
            total.output_tokens = wire.output_tokens.unwrap_or(total.output_tokens);
            total.cache_creation_input_tokens = wire
                .cache_creation_input_tokens
                .unwrap_or(total.cache_creation_input_tokens);
            total.cache_read_input_tokens = wire
                .cache_read_input_tokens
                .unwrap_or(total.cache_read_input_tokens);
        }
    }

    fn finish(&mut self) -> ModelResponse {
        let mut malformed = Vec::new();
        let mut content = Vec::new();
        for (block, json) in std::mem::take(&mut self.blocks) {
            let Some(mut block) = block else { continue };
            if let ContentBlock::ToolUse { id, input, .. } = &mut block {
                *input = input_or_noted(id.as_str(), parse_tool_input(&json), &mut malformed);
            }
            content.push(block);
        }
        ModelResponse {
            content,
            stop_reason: self.stop_reason.take().unwrap_or(StopReason::EndTurn),
            usage: self.usage,
            malformed_tool_inputs: malformed,
        }
    }
}

fn kind_for_error_type(error_type: &str) -> ErrorKind {
    match error_type {
        "authentication_error" => ErrorKind::Auth,
        "billing_error" => ErrorKind::Billing,
        "permission_error" => ErrorKind::Permission,
        "not_found_error" => ErrorKind::NotFound,
        "rate_limit_error" => ErrorKind::RateLimited,
        "overloaded_error" => ErrorKind::Overloaded,
        "api_error" | "timeout_error" => ErrorKind::Server,
        "invalid_request_error" | "request_too_large" => ErrorKind::InvalidRequest,
        _ => ErrorKind::Protocol,
    }
}

fn protocol_error(message: impl Into<String>) -> ProviderError {
    decode_error(ErrorKind::Protocol, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event as the API sends it: its name also in the data's `type`.
    fn sse(event: &str, mut data: Value) -> SseEvent {
        data["type"] = json!(event);
        SseEvent {
            id: None,
            event: event.into(),
            data: data.to_string(),
        }
    }

    /// The response at `message_stop`.
    fn stop(assembler: &mut StreamAssembler) -> ModelResponse {
        let event = sse("message_stop", json!({}));
        assembler.apply(&event, &mut |_| {}).unwrap().unwrap()
    }

    #[test]
    fn assembles_text_and_tool_use_and_ignores_unknown_events() {
        let mut assembler = StreamAssembler::default();
        let mut deltas = Vec::new();
        let events = [
            sse(
                "message_start",
                json!({"message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
            ),
            sse(
                "content_block_start",
                json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            sse(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
            ),
            sse("future_event", json!({"whatever": true})),
            sse(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": "lo"}}),
            ),
            sse(
                "content_block_start",
                json!({"index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}}),
            ),
            sse(
                "content_block_delta",
                json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": "}}),
            ),
            sse(
                "content_block_delta",
                json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"ls\"}"}}),
            ),
            sse("content_block_stop", json!({"index": 1})),
            sse(
                "message_delta",
                json!({"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
            ),
        ];
        for event in &events {
            assert!(
                assembler
                    .apply(event, &mut |e| deltas.push(e))
                    .unwrap()
                    .is_none()
            );
        }
        let done = stop(&mut assembler);
        assert_eq!(
            done.content,
            vec![
                ContentBlock::text("Hello"),
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                    toolset_name: None
                },
            ]
        );
        assert_eq!(done.stop_reason, StopReason::ToolUse);
        assert_eq!(
            (done.usage.input_tokens, done.usage.output_tokens),
            (10, 42)
        );
        assert_eq!(
            deltas,
            vec![
                StreamEvent::TextDelta("Hel".into()),
                StreamEvent::TextDelta("lo".into())
            ]
        );
    }

    /// Events as the API streams thinking: the block starts without its signature, and a
    /// server tool's block between two kept ones still counts in the indexes.
    #[test]
    fn thinking_arrives_in_deltas_and_a_block_not_kept_holds_its_place() {
        let mut assembler = StreamAssembler::default();
        let mut deltas = Vec::new();
        let events = [
            json!({"index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"index": 0, "delta": {"type": "thinking_delta", "thinking": "Hm."}}),
            json!({"index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
            json!({"index": 1, "content_block": {"type": "server_tool_use", "id": "s1"}}),
            json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
            json!({"index": 2, "content_block": {"type": "redacted_thinking", "data": "xyz"}}),
            json!({"index": 3, "content_block": {"type": "text", "text": ""}}),
            json!({"index": 3, "delta": {"type": "text_delta", "text": "Done."}}),
        ];
        for data in events {
            let name = match data.get("delta") {
                Some(_) => "content_block_delta",
                None => "content_block_start",
            };
            assembler
                .apply(&sse(name, data), &mut |e| deltas.push(e))
                .unwrap();
        }
        let done = stop(&mut assembler);
        assert_eq!(
            done.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "Hm.".into(),
                    signature: "sig".into()
                },
                ContentBlock::RedactedThinking { data: "xyz".into() },
                ContentBlock::text("Done."),
            ]
        );
        assert_eq!(
            deltas,
            vec![
                StreamEvent::ThinkingDelta("Hm.".into()),
                StreamEvent::TextDelta("Done.".into())
            ]
        );
    }

    #[test]
    fn a_tool_use_block_without_a_name_is_refused() {
        for block in [
            json!({"type": "tool_use", "id": "t1", "name": "", "input": {}}),
            json!({"type": "tool_use", "id": "t1", "input": {}}),
        ] {
            let start = sse(
                "content_block_start",
                json!({"index": 0, "content_block": block}),
            );
            let error = StreamAssembler::default()
                .apply(&start, &mut |_| {})
                .expect_err("a nameless call");
            assert_eq!(error.kind, ErrorKind::Protocol);
            assert!(error.message.contains("without a name"), "{error}");
        }
    }

    #[test]
    fn malformed_tool_input_is_reported_not_fatal() {
        let mut assembler = StreamAssembler::default();
        for event in [
            sse(
                "content_block_start",
                json!({"index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}}),
            ),
            sse(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": "}}),
            ),
        ] {
            assembler.apply(&event, &mut |_| {}).unwrap();
        }
        let done = stop(&mut assembler);
        assert_eq!(
            done.content[0],
            ContentBlock::ToolUse {
                id: "t1".into(),
                name: "bash".into(),
                input: json!({}),
                toolset_name: None
            }
        );
        assert_eq!(done.malformed_tool_inputs.len(), 1);
        assert!(done.malformed_tool_inputs[0].1.contains("not valid JSON"));
    }

    #[test]
    fn error_line_names_status_and_request_id() {
        let error = ProviderError {
            provider: PROVIDER,
            kind: ErrorKind::RateLimited,
            status: Some(429),
            request_id: Some("req_1".into()),
            message: "slow down".into(),
            retry_after: None,
        };
        assert_eq!(
            error.to_string(),
            "Anthropic: rate limited (HTTP 429, request-id req_1): slow down"
        );
    }

    /// A request of `messages` with system prompt "sys", no tools and no cache breakpoints.
    fn request_of(messages: &[Message]) -> ModelRequest<'_> {
        ModelRequest {
            model: "m",
            system: "sys",
            messages,
            tools: &[],
            max_tokens: 10,
            cache_breakpoints: &[],
        }
    }

    #[test]
    fn cache_breakpoints_mark_the_system_prompt_and_the_chosen_messages() {
        let messages = [
            Message::user(vec![ContentBlock::text("a")]),
            Message::assistant(vec![ContentBlock::text("b")]),
            Message::user(vec![ContentBlock::text("c"), ContentBlock::text("d")]),
        ];
        let request = ModelRequest {
            cache_breakpoints: &[2],
            ..request_of(&messages)
        };
        let body = serde_json::to_value(WireRequest::new(&request)).unwrap();
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": [{"type": "text", "text": "a"}]})
        );
        assert_eq!(
            body["messages"][2]["content"][0],
            json!({"type": "text", "text": "c"})
        );
        assert_eq!(
            body["messages"][2]["content"][1],
            json!({"type": "text", "text": "d", "cache_control": {"type": "ephemeral"}})
        );
        let plain = serde_json::to_value(WireRequest::new(&ModelRequest {
            cache_breakpoints: &[],
            ..request
        }))
        .unwrap();
        assert_eq!(plain["system"], "sys");
        assert!(!plain.to_string().contains("cache_control"));
    }

    /// A history for the model has its images' bytes; one that still holds a ref (a bug
    /// upstream) sends a note in its place, never the ref the API would refuse.
    #[test]
    fn an_image_by_ref_goes_as_a_note() {
        let image = crate::ImageSource::Ref(deskhand_protocol::images::ImageRef {
            sha256: "ab".repeat(32),
            media_type: "image/png".into(),
            bytes: 10,
        });
        let messages = [Message::user(vec![
            ContentBlock::text("look"),
            ContentBlock::Image {
                source: image.clone(),
            },
            ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: vec![crate::ToolResultContent::Image { source: image }],
                is_error: false,
                toolset_name: None,
            },
        ])];
        let body = serde_json::to_value(WireRequest::new(&request_of(&messages))).unwrap();
        let note = deskhand_protocol::images::MISSING_IMAGE;
        assert_eq!(
            body["messages"][0]["content"][1],
            json!({"type": "text", "text": note})
        );
        assert_eq!(
            body["messages"][0]["content"][2]["content"],
            json!([{"type": "text", "text": note}])
        );
        assert!(!body.to_string().contains("\"ref\""), "{body}");
    }

    #[test]
    fn betas_are_collected_once() {
        let native = |beta| AnthropicNativeTool::new(json!({}), beta);
        let tools = [
            native(Some("computer-use-2025-01-24")),
            native(None),
            native(Some("computer-use-2025-01-24")),
        ];
        assert_eq!(betas_for(&tools), "computer-use-2025-01-24");
    }
}
