//! What today's Messages API refuses depending on the model and on what it sent before: the
//! Claude 5 generation's rules (no forced `tool_choice`, thinking that cannot be turned off,
//! thinking blocks passed back unchanged, the old computer tool refused from Opus 5.5 on),
//! the GA computer toolset's member results, and tool types an endpoint does not serve.

use std::collections::HashMap;

use serde_json::Value;

use crate::validate::{Rejection, invalid};

/// `(major, minor)` of a `claude-<family>-<major>[-<minor>]` id; `None` for anything else.
fn generation(model: &str) -> Option<(u32, u32)> {
    let model = model.rsplit('/').next().unwrap_or(model);
    let (_, rest) = model.split_once("claude-")?;
    let mut parts = rest.split(['-', '.', ':']);
    let family = parts.next()?;
    if family.is_empty() || !family.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()
        .and_then(|p| if p.len() <= 2 { p.parse().ok() } else { None })
        .unwrap_or(0);
    Some((major, minor))
}

/// Every rule of this module, in the order the API would meet them.
pub(crate) fn check(
    body: &Value,
    refused_types: &[String],
    thinking_sent: &HashMap<String, Vec<Value>>,
) -> Result<(), Rejection> {
    let model = body["model"].as_str().unwrap_or_default();
    let generation = generation(model);
    check_tools(body, model, generation, refused_types)?;
    check_thinking_config(body, model, generation)?;
    check_tool_choice(body, model, generation)?;
    check_member_results(body)?;
    check_thinking_kept(body, thinking_sent)
}

fn tools(body: &Value) -> impl Iterator<Item = (usize, &str)> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, tool)| Some((i, tool["type"].as_str()?)))
}

fn check_tools(
    body: &Value,
    model: &str,
    generation: Option<(u32, u32)>,
    refused_types: &[String],
) -> Result<(), Rejection> {
    for (i, ty) in tools(body) {
        if refused_types.iter().any(|r| r == ty) {
            return Err(invalid(format!(
                "tools.{i}: the tool type '{ty}' is not supported on this platform"
            )));
        }
        let old_computer = ty == "computer_20250124" || ty == "computer_20251124";
        if old_computer && generation.is_some_and(|g| g >= (5, 5)) {
            return Err(invalid(format!(
                "tools.{i}: '{ty}' is not supported for model {model}; use 'computer_toolset_20260801'"
            )));
        }
    }
    Ok(())
}

fn check_thinking_config(
    body: &Value,
    model: &str,
    generation: Option<(u32, u32)>,
) -> Result<(), Rejection> {
    let Some(thinking) = body.get("thinking") else {
        return Ok(());
    };
    match thinking["type"].as_str() {
        Some("adaptive" | "enabled" | "between_tools") => {}
        Some("disabled") if generation.is_some_and(|g| g.0 >= 5) => {
            return Err(invalid(format!(
                "thinking.type: thinking cannot be disabled for model {model}"
            )));
        }
        Some("disabled") => {}
        _ => {
            return Err(invalid(
                "thinking.type: Input should be 'adaptive', 'enabled', 'disabled' or 'between_tools'",
            ));
        }
    }
    match thinking.get("display") {
        None | Some(Value::Null) => {}
        Some(display) if display == "summarized" || display == "omitted" => {}
        Some(_) => {
            return Err(invalid(
                "thinking.display: Input should be 'summarized' or 'omitted'",
            ));
        }
    }
    match body.pointer("/output_config/effort") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(e))
            if ["low", "medium", "high", "xhigh", "max"].contains(&e.as_str()) =>
        {
            Ok(())
        }
        Some(_) => Err(invalid(
            "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'",
        )),
    }
}

