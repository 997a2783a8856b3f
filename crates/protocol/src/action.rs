//! What a tool call will do, in the shape the approval card, the timeline and the terminal
//! show it: one variant per kind of action the tools have.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::emphasis::escape;
use crate::ids::SessionId;
use crate::scaling::Size;

/// An action plan's `detail`. On the wire it is the variant's fields alone (untagged), as
/// the free JSON before it was, and `null` for an action with nothing to draw. Reading it
/// back tries the variants in order, so each one comes before any with a subset of its
/// fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
#[serde(untagged)]
pub enum ActionDetail {
    /// A computer action, or a `ui` action on an element, at points on the screen: where a
    /// window draws its markers.
    Pointer(Box<PointerDetail>),
    /// A bash command and how long it may run.
    Command { command: String, timeout_s: f64 },
    /// The bash shell started afresh.
    Restart { restart: bool },
    /// A file write, approved by its unified diff.
    FileEdit { path: PathBuf, diff: String },
    /// A file or directory read (secret places are found by this path).
    FileView { path: PathBuf },
    /// A memory note changed: its text before and after.
    NoteUpdate {
        id: i64,
        before: String,
        note: String,
    },
    /// A memory note forgotten.
    NoteForget { id: i64, note: String },
    /// A memory note remembered.
    NoteRemember { note: String },
    /// A past session read back.
    Recall { session_id: SessionId },
    /// A plugin (MCP) server's tool called with these arguments.
    PluginCall {
        server: String,
        tool: String,
        #[ts(type = "unknown")]
        arguments: Box<Value>,
    },
    /// A sub-task handed to another Deskhand agent: to whom, and what.
    Delegate(Box<DelegateDetail>),
    /// A `ui` action that only reads the element tree.
    UiRead { action: String },
    /// Nothing to show beyond the summary (a search, the plan tool).
    #[default]
    None,
}

/// A sub-task handed to another Deskhand agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct DelegateDetail {
    pub to: String,
    /// The remote's name and URL, or a new agent desktop on this machine.
    pub target: String,
    pub prompt: String,
    pub max_turns: u32,
    pub max_cost_usd: Option<f64>,
    pub timeout_secs: u64,
}

/// Where a pointer action lands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct PointerDetail {
    /// The computer or `ui` action, e.g. `left_click`.
    pub action: String,
    /// The `ui` tool's element ref.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reference: Option<String>,
    /// The monitor the computer tool acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub monitor: Option<usize>,
    /// The points in the screenshot's space, in order (a drag's start, then its end).
    pub model_points: Vec<[u32; 2]>,
    /// The same points on the desktop.
    pub screen_points: Vec<ScreenPoint>,
    /// The size of the screenshots the model sees.
    pub model_size: Size,
}

/// A point on the desktop, in screen pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct ScreenPoint {
    pub x: i32,
    pub y: i32,
}

/// A safety check a model service raised about an action (OpenAI's `pending_safety_checks`),
/// which only a person may acknowledge. Every field is kept as the service sent it, empty
/// when it sent none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
#[serde(default)]
pub struct SafetyCheck {
    pub id: String,
    pub code: String,
    pub message: String,
}

impl PointerDetail {
    /// `action` at `points`: each in the screenshot's space (of size `model`) and on the
    /// desktop.
    pub fn new(
        action: &str,
        model: Size,
        points: impl IntoIterator<Item = ([u32; 2], (i32, i32))>,
    ) -> Self {
        let (model_points, screen_points) = points
            .into_iter()
            .map(|(m, (x, y))| (m, ScreenPoint { x, y }))
            .unzip();
        Self {
            action: action.into(),
            reference: None,
            monitor: None,
            model_points,
            screen_points,
            model_size: model,
        }
    }
}

