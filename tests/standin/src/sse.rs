//! Rendering a scripted reply in the API's wire format: the SSE event sequence of a
//! streamed response, or the complete message of a non-streamed one.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::script::{Reply, ReplyBlock, Usage};
use crate::server::Rendered;

/// Characters per `text_delta` / `thinking_delta`, and per `input_json_delta`.
pub(crate) const TEXT_CHUNK: usize = 8;
pub(crate) const JSON_CHUNK: usize = 10;

/// An unknown event type, so clients prove they skip what they do not know.
const UNKNOWN_EVENT: &str = "deskhand_future_event";

/// One server-sent event.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub name: String,
    pub data: Value,
}

impl Event {
    fn new(name: &str, data: Value) -> Event {
        Event {
            name: name.to_owned(),
            data,
        }
    }

    /// `error` event with the API's error object.
    pub fn error(error_type: &str, message: &str) -> Event {
        Event::new(
            "error",
            json!({"type": "error", "error": {"type": error_type, "message": message}}),
        )
    }

    /// `event: NAME\ndata: JSON\n\n`, compact JSON on one line as the API sends it.
    pub fn encode(&self) -> Bytes {
        let mut out = format!("event: {}\ndata: ", self.name);
        write_type_first(&mut out, &self.data);
        out.push_str("\n\n");
        Bytes::from(out)
    }
}

/// Compact JSON with each object's `"type"` key first, as the API writes it (serde_json
/// sorts keys, and a client that peeks at the start of `data` should not be fooled).
fn write_type_first(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            out.push('{');
            let first = map.get_key_value("type");
            let rest = map.iter().filter(|(key, _)| *key != "type");
            for (i, (key, value)) in first.into_iter().chain(rest).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_type_first(out, value);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_type_first(out, item);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// A reply with everything the script left open decided: ids, usage, stop reason.
pub(crate) struct Message {
    id: String,
    model: String,
    blocks: Vec<Block>,
    stop_reason: String,
    usage: Usage,
    unknown_events: bool,
}

enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
        /// What `input_json_delta`s carry, concatenated.
        partial_json: String,
        toolset_name: Option<String>,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
}

impl Message {
    /// Fixes the reply's open choices; `next_tool_id` hands out `toolu_standin_N` ids.
    pub fn resolve(
        reply: &Reply,
        id: String,
        model: &str,
        prompt: Usage,
        omit_thinking: bool,
        mut next_tool_id: impl FnMut() -> String,
    ) -> Message {
        let blocks: Vec<Block> = reply
            .content
            .iter()
            // A Responses API computer call has no Messages API form.
            .filter(|block| !matches!(block, ReplyBlock::ComputerCall { .. }))
            .map(|block| match block {
                ReplyBlock::Text { text } => Block::Text { text: text.clone() },
                ReplyBlock::Thinking {
                    thinking,
                    signature,
                } => Block::Thinking {
                    // `display: omitted`: the block comes empty, with its signature.
                    thinking: if omit_thinking {
                        String::new()
                    } else {
                        thinking.clone()
                    },
                    signature: signature.clone(),
                },
                ReplyBlock::ToolUse {
                    id,
                    name,
                    input,
                    raw_input_json,
                    toolset_name,
                } => {
                    let partial_json = match raw_input_json {
                        Some(raw) => raw.clone(),
                        // The API streams an empty input as a single empty fragment.
                        None if input.as_object().is_some_and(|o| o.is_empty()) => String::new(),
                        None => input.to_string(),
                    };
                    Block::ToolUse {
                        id: id.clone().unwrap_or_else(&mut next_tool_id),
                        name: name.clone(),
                        input: input.clone(),
                        partial_json,
                        toolset_name: toolset_name.clone(),
                    }
                }
                ReplyBlock::ComputerCall { .. } => unreachable!("filtered out above"),
            })
            .collect();
        let usage = reply.usage.unwrap_or_else(|| {
            let output_bytes: usize = blocks
                .iter()
                .map(|b| match b {
                    Block::Text { text } => text.len(),
                    Block::ToolUse { partial_json, .. } => partial_json.len(),
                    Block::Thinking { thinking, .. } => thinking.len(),
                })
                .sum();
            Usage {
                input_tokens: prompt.input_tokens.max(1),
                output_tokens: (output_bytes as u64 / 4).max(1),
                ..prompt
            }
        });
        Message {
            id,
            model: model.to_owned(),
            blocks,
            stop_reason: reply.effective_stop_reason().to_owned(),
            usage,
            unknown_events: reply.unknown_events,
        }
    }