fn check_tool_choice(
    body: &Value,
    model: &str,
    generation: Option<(u32, u32)>,
) -> Result<(), Rejection> {
    let forced = matches!(body["tool_choice"]["type"].as_str(), Some("any" | "tool"));
    if forced && generation.is_some_and(|g| g.0 >= 5) {
        return Err(invalid(format!(
            "tool_choice: forcing tool use is not supported for model {model}; use 'auto' or 'none'"
        )));
    }
    Ok(())
}

/// A toolset member's `tool_result` must echo its call's `toolset_name`.
fn check_member_results(body: &Value) -> Result<(), Rejection> {
    let mut toolset_of: HashMap<&str, Option<&str>> = HashMap::new();
    for (i, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            match block["type"].as_str() {
                Some("tool_use") => {
                    if let Some(id) = block["id"].as_str() {
                        toolset_of.insert(id, block["toolset_name"].as_str());
                    }
                }
                Some("tool_result") => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    let Some(expected) = toolset_of.get(id) else {
                        continue;
                    };
                    let echoed = block["toolset_name"].as_str();
                    if echoed != *expected {
                        return Err(invalid(format!(
                            "messages.{i}.content.{j}.toolset_name: expected {}, found {} for tool_use_id {id}",
                            expected.map_or("none".into(), |t| format!("'{t}'")),
                            echoed.map_or("none".into(), |t| format!("'{t}'")),
                        )));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Thinking blocks the stand-in sent before a tool call must come back, unchanged and in
/// order, in the assistant message that carries that call.
fn check_thinking_kept(
    body: &Value,
    thinking_sent: &HashMap<String, Vec<Value>>,
) -> Result<(), Rejection> {
    for (i, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if message["role"] != "assistant" {
            continue;
        }
        let blocks: Vec<&Value> = message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let thinking: Vec<Value> = blocks
            .iter()
            .filter(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
            .map(|b| {
                let mut b = (*b).clone();
                if let Some(map) = b.as_object_mut() {
                    map.remove("cache_control");
                }
                b
            })
            .collect();
        for block in &blocks {
            let Some(sent) = block["id"].as_str().and_then(|id| thinking_sent.get(id)) else {
                continue;
            };
            if thinking.is_empty() {
                return Err(invalid(format!(
                    "messages.{i}.content: thinking blocks in the latest assistant turn must be passed back; the thinking blocks before this tool use were dropped"
                )));
            }
            if &thinking != sent {
                return Err(invalid(format!(
                    "messages.{i}.content: thinking blocks cannot be modified. These blocks must remain as they were in the original response."
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generations() {
        assert_eq!(generation("claude-opus-5-5"), Some((5, 5)));
        assert_eq!(generation("claude-sonnet-5-20270101"), Some((5, 0)));
        assert_eq!(generation("claude-3-7-sonnet"), None);
    }

    #[test]
    fn the_claude_5_rules() {
        let none = HashMap::new();
        let body = |model: &str, extra: Value| {
            let mut body = json!({"model": model, "messages": []});
            for (k, v) in extra.as_object().unwrap() {
                body[k] = v.clone();
            }
            body
        };
        let forced = json!({"tool_choice": {"type": "any"}});
        assert!(check(&body("claude-opus-5-5", forced.clone()), &[], &none).is_err());
        assert!(check(&body("claude-sonnet-4-5", forced), &[], &none).is_ok());
        let old = json!({"tools": [{"type": "computer_20251124", "name": "computer"}]});
        assert!(check(&body("claude-opus-5-5", old.clone()), &[], &none).is_err());
        assert!(check(&body("claude-opus-5", old.clone()), &[], &none).is_ok());
        assert!(
            check(
                &body("claude-opus-5", old),
                &["computer_20251124".into()],
                &none
            )
            .unwrap_err()
            .message
            .contains("computer_20251124")
        );
        let off = json!({"thinking": {"type": "disabled"}});
        assert!(check(&body("claude-opus-5", off.clone()), &[], &none).is_err());
        assert!(check(&body("claude-opus-4-5", off), &[], &none).is_ok());
    }
}
