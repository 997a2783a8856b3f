//! The GA computer toolset, `computer_toolset_20260801`: one member tool per action, each
//! `tool_use` named after its member (`left_click`) with `toolset_name: "computer"`, and each
//! `tool_result` echoing that `toolset_name`. A member call runs as the computer tool's action
//! of the same name, so the approval gate, the window's drawn approvals and side panel, and
//! the context budget see exactly the calls they see with the single `computer` tool.
//! Wire shapes as in the official `anthropic` Python SDK 2.14.0 (`ComputerToolset20260801Param`,
//! `ComputerMemberName`, the toolset runner's `not_executed_result`).

use serde_json::{Map, Value};

use crate::ToolError;

/// The `toolset_name` of the computer toolset's member calls.
pub const TOOLSET_NAME: &str = "computer";

/// Every member of `computer_toolset_20260801`, in the SDK's order. Deskhand implements all.
pub const MEMBERS: [&str; 17] = [
    "key",
    "hold_key",
    "type",
    "cursor_position",
    "mouse_move",
    "left_mouse_down",
    "left_mouse_up",
    "left_click",
    "left_click_drag",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "scroll",
    "wait",
    "screenshot",
    "zoom",
];

/// The answer to a member call not run because an earlier member of the same toolset failed
/// in the same response: the model planned them as a sequence. The API's wording, as the SDK
/// sends it.
pub const NOT_EXECUTED: &str = "Not executed: an earlier computer action in this turn failed.";

/// The most presses one `key` member call may ask for with `repeat`.
pub const MAX_KEY_REPEAT: u64 = 100;

/// The computer tool's own input for a member call: `{"action": member, ...input}`. `key`'s
/// `repeat: n` becomes the key combination written n times, which the `key` action presses
/// one after another. Anything that is not a member call of this toolset is refused with a
/// message for the model, and nothing runs.
pub fn action_input(toolset_name: &str, member: &str, input: &Value) -> Result<Value, ToolError> {
    if toolset_name != TOOLSET_NAME {
        return Err(ToolError::NotFound(format!(
            "the toolset `{toolset_name}` is not offered; only `{TOOLSET_NAME}` is"
        )));
    }
    if !MEMBERS.contains(&member) {
        return Err(ToolError::NotFound(format!(
            "`{member}` is not a member of the computer toolset; its members are: {}",
            MEMBERS.join(", ")
        )));
    }
    let mut fields: Map<String, Value> = match input {
        Value::Object(fields) => fields.clone(),
        _ => {
            return Err(ToolError::InvalidInput(
                "the input must be a JSON object".into(),
            ));
        }
    };
    if fields.contains_key("action") {
        return Err(ToolError::InvalidInput(format!(
            "`{member}` takes no `action` field: the member's name is the action"
        )));
    }
    if member == "key"
        && let Some(repeat) = fields.remove("repeat")
    {
        let times = repeat
            .as_u64()
            .filter(|n| (1..=MAX_KEY_REPEAT).contains(n))
            .ok_or_else(|| {
                ToolError::OutOfRange(format!(
                    "`repeat` must be an integer from 1 to {MAX_KEY_REPEAT}"
                ))
            })?;
        let combo = fields
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ToolError::InvalidInput(
                    "`key` needs `text`, the key or combination to press".into(),
                )
            })?
            .trim()
            .to_string();
        let repeated = vec![combo; times as usize].join(" ");
        fields.insert("text".into(), Value::String(repeated));
    }
    fields.insert("action".into(), Value::String(member.into()));
    Ok(Value::Object(fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_call_becomes_the_action_of_its_name() {
        assert_eq!(
            action_input("computer", "left_click", &json!({"coordinate": [5, 6]})).unwrap(),
            json!({"action": "left_click", "coordinate": [5, 6]})
        );
        assert_eq!(
            action_input("computer", "screenshot", &json!({})).unwrap(),
            json!({"action": "screenshot"})
        );
        assert_eq!(
            action_input("computer", "key", &json!({"text": "Down", "repeat": 3})).unwrap(),
            json!({"action": "key", "text": "Down Down Down"})
        );
    }

    #[test]
    fn other_toolsets_members_and_shapes_are_refused() {
        for (toolset, member, input, wanted) in [
            ("browser", "navigate", json!({}), "not offered"),
            ("computer", "navigate", json!({}), "not a member"),
            ("computer", "left_click", json!([1, 2]), "JSON object"),
            (
                "computer",
                "left_click",
                json!({"action": "right_click"}),
                "no `action`",
            ),
            (
                "computer",
                "key",
                json!({"text": "a", "repeat": 0}),
                "repeat",
            ),
            (
                "computer",
                "key",
                json!({"text": "a", "repeat": 101}),
                "repeat",
            ),
            ("computer", "key", json!({"repeat": 2}), "needs `text`"),
        ] {
            let error = action_input(toolset, member, &input)
                .unwrap_err()
                .to_string();
            assert!(error.contains(wanted), "{member} {input}: {error}");
        }
    }
}