    /// The full event sequence of a successful stream, `message_start` to `message_stop`.
    pub fn events(&self) -> Vec<Event> {
        let mut events = vec![Event::new(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": self.id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": self.usage.input_tokens,
                    "output_tokens": 1,
                    "cache_creation_input_tokens": self.usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": self.usage.cache_read_input_tokens,
                },
            }}),
        )];
        events.push(ping());
        self.unknown(&mut events);
        for (index, block) in self.blocks.iter().enumerate() {
            let start = match block {
                Block::Text { .. } => json!({"type": "text", "text": ""}),
                Block::ToolUse {
                    id,
                    name,
                    toolset_name,
                    ..
                } => tool_use_json(id, name, toolset_name, json!({})),
                Block::Thinking { .. } => {
                    json!({"type": "thinking", "thinking": "", "signature": ""})
                }
            };
            events.push(Event::new(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            if self.unknown_events {
                events.push(ping());
            }
            let delta = |delta: Value| {
                Event::new(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                )
            };
            match block {
                Block::Text { text } => events.extend(
                    chunks(text, TEXT_CHUNK)
                        .map(|t| delta(json!({"type": "text_delta", "text": t}))),
                ),
                Block::ToolUse { partial_json, .. } => {
                    let mut pieces: Vec<&str> = chunks(partial_json, JSON_CHUNK).collect();
                    if pieces.is_empty() {
                        pieces.push("");
                    }
                    events.extend(
                        pieces
                            .into_iter()
                            .map(|p| delta(json!({"type": "input_json_delta", "partial_json": p}))),
                    );
                }
                Block::Thinking {
                    thinking,
                    signature,
                } => {
                    events.extend(
                        chunks(thinking, TEXT_CHUNK)
                            .map(|t| delta(json!({"type": "thinking_delta", "thinking": t}))),
                    );
                    events.push(delta(
                        json!({"type": "signature_delta", "signature": signature}),
                    ));
                }
            }
            events.push(Event::new(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            self.unknown(&mut events);
        }
        events.push(Event::new(
            "message_delta",
            json!({"type": "message_delta",
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": self.usage.output_tokens}}),
        ));
        if self.unknown_events {
            events.push(ping());
        }
        events.push(Event::new("message_stop", json!({"type": "message_stop"})));
        events
    }

    /// The complete message of a non-streamed response.
    pub fn to_json(&self) -> Value {
        let content: Vec<Value> = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Text { text } => json!({"type": "text", "text": text}),
                Block::ToolUse {
                    id,
                    name,
                    input,
                    partial_json,
                    toolset_name,
                } => {
                    // A raw input that parses wins, as it is what the stream would carry.
                    let input =
                        serde_json::from_str(partial_json).unwrap_or_else(|_| input.clone());
                    tool_use_json(id, name, toolset_name, input)
                }
                Block::Thinking {
                    thinking,
                    signature,
                } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
            })
            .collect();
        json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": self.stop_reason,
            "stop_sequence": null,
            "usage": self.usage,
        })
    }

    fn unknown(&self, events: &mut Vec<Event>) {
        if self.unknown_events {
            events.push(Event::new(
                UNKNOWN_EVENT,
                json!({"type": UNKNOWN_EVENT, "note": "clients must ignore unknown event types"}),
            ));
            events.push(ping());
        }
    }
}

impl Rendered for Message {
    fn stream(&self) -> Vec<Bytes> {
        self.events().iter().map(Event::encode).collect()
    }

    fn whole(&self) -> Value {
        self.to_json()
    }

    fn stream_with_error(
        &self,
        after_events: usize,
        error_type: &str,
        message: &str,
    ) -> Vec<Bytes> {
        let mut events = self.events();
        // Always a message_start first, never a message_stop before the error.
        events.truncate(after_events.clamp(1, events.len() - 1));
        events.push(Event::error(error_type, message));
        events.iter().map(Event::encode).collect()
    }
}

/// A `tool_use` block; a toolset member's carries its `toolset_name`.
fn tool_use_json(id: &str, name: &str, toolset_name: &Option<String>, input: Value) -> Value {
    let mut block = json!({"type": "tool_use", "id": id, "name": name, "input": input});
    if let Some(toolset) = toolset_name {
        block["toolset_name"] = json!(toolset);
    }
    block
}

/// The thinking blocks of this message that precede each of its tool calls, as sent (the
/// text empty where `display: omitted` asked so), by tool call id: the API wants them back
/// unchanged with every later request of the tool loop.
impl Message {
    pub fn thinking_before_tool_calls(&self) -> Vec<(String, Vec<Value>)> {
        let mut thinking = Vec::new();
        let mut calls = Vec::new();
        for block in &self.blocks {
            match block {
                Block::Thinking {
                    thinking: text,
                    signature,
                } => thinking
                    .push(json!({"type": "thinking", "thinking": text, "signature": signature})),
                Block::ToolUse { id, .. } => calls.push(id.clone()),
                Block::Text { .. } => {}
            }
        }
        if thinking.is_empty() {
            return Vec::new();
        }
        calls.into_iter().map(|id| (id, thinking.clone())).collect()
    }
}

fn ping() -> Event {
    Event::new("ping", json!({"type": "ping"}))
}

/// Splits on character boundaries into pieces of at most `size` characters.
pub(crate) fn chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.char_indices().nth(size).map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_put_type_first() {
        let event = Event::error("overloaded_error", "Over \"loaded\"");
        assert_eq!(
            event.encode(),
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Over \\\"loaded\\\"\"}}\n\n"
        );
    }

    #[test]
    fn chunks_respect_char_boundaries() {
        let pieces: Vec<&str> = chunks("héllo wörld, ça va?", 8).collect();
        assert_eq!(pieces.concat(), "héllo wörld, ça va?");
        assert!(pieces.iter().all(|p| p.chars().count() <= 8));
        assert_eq!(chunks("", 8).count(), 0);
    }
}
