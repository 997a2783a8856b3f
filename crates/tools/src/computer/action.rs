//! A computer tool call's input: `ComputerInput`, the type a call is read into and its
//! schema is derived from, and `Action`, the checked action it converts to. Anything wrong is
//! refused here, with a message naming the problem, before anything is performed.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use strum::{EnumIter, IntoEnumIterator, IntoStaticStr};

use super::keys::{self, Combo};
use super::scaling::Size;
use super::version::ToolVersion;
use crate::ToolError;

/// A point in the screenshot's pixel space, known to be inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub x: u32,
    pub y: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Click {
    Left,
    Right,
    Middle,
    Double,
    Triple,
}

// No doc comments on the input's types and fields: the schema the model receives carries no
// descriptions (the tool's description explains every action), and schemars would add them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScrollDirection {
    Up,
    Down,
    Left,
    Right,
}

// The actions in the schema's order; `zoom` only for the versions that have it. serde and
// strum both name them in snake_case: the name read and the name shown cannot disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema, EnumIter, IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ActionName {
    Screenshot,
    LeftClick,
    RightClick,
    MiddleClick,
    DoubleClick,
    TripleClick,
    MouseMove,
    LeftClickDrag,
    LeftMouseDown,
    LeftMouseUp,
    Scroll,
    Type,
    Key,
    HoldKey,
    Wait,
    CursorPosition,
    Zoom,
}

// A call's input as the model sends it: every parameter of every action, each optional
// (`null` counts as absent). `ComputerInput::check` makes it an `Action`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ComputerInput {
    pub action: ActionName,
    coordinate: Option<[u64; 2]>,
    start_coordinate: Option<[u64; 2]>,
    pub text: Option<String>,
    key: Option<String>,
    scroll_direction: Option<ScrollDirection>,
    #[schemars(range(min = 1, max = MAX_SCROLL))]
    scroll_amount: Option<u64>,
    #[schemars(range(min = 0, max = MAX_DURATION_S))]
    duration: Option<f64>,
    region: Option<[u64; 4]>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Screenshot,
    Click {
        click: Click,
        at: Option<Point>,
        modifiers: Combo,
    },
    MouseMove {
        to: Point,
    },
    Drag {
        from: Option<Point>,
        to: Point,
        modifiers: Combo,
    },
    MouseDown {
        at: Option<Point>,
    },
    MouseUp {
        at: Option<Point>,
    },
    Scroll {
        at: Option<Point>,
        direction: ScrollDirection,
        amount: u32,
        modifiers: Combo,
    },
    Type {
        text: String,
    },
    Key {
        combos: Vec<Combo>,
    },
    HoldKey {
        keys: Combo,
        duration: Duration,
    },
    Wait {
        duration: Duration,
    },
    CursorPosition,
    Zoom {
        from: Point,
        to: Point,
    },
}

/// The longest `wait` or `hold_key`, as the reference allows.
pub const MAX_DURATION_S: f64 = 100.0;
/// The most wheel clicks in one `scroll`.
pub const MAX_SCROLL: u64 = 100;

impl Action {
    /// Actions that only look: they pass the approval gate by default.
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            Self::Screenshot | Self::CursorPosition | Self::Zoom { .. }
        )
    }

    /// The model points this action acts on, in order (a drag's start, then its end).
    pub fn points(&self) -> Vec<Point> {
        match self {
            Self::Click { at, .. }
            | Self::MouseDown { at }
            | Self::MouseUp { at }
            | Self::Scroll { at, .. } => at.iter().copied().collect(),
            Self::MouseMove { to } => vec![*to],
            Self::Drag { from, to, .. } => from.iter().copied().chain([*to]).collect(),
            Self::Zoom { from, to } => vec![*from, *to],
            _ => Vec::new(),
        }
    }
}

impl ActionName {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The actions `version` offers.
    pub fn of(version: ToolVersion) -> impl Iterator<Item = Self> {
        Self::iter().filter(move |a| *a != Self::Zoom || version.has_zoom())
    }

