//! Keeping a history valid for the API: roles alternate and every `tool_use` is answered by a
//! `tool_result` in the very next message, whatever interrupted the run.

use crate::ids::ToolUseId;
use crate::message::{ContentBlock, Message, Role, ToolResultContent};

/// A prompt with nothing in it: the API refuses empty and whitespace-only text, so it is
/// refused before anything is stored or sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the prompt is empty: write something for the agent to do (or attach an image)")]
pub struct EmptyPrompt;

/// The content of a person's message: the text, unless it is only whitespace, then the
/// attached images. Refused when nothing is left.
pub fn prompt_content(
    text: &str,
    attachments: Vec<ContentBlock>,
) -> Result<Vec<ContentBlock>, EmptyPrompt> {
    let mut content = Vec::with_capacity(attachments.len() + 1);
    if !text.trim().is_empty() {
        content.push(ContentBlock::text(text));
    }
    content.extend(attachments);
    if content.is_empty() {
        return Err(EmptyPrompt);
    }
    Ok(content)
}

/// Whether a message of role `next` after one of role `last` is merged into it rather than
/// appended: user content after a user message (left there by a run that stopped before the
/// model answered), so that roles keep alternating. The store's recorder and the window's
/// fold (`ui/src/lib/run/reduce.ts`) replace the earlier message by the same rule.
pub fn merges_into(last: Option<Role>, next: Role) -> bool {
    next == Role::User && last == Some(Role::User)
}

/// Appends user content, merged into a trailing user message where [`merges_into`] says so.
pub fn push_user(history: &mut Vec<Message>, content: Vec<ContentBlock>) {
    match history.last_mut() {
        Some(last) if merges_into(Some(last.role), Role::User) => last.content.extend(content),
        _ => history.push(Message::user(content)),
    }
}

/// Makes a history valid for the API whatever cut it short or broke it: empty and
/// whitespace-only text is dropped (the API refuses it), then messages left empty, with their
/// neighbours merged so roles still alternate; a history that would start with the assistant
/// gets a note from the user first; every unanswered `tool_use` gets an error result saying
/// `reason`, and results that answer nothing are dropped, the rest put first in their
/// message in the order of the calls. Returns how many blocks and messages it added,
/// removed or moved (0: the history was valid already).
pub fn repair(history: &mut Vec<Message>, reason: &str) -> usize {
    let mut changes = 0;
    // Each pass can only empty messages (dropping orphan results), which the next pass
    // removes; a pass that changes nothing ends it.
    loop {
        let pass =
            drop_empty(history) + start_with_user(history) + pair_tool_calls(history, reason);
        if pass == 0 {
            return changes;
        }
        changes += pass;
    }
}

/// Stands first when a history would begin with the assistant (its first prompt was empty).
pub const EARLIER_PROMPT_REMOVED: &str = "[Deskhand] (an earlier, empty message was removed)";

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// Drops blank text blocks and blocks in the wrong role's message (a `tool_result` from the
/// assistant, a `tool_use` from the user: the API refuses both, and an import can hold them),
/// then empty messages, merging neighbours of the same role.
fn drop_empty(history: &mut Vec<Message>) -> usize {
    let mut changes = 0;
    for message in history.iter_mut() {
        let before = message.content.len();
        let role = message.role;
        message.content.retain_mut(|block| match block {
            ContentBlock::Text { text } => !is_blank(text),
            ContentBlock::ToolResult { .. } if role == Role::Assistant => false,
            ContentBlock::ToolUse { .. } if role == Role::User => false,
            ContentBlock::ToolResult { content, .. } => {
                let before = content.len();
                content.retain(
                    |item| !matches!(item, ToolResultContent::Text { text } if is_blank(text)),
                );
                changes += before - content.len();
                true
            }
            _ => true,
        });
        changes += before - message.content.len();
    }
    let before = history.len();
    history.retain(|message| !message.content.is_empty());
    changes += before - history.len();
    let mut index = 1;
    while index < history.len() {
        if history[index].role == history[index - 1].role {
            let merged = history.remove(index);
            history[index - 1].content.extend(merged.content);
            changes += 1;
        } else {
            index += 1;
        }
    }
    changes
}

