//! Resuming after a crash never repeats an action blindly: when the stored run ends with a
//! call that changes things and was cut off before its result was saved, the model is told
//! that it may already have happened, with a fresh screenshot of how things are now.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::ids::ToolUseId;
use crate::llm::{ContentBlock, Message, Role, ToolResultContent};
use crate::store::INTERRUPTED;
use crate::tools::{ToolContext, ToolRegistry};

/// What to send before the person's next input, if the history ends with an interrupted
/// call that is not read-only: a note naming it, and a screenshot if the computer tool is
/// offered.
pub async fn look_before_resuming(history: &[Message], tools: &ToolRegistry) -> Vec<ContentBlock> {
    let Some(results) = history.last().filter(|m| m.role == Role::User) else {
        return Vec::new();
    };
    let interrupted: Vec<&ToolUseId> = results
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error: true,
                ..
            } if content
                .iter()
                .any(|c| matches!(c, ToolResultContent::Text { text } if text == INTERRUPTED)) =>
            {
                Some(tool_use_id)
            }
            _ => None,
        })
        .collect();
    let calls: Vec<String> = history
        .iter()
        .rev()
        .skip(1)
        .find(|m| m.role == Role::Assistant)
        .into_iter()
        .flat_map(Message::tool_uses)
        .filter(|call| interrupted.contains(&call.id))
        .filter(|call| {
            tools
                .resolve(call.name, call.input)
                .and_then(|tool| tool.plan(call.input))
                .is_ok_and(|plan| !plan.read_only)
        })
        .map(|call| format!("`{} {}`", call.name, call.input))
        .collect();
    if calls.is_empty() {
        return Vec::new();
    }
    let mut note = vec![ContentBlock::text(format!(
        "[Deskhand] The last run was cut off while {} ran: it may already have happened. \
         Check what it did before doing it again.",
        calls.join(", ")
    ))];
    let screenshot = json!({"action": "screenshot"});
    if let Ok(tool) = tools.resolve("computer", &screenshot) {
        let ctx = ToolContext::new(CancellationToken::new());
        let shot = tool.run(&screenshot, &ctx).await;
        if !shot.is_error {
            note.push(ContentBlock::text("[Deskhand] This is the screen now:"));
            for part in shot.content {
                if let ToolResultContent::Image { source } = part {
                    note.push(ContentBlock::Image { source });
                }
            }
        }
    }
    note
}