    /// The parameters the action takes besides `action`. Any other one is refused rather
    /// than ignored: `type` with a `coordinate` would type wherever the focus is while the
    /// model believes the text landed where it pointed.
    fn parameters(self) -> &'static [&'static str] {
        match self {
            Self::LeftClick
            | Self::RightClick
            | Self::MiddleClick
            | Self::DoubleClick
            | Self::TripleClick => &["coordinate", "text", "key"],
            Self::MouseMove | Self::LeftMouseDown | Self::LeftMouseUp => &["coordinate"],
            Self::LeftClickDrag => &["start_coordinate", "coordinate", "text", "key"],
            Self::Scroll => &[
                "coordinate",
                "scroll_direction",
                "scroll_amount",
                "text",
                "key",
            ],
            Self::Type | Self::Key => &["text"],
            Self::HoldKey => &["text", "duration"],
            Self::Wait => &["duration"],
            Self::Zoom => &["region"],
            Self::Screenshot | Self::CursorPosition => &[],
        }
    }
}

/// The JSON Schema of the computer tool's input for `version`: without `zoom` and its
/// `region` for the version that lacks it.
pub fn schema(version: ToolVersion) -> Value {
    let mut schema = super::super::input::schema::<ComputerInput>();
    if !version.has_zoom() {
        let actions = schema.pointer_mut("/properties/action/enum");
        if let Some(Value::Array(actions)) = actions {
            actions.retain(|name| name != ActionName::Zoom.name());
        }
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.remove("region");
        }
    }
    schema
}

impl ComputerInput {
    /// Reads a call's input; a field of the wrong shape is named, with what it must be.
    pub fn read(input: &Value, version: ToolVersion) -> Result<Self, ToolError> {
        serde_path_to_error::deserialize(input).map_err(|e| {
            let field = match e.path().iter().next() {
                Some(serde_path_to_error::Segment::Map { key }) => key.as_str(),
                _ => "",
            };
            match (field, input.get(field)) {
                ("action", Some(Value::String(name))) => unknown_action(name, version),
                ("action", _) => invalid("`action` must be a string"),
                (_, Some(value)) => invalid(format!(
                    "`{field}` must be {}, not {}",
                    form(field),
                    shown(value)
                )),
                _ if input.is_object() => invalid("missing `action`"),
                _ => invalid(format!(
                    "the input must be a JSON object with an `action`, not {input}"
                )),
            }
        })
    }

    /// The checked action: what a schema cannot say (the action's version, the parameters
    /// it takes, bounds of the screen, key names). `raw` is the input this was read from,
    /// where a parameter no field holds is found.
    pub fn check(
        &self,
        raw: &Value,
        model: Size,
        version: ToolVersion,
    ) -> Result<Action, ToolError> {
        let name = self.action;
        if name == ActionName::Zoom && !version.has_zoom() {
            return Err(unknown_action(name.name(), version));
        }
        only(raw, name)?;
        let at = |field, value| point_opt(field, value, model);
        let click = |click| -> Result<Action, ToolError> {
            Ok(Action::Click {
                click,
                at: at("coordinate", self.coordinate)?,
                modifiers: self.modifiers()?,
            })
        };
        Ok(match name {
            ActionName::Screenshot => Action::Screenshot,
            ActionName::LeftClick => click(Click::Left)?,
            ActionName::RightClick => click(Click::Right)?,
            ActionName::MiddleClick => click(Click::Middle)?,
            ActionName::DoubleClick => click(Click::Double)?,
            ActionName::TripleClick => click(Click::Triple)?,
            ActionName::MouseMove => Action::MouseMove {
                to: point("coordinate", self.coordinate, model)?,
            },
            ActionName::LeftClickDrag => Action::Drag {
                from: at("start_coordinate", self.start_coordinate)?,
                to: point("coordinate", self.coordinate, model)?,
                modifiers: self.modifiers()?,
            },
            ActionName::LeftMouseDown => Action::MouseDown {
                at: at("coordinate", self.coordinate)?,
            },
            ActionName::LeftMouseUp => Action::MouseUp {
                at: at("coordinate", self.coordinate)?,
            },
            ActionName::Scroll => Action::Scroll {
                at: at("coordinate", self.coordinate)?,
                direction: self.scroll_direction.ok_or_else(|| {
                    invalid("missing `scroll_direction` (up, down, left or right)")
                })?,
                amount: self.scroll_amount()?,
                modifiers: self.modifiers()?,
            },
            ActionName::Type => Action::Type {
                text: filled("text", self.text.as_deref())?.to_string(),
            },
            ActionName::Key => Action::Key {
                combos: keys::parse(filled("text", self.text.as_deref())?)
                    .map_err(|e| invalid(e.to_string()))?,
            },
            ActionName::HoldKey => {
                let text = filled("text", self.text.as_deref())?;
                let [keys] =
                    <[Combo; 1]>::try_from(keys::parse(text).map_err(|e| invalid(e.to_string()))?)
                        .map_err(|_| {
                            invalid(format!("`hold_key` holds one key combo, not `{text}`"))
                        })?;
                let duration = self.duration()?;
                Action::HoldKey { keys, duration }
            }
            ActionName::Wait => Action::Wait {
                duration: self.duration()?,
            },
            ActionName::CursorPosition => Action::CursorPosition,
            ActionName::Zoom => {
                let (from, to) = self.region(model)?;
                Action::Zoom { from, to }
            }
        })
    }

