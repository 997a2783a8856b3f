//! The `ui` tool: acts on named elements of the element map (`deskhand_platform::elements`) rather than
//! on pixels, for any provider (a plain custom tool / function). Clicks and typing become the
//! computer tool's own actions at the element's centre, so they pass the same approval gate,
//! input path, settle detection and screenshot; each result names the element acted on.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::computer::ComputerTool;
use super::computer::screen::Frame;
use super::{
    ActionDetail, ActionPlan, PointerDetail, Tool, ToolContext, ToolError, ToolOutput, TypedTool,
    input,
};
use deskhand_llm::{ToolDefinition, ToolResultContent};
use deskhand_platform::elements::refs::RefBook;
use deskhand_platform::elements::{Element, MAX_LISTED, Origin, Snapshot, Tree};
use deskhand_protocol::scaling::Geometry;

pub const NAME: &str = "ui";

// A call's input. No doc comments: the schema the model receives carries no descriptions
// (the tool's description explains the actions).
#[derive(Deserialize, JsonSchema)]
pub struct UiInput {
    action: UiAction,
    query: Option<String>,
    role: Option<String>,
    name: Option<String>,
    #[serde(rename = "ref")]
    reference: Option<String>,
    text: Option<String>,
}

// serde reads the names that strum writes, both in snake_case.
#[derive(Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
enum UiAction {
    Find,
    Click,
    DoubleClick,
    Type,
    Read,
    Elements,
}

impl UiAction {
    fn name(self) -> &'static str {
        self.into()
    }
}

pub struct UiTool {
    inner: Arc<Inner>,
}

/// Shared with the blocking task that reads the tree or the screen's words.
struct Inner {
    computer: ComputerTool,
    /// Shared with the computer tool, whose set-of-marks lists refs too.
    refs: Arc<Mutex<RefBook>>,
    tree: Arc<dyn Tree>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The words the last OCR read, and the frame they were read from: a word's ref is good
    /// only while the screen still shows that word where it was.
    words: Vec<Element>,
    words_frame: Option<Frame>,
}

/// What a call acts on: a ref, or a role and name that match exactly one element.
fn target_of(input: &UiInput) -> Result<Target<'_>, ToolError> {
    if let Some(r) = &input.reference {
        return Ok(Target::Ref(r));
    }
    match (&input.role, &input.name) {
        (Some(role), Some(name)) => Ok(Target::Named { role, name }),
        _ => Err(ToolError::InvalidInput(
            "give `ref`, or both `role` and `name`, of the element to act on".into(),
        )),
    }
}

enum Target<'a> {
    Ref(&'a str),
    Named { role: &'a str, name: &'a str },
}

impl UiTool {
    pub fn new(computer: ComputerTool, tree: Arc<dyn Tree>) -> Self {
        Self {
            inner: Arc::new(Inner {
                refs: computer.refs(),
                computer,
                tree,
                state: Mutex::default(),
            }),
        }
    }
}

impl Inner {
    fn refs(&self) -> std::sync::MutexGuard<'_, RefBook> {
        self.refs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tree now, plus the last OCR words; a tree that cannot be read leaves the words
    /// and a note saying why.
    fn snapshot(&self) -> Snapshot {
        let mut snapshot = self.tree.snapshot().unwrap_or_else(|e| Snapshot {
            elements: Vec::new(),
            notes: vec![e.to_string()],
        });
        snapshot.elements.extend(self.state().words.iter().cloned());
        snapshot
    }