impl ActionDetail {
    /// The file a file action reads or writes.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::FileEdit { path, .. } | Self::FileView { path } => Some(path),
            _ => None,
        }
    }

    /// The unified diff a file write is approved by.
    pub fn diff(&self) -> Option<&str> {
        match self {
            Self::FileEdit { diff, .. } => Some(diff),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every variant reads back as itself from the JSON it writes, which is the shape the
    /// window, the local API and stored approvals have always had.
    #[test]
    fn each_kind_keeps_its_wire_shape_and_reads_back() {
        let model = Size::new(1366, 768);
        let click = ActionDetail::Pointer(Box::new(PointerDetail {
            monitor: Some(0),
            ..PointerDetail::new("left_click", model, [([683, 384], (960, 540))])
        }));
        let element = ActionDetail::Pointer(Box::new(PointerDetail {
            reference: Some("e3".into()),
            ..PointerDetail::new("click", model, [([10, 20], (14, 28))])
        }));
        for (detail, wire) in [
            (
                click,
                json!({"action": "left_click", "monitor": 0, "model_points": [[683, 384]],
                       "screen_points": [{"x": 960, "y": 540}],
                       "model_size": {"width": 1366, "height": 768}}),
            ),
            (
                element,
                json!({"action": "click", "ref": "e3", "model_points": [[10, 20]],
                       "screen_points": [{"x": 14, "y": 28}],
                       "model_size": {"width": 1366, "height": 768}}),
            ),
            (
                ActionDetail::Command {
                    command: "ls".into(),
                    timeout_s: 30.0,
                },
                json!({"command": "ls", "timeout_s": 30.0}),
            ),
            (
                ActionDetail::Restart { restart: true },
                json!({"restart": true}),
            ),
            (
                ActionDetail::FileEdit {
                    path: "/a".into(),
                    diff: "-x\n+y\n".into(),
                },
                json!({"path": "/a", "diff": "-x\n+y\n"}),
            ),
            (
                ActionDetail::FileView { path: "/a".into() },
                json!({"path": "/a"}),
            ),
            (
                ActionDetail::NoteUpdate {
                    id: 3,
                    before: "a".into(),
                    note: "b".into(),
                },
                json!({"id": 3, "before": "a", "note": "b"}),
            ),
            (
                ActionDetail::NoteForget {
                    id: 3,
                    note: "a".into(),
                },
                json!({"id": 3, "note": "a"}),
            ),
            (
                ActionDetail::NoteRemember { note: "a".into() },
                json!({"note": "a"}),
            ),
            (
                ActionDetail::Recall {
                    session_id: "s1".into(),
                },
                json!({"session_id": "s1"}),
            ),
            (
                ActionDetail::PluginCall {
                    server: "time".into(),
                    tool: "now".into(),
                    arguments: Box::new(json!({"tz": "UTC"})),
                },
                json!({"server": "time", "tool": "now", "arguments": {"tz": "UTC"}}),
            ),
            (
                ActionDetail::UiRead {
                    action: "find".into(),
                },
                json!({"action": "find"}),
            ),
            (ActionDetail::None, Value::Null),
        ] {
            assert_eq!(serde_json::to_value(&detail).unwrap(), wire);
            assert_eq!(
                serde_json::from_value::<ActionDetail>(wire.clone()).unwrap(),
                detail,
                "{wire}"
            );
        }
    }
}

/// What a tool call will do, as the approval gate and the person see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct ActionPlan {
    /// What "always allow this kind" allows, e.g. `computer.left_click` or `bash`.
    pub kind: String,
    /// Read-only actions (a screenshot, viewing a file) pass the gate without asking, except
    /// reads of secret places (`agent::SecretPlaces`, found by the detail's `path`).
    pub read_only: bool,
    /// One line for a prompt, e.g. "left_click at (640, 400) → screen (960, 600)".
    pub summary: String,
    /// What a window draws for this kind of action: screen points, the command, a diff.
    #[serde(default)]
    pub detail: ActionDetail,
    /// The action captures the screen or sends it input. A front end with a window on the
    /// same screen gets out of the way for it (its window must never be clicked, typed into
    /// or seen); the tool that plans the action says so, whatever its name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<_>", optional)]
    pub on_screen: bool,
    /// The safety checks the model service raised about this call, which only a person may
    /// acknowledge (see `agent::approval::with_safety_checks`). Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<_>", optional)]
    pub safety_checks: Vec<SafetyCheck>,
    /// For a click, drag or type at a point: the element there, found before asking.
    /// Absent for actions without a point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub target: Option<Box<Target>>,
}

/// What an input action will touch, found by a hit test before the person is asked: the
/// approval says it in words. `known: false` says nothing is known there (no tree, or no
/// element under the point); approvals then say so and never guess.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, ts_rs::TS, JsonSchema,
)]
pub struct Target {
    pub known: bool,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub app: String,
    /// The name is on the sensitive list: auto mode asks before a click on it.
    #[serde(default)]
    pub sensitive: bool,
    /// With `known: false`, why the tree could not be asked (no accessibility bus, a tree
    /// that did not answer); absent when it was asked and no element is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub why: Option<String>,
}

impl Target {
    /// "**Delete** (push button) in Mousepad", or that nothing is known. A very long name is
    /// shortened, saying so and how long it is (`approver`'s `v` key shows it whole). What
    /// came from the screen is escaped (`emphasis`), so that a `*` in it stays text.
    pub fn describe(&self) -> String {
        if !self.known {
            let why = self.why.as_deref().unwrap_or("no accessible element there");
            return format!("an unknown target ({why})");
        }
        let name = if self.name.is_empty() {
            "unnamed".to_string()
        } else {
            let (start, rest) = crate::visible::shortened(&self.name, crate::visible::NAME_CHARS);
            format!("**{}**{rest}", escape(start))
        };
        let place = if self.app.is_empty() {
            String::new()
        } else {
            format!(" in {}", escape(&self.app))
        };
        format!("{name} ({}){place}", escape(&self.role))
    }
}
