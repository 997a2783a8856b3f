//! An MCP tool result as a Deskhand tool output: text and images pass through, other
//! content is described in words. Read from the result's JSON (the protocol's own shape), so
//! it does not depend on how the SDK models each content type.
//!
//! A server is trusted to be small no more than the shell is: each text is cut to its start
//! and end as bash output is, images pass the same checks as attachments, and a result has
//! a bounded number of parts. Everything that goes to the model goes out again in every
//! later request.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::ToolOutput;
use crate::capped::CappedOutput;
use deskhand_llm::{ContentBlock, ToolResultContent};
use deskhand_protocol::images::MAX_IMAGE_BYTES;

/// The most bytes of one text part that reach the model: the first and last halves are
/// kept, with a note of what was cut, as bash's output is.
pub const MAX_TEXT_BYTES: usize = 20_000;
/// The most parts (texts, images, ...) of one result that reach the model.
pub const MAX_PARTS: usize = 20;

pub fn tool_output(result: &CallToolResult) -> ToolOutput {
    let json = serde_json::to_value(result).unwrap_or(Value::Null);
    let items = json["content"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut content: Vec<ToolResultContent> = items
        .iter()
        .take(MAX_PARTS)
        .map(|item| match item["type"].as_str().unwrap_or_default() {
            "text" => text(item["text"].as_str().unwrap_or_default()),
            "image" => image(item),
            "resource" => {
                let resource = &item["resource"];
                let uri = resource["uri"].as_str().unwrap_or_default();
                match resource["text"].as_str() {
                    Some(body) => text(&format!("[resource {uri}]\n{body}")),
                    None => text(&format!("[binary resource {uri}]")),
                }
            }
            "resource_link" => text(&format!(
                "[resource link: {} {}]",
                item["name"].as_str().unwrap_or_default(),
                item["uri"].as_str().unwrap_or_default()
            )),
            other => text(&format!("[{other} content that cannot be shown]")),
        })
        .collect();
    if items.len() > MAX_PARTS {
        content.push(text(&format!(
            "[... {} more parts of this result not shown: at most {MAX_PARTS} are passed on]",
            items.len() - MAX_PARTS
        )));
    }
    if content.is_empty()
        && let Some(structured) = json.get("structuredContent")
    {
        content.push(text(&structured.to_string()));
    }
    if content.is_empty() {
        content.push(text("(no output)"));
    }
    ToolOutput {
        content,
        is_error: result.is_error.unwrap_or(false),
        screen: None,
    }
}

/// A text part, cut to [`MAX_TEXT_BYTES`] with a note if longer.
fn text(text: &str) -> ToolResultContent {
    let text = if text.len() > MAX_TEXT_BYTES {
        let mut capped = CappedOutput::new(MAX_TEXT_BYTES);
        capped.push(text.as_bytes());
        capped.text()
    } else {
        text.to_string()
    };
    ToolResultContent::Text { text }
}

/// An image part, if the API would take it (the checks `--attach` makes: format by magic
/// number, 10 MB, 8000 px a side); else a note saying why it was not passed on.
fn image(item: &Value) -> ToolResultContent {
    let label = item["mimeType"].as_str().unwrap_or_default();
    let refused = |why: String| text(&format!("[an image (`{label}`) was not passed on: {why}]"));
    let Some(data) = item["data"].as_str() else {
        return refused("it has no data".into());
    };
    // Base64 is 4 characters for 3 bytes: a longer text cannot be an image the API takes,
    // and is not decoded at all.
    if data.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
        return refused(format!(
            "it is about {} bytes; the API takes images up to {MAX_IMAGE_BYTES} bytes",
            data.len() / 4 * 3
        ));
    }
    let bytes = match BASE64.decode(data) {
        Ok(bytes) => bytes,
        Err(e) => return refused(format!("its data is not valid base64 ({e})")),
    };
    match ContentBlock::image(&bytes, "the image") {
        Ok(ContentBlock::Image { source }) => ToolResultContent::Image { source },
        Ok(_) => refused("it is not an image".into()),
        Err(e) => refused(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: Value) -> CallToolResult {
        serde_json::from_value(serde_json::json!({ "content": content })).unwrap()
    }

    fn texts(output: &ToolOutput) -> Vec<String> {
        output
            .content
            .iter()
            .map(|c| match c {
                ToolResultContent::Text { text } => text.clone(),
                ToolResultContent::Image { .. } => "[image]".into(),
            })
            .collect()
    }

    #[test]
    fn a_long_text_keeps_its_start_and_end_with_a_note() {
        let long = "a".repeat(MAX_TEXT_BYTES) + &"b".repeat(MAX_TEXT_BYTES);
        let out = tool_output(&result(serde_json::json!([{"type": "text", "text": long}])));
        let [text] = texts(&out).try_into().unwrap();
        assert!(text.len() < MAX_TEXT_BYTES + 200, "{}", text.len());
        assert!(text.starts_with("aaaa") && text.ends_with("bbbb"));
        assert!(
            text.contains("[... 20000 bytes (0 lines) cut from the middle ...]"),
            "{text}"
        );
    }

    #[test]
    fn too_many_parts_are_cut_with_a_note() {
        let parts: Vec<Value> = (0..30)
            .map(|i| serde_json::json!({"type": "text", "text": format!("part {i}")}))
            .collect();
        let out = tool_output(&result(Value::Array(parts)));
        let shown = texts(&out);
        assert_eq!(shown.len(), MAX_PARTS + 1);
        assert_eq!(
            shown.last().unwrap(),
            "[... 10 more parts of this result not shown: at most 20 are passed on]"
        );
    }
}