    fn on_screen<'a>(&self, elements: impl IntoIterator<Item = &'a Element>) -> Vec<&'a Element> {
        let mapping = self.computer.mapping();
        elements
            .into_iter()
            .filter(|e| e.bounds.to_model(&mapping).is_some())
            .collect()
    }

    fn listing(&self, elements: &[&Element]) -> Vec<Value> {
        let mapping = self.computer.mapping();
        let mut refs = self.refs();
        elements
            .iter()
            .map(|e| e.to_json(&refs.reference(e), &mapping))
            .collect()
    }

    /// The one element `input` names in `snapshot`, or why there is not exactly one.
    fn resolve(
        &self,
        input: &UiInput,
        snapshot: &Snapshot,
    ) -> Result<(Element, String), ToolError> {
        match target_of(input)? {
            Target::Ref(r) => {
                let element = self
                    .refs()
                    .resolve(r, snapshot)
                    .map_err(|e| ToolError::NotFound(e.to_string()))?
                    .clone();
                if element.origin == Origin::Ocr {
                    let now = self
                        .computer
                        .capture()
                        .map_err(|e| ToolError::Unavailable(e.to_string()))?;
                    // Only the word's own box counts: the rest of the screen may change (a
                    // clock, or the window's bar, which is up while an action is planned).
                    let geometry = self.computer.mapping().geometry;
                    let state = self.state();
                    let then = state.words_frame.as_ref();
                    if !then.is_some_and(|then| same_box(then, &now, &geometry, &element)) {
                        return Err(ToolError::NotFound(format!(
                            "the screen changed since `find` read the word `{r}`; nothing was \
                             done. `find` it again"
                        )));
                    }
                }
                Ok((element, r.to_string()))
            }
            Target::Named { role, name } => {
                let on_screen = self.on_screen(&snapshot.elements);
                let same_role: Vec<&Element> = on_screen
                    .iter()
                    .copied()
                    .filter(|e| e.role.eq_ignore_ascii_case(role))
                    .collect();
                let exact: Vec<&Element> = same_role
                    .iter()
                    .copied()
                    .filter(|e| e.name == name)
                    .collect();
                match exact.as_slice() {
                    [one] => {
                        let one = (*one).clone();
                        let r = self.refs().reference(&one);
                        Ok((one, r))
                    }
                    [] => {
                        let near: Vec<&Element> = same_role.into_iter().take(20).collect();
                        Err(ToolError::NotFound(format!(
                            "no {role} named {name:?} is showing; the {role}s showing: {}",
                            Value::from(self.listing(&near))
                        )))
                    }
                    several => Err(ToolError::InvalidInput(format!(
                        "{} elements are a {role} named {name:?}; give the `ref` of one: {}",
                        several.len(),
                        Value::from(self.listing(several))
                    ))),
                }
            }
        }
    }

    /// The model point at the element's centre.
    fn centre(&self, element: &Element) -> Result<(u32, u32), ToolError> {
        let (x, y) = element.bounds.centre();
        self.computer.mapping().to_model(x, y).ok_or_else(|| {
            ToolError::OutOfRange(format!(
                "{} is not on the screen the model sees",
                element.describe()
            ))
        })
    }

    fn find(&self, input: &UiInput) -> Result<Value, ToolError> {
        let text = input.query.as_deref().filter(|q| !q.is_empty());
        let role = input.role.as_deref();
        if text.is_none() && role.is_none() {
            return Err(ToolError::InvalidInput(
                "`find` needs `query`, `role`, or both".into(),
            ));
        }
        let snapshot = self.snapshot();
        // Words of an earlier OCR are not looked at: the screen may have changed since.
        let found = self.on_screen(
            snapshot
                .find(text, role)
                .into_iter()
                .filter(|e| e.origin == Origin::Tree),
        );
        let mut notes = snapshot.notes.clone();
        if !found.is_empty() || text.is_none() {
            return Ok(json!({"elements": self.listing(&found), "notes": notes}));
        }
        // Not in the tree: read the words on the screen.
        let words = self.ocr()?;
        let matching: Vec<&Element> = words
            .iter()
            .filter(|w| {
                w.name
                    .to_lowercase()
                    .contains(&text.unwrap_or("").to_lowercase())
            })
            .collect();
        notes.push(format!(
            "not in the accessibility tree; {} matching word(s) read by OCR",
            matching.len()
        ));
        Ok(json!({"elements": self.listing(&matching), "notes": notes}))
    }

    /// OCR of the screen now; the words are kept for the refs given to them.
    fn ocr(&self) -> Result<Vec<Element>, ToolError> {
        let unavailable = |e: &dyn std::fmt::Display| ToolError::Unavailable(e.to_string());
        let frame = self.computer.capture().map_err(|e| unavailable(&e))?;
        let mut geometry = self.computer.mapping().geometry;
        geometry.pixels = frame.size;
        let words = deskhand_platform::elements::ocr::words(&frame, &geometry)
            .map_err(|e| unavailable(&e))?;
        let mut state = self.state();
        state.words = words.clone();
        state.words_frame = Some(frame);
        Ok(words)
    }

    fn elements(&self) -> Value {
        let snapshot = self.snapshot();
        let tree: Vec<&Element> = snapshot
            .elements
            .iter()
            .filter(|e| e.origin == Origin::Tree)
            .collect();
        let focused: Vec<&Element> = tree.iter().copied().filter(|e| e.focused_window).collect();
        let shown = self.on_screen(if focused.is_empty() { tree } else { focused });
        let mut notes = snapshot.notes.clone();
        if shown.len() > MAX_LISTED {
            notes.push(format!(
                "{} more elements are not listed; use `find` to look for one",
                shown.len() - MAX_LISTED
            ));
        }
        let listed = &shown[..shown.len().min(MAX_LISTED)];
        json!({"elements": self.listing(listed), "notes": notes})
    }

    /// Everything a call does before any input: answers for the read-only actions, the
    /// element and its centre for the others.
    fn prepare(&self, input: &UiInput) -> Result<Acted, ToolError> {
        match input.action {
            UiAction::Find => self.find(input).map(Acted::Answer),
            UiAction::Elements => Ok(Acted::Answer(self.elements())),
            UiAction::Read => {
                let snapshot = self.snapshot();
                let (element, reference) = self.resolve(input, &snapshot)?;
                Ok(Acted::Answer(json!({
                    "ref": reference,
                    "role": element.role,
                    "name": element.name,
                    "text": element.text.clone().unwrap_or_else(|| element.name.clone()),
                })))
            }
            UiAction::Click | UiAction::DoubleClick | UiAction::Type => {
                let snapshot = self.snapshot();
                let (element, reference) = self.resolve(input, &snapshot)?;
                let (x, y) = self.centre(&element)?;
                Ok(Acted::Target(Box::new(element), reference, x, y))
            }
        }
    }

    /// Runs a computer action, read as the computer tool reads the model's, so it is checked
    /// the same way.
    async fn act(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        Tool::run(&self.computer, &input, ctx).await
    }
}

