//! The script: what the stand-in answers, one turn per accepted request.
//!
//! Everything here is plain serde data so that a script can live in a JSON file for the
//! binary as well as be written inline in a Rust test with the short constructors below.

use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The ordered turns a stand-in serves; each request that passes validation consumes one.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Script {
    pub turns: Vec<Turn>,
    /// Also decode every image and check its magic bytes against `media_type` (costs time
    /// on big screenshots, so it is opt-in).
    #[serde(default)]
    pub validate_images: bool,
    /// Requests these match are answered by the rule and consume no turn: for requests a
    /// client makes at moments a script cannot predict (e.g. a summary near the context limit).
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// Accept Chat Completions requests without a key, as local servers (Ollama, vLLM) do.
    #[serde(default)]
    pub open_access: bool,
    /// Tool types this endpoint does not serve: a request offering one is answered 400
    /// naming it, as a platform that lacks a tool version answers.
    #[serde(default)]
    pub refuse_tool_types: Vec<String>,
}

/// Answers every request whose last user message contains `when_last_user_contains`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Rule {
    pub when_last_user_contains: String,
    pub reply: Reply,
}

impl Script {
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Script {
            turns: turns.into_iter().collect(),
            validate_images: false,
            rules: Vec::new(),
            open_access: false,
            refuse_tool_types: Vec::new(),
        }
    }

    /// Adds a [`Rule`].
    pub fn with_rule(mut self, when_last_user_contains: impl Into<String>, reply: Reply) -> Self {
        self.rules.push(Rule {
            when_last_user_contains: when_last_user_contains.into(),
            reply,
        });
        self
    }

    /// The reply of the first rule `request` matches, if any.
    pub(crate) fn rule_for(rules: &[Rule], request: &Value) -> Option<Turn> {
        let last_user = request["messages"]
            .as_array()?
            .iter()
            .rev()
            .find(|m| m["role"] == "user")?;
        let text = last_user["content"].to_string();
        rules
            .iter()
            .find(|rule| text.contains(&rule.when_last_user_contains))
            .map(|rule| Turn::Reply(rule.reply.clone()))
    }

    /// Accepts Chat Completions requests that carry no key.
    pub fn without_keys(mut self) -> Self {
        self.open_access = true;
        self
    }

    /// Answers requests offering `tool_type` with 400, as an endpoint without it does.
    pub fn refusing_tool_type(mut self, tool_type: impl Into<String>) -> Self {
        self.refuse_tool_types.push(tool_type.into());
        self
    }

    /// Turns on the magic-byte check of image data.
    pub fn validating_images(mut self) -> Self {
        self.validate_images = true;
        self
    }

    pub fn from_json(text: &str) -> anyhow::Result<Self> {
        serde_json::from_str(text).context("parsing the stand-in script")
    }

    pub fn load(path: impl AsRef<Path>) -> anyhow::Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the script {}", path.display()))?;
        Self::from_json(&text).with_context(|| format!("in {}", path.display()))
    }
}

impl From<Vec<Turn>> for Script {
    fn from(turns: Vec<Turn>) -> Self {
        Script::new(turns)
    }
}

impl<const N: usize> From<[Turn; N]> for Script {
    fn from(turns: [Turn; N]) -> Self {
        Script::new(turns)
    }
}

/// One answer to one request.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Turn {
    /// A normal assistant message (SSE when the request streams, JSON otherwise).
    Reply(Reply),
    /// An HTTP error with the API's error body, e.g. 429 with `retry-after`.
    Status {
        status: u16,
        error_type: String,
        /// Empty means a stock message for `error_type`.
        #[serde(default)]
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<u64>,
    },
    /// HTTP 200, the first `after_events` events of `reply`, then the connection is cut.
    DropMidStream { reply: Reply, after_events: usize },
    /// HTTP 200, the first `after_events` events of `reply` (at least `message_start`, never
    /// `message_stop`), then an `error` event, then a clean end of stream.
    ErrorEvent {
        #[serde(default = "one")]
        after_events: usize,
        error_type: String,
        #[serde(default)]
        message: String,
        /// What streams before the error; empty by default.
        #[serde(default)]
        reply: Reply,
    },
}