    /// The reference reads a click's modifier from `key`; the documentation puts it in `text`.
    fn modifiers(&self) -> Result<Combo, ToolError> {
        let (field, value) = match (&self.text, &self.key) {
            (Some(text), Some(key)) if text != key => {
                return Err(invalid("give the modifier in `text` or in `key`, not both"));
            }
            (Some(text), _) => ("text", text),
            (None, Some(key)) => ("key", key),
            (None, None) => return Ok(Vec::new()),
        };
        keys::modifiers(filled(field, Some(value.as_str()))?)
            .map_err(|e| invalid(format!("`{field}`: {e}")))
    }

    fn scroll_amount(&self) -> Result<u32, ToolError> {
        let missing = || invalid("missing `scroll_amount` (wheel clicks, at least 1)");
        match self.scroll_amount.ok_or_else(missing)? {
            n @ 1..=MAX_SCROLL => Ok(n as u32),
            n => Err(ToolError::OutOfRange(format!(
                "`scroll_amount` must be {}, not {n}",
                form("scroll_amount")
            ))),
        }
    }

    fn duration(&self) -> Result<Duration, ToolError> {
        match self
            .duration
            .ok_or_else(|| invalid("missing `duration` (seconds)"))?
        {
            s if (0.0..=MAX_DURATION_S).contains(&s) => Ok(Duration::from_secs_f64(s)),
            s => Err(ToolError::OutOfRange(format!(
                "`duration` must be {}, not {s}",
                form("duration")
            ))),
        }
    }

    /// The zoomed region's corners: inside the screen, and not empty.
    fn region(&self, model: Size) -> Result<(Point, Point), ToolError> {
        let [x1, y1, x2, y2] = self
            .region
            .ok_or_else(|| invalid("missing `region` ([x1, y1, x2, y2])"))?;
        let shown = format!("`region` [{x1}, {y1}, {x2}, {y2}]");
        let Size { width, height } = model;
        if x1.max(x2) > u64::from(width) || y1.max(y2) > u64::from(height) {
            return Err(ToolError::OutOfRange(format!(
                "{shown} is outside the screen ({width}x{height})"
            )));
        }
        if x1 >= x2 || y1 >= y2 {
            return Err(invalid(format!(
                "{shown} is empty: x1 < x2 and y1 < y2 are needed"
            )));
        }
        let point = |x, y| Point {
            x: x as u32,
            y: y as u32,
        };
        Ok((point(x1, y1), point(x2, y2)))
    }
}

/// What each parameter must be, for the message about one that is not.
fn form(field: &str) -> String {
    match field {
        "coordinate" | "start_coordinate" => "[x, y], two non-negative integers".into(),
        "region" => "[x1, y1, x2, y2], four non-negative integers".into(),
        "scroll_direction" => "up, down, left or right".into(),
        "scroll_amount" => format!("an integer from 1 to {MAX_SCROLL}"),
        "duration" => format!("a number of seconds from 0 to {MAX_DURATION_S}"),
        _ => "a string".into(),
    }
}