fn json_output(value: Value) -> ToolOutput {
    ToolOutput::text(value.to_string())
}

#[async_trait]
impl TypedTool for UiTool {
    type Input = UiInput;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: NAME.into(),
            description: format!(
                "Act on the screen's UI elements by name instead of by pixels, from the \
                 accessibility tree (and OCR words where an app has no tree). Actions: `find` \
                 (`query` text and/or `role`, e.g. \"push button\") answers matching elements \
                 with a `ref`, role, name and bounds [x, y, width, height] in the {} screenshot's \
                 pixels; `elements` lists what is showing in the focused window (at most {MAX_LISTED}); \
                 `click`, `double_click` act on `ref`, or on `role` and `name` that match exactly \
                 one element; `type` focuses such an element and types `text`; `read` returns its \
                 text. A ref stays good while its element exists. Clicks and typing answer with \
                 a new screenshot.",
                self.inner.computer.mapping().model
            ),
            input_schema: input::schema::<UiInput>(),
            anthropic: None,
        }
    }

    fn read(&self, input: &Value) -> Result<UiInput, ToolError> {
        input::read(NAME, input)
    }

    fn plan(&self, input: &UiInput) -> Result<ActionPlan, ToolError> {
        let action = input.action.name();
        let read_only = matches!(
            input.action,
            UiAction::Find | UiAction::Read | UiAction::Elements
        );
        if read_only {
            return Ok(ActionPlan {
                kind: format!("ui.{action}"),
                read_only: true,
                summary: format!("ui {action}"),
                detail: ActionDetail::UiRead {
                    action: action.into(),
                },
                // A `find` that the tree cannot answer reads the words on the screen.
                on_screen: input.action == UiAction::Find && input.query.is_some(),
                safety_checks: Vec::new(),
                target: None,
            });
        }
        if input.action == UiAction::Type && input.text.is_none() {
            return Err(ToolError::InvalidInput("`type` needs `text`".into()));
        }
        let snapshot = self.inner.snapshot();
        let (element, reference) = self.inner.resolve(input, &snapshot)?;
        let (mx, my) = self.inner.centre(&element)?;
        let (sx, sy) = self.inner.computer.mapping().to_screen(mx, my);
        let verb = match input.action {
            UiAction::Click => "Click",
            UiAction::DoubleClick => "Double-click",
            _ => "Type into",
        };
        let mut summary = format!("{verb} {}", element.describe());
        if let Some(text) = &input.text {
            let (start, rest) = deskhand_protocol::visible::shortened(
                text,
                deskhand_protocol::visible::TYPED_CHARS,
            );
            // Typed text is the model's: its `*` must not turn into emphasis.
            let typed = deskhand_protocol::emphasis::escape(&format!("{start:?}"));
            summary.push_str(&format!(": {typed}{rest}"));
        }
        Ok(ActionPlan {
            kind: format!("ui.{action}"),
            read_only: false,
            summary,
            detail: ActionDetail::Pointer(Box::new(PointerDetail {
                reference: Some(reference),
                ..PointerDetail::new(
                    action,
                    self.inner.computer.mapping().model,
                    [([mx, my], (sx, sy))],
                )
            })),
            on_screen: true,
            safety_checks: Vec::new(),
            target: Some(Box::new(element.target())),
        })
    }

    async fn run(&self, input: UiInput, ctx: &ToolContext) -> ToolOutput {
        let (action, text) = (input.action, input.text.clone());
        let this = self.inner.clone();
        let prepared = tokio::task::spawn_blocking(move || this.prepare(&input)).await;
        let (element, reference, x, y) = match prepared {
            Ok(Ok(Acted::Answer(value))) => return json_output(value),
            Ok(Ok(Acted::Target(e, r, x, y))) => (e, r, x, y),
            Ok(Err(e)) => return e.into(),
            Err(e) => return ToolOutput::error(format!("ui {} failed: {e}", action.name())),
        };
        let double = action == UiAction::DoubleClick;
        let click = if double { "double_click" } else { "left_click" };
        let mut out = self
            .inner
            .act(json!({"action": click, "coordinate": [x, y]}), ctx)
            .await;
        let mut said = format!(
            "{} {} (ref {reference}) at ({x}, {y})",
            if double { "double-clicked" } else { "clicked" },
            element.describe()
        );
        if action == UiAction::Type && !out.is_error {
            let text = text.unwrap_or_default();
            out = self
                .inner
                .act(json!({"action": "type", "text": text}), ctx)
                .await;
            said = format!("typed into {} (ref {reference})", element.describe());
        }
        if !out.is_error {
            out.content
                .insert(0, ToolResultContent::Text { text: said });
        }
        out
    }
}

