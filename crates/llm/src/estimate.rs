//! About how many tokens a request costs, before it is sent: for the context budget and for
//! what a plugin server's tools add to every request.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::{ContentBlock, ImageSource, Message, ToolDefinition, ToolResultContent};

/// About how many input tokens a request costs: text at four bytes a token, images at
/// width × height / 750 as Anthropic documents.
pub fn estimate_request(system: &str, tools: &[ToolDefinition], messages: &[Message]) -> u64 {
    let tools: u64 = tools
        .iter()
        .map(|t| (t.description.len() + t.input_schema.to_string().len()) as u64 / 4)
        .sum();
    system.len() as u64 / 4 + tools + messages.iter().map(estimate_message).sum::<u64>()
}

pub fn estimate_message(message: &Message) -> u64 {
    message.content.iter().map(estimate_block).sum::<u64>() + 4
}

fn estimate_block(block: &ContentBlock) -> u64 {
    match block {
        ContentBlock::Text { text } => text.len() as u64 / 4 + 1,
        ContentBlock::Image { source } => estimate_image(source),
        ContentBlock::ToolUse { name, input, .. } => {
            (name.len() + input.to_string().len()) as u64 / 4 + 8
        }
        ContentBlock::ToolResult { content, .. } => {
            content
                .iter()
                .map(|part| match part {
                    ToolResultContent::Text { text } => text.len() as u64 / 4 + 1,
                    ToolResultContent::Image { source } => estimate_image(source),
                })
                .sum::<u64>()
                + 8
        }
        ContentBlock::Thinking { thinking, .. } => thinking.len() as u64 / 4,
        ContentBlock::RedactedThinking { data } => data.len() as u64 / 4,
        ContentBlock::OpenAiItem { item } => item.to_string().len() as u64 / 4,
    }
}

/// Reads only the image header (the first few hundred bytes) for its size.
pub fn estimate_image(source: &ImageSource) -> u64 {
    let ImageSource::Base64 { data, .. } = source else {
        return UNKNOWN_IMAGE_TOKENS;
    };
    let head = &data[..data.len().min(1024) / 4 * 4];
    BASE64
        .decode(head)
        .ok()
        .and_then(|bytes| imagesize::blob_size(&bytes).ok())
        .map(|size| (size.width * size.height) as u64 / 750)
        .unwrap_or(UNKNOWN_IMAGE_TOKENS)
}

/// An image whose size cannot be read counts as a large screenshot does.
const UNKNOWN_IMAGE_TOKENS: u64 = 1600;
