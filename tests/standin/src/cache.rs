//! Billing like the real API: input tokens estimated per block, and a prompt cache keyed by
//! the exact prefix up to each `cache_control` breakpoint.
//!
//! The model of the cache follows Anthropic's documentation: the prefix is tools, then the
//! system prompt, then the messages, block by block; a breakpoint writes the prefix up to it
//! (if it is at least 1,024 tokens); a later request reads the longest cached prefix that
//! ends at one of its breakpoints or up to 20 blocks before one; what lies between the read
//! and the last breakpoint is written; what lies after the last breakpoint is plain input.
//! Entries do not expire here (a scripted session is far shorter than the 5-minute lifetime).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

use crate::script::Usage;

const MIN_CACHEABLE_TOKENS: u64 = 1024;
const LOOKBACK_BLOCKS: usize = 20;

#[derive(Default)]
pub struct PromptCache {
    prefixes: HashSet<u64>,
}

struct Block {
    /// Hash of the prefix ending with this block.
    prefix: u64,
    /// Tokens up to and including this block.
    tokens: u64,
    breakpoint: bool,
}

impl PromptCache {
    /// The input side of the usage for `request`, and the cache entries it writes.
    pub fn bill(&mut self, request: &Value) -> Usage {
        let blocks = prefix_blocks(request);
        let total = blocks.last().map_or(0, |b| b.tokens);
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|&i| blocks[i].breakpoint)
            .collect();
        let Some(&last) = breakpoints.last() else {
            return Usage {
                input_tokens: total,
                ..Usage::default()
            };
        };
        if blocks[last].tokens < MIN_CACHEABLE_TOKENS {
            return Usage {
                input_tokens: total,
                ..Usage::default()
            };
        }
        let read = breakpoints
            .iter()
            .flat_map(|&b| b.saturating_sub(LOOKBACK_BLOCKS)..=b)
            .filter(|&i| self.prefixes.contains(&blocks[i].prefix))
            .map(|i| blocks[i].tokens)
            .max()
            .unwrap_or(0);
        for &b in &breakpoints {
            if blocks[b].tokens >= MIN_CACHEABLE_TOKENS {
                self.prefixes.insert(blocks[b].prefix);
            }
        }
        Usage {
            input_tokens: total - blocks[last].tokens,
            output_tokens: 0,
            cache_creation_input_tokens: blocks[last].tokens - read,
            cache_read_input_tokens: read,
        }
    }
}

/// Tools, system and message blocks in prefix order, with running hashes and token counts.
fn prefix_blocks(request: &Value) -> Vec<Block> {
    let mut parts: Vec<&Value> = Vec::new();
    parts.extend(request["tools"].as_array().into_iter().flatten());
    match &request["system"] {
        Value::Array(blocks) => parts.extend(blocks),
        system @ Value::String(_) => parts.push(system),
        _ => {}
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::Array(blocks) => parts.extend(blocks),
            text => parts.push(text),
        }
    }
    let mut hasher = DefaultHasher::new();
    let mut tokens = 0;
    parts
        .into_iter()
        .map(|part| {
            let mut plain = part.clone();
            let breakpoint = plain
                .as_object_mut()
                .and_then(|o| o.remove("cache_control"))
                .is_some();
            plain.to_string().hash(&mut hasher);
            tokens += estimate_tokens(&plain);
            Block {
                prefix: hasher.finish(),
                tokens,
                breakpoint,
            }
        })
        .collect()
}

/// Text at four bytes a token; images at width × height / 750, as Anthropic documents.
fn estimate_tokens(block: &Value) -> u64 {
    match block["type"].as_str() {
        Some("image") => image_tokens(&block["source"]),
        Some("tool_result") => match &block["content"] {
            Value::Array(parts) => parts.iter().map(estimate_tokens).sum::<u64>() + 8,
            other => other.to_string().len() as u64 / 4 + 8,
        },
        _ => (block.to_string().len() as u64 / 4).max(1),
    }
}

fn image_tokens(source: &Value) -> u64 {
    let data = source["data"].as_str().unwrap_or_default();
    let head = &data[..data.len().min(1024) / 4 * 4];
    BASE64
        .decode(head)
        .ok()
        .and_then(|bytes| png_or_jpeg_size(&bytes))
        .map(|(w, h)| w * h / 750)
        .unwrap_or(1600)
}

/// The pixel size from a PNG header (the stand-in only needs the common case; others count
/// as a typical screenshot).
fn png_or_jpeg_size(bytes: &[u8]) -> Option<(u64, u64)> {
    if bytes.len() >= 24 && bytes.starts_with(b"\x89PNG") {
        let w = u32::from_be_bytes(bytes[16..20].try_into().ok()?) as u64;
        let h = u32::from_be_bytes(bytes[20..24].try_into().ok()?) as u64;
        return Some((w, h));
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn long_text(n: usize) -> String {
        "word ".repeat(n)
    }

    fn request(turns: usize, cache_last: bool) -> Value {
        let mut messages = Vec::new();
        for i in 0..turns {
            let mut block = json!({"type": "text", "text": format!("{i} {}", long_text(1000))});
            if cache_last && i + 1 == turns {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
            messages.push(
                json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": [block]}),
            );
        }
        json!({"system": "s", "messages": messages})
    }

    #[test]
    fn writes_then_reads_the_cached_prefix() {
        let mut cache = PromptCache::default();
        let first = cache.bill(&request(1, true));
        assert_eq!(first.cache_read_input_tokens, 0);
        assert!(first.cache_creation_input_tokens > 1200);
        let second = cache.bill(&request(3, true));
        assert_eq!(
            second.cache_read_input_tokens, first.cache_creation_input_tokens,
            "system + first turn are read"
        );
        assert!(second.cache_creation_input_tokens > 2400);
        assert_eq!(second.input_tokens, 0);
        let uncached = PromptCache::default().bill(&request(3, false));
        assert_eq!(
            uncached.cache_read_input_tokens + uncached.cache_creation_input_tokens,
            0
        );
        assert_eq!(
            uncached.input_tokens,
            second.cache_read_input_tokens + second.cache_creation_input_tokens
        );
    }

    #[test]
    fn a_changed_prefix_is_not_read() {
        let mut cache = PromptCache::default();
        cache.bill(&request(3, true));
        let mut changed = request(3, true);
        changed["messages"][0]["content"][0]["text"] = json!(long_text(1001));
        assert_eq!(cache.bill(&changed).cache_read_input_tokens, 0);
    }

    #[test]
    fn png_headers_give_image_tokens() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(1280u32.to_be_bytes());
        png.extend(800u32.to_be_bytes());
        let source = json!({"data": BASE64.encode(&png)});
        assert_eq!(image_tokens(&source), 1365);
    }
}