fn one() -> usize {
    1
}

impl Turn {
    /// An assistant message with one text block.
    pub fn text(text: impl Into<String>) -> Turn {
        Reply::new().text(text).into()
    }

    /// An assistant message with one `tool_use` block (stop reason `tool_use`).
    pub fn tool_use(name: impl Into<String>, input: Value) -> Turn {
        Reply::new().tool_use(name, input).into()
    }

    /// An assistant message with several parallel `tool_use` blocks.
    pub fn tool_uses<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> Turn {
        calls
            .into_iter()
            .fold(Reply::new(), |reply, (name, input)| {
                reply.tool_use(name, input)
            })
            .into()
    }

    /// An HTTP error with a stock message, e.g. `Turn::status(429, "rate_limit_error", Some(1))`.
    pub fn status(status: u16, error_type: impl Into<String>, retry_after: Option<u64>) -> Turn {
        Turn::Status {
            status,
            error_type: error_type.into(),
            message: String::new(),
            retry_after,
        }
    }

    /// An HTTP error with a chosen message.
    pub fn status_with_message(
        status: u16,
        error_type: impl Into<String>,
        message: impl Into<String>,
        retry_after: Option<u64>,
    ) -> Turn {
        Turn::Status {
            status,
            error_type: error_type.into(),
            message: message.into(),
            retry_after,
        }
    }

    /// 429 `rate_limit_error` with `retry-after: secs`.
    pub fn rate_limited(secs: u64) -> Turn {
        Turn::status(429, "rate_limit_error", Some(secs))
    }

    /// 529 `overloaded_error`.
    pub fn overloaded() -> Turn {
        Turn::status(529, "overloaded_error", None)
    }

    /// Streams `after_events` events of `reply`, then cuts the connection.
    pub fn drop_mid_stream(reply: Reply, after_events: usize) -> Turn {
        Turn::DropMidStream {
            reply,
            after_events,
        }
    }

    /// HTTP 200, `message_start` (and up to `after_events` events), then an `error` event.
    pub fn error_event(
        after_events: usize,
        error_type: impl Into<String>,
        message: impl Into<String>,
    ) -> Turn {
        Turn::ErrorEvent {
            after_events,
            error_type: error_type.into(),
            message: message.into(),
            reply: Reply::default(),
        }
    }

    /// Streams `after_events` events of `reply`, then goes silent until the client leaves.
    pub fn hang(reply: Reply, after_events: usize) -> Turn {
        reply.hang_after(after_events).into()
    }
}

impl From<Reply> for Turn {
    fn from(reply: Reply) -> Turn {
        Turn::Reply(reply)
    }
}

/// A scripted assistant message and how to stream it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Reply {
    pub content: Vec<ReplyBlock>,
    /// `None` means `tool_use` if any block is a tool use, else `end_turn`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `None` means counts derived from the request and reply sizes (bytes / 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Pause between SSE events, to make streaming observable.
    pub chunk_delay_ms: u64,
    /// Stop after this many SSE events but keep the connection open until the client goes
    /// away (cancel-mid-stream tests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hang_after_events: Option<usize>,
    /// Interleave events of an unknown type and extra `ping`s, which clients must ignore.
    pub unknown_events: bool,
}

impl Reply {
    pub fn new() -> Reply {
        Reply::default()
    }

    pub fn text(mut self, text: impl Into<String>) -> Reply {
        self.content.push(ReplyBlock::Text { text: text.into() });
        self
    }

    /// A tool call with a generated id (`toolu_standin_N`).
    pub fn tool_use(mut self, name: impl Into<String>, input: Value) -> Reply {
        self.content.push(ReplyBlock::ToolUse {
            id: None,
            name: name.into(),
            input,
            raw_input_json: None,
            toolset_name: None,
        });
        self
    }

    pub fn tool_use_with_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Reply {
        self.content.push(ReplyBlock::ToolUse {
            id: Some(id.into()),
            name: name.into(),
            input,
            raw_input_json: None,
            toolset_name: None,
        });
        self
    }

