//! Talking to models: typed messages, one provider trait, the Anthropic and OpenAI-compatible
//! clients over shared HTTP plumbing, and choosing one from settings and the environment.

pub mod anthropic;
pub mod claude;
pub mod config;
mod error;
mod http;
mod message;
pub mod openai;
pub mod pricing;
mod provider;
pub mod providers;
pub mod responses;
mod retry;
pub(crate) mod sse;
pub mod tool_fallbacks;

pub use error::{ErrorKind, ProviderError};
pub use message::{
    ContentBlock, ImageSource, Message, Role, StopReason, ToolResultContent, ToolUse, Usage,
};
pub use provider::{
    AnthropicNativeTool, ModelRequest, ModelResponse, Provider, StreamEvent, ToolDefinition,
};
pub use retry::{IDLE_TIMEOUT, RetryPolicy};
pub use sse::{MAX_EVENT_BYTES, SseError, SseEvent, SseParser};
