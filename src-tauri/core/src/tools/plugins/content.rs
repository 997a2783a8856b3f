//! An MCP tool result as a Deskhand tool output: text and images pass through, other
//! content is described in words. Read from the result's JSON (the protocol's own shape), so
//! it does not depend on how the SDK models each content type.

use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::llm::{ImageSource, ToolResultContent};
use crate::tools::ToolOutput;

/// Image types a `tool_result` may carry.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

pub fn tool_output(result: &CallToolResult) -> ToolOutput {
    let json = serde_json::to_value(result).unwrap_or(Value::Null);
    let mut content = Vec::new();
    for item in json["content"].as_array().into_iter().flatten() {
        let text = |text: String| ToolResultContent::Text { text };
        match item["type"].as_str().unwrap_or_default() {
            "text" => content.push(text(item["text"].as_str().unwrap_or_default().into())),
            "image" => {
                let media_type = item["mimeType"].as_str().unwrap_or_default();
                match item["data"].as_str() {
                    Some(data) if IMAGE_TYPES.contains(&media_type) => {
                        content.push(ToolResultContent::Image {
                            source: ImageSource::Base64 {
                                media_type: media_type.into(),
                                data: data.into(),
                            },
                        })
                    }
                    _ => content.push(text(format!(
                        "[an image of type `{media_type}` that cannot be shown]"
                    ))),
                }
            }
            "resource" => {
                let resource = &item["resource"];
                let uri = resource["uri"].as_str().unwrap_or_default();
                content.push(text(match resource["text"].as_str() {
                    Some(body) => format!("[resource {uri}]\n{body}"),
                    None => format!("[binary resource {uri}]"),
                }));
            }
            "resource_link" => content.push(text(format!(
                "[resource link: {} {}]",
                item["name"].as_str().unwrap_or_default(),
                item["uri"].as_str().unwrap_or_default()
            ))),
            other => content.push(text(format!("[{other} content that cannot be shown]"))),
        }
    }
    if content.is_empty()
        && let Some(structured) = json.get("structuredContent")
    {
        content.push(ToolResultContent::Text {
            text: structured.to_string(),
        });
    }
    if content.is_empty() {
        content.push(ToolResultContent::Text {
            text: "(no output)".into(),
        });
    }
    ToolOutput {
        content,
        is_error: result.is_error.unwrap_or(false),
        screen: None,
    }
}
