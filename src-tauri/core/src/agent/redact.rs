//! The last line of defence for API keys: whatever the loop stores, shows or sends (tool
//! results, the model's answers, the user's input, error lines) has every occurrence of a
//! key the run knows replaced, so that a key that got out of reach of its guards (a tool that
//! printed it, a server that echoed it) goes no further.

use serde_json::Value;

use crate::llm::{ContentBlock, ToolResultContent};

/// What a key is replaced with.
pub const REDACTED: &str = "[redacted API key]";

/// Keys shorter than this are not redacted: every occurrence of a two-letter test key would
/// otherwise be, and no service issues keys that short.
const MIN_KEY_LENGTH: usize = 8;

/// The keys of one run.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    keys: Vec<String>,
}

impl Redactor {
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a str>) -> Self {
        let mut kept: Vec<String> = Vec::new();
        for key in keys {
            if key.len() >= MIN_KEY_LENGTH && !kept.iter().any(|k| k == key) {
                kept.push(key.to_string());
            }
        }
        // Longest first, so that a key containing another is replaced whole.
        kept.sort_by_key(|k| std::cmp::Reverse(k.len()));
        Self { keys: kept }
    }

    pub fn text(&self, text: &mut String) {
        for key in &self.keys {
            if text.contains(key.as_str()) {
                *text = text.replace(key.as_str(), REDACTED);
            }
        }
    }

    /// Every string in the value, keys of objects included.
    pub fn value(&self, value: &mut Value) {
        if self.keys.is_empty() {
            return;
        }
        match value {
            Value::String(text) => self.text(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.value(item)),
            Value::Object(map) => {
                let leaks = map
                    .keys()
                    .any(|name| self.keys.iter().any(|key| name.contains(key.as_str())));
                if leaks {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(mut name, value)| {
                            self.text(&mut name);
                            (name, value)
                        })
                        .collect();
                }
                map.values_mut().for_each(|item| self.value(item));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    pub fn results(&self, content: &mut [ToolResultContent]) {
        for part in content {
            if let ToolResultContent::Text { text } = part {
                self.text(text);
            }
        }
    }

    /// Text wherever a block holds it; images are left alone.
    pub fn blocks(&self, blocks: &mut [ContentBlock]) {
        for block in blocks {
            match block {
                ContentBlock::Text { text } => self.text(text),
                ContentBlock::ToolUse { input, .. } => self.value(input),
                ContentBlock::OpenAiItem { item } => self.value(item),
                ContentBlock::ToolResult { content, .. } => self.results(content),
                ContentBlock::Thinking { thinking, .. } => self.text(thinking),
                ContentBlock::Image { .. } | ContentBlock::RedactedThinking { .. } => {}
            }
        }
    }
}

/// Streamed text, redacted even where a key is split across deltas: the end of the text that
/// could be the start of a key waits for the next delta (or [`DeltaRedactor::finish`]).
pub struct DeltaRedactor<'a> {
    redactor: &'a Redactor,
    held: String,
}

impl<'a> DeltaRedactor<'a> {
    pub fn new(redactor: &'a Redactor) -> Self {
        Self {
            redactor,
            held: String::new(),
        }
    }

    /// The text that can be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        self.redactor.text(&mut self.held);
        let keep = self.redactor.key_start_at_end(&self.held);
        let shown = self.held[..self.held.len() - keep].to_string();
        self.held.drain(..self.held.len() - keep);
        shown
    }

    /// What was held back, once the stream has ended.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

impl Redactor {
    /// The length of the longest end of `text` that is the start of a key.
    fn key_start_at_end(&self, text: &str) -> usize {
        let mut longest = 0;
        for key in &self.keys {
            for length in (longest + 1..key.len()).rev() {
                if key.is_char_boundary(length) && text.ends_with(&key[..length]) {
                    longest = length;
                    break;
                }
            }
        }
        longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replaces_every_key_wherever_text_is() {
        let redactor = Redactor::new(["sk-secret-1234", "short", "sk-secret-1234-long"]);
        let mut blocks = vec![
            ContentBlock::text("a sk-secret-1234 b sk-secret-1234-long"),
            ContentBlock::ToolUse {
                id: "t".into(),
                name: "bash".into(),
                input: json!({"command": ["echo sk-secret-1234"], "sk-secret-1234": 1}),
                toolset_name: None,
            },
            ContentBlock::ToolResult {
                tool_use_id: "t".into(),
                content: vec![ToolResultContent::Text {
                    text: "KEY=sk-secret-1234\0short".into(),
                }],
                is_error: false,
                toolset_name: None,
            },
        ];
        redactor.blocks(&mut blocks);
        let shown = serde_json::to_string(&blocks).unwrap();
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert_eq!(
            blocks[0],
            ContentBlock::text(format!("a {REDACTED} b {REDACTED}"))
        );
        assert!(shown.contains("short"), "keys under 8 bytes are left alone");
    }

    #[test]
    fn a_key_split_across_deltas_is_redacted() {
        let redactor = Redactor::new(["sk-secret-1234"]);
        let text = "key: sk-secret-1234, again sk-secret-1234 and sk-sec";
        for size in 1..8 {
            let mut deltas = DeltaRedactor::new(&redactor);
            let mut shown = String::new();
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(size) {
                let out = deltas.push(&piece.iter().collect::<String>());
                assert!(!out.contains("sk-secret"), "{out}");
                shown.push_str(&out);
            }
            shown.push_str(&deltas.finish());
            assert_eq!(
                shown,
                format!("key: {REDACTED}, again {REDACTED} and sk-sec"),
                "deltas of {size}"
            );
        }
    }
}