/// A value as a message shows it: text in backticks, anything else as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => format!("`{text}`"),
        other => other.to_string(),
    }
}

/// A call the tool does not take, in words.
fn invalid(text: impl Into<String>) -> ToolError {
    ToolError::InvalidInput(text.into())
}

fn unknown_action(name: &str, version: ToolVersion) -> ToolError {
    let known: Vec<&str> = ActionName::of(version).map(ActionName::name).collect();
    invalid(format!(
        "unknown action `{name}`; the actions are: {}",
        known.join(", ")
    ))
}

/// Refuses a parameter `action` does not take (`null` counts as absent).
fn only(raw: &Value, action: ActionName) -> Result<(), ToolError> {
    let takes = action.parameters();
    let mut fields = raw.as_object().into_iter().flatten();
    let Some((extra, _)) = fields.find(|(name, value)| {
        *name != "action" && !value.is_null() && !takes.contains(&name.as_str())
    }) else {
        return Ok(());
    };
    let takes = match takes {
        [] => "no other parameter".to_string(),
        some => format!("only `{}`", some.join("`, `")),
    };
    let hint = match (action, extra.as_str()) {
        (ActionName::Type | ActionName::Key, "coordinate") => {
            " (it acts at the keyboard focus: click the place first with `left_click`, then send it)"
        }
        _ => "",
    };
    Err(invalid(format!(
        "`{}` does not take `{extra}`; it takes {takes}{hint}. Nothing was done.",
        action.name()
    )))
}

/// A text parameter the action needs, not empty.
fn filled<'a>(field: &str, value: Option<&'a str>) -> Result<&'a str, ToolError> {
    match value {
        None => Err(invalid(format!("missing `{field}`"))),
        Some("") => Err(invalid(format!("`{field}` is empty"))),
        Some(text) => Ok(text),
    }
}

fn point(field: &str, value: Option<[u64; 2]>, model: Size) -> Result<Point, ToolError> {
    point_opt(field, value, model)?
        .ok_or_else(|| invalid(format!("missing `{field}` ([x, y] in screenshot pixels)")))
}

fn point_opt(
    field: &str,
    value: Option<[u64; 2]>,
    model: Size,
) -> Result<Option<Point>, ToolError> {
    let Some([x, y]) = value else {
        return Ok(None);
    };
    // The far edge counts, as in the reference implementation: x = width is the last
    // pixel's right edge and maps onto the last pixel.
    let Size { width, height } = model;
    if x > u64::from(width) || y > u64::from(height) {
        return Err(ToolError::OutOfRange(format!(
            "`{field}` [{x}, {y}] is outside the screen ({width}x{height}): x must be 0 to {width}, y 0 to {height}"
        )));
    }
    Ok(Some(Point {
        x: x as u32,
        y: y as u32,
    }))
}

#[cfg(test)]
mod tests {
    use crate::computer::input::Key;
    use serde_json::json;

    use super::*;

    const MODEL: Size = Size::new(1366, 768);

    /// Reads and checks one input, as the tool does.
    fn parse(input: &Value, model: Size, version: ToolVersion) -> Result<Action, ToolError> {
        ComputerInput::read(input, version).and_then(|call| call.check(input, model, version))
    }

    fn ok(input: Value) -> Action {
        parse(&input, MODEL, ToolVersion::V20251124).unwrap_or_else(|e| panic!("{input}: {e}"))
    }

    fn err(input: Value) -> String {
        parse(&input, MODEL, ToolVersion::V20251124)
            .expect_err(&input.to_string())
            .to_string()
    }