/// Whether frames `then` and `now` of the monitor `geometry` describes show the same pixels in
/// `element`'s box (desktop input units, as the element map gives bounds).
fn same_box(then: &Frame, now: &Frame, geometry: &Geometry, element: &Element) -> bool {
    if then.size != now.size || geometry.input.width == 0 || geometry.input.height == 0 {
        return false;
    }
    let (width, height) = (now.size.width as i64, now.size.height as i64);
    let to_pixels = |v: i32, origin: i32, pixels: i64, input: u32| {
        ((i64::from(v) - i64::from(origin)) * pixels / i64::from(input)).clamp(0, pixels)
    };
    let b = element.bounds;
    let x = |v: i32| to_pixels(v, geometry.x, width, geometry.input.width) as usize;
    let y = |v: i32| to_pixels(v, geometry.y, height, geometry.input.height) as usize;
    let (left, right, top, bottom) = (x(b.x), x(b.x + b.width), y(b.y), y(b.y + b.height));
    (top..bottom).all(|line| {
        let start = (line * width as usize + left) * 4;
        let span = start..start + (right - left) * 4;
        let before = then.rgba.get(span.clone());
        before.is_some() && before == now.rgba.get(span)
    })
}

enum Acted {
    Answer(Value),
    Target(Box<Element>, String, u32, u32),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::computer::input::RecordingInput;
    use crate::computer::screen::FakeScreen;
    use crate::computer::settle::SettlePolicy;
    use crate::computer::version::ToolVersion;
    use deskhand_platform::elements::fixtures::element;
    use deskhand_platform::elements::{FakeTree, Rect};

    fn elements_call() -> UiInput {
        input::read(NAME, &json!({"action": "elements"})).unwrap()
    }

    /// The tool over a fake 1920x1080 screen and `snapshot` as the tree.
    fn ui(snapshot: Snapshot) -> UiTool {
        let computer = ComputerTool::new(
            Arc::new(FakeScreen::single(1920, 1080)),
            Box::new(RecordingInput::default()),
            None,
            None,
            ToolVersion::V20251124,
            SettlePolicy {
                floor: Duration::from_millis(1),
                interval: Duration::from_millis(1),
                cap: Duration::from_millis(100),
            },
        )
        .unwrap();
        UiTool::new(computer, Arc::new(FakeTree(snapshot)))
    }