fn start_with_user(history: &mut Vec<Message>) -> usize {
    match history.first() {
        Some(first) if first.role == Role::Assistant => {
            history.insert(
                0,
                Message::user(vec![ContentBlock::text(EARLIER_PROMPT_REMOVED)]),
            );
            1
        }
        _ => 0,
    }
}

/// Every `tool_use` answered at the start of the next message, every result answering one.
fn pair_tool_calls(history: &mut Vec<Message>, reason: &str) -> usize {
    let mut changes = 0;
    let mut index = 0;
    while index < history.len() {
        if history[index].role == Role::Assistant {
            let has_calls = history[index].tool_uses().next().is_some();
            if has_calls && history.get(index + 1).is_none_or(|m| m.role != Role::User) {
                history.insert(index + 1, Message::user(Vec::new()));
            }
            index += 1;
            continue;
        }
        // Each call's id, and its toolset, which a member's result must echo.
        let calls: Vec<(ToolUseId, Option<String>)> =
            match index.checked_sub(1).map(|i| &history[i]) {
                Some(previous) if previous.role == Role::Assistant => previous
                    .tool_uses()
                    .map(|t| (t.id.clone(), t.toolset_name.map(str::to_owned)))
                    .collect(),
                _ => Vec::new(),
            };
        let message = &mut history[index];
        let old = std::mem::take(&mut message.content);
        let changes_before = changes;
        let mut answers: Vec<Option<ContentBlock>> = vec![None; calls.len()];
        let mut rest = Vec::new();
        let mut kept_in_place = true;
        for (position, block) in old.iter().enumerate() {
            match block {
                ContentBlock::ToolResult { tool_use_id, .. } => {
                    match calls.iter().position(|(id, _)| id == tool_use_id) {
                        Some(slot) if answers[slot].is_none() => {
                            // In place means: results lead, in the order of the calls.
                            kept_in_place &= position == slot;
                            answers[slot] = Some(block.clone());
                        }
                        _ => changes += 1, // answers nothing, or answers again
                    }
                }
                _ => rest.push(block.clone()),
            }
        }
        let mut content = Vec::with_capacity(calls.len() + rest.len());
        for ((id, toolset), answer) in calls.iter().zip(answers) {
            content.push(answer.unwrap_or_else(|| {
                changes += 1;
                let mut result = ContentBlock::tool_error(id.clone(), reason);
                if let ContentBlock::ToolResult { toolset_name, .. } = &mut result {
                    toolset_name.clone_from(toolset);
                }
                result
            }));
        }
        content.extend(rest);
        if !kept_in_place && changes == changes_before {
            changes += 1; // only moved
        }
        message.content = content;
        index += 1;
    }
    changes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "bash".into(),
            input: json!({}),
            toolset_name: None,
        }
    }

    fn result(id: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: vec![],
            is_error: false,
            toolset_name: None,
        }
    }

    #[test]
    fn answers_open_calls_and_drops_orphan_results() {
        let mut history = vec![
            Message::user(vec![ContentBlock::text("go")]),
            Message::assistant(vec![call("a"), call("b")]),
            Message::user(vec![result("b"), result("zz"), ContentBlock::text("more")]),
            Message::assistant(vec![call("c")]),
        ];
        assert_eq!(repair(&mut history, "cancelled"), 3);
        assert_eq!(
            history[2].content[0],
            ContentBlock::tool_error("a", "cancelled")
        );
        assert_eq!(history[2].content[1], result("b"));
        assert_eq!(history[2].content.len(), 3);
        assert_eq!(
            history[4],
            Message::user(vec![ContentBlock::tool_error("c", "cancelled")])
        );
        assert_eq!(
            repair(&mut history, "cancelled"),
            0,
            "a repaired history needs no repair"
        );
    }

    #[test]
    fn consecutive_user_input_is_merged() {
        let mut history = vec![Message::user(vec![ContentBlock::text("a")])];
        push_user(&mut history, vec![ContentBlock::text("b")]);
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].content.len(), 2);
    }
}