    #[test]
    fn every_action_parses() {
        assert_eq!(ok(json!({"action": "screenshot"})), Action::Screenshot);
        assert_eq!(
            ok(json!({"action": "left_click", "coordinate": [10, 20]})),
            Action::Click {
                click: Click::Left,
                at: Some(Point { x: 10, y: 20 }),
                modifiers: vec![]
            }
        );
        assert_eq!(
            ok(json!({"action": "right_click"})),
            Action::Click {
                click: Click::Right,
                at: None,
                modifiers: vec![]
            }
        );
        for (name, click) in [
            ("middle_click", Click::Middle),
            ("double_click", Click::Double),
            ("triple_click", Click::Triple),
        ] {
            assert!(
                matches!(ok(json!({"action": name, "coordinate": [1, 1]})), Action::Click { click: c, .. } if c == click)
            );
        }
        assert_eq!(
            ok(json!({"action": "left_click", "coordinate": [1, 2], "text": "shift"})),
            Action::Click {
                click: Click::Left,
                at: Some(Point { x: 1, y: 2 }),
                modifiers: vec![Key::Shift]
            }
        );
        assert_eq!(
            ok(json!({"action": "left_click", "coordinate": [1, 2], "key": "ctrl+alt"})),
            Action::Click {
                click: Click::Left,
                at: Some(Point { x: 1, y: 2 }),
                modifiers: vec![Key::Control, Key::Alt]
            }
        );
        assert_eq!(
            ok(json!({"action": "mouse_move", "coordinate": [1365, 767]})),
            Action::MouseMove {
                to: Point { x: 1365, y: 767 }
            }
        );
        assert_eq!(
            ok(
                json!({"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [3, 4]})
            ),
            Action::Drag {
                from: Some(Point { x: 1, y: 2 }),
                to: Point { x: 3, y: 4 },
                modifiers: vec![]
            }
        );
        assert_eq!(
            ok(json!({"action": "left_click_drag", "coordinate": [3, 4]})),
            Action::Drag {
                from: None,
                to: Point { x: 3, y: 4 },
                modifiers: vec![]
            }
        );
        assert_eq!(
            ok(json!({"action": "left_mouse_down"})),
            Action::MouseDown { at: None }
        );
        assert_eq!(
            ok(json!({"action": "left_mouse_up", "coordinate": [5, 5]})),
            Action::MouseUp {
                at: Some(Point { x: 5, y: 5 })
            }
        );
        assert_eq!(
            ok(
                json!({"action": "scroll", "coordinate": [5, 6], "scroll_direction": "down", "scroll_amount": 3, "text": "ctrl"})
            ),
            Action::Scroll {
                at: Some(Point { x: 5, y: 6 }),
                direction: ScrollDirection::Down,
                amount: 3,
                modifiers: vec![Key::Control]
            }
        );
        assert_eq!(
            ok(json!({"action": "type", "text": "héllo ✓"})),
            Action::Type {
                text: "héllo ✓".into()
            }
        );
        assert_eq!(
            ok(json!({"action": "key", "text": "ctrl+s"})),
            Action::Key {
                combos: vec![vec![Key::Control, Key::Unicode('s')]]
            }
        );
        assert_eq!(
            ok(json!({"action": "hold_key", "text": "shift", "duration": 0.5})),
            Action::HoldKey {
                keys: vec![Key::Shift],
                duration: Duration::from_millis(500)
            }
        );
        assert_eq!(
            ok(json!({"action": "wait", "duration": 1})),
            Action::Wait {
                duration: Duration::from_secs(1)
            }
        );
        assert_eq!(
            ok(json!({"action": "cursor_position"})),
            Action::CursorPosition
        );
        assert_eq!(
            ok(json!({"action": "zoom", "region": [0, 0, 683, 384]})),
            Action::Zoom {
                from: Point { x: 0, y: 0 },
                to: Point { x: 683, y: 384 }
            }
        );
    }

    #[test]
    fn bad_input_is_refused_with_the_problem_named() {
        for (input, expected) in [
            (json!({}), "missing `action`"),
            (json!({"action": 3}), "`action` must be a string"),
            (
                json!({"action": "fly"}),
                "unknown action `fly`; the actions are: screenshot, left_click",
            ),
            (json!({"action": "mouse_move"}), "missing `coordinate`"),
            (
                json!({"action": "mouse_move", "coordinate": [1367, 0]}),
                "`coordinate` [1367, 0] is outside the screen (1366x768): x must be 0 to 1366, y 0 to 768",
            ),
            (
                json!({"action": "mouse_move", "coordinate": [0, 769]}),
                "`coordinate` [0, 769] is outside the screen",
            ),
            (
                json!({"action": "left_click", "coordinate": [-1, 0]}),
                "`coordinate` must be [x, y]",
            ),
            (
                json!({"action": "left_click", "coordinate": [1]}),
                "`coordinate` must be [x, y]",
            ),
            (
                json!({"action": "left_click", "coordinate": ["1", "2"]}),
                "`coordinate` must be [x, y]",
            ),
            (
                json!({"action": "left_click_drag", "start_coordinate": [0, 900], "coordinate": [1, 1]}),
                "`start_coordinate` [0, 900] is outside",
            ),
            (
                json!({"action": "left_click", "coordinate": [1, 1], "text": "a"}),
                "`text`: `a`: Unicode('a') is not a modifier",
            ),
            (json!({"action": "type", "text": ""}), "`text` is empty"),
            (json!({"action": "type"}), "missing `text`"),
            (
                json!({"action": "type", "text": 5}),
                "`text` must be a string",
            ),
            (
                json!({"action": "key", "text": "ctrl+Retrun"}),
                "unknown key `Retrun`",
            ),
            (
                json!({"action": "hold_key", "text": "a b", "duration": 1}),
                "holds one key combo",
            ),
            (
                json!({"action": "hold_key", "text": "shift"}),
                "missing `duration`",
            ),
            (
                json!({"action": "wait", "duration": -1}),
                "`duration` must be a number of seconds from 0 to 100",
            ),
            (json!({"action": "wait", "duration": 101}), "from 0 to 100"),
            (
                json!({"action": "scroll", "scroll_direction": "sideways", "scroll_amount": 1}),
                "`scroll_direction` must be up, down, left or right, not `sideways`",
            ),
            (
                json!({"action": "scroll", "scroll_direction": "up"}),
                "missing `scroll_amount`",
            ),
            (
                json!({"action": "scroll", "scroll_direction": "up", "scroll_amount": 0}),
                "`scroll_amount` must be an integer from 1 to 100",
            ),
            (json!({"action": "zoom"}), "missing `region`"),
            (
                json!({"action": "zoom", "region": [10, 10, 5, 20]}),
                "is empty",
            ),
            (
                json!({"action": "zoom", "region": [0, 0, 2000, 20]}),
                "is outside the screen",
            ),
        ] {
            let e = err(input.clone());
            assert!(
                e.contains(expected),
                "{input}: got `{e}`, expected `{expected}`"
            );
        }
    }

    /// The API's coordinates run from 0 to the declared size inclusive, as the reference
    /// implementation checks them (`x > width` is out of bounds); both edges are accepted.
    #[test]
    fn both_edges_of_the_screen_are_accepted() {
        for point in [[0, 0], [1366, 768], [1366, 0], [0, 768]] {
            assert_eq!(
                ok(json!({"action": "mouse_move", "coordinate": point})),
                Action::MouseMove {
                    to: Point {
                        x: point[0],
                        y: point[1]
                    }
                }
            );
        }
    }

    /// A parameter an action does not take is refused, named, never silently dropped.
    #[test]
    fn parameters_that_do_not_belong_to_the_action_are_refused() {
        for (input, expected) in [
            (
                json!({"action": "type", "text": "hi", "coordinate": [5, 5]}),
                "`type` does not take `coordinate`; it takes only `text` (it acts at the keyboard focus: click the place first",
            ),
            (
                json!({"action": "key", "text": "Return", "coordinate": [5, 5]}),
                "`key` does not take `coordinate`",
            ),
            (
                json!({"action": "mouse_move", "coordinate": [5, 5], "text": "shift"}),
                "`mouse_move` does not take `text`; it takes only `coordinate`. Nothing was done.",
            ),
            (
                json!({"action": "screenshot", "coordinate": [5, 5]}),
                "`screenshot` does not take `coordinate`; it takes no other parameter",
            ),
            (
                json!({"action": "wait", "duration": 1, "text": "x"}),
                "`wait` does not take `text`",
            ),
            (
                json!({"action": "left_click", "coordinate": [1, 1], "scroll_amount": 3}),
                "`left_click` does not take `scroll_amount`",
            ),
            (
                json!({"action": "zoom", "region": [0, 0, 5, 5], "coordinate": [1, 1]}),
                "`zoom` does not take `coordinate`",
            ),
            (
                json!({"action": "type", "text": "hi", "colour": "red"}),
                "`type` does not take `colour`",
            ),
            (
                json!({"action": "left_click", "text": "shift", "key": "ctrl"}),
                "give the modifier in `text` or in `key`, not both",
            ),
        ] {
            let e = err(input.clone());
            assert!(
                e.contains(expected),
                "{input}: got `{e}`, expected `{expected}`"
            );
        }
        // Null is how some models leave a parameter out.
        assert_eq!(
            ok(json!({"action": "type", "text": "hi", "coordinate": null})),
            Action::Type { text: "hi".into() }
        );
    }

    /// A drag holds its modifier (in `text`, or in `key` as the reference sends it).
    #[test]
    fn a_drag_takes_a_modifier() {
        for field in ["text", "key"] {
            assert_eq!(
                ok(json!({"action": "left_click_drag", "coordinate": [3, 4], field: "shift"})),
                Action::Drag {
                    from: None,
                    to: Point { x: 3, y: 4 },
                    modifiers: vec![Key::Shift]
                }
            );
        }
        assert_eq!(
            ok(
                json!({"action": "scroll", "scroll_direction": "up", "scroll_amount": 1, "key": "ctrl"})
            ),
            Action::Scroll {
                at: None,
                direction: ScrollDirection::Up,
                amount: 1,
                modifiers: vec![Key::Control]
            }
        );
    }

    #[test]
    fn zoom_belongs_to_the_newer_version_only() {
        let e = parse(
            &json!({"action": "zoom", "region": [0, 0, 5, 5]}),
            MODEL,
            ToolVersion::V20250124,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("unknown action `zoom`"), "{e}");
        assert!(!e.contains("zoom,") && !e.ends_with("zoom"), "{e}");
    }

    /// A value past a limit is refused as out of range; a call the action does not take, as
    /// invalid input.
    #[test]
    fn refusals_have_their_kind() {
        let kind = |input: Value| parse(&input, MODEL, ToolVersion::V20251124).unwrap_err();
        for input in [
            json!({"action": "mouse_move", "coordinate": [1367, 0]}),
            json!({"action": "zoom", "region": [0, 0, 2000, 20]}),
            json!({"action": "wait", "duration": 101}),
            json!({"action": "scroll", "scroll_direction": "up", "scroll_amount": 0}),
        ] {
            assert!(
                matches!(kind(input.clone()), ToolError::OutOfRange(_)),
                "{input}"
            );
        }
        for input in [
            json!({"action": "fly"}),
            json!({"action": "type", "text": "hi", "coordinate": [5, 5]}),
            json!({"action": "key", "text": "ctrl+Retrun"}),
            json!({"action": "mouse_move"}),
        ] {
            assert!(
                matches!(kind(input.clone()), ToolError::InvalidInput(_)),
                "{input}"
            );
        }
    }

    /// `ActionName::name` is the name serde reads, and every action has one.
    #[test]
    fn each_action_is_read_by_its_name() {
        for action in ActionName::iter() {
            assert_eq!(
                serde_json::from_value::<ActionName>(json!(action.name())).unwrap(),
                action
            );
        }
    }

    #[test]
    fn read_only_actions_are_the_looking_ones() {
        assert!(ok(json!({"action": "screenshot"})).is_read_only());
        assert!(ok(json!({"action": "cursor_position"})).is_read_only());
        assert!(ok(json!({"action": "zoom", "region": [0, 0, 5, 5]})).is_read_only());
        assert!(!ok(json!({"action": "mouse_move", "coordinate": [1, 1]})).is_read_only());
        assert!(!ok(json!({"action": "wait", "duration": 0})).is_read_only());
        assert!(!ok(json!({"action": "type", "text": "x"})).is_read_only());
    }
}