    /// The schema derived from `UiInput` is the one the model was always sent, written out
    /// by hand before the input was typed.
    #[test]
    fn the_derived_schema_is_the_one_the_model_always_got() {
        let actions = ["find", "click", "double_click", "type", "read", "elements"];
        let before = json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": actions},
                "query": {"type": "string"},
                "role": {"type": "string"},
                "name": {"type": "string"},
                "ref": {"type": "string"},
                "text": {"type": "string"},
            },
            "required": ["action"],
        });
        let now = input::schema::<UiInput>();
        assert_eq!(now, before);
        assert_eq!(
            now.to_string(),
            before.to_string(),
            "the same text on the wire"
        );
    }

    #[test]
    fn elements_lists_the_focused_window_capped_with_a_note_of_the_rest() {
        let mut elements: Vec<Element> = (0..MAX_LISTED + 40)
            .map(|i| {
                let (x, y) = (10 + (i % 40) as i32 * 40, 10 + (i / 40) as i32 * 30);
                element(
                    &format!("/{i}"),
                    "check box",
                    &format!("Option {i}"),
                    (x, y, 30, 20),
                )
            })
            .collect();
        let mut other = element("/other", "push button", "Elsewhere", (900, 900, 80, 30));
        other.focused_window = false;
        let mut off_screen = element("/off", "push button", "Off", (5000, 10, 80, 30));
        off_screen.focused_window = true;
        elements.extend([other, off_screen]);
        let tool = ui(Snapshot {
            elements,
            notes: vec!["an app did not answer".into()],
        });
        let Ok(Acted::Answer(answer)) = tool.inner.prepare(&elements_call()) else {
            panic!("elements answers at once");
        };
        let listed = answer["elements"].as_array().unwrap();
        assert_eq!(listed.len(), MAX_LISTED);
        assert_eq!(listed[0]["name"], "Option 0");
        assert_eq!(
            listed[MAX_LISTED - 1]["name"],
            format!("Option {}", MAX_LISTED - 1)
        );
        assert!(
            listed
                .iter()
                .all(|e| e["name"] != "Elsewhere" && e["name"] != "Off"),
            "only the focused window's elements on the screen"
        );
        assert_eq!(
            answer["notes"],
            json!([
                "an app did not answer",
                "40 more elements are not listed; use `find` to look for one"
            ])
        );
    }

    #[test]
    fn elements_lists_every_window_when_none_is_focused_and_has_no_note_under_the_cap() {
        let mut a = element("/a", "push button", "Save", (10, 10, 80, 30));
        let mut b = element("/b", "push button", "Open", (100, 10, 80, 30));
        a.focused_window = false;
        b.focused_window = false;
        let tool = ui(Snapshot {
            elements: vec![a, b],
            notes: Vec::new(),
        });
        let Ok(Acted::Answer(answer)) = tool.inner.prepare(&elements_call()) else {
            panic!("elements answers at once");
        };
        let names: Vec<&str> = answer["elements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Save", "Open"]);
        assert_eq!(answer["notes"], json!([]));
    }

    #[test]
    fn double_click_by_name_is_planned_at_the_elements_centre_and_named() {
        let tool = ui(Snapshot {
            elements: vec![element(
                "/r",
                "list item",
                "Report.txt",
                (100, 200, 300, 40),
            )],
            notes: Vec::new(),
        });
        let plan = Tool::plan(
            &tool,
            &json!({"action": "double_click", "role": "list item", "name": "Report.txt"}),
        )
        .unwrap();
        assert_eq!(plan.kind, "ui.double_click");
        assert_eq!(
            plan.summary,
            "Double-click **Report.txt** (list item) in Mousepad"
        );
        let (x, y) = Rect {
            x: 100,
            y: 200,
            width: 300,
            height: 40,
        }
        .centre();
        let (mx, my) = tool.inner.computer.mapping().to_model(x, y).unwrap();
        let ActionDetail::Pointer(pointer) = &plan.detail else {
            panic!(
                "a double-click is planned as a pointer action: {:?}",
                plan.detail
            );
        };
        assert_eq!(pointer.model_points[0], [mx, my]);
    }
}
