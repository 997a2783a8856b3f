//! Typed messages and content blocks, in the Messages API's own JSON shape so that a stored
//! history can be sent as it is and re-read without translation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::ids::ToolUseId;
use crate::images::{ImageError, ImageRef, MISSING_IMAGE, checked_media_type, content_hash};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl Message {
    pub fn user(content: Vec<ContentBlock>) -> Self {
        Self {
            role: Role::User,
            content,
        }
    }

    pub fn assistant(content: Vec<ContentBlock>) -> Self {
        Self {
            role: Role::Assistant,
            content,
        }
    }

    /// The `tool_use` blocks of this message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = ToolUse<'_>> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse {
                id,
                name,
                input,
                toolset_name,
            } => Some(ToolUse {
                id,
                name,
                input,
                toolset_name: toolset_name.as_deref(),
            }),
            _ => None,
        })
    }

    /// All text blocks joined, for titles, search and transcripts.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// A borrowed view of one `tool_use` block.
#[derive(Clone, Copy, Debug)]
pub struct ToolUse<'a> {
    pub id: &'a ToolUseId,
    pub name: &'a str,
    pub input: &'a Value,
    /// The toolset a member call belongs to (`computer` for `computer_toolset_20260801`).
    pub toolset_name: Option<&'a str>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Image {
        source: ImageSource,
    },
    ToolUse {
        id: ToolUseId,
        name: String,
        #[ts(type = "unknown")]
        input: Value,
        /// Set on a toolset member's call (`name` is then the member, e.g. `left_click`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        toolset_name: Option<String>,
    },
    ToolResult {
        tool_use_id: ToolUseId,
        content: Vec<ToolResultContent>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        #[ts(as = "Option<_>", optional)]
        is_error: bool,
        /// Echoes the call's `toolset_name`: the API rejects a member's result without it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        toolset_name: Option<String>,
    },
    Thinking {
        thinking: String,
        // A stream starts the block without one; it comes in a delta.
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    /// An output item of OpenAI's Responses API kept as it came (a reasoning item, the raw
    /// `computer_call` with its safety checks), sent back to that API only. Named
    /// `openai_item` on the wire (the window's type), not serde's `open_ai_item`.
    #[serde(rename = "openai_item")]
    OpenAiItem {
        #[ts(type = "unknown")]
        item: Value,
    },
}

impl ContentBlock {
    /// An image block from encoded bytes, refused with a clear error if the API would refuse it.
    pub fn image(bytes: &[u8], name: &str) -> Result<Self, ImageError> {
        let media_type = checked_media_type(bytes, name)?;
        Ok(Self::Image {
            source: ImageSource::Base64 {
                media_type: media_type.into(),
                data: BASE64.encode(bytes),
            },
        })
    }

    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// Puts an image in place of each ref of the block: what `load` gives for it, or a text
    /// note when it gives nothing (a removed file), so the history stays sendable.
    pub fn resolve_refs(&mut self, load: &mut impl FnMut(&ImageRef) -> Option<ImageSource>) {
        let mut resolve = |source: &mut ImageSource| match source {
            ImageSource::Ref(image) => match load(image) {
                Some(loaded) => {
                    *source = loaded;
                    true
                }
                None => false,
            },
            ImageSource::Base64 { .. } => true,
        };
        let gone = match self {
            Self::Image { source } => !resolve(source),
            Self::ToolResult { content, .. } => {
                for part in content {
                    if let ToolResultContent::Image { source } = part
                        && !resolve(source)
                    {
                        *part = ToolResultContent::Text {
                            text: MISSING_IMAGE.into(),
                        };
                    }
                }
                false
            }
            _ => false,
        };
        if gone {
            *self = Self::text(MISSING_IMAGE);
        }
    }

    /// Whether the block holds an image by ref rather than its bytes.
    pub fn has_refs(&self) -> bool {
        match self {
            Self::Image { source } => matches!(source, ImageSource::Ref(_)),
            Self::ToolResult { content, .. } => content.iter().any(|part| {
                matches!(
                    part,
                    ToolResultContent::Image {
                        source: ImageSource::Ref(_)
                    }
                )
            }),
            _ => false,
        }
    }

    /// The block's images: an image block's, or a tool result's.
    pub fn image_sources_mut(&mut self) -> Vec<&mut ImageSource> {
        match self {
            Self::Image { source } => vec![source],
            Self::ToolResult { content, .. } => content
                .iter_mut()
                .filter_map(|part| match part {
                    ToolResultContent::Image { source } => Some(source),
                    ToolResultContent::Text { .. } => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A `tool_result` that tells the model its call failed and why.
    pub fn tool_error(tool_use_id: impl Into<ToolUseId>, message: impl Into<String>) -> Self {
        Self::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: vec![ToolResultContent::Text {
                text: message.into(),
            }],
            is_error: true,
            toolset_name: None,
        }
    }

    /// A plain tool call (not a toolset member).
    pub fn tool_use(id: impl Into<ToolUseId>, name: impl Into<String>, input: Value) -> Self {
        Self::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            toolset_name: None,
        }
    }
}

/// What a `tool_result` may carry: text and images only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultContent {
    Text { text: String },
    Image { source: ImageSource },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource {
    Base64 {
        media_type: String,
        data: String,
    },
    /// An image kept in the history's files, by its hash: how stored messages and the
    /// window's events hold images. Never sent to a model: the store puts the bytes back
    /// when a session is loaded, and a provider sends a note in place of one still left.
    Ref(ImageRef),
}

impl ImageSource {
    /// The `data:` URL of the image's bytes; `None` for a ref, which is never sent.
    pub fn data_url(&self) -> Option<String> {
        match self {
            Self::Base64 { media_type, data } => Some(format!("data:{media_type};base64,{data}")),
            Self::Ref(_) => None,
        }
    }
}

/// Token counts as the API reports them; cache fields are zero where caching is off.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    ts_rs::TS,
    schemars::JsonSchema,
)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    PauseTurn,
    Refusal,
    #[serde(other)]
    Unknown,
}

impl ImageRef {
    pub fn of(source: &ImageSource) -> Self {
        match source {
            ImageSource::Base64 { media_type, data } => {
                let bytes = BASE64.decode(data).unwrap_or_default();
                Self {
                    sha256: content_hash(&bytes),
                    media_type: media_type.clone(),
                    bytes: bytes.len(),
                }
            }
            ImageSource::Ref(image) => image.clone(),
        }
    }
}
