//! Talking to models: typed messages, one provider trait, the Anthropic and OpenAI-compatible
//! clients over shared HTTP plumbing, and choosing one from settings and the environment.

pub mod anthropic;
pub mod claude;
pub mod config;
mod error;
pub mod estimate;
mod http;
pub mod openai;
pub mod pricing;
mod provider;
pub mod providers;
pub mod responses;
pub mod retirement;
mod retry;
pub mod secrets;
pub mod sse;
pub mod tool_fallbacks;

pub use deskhand_protocol::error_kind::ErrorKind;
pub use deskhand_protocol::message::{
    ContentBlock, ImageSource, Message, Role, StopReason, ToolResultContent, ToolUse, Usage,
};
pub use error::ProviderError;
pub use provider::{
    AnthropicNativeTool, ModelRequest, ModelResponse, Provider, StreamEvent, ToolDefinition,
};
pub use retry::{IDLE_TIMEOUT, RetryPolicy};
pub use sse::{MAX_EVENT_BYTES, SseError, SseEvent, SseParser};
