//! Talking to models: typed messages, one provider trait, and the Anthropic client.

pub mod anthropic;
mod error;
mod message;
pub mod pricing;
mod provider;
mod retry;
mod sse;

pub use error::{ErrorKind, ProviderError};
pub use message::{
    ContentBlock, ImageSource, Message, Role, StopReason, ToolResultContent, ToolUse, Usage,
};
pub use provider::{
    AnthropicNativeTool, ModelRequest, ModelResponse, Provider, StreamEvent, ToolDefinition,
};
pub use retry::RetryPolicy;
pub use sse::{SseEvent, SseParser};
