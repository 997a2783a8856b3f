//! The last line of defence for API keys and the environment's secrets: whatever the loop
//! stores, shows or sends (tool results, the model's answers, the user's input, error lines)
//! has every occurrence of a secret the run knows replaced, so that a secret that got out of
//! reach of its guards (a tool that printed it, a server that echoed it) goes no further.
//! A secret is also looked for as a program would encode it to slip it out: base64 (standard
//! and URL-safe, padded or not, at each of the three byte offsets it can start at inside
//! longer data), hex (lower and upper case) and percent-encoding.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use serde_json::Value;

use crate::llm::{ContentBlock, ToolResultContent};

pub use deskhand_host::secret_text::REDACTED;

/// Keys shorter than this are not redacted: every occurrence of a two-letter test key would
/// otherwise be, and no service issues keys that short.
const MIN_KEY_LENGTH: usize = 8;

/// The keys of one run.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    keys: Vec<String>,
}

/// The ways a program could write `key` so that its plain text no longer shows: each is
/// redacted like the key itself. A key inside longer base64 data is found by the characters
/// that encode only its bytes (whole groups of three), whatever comes before and after it.
fn encodings(key: &str) -> Vec<String> {
    let bytes = key.as_bytes();
    let mut found = Vec::new();
    for offset in 0..3 {
        let mut data = vec![0u8; offset];
        data.extend_from_slice(bytes);
        // Groups of three bytes that hold key bytes only, and the characters they encode.
        let first = offset.div_ceil(3);
        let last = data.len() / 3;
        if last <= first {
            continue;
        }
        let (from, to) = (first * 4, last * 4);
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            found.push(engine.encode(&data)[from..to].to_string());
        }
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    found.push(hex.to_ascii_uppercase());
    found.push(hex);
    let every: String = bytes.iter().map(|b| format!("%{b:02X}")).collect();
    found.push(every.to_ascii_lowercase());
    found.push(every);
    let percent: String = bytes
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    found.push(percent.to_ascii_lowercase());
    found.push(percent);
    found
}

impl Redactor {
    /// Redacts each of `keys` (at least [`MIN_KEY_LENGTH`] bytes long) and its encodings.
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a str>) -> Self {
        let mut kept: Vec<String> = Vec::new();
        for key in keys.into_iter().filter(|key| key.len() >= MIN_KEY_LENGTH) {
            for form in std::iter::once(key.to_string()).chain(encodings(key)) {
                if form.len() >= MIN_KEY_LENGTH && !kept.contains(&form) {
                    kept.push(form);
                }
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
            // No end longer than the text itself can match.
            let longest_possible = key.len().saturating_sub(1).min(text.len());
            for length in (longest + 1..=longest_possible).rev() {
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
    fn a_key_is_redacted_in_base64_hex_and_percent_encoding_too() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        let key = "sk-ant-api03-Zm9v/Yg+secret?value";
        let redactor = Redactor::new([key]);
        let mut written = vec![
            STANDARD.encode(key),
            URL_SAFE.encode(key),
            URL_SAFE_NO_PAD.encode(key),
            hex(key).to_ascii_uppercase(),
            hex(key),
            key.replace('/', "%2F")
                .replace('+', "%2B")
                .replace('?', "%3F"),
            key.bytes().map(|b| format!("%{b:02x}")).collect(),
        ];
        // Inside longer data, at each offset: `KEY=<key>\n` and a JSON document.
        for prefix in ["", "K", "KE", "KEY=", "{\"token\": \""] {
            let data = format!("{prefix}{key}\n and more after it");
            written.push(STANDARD.encode(&data));
            written.push(URL_SAFE_NO_PAD.encode(&data));
        }
        for text in written {
            let mut shown = text.clone();
            redactor.text(&mut shown);
            assert!(shown.contains(REDACTED), "{text} was left as it was");
            assert!(!leaks(&shown, key), "{text} still shows the key as {shown}");
        }
        let mut plain = "an ordinary sentence with c2stYW50 in it".to_string();
        redactor.text(&mut plain);
        assert!(!plain.contains(REDACTED), "{plain}");
    }

    fn hex(text: &str) -> String {
        text.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether more than 4 bytes of `key` can be read back from what was shown.
    fn leaks(shown: &str, key: &str) -> bool {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        let pieces = shown.split(REDACTED);
        pieces.into_iter().any(|piece| {
            let piece = piece.trim_end_matches('=');
            (0..piece.len()).any(|start| {
                let tail = &piece[start..];
                let cut = &tail[..tail.len() - tail.len() % 4];
                [STANDARD, URL_SAFE].iter().any(|engine| {
                    engine.decode(cut).is_ok_and(|bytes| {
                        bytes
                            .windows(5)
                            .any(|w| key.as_bytes().windows(5).any(|k| k == w))
                    })
                })
            })
        })
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