    /// A tool call whose streamed input is exactly `raw_json`, valid JSON or not.
    pub fn tool_use_raw(mut self, name: impl Into<String>, raw_json: impl Into<String>) -> Reply {
        self.content.push(ReplyBlock::ToolUse {
            id: None,
            name: name.into(),
            input: Value::Object(Default::default()),
            raw_input_json: Some(raw_json.into()),
            toolset_name: None,
        });
        self
    }

    /// A call of a member of the GA computer toolset (`computer_toolset_20260801`), e.g.
    /// `member("left_click", json!({"coordinate": [10, 20]}))`, with a generated id.
    pub fn member(mut self, member: impl Into<String>, input: Value) -> Reply {
        self.content.push(ReplyBlock::ToolUse {
            id: None,
            name: member.into(),
            input,
            raw_input_json: None,
            toolset_name: Some("computer".into()),
        });
        self
    }

    /// A Responses API `computer_call` with a generated id and these safety checks.
    pub fn computer_call(mut self, action: Value, pending_safety_checks: Vec<Value>) -> Reply {
        self.content.push(ReplyBlock::ComputerCall {
            id: None,
            action,
            actions: Vec::new(),
            pending_safety_checks,
        });
        self
    }

    /// A `computer_call` of the GA `computer` tool: a batched `actions` list.
    pub fn computer_actions(
        mut self,
        actions: Vec<Value>,
        pending_safety_checks: Vec<Value>,
    ) -> Reply {
        self.content.push(ReplyBlock::ComputerCall {
            id: None,
            action: Value::Null,
            actions,
            pending_safety_checks,
        });
        self
    }

    pub fn thinking(mut self, thinking: impl Into<String>, signature: impl Into<String>) -> Reply {
        self.content.push(ReplyBlock::Thinking {
            thinking: thinking.into(),
            signature: signature.into(),
        });
        self
    }

    pub fn stop_reason(mut self, stop_reason: impl Into<String>) -> Reply {
        self.stop_reason = Some(stop_reason.into());
        self
    }

    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Reply {
        self.usage = Some(Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        });
        self
    }

    pub fn delay_ms(mut self, ms: u64) -> Reply {
        self.chunk_delay_ms = ms;
        self
    }

    pub fn hang_after(mut self, events: usize) -> Reply {
        self.hang_after_events = Some(events);
        self
    }

    pub fn with_unknown_events(mut self) -> Reply {
        self.unknown_events = true;
        self
    }

    /// The stop reason actually sent.
    pub fn effective_stop_reason(&self) -> &str {
        match &self.stop_reason {
            Some(reason) => reason,
            None if self
                .content
                .iter()
                .any(|b| matches!(b, ReplyBlock::ToolUse { .. })) =>
            {
                "tool_use"
            }
            None => "end_turn",
        }
    }
}

/// One content block of a scripted reply.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReplyBlock {
    Text {
        text: String,
    },
    ToolUse {
        /// `None` means a generated `toolu_standin_N`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        name: String,
        #[serde(default = "empty_object")]
        input: Value,
        /// Streamed instead of the serialised `input`, for malformed-input tests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw_input_json: Option<String>,
        /// A toolset member's call (`computer`): `name` is then the member, e.g. `left_click`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        toolset_name: Option<String>,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    /// A `computer_call` of OpenAI's Responses API (served only there), e.g. action
    /// `{"type": "click", "button": "left", "x": 10, "y": 20}`, with the safety checks
    /// (`{"id", "code", "message"}`) its output must acknowledge.
    ComputerCall {
        /// `None` means a generated `call_standin_N`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// One action (`computer_use_preview`); `null` when `actions` carries a batch.
        #[serde(default)]
        action: Value,
        /// The GA `computer` tool's batch, sent as `actions` instead of `action`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        actions: Vec<Value>,
        #[serde(default)]
        pending_safety_checks: Vec<Value>,
    },
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Token counts as the API reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}
