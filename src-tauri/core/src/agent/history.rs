//! Keeping a history valid for the API: roles alternate and every `tool_use` is answered by a
//! `tool_result` in the very next message, whatever interrupted the run.

use std::collections::HashSet;

use crate::llm::{ContentBlock, Message, Role};

/// Appends user content, merging it into a trailing user message (left there by a run that
/// stopped before the model answered) so that roles keep alternating.
pub fn push_user(history: &mut Vec<Message>, content: Vec<ContentBlock>) {
    match history.last_mut() {
        Some(last) if last.role == Role::User => last.content.extend(content),
        _ => history.push(Message::user(content)),
    }
}

/// Answers every unanswered `tool_use` with an error result saying why, and drops results
/// that answer nothing. Returns how many blocks it added or removed.
pub fn repair(history: &mut Vec<Message>, reason: &str) -> usize {
    let mut changes = 0;
    let mut index = 0;
    while index < history.len() {
        if history[index].role != Role::Assistant {
            index += 1;
            continue;
        }
        // Each call's id, and its toolset, which a member's result must echo.
        let calls: Vec<(String, Option<String>)> = history[index]
            .tool_uses()
            .map(|t| (t.id.to_string(), t.toolset_name.map(str::to_owned)))
            .collect();
        let ids: Vec<&String> = calls.iter().map(|(id, _)| id).collect();
        if history
            .get(index + 1)
            .is_none_or(|next| next.role != Role::User)
        {
            if ids.is_empty() {
                index += 1;
                continue;
            }
            history.insert(index + 1, Message::user(Vec::new()));
        }
        let next = &mut history[index + 1];
        let known: HashSet<&str> = ids.iter().map(|id| id.as_str()).collect();
        let before = next.content.len();
        next.content.retain(|block| match block {
            ContentBlock::ToolResult { tool_use_id, .. } => known.contains(tool_use_id.as_str()),
            _ => true,
        });
        changes += before - next.content.len();
        let answered: HashSet<String> = next
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                _ => None,
            })
            .collect();
        // The API wants results first in the message, in the order of the calls.
        let missing: Vec<ContentBlock> = calls
            .iter()
            .filter(|(id, _)| !answered.contains(id))
            .map(|(id, toolset)| {
                let mut result = ContentBlock::tool_error(id.clone(), reason);
                if let ContentBlock::ToolResult { toolset_name, .. } = &mut result {
                    toolset_name.clone_from(toolset);
                }
                result
            })
            .collect();
        changes += missing.len();
        next.content.splice(0..0, missing);
        index += 2;
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
