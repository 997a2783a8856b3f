//! How deeply JSON nests. serde_json refuses to read past 128 levels, so JSON that reaches
//! the store deeper than that could be written but never read back: a session lost. The
//! model's tool input is refused past [`MAX_TOOL_INPUT_DEPTH`], and the store writes and reads
//! with one limit, [`MAX_STORED_DEPTH`], below serde_json's.

use serde_json::Value;

/// The deepest tool input the model may send: more than any tool's schema needs.
pub const MAX_TOOL_INPUT_DEPTH: usize = 64;

/// The deepest JSON document the store writes or reads (a message's content, an event).
pub const MAX_STORED_DEPTH: usize = 100;

/// The nesting depth of JSON text (`1` for `[]`, `0` for a scalar), found without parsing it:
/// a scan of the bytes that skips strings. Text that is not JSON gives some depth, never a
/// panic.
pub fn text_depth(json: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in json.as_bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The nesting depth of a parsed value, as [`text_depth`] counts it.
pub fn value_depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(value_depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(value_depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nesting_outside_strings() {
        assert_eq!(text_depth("1"), 0);
        assert_eq!(text_depth(r#"{"a": [1, {"b": "[[[{{"}]}"#), 3);
        assert_eq!(text_depth(r#"["\"[[", []]"#), 2);
        let deep = format!("{}{}", "[".repeat(126), "]".repeat(126));
        assert_eq!(text_depth(&deep), 126);
        let value: Value = serde_json::from_str(r#"{"a": [1, {"b": "[[[{{"}]}"#).unwrap();
        assert_eq!(value_depth(&value), 3);
    }
}
