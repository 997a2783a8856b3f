//! A computer tool call's input, checked and typed. Anything wrong is refused here, with a
//! message naming the problem, before anything is performed.

use std::time::Duration;

use serde_json::Value;

use super::keys::{self, Combo};
use super::scaling::Size;
use super::version::ToolVersion;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScrollDirection {
    Up,
    Down,
    Left,
    Right,
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

/// The actions of each version, as the schema lists them.
pub const ACTIONS: &[&str] = &[
    "screenshot",
    "left_click",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "mouse_move",
    "left_click_drag",
    "left_mouse_down",
    "left_mouse_up",
    "scroll",
    "type",
    "key",
    "hold_key",
    "wait",
    "cursor_position",
];
pub const ZOOM: &str = "zoom";

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

/// The parameters each action takes besides `action`. Any other one is refused rather
/// than ignored: `type` with a `coordinate` would type wherever the focus is while the
/// model believes the text landed where it pointed.
fn parameters(action: &str) -> &'static [&'static str] {
    match action {
        "left_click" | "right_click" | "middle_click" | "double_click" | "triple_click" => {
            &["coordinate", "text", "key"]
        }
        "mouse_move" => &["coordinate"],
        "left_click_drag" => &["start_coordinate", "coordinate", "text", "key"],
        "left_mouse_down" | "left_mouse_up" => &["coordinate"],
        "scroll" => &[
            "coordinate",
            "scroll_direction",
            "scroll_amount",
            "text",
            "key",
        ],
        "type" | "key" => &["text"],
        "hold_key" => &["text", "duration"],
        "wait" => &["duration"],
        ZOOM => &["region"],
        _ => &[],
    }
}

/// Reads and checks one input against the screenshot size the model was told.
pub fn parse(input: &Value, model: Size, version: ToolVersion) -> Result<Action, String> {
    let name = input
        .get("action")
        .ok_or("missing `action`")?
        .as_str()
        .ok_or("`action` must be a string")?;
    let fields = Fields { input, model };
    if ACTIONS.contains(&name) || (name == ZOOM && version.has_zoom()) {
        fields.only(name, parameters(name))?;
    }
    let click = |click| -> Result<Action, String> {
        Ok(Action::Click {
            click,
            at: fields.point_opt("coordinate")?,
            modifiers: fields.modifiers()?,
        })
    };
    let action = match name {
        "screenshot" => Action::Screenshot,
        "left_click" => click(Click::Left)?,
        "right_click" => click(Click::Right)?,
        "middle_click" => click(Click::Middle)?,
        "double_click" => click(Click::Double)?,
        "triple_click" => click(Click::Triple)?,
        "mouse_move" => Action::MouseMove {
            to: fields.point("coordinate")?,
        },
        "left_click_drag" => Action::Drag {
            from: fields.point_opt("start_coordinate")?,
            to: fields.point("coordinate")?,
            modifiers: fields.modifiers()?,
        },
        "left_mouse_down" => Action::MouseDown {
            at: fields.point_opt("coordinate")?,
        },
        "left_mouse_up" => Action::MouseUp {
            at: fields.point_opt("coordinate")?,
        },
        "scroll" => Action::Scroll {
            at: fields.point_opt("coordinate")?,
            direction: match fields.string("scroll_direction")?.as_str() {
                "up" => ScrollDirection::Up,
                "down" => ScrollDirection::Down,
                "left" => ScrollDirection::Left,
                "right" => ScrollDirection::Right,
                other => {
                    return Err(format!(
                        "`scroll_direction` must be up, down, left or right, not `{other}`"
                    ));
                }
            },
            amount: fields.scroll_amount()?,
            modifiers: fields.modifiers()?,
        },
        "type" => Action::Type {
            text: fields.string("text")?,
        },
        "key" => Action::Key {
            combos: keys::parse(&fields.string("text")?)?,
        },
        "hold_key" => {
            let text = fields.string("text")?;
            let mut combos = keys::parse(&text)?;
            if combos.len() != 1 {
                return Err(format!("`hold_key` holds one key combo, not `{text}`"));
            }
            Action::HoldKey {
                keys: combos.remove(0),
                duration: fields.duration()?,
            }
        }
        "wait" => Action::Wait {
            duration: fields.duration()?,
        },
        "cursor_position" => Action::CursorPosition,
        ZOOM if version.has_zoom() => {
            let [x1, y1, x2, y2] = fields.region()?;
            Action::Zoom {
                from: Point { x: x1, y: y1 },
                to: Point { x: x2, y: y2 },
            }
        }
        other => {
            let mut known = ACTIONS.to_vec();
            if version.has_zoom() {
                known.push(ZOOM);
            }
            return Err(format!(
                "unknown action `{other}`; the actions are: {}",
                known.join(", ")
            ));
        }
    };
    Ok(action)
}

struct Fields<'a> {
    input: &'a Value,
    model: Size,
}

impl Fields<'_> {
    fn present(&self, field: &str) -> Option<&Value> {
        self.input.get(field).filter(|v| !v.is_null())
    }

    /// Refuses a parameter `action` does not take (`null` counts as absent).
    fn only(&self, action: &str, takes: &[&str]) -> Result<(), String> {
        let Some(fields) = self.input.as_object() else {
            return Ok(());
        };
        let Some(extra) = fields
            .iter()
            .find(|(name, value)| {
                *name != "action" && !value.is_null() && !takes.contains(&name.as_str())
            })
            .map(|(name, _)| name)
        else {
            return Ok(());
        };
        let takes = match takes {
            [] => "no other parameter".to_string(),
            some => format!(
                "only {}",
                some.iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let hint = match (action, extra.as_str()) {
            ("type" | "key", "coordinate") => {
                " (it acts at the keyboard focus: click the place first with `left_click`, then send it)"
            }
            _ => "",
        };
        Err(format!(
            "`{action}` does not take `{extra}`; it takes {takes}{hint}. Nothing was done."
        ))
    }

    fn string(&self, field: &str) -> Result<String, String> {
        let value = self
            .present(field)
            .ok_or_else(|| format!("missing `{field}`"))?;
        let text = value
            .as_str()
            .ok_or_else(|| format!("`{field}` must be a string"))?;
        if text.is_empty() {
            return Err(format!("`{field}` is empty"));
        }
        Ok(text.to_string())
    }

    fn point(&self, field: &str) -> Result<Point, String> {
        self.point_opt(field)?
            .ok_or_else(|| format!("missing `{field}` ([x, y] in screenshot pixels)"))
    }

    fn point_opt(&self, field: &str) -> Result<Option<Point>, String> {
        let Some(value) = self.present(field) else {
            return Ok(None);
        };
        let numbers: Option<Vec<u64>> = value
            .as_array()
            .filter(|a| a.len() == 2)
            .and_then(|a| a.iter().map(Value::as_u64).collect());
        let Some([x, y]) = numbers.as_deref().map(|n| [n[0], n[1]]) else {
            return Err(format!(
                "`{field}` must be [x, y], two non-negative integers, not {value}"
            ));
        };
        // The far edge counts, as in the reference implementation: x = width is the last
        // pixel's right edge and maps onto the last pixel.
        let Size { width, height } = self.model;
        if x > u64::from(width) || y > u64::from(height) {
            return Err(format!(
                "`{field}` [{x}, {y}] is outside the screen ({width}x{height}): x must be 0 to {width}, y 0 to {height}"
            ));
        }
        Ok(Some(Point {
            x: x as u32,
            y: y as u32,
        }))
    }

    /// The reference reads a click's modifier from `key`; the documentation puts it in `text`.
    fn modifiers(&self) -> Result<Combo, String> {
        match (self.present("text"), self.present("key")) {
            (Some(text), Some(key)) if text != key => {
                Err("give the modifier in `text` or in `key`, not both".into())
            }
            (Some(_), _) => self.modifiers_from("text"),
            (None, Some(_)) => self.modifiers_from("key"),
            (None, None) => Ok(Vec::new()),
        }
    }

    fn modifiers_from(&self, field: &str) -> Result<Combo, String> {
        if self.present(field).is_none() {
            return Ok(Vec::new());
        }
        keys::modifiers(&self.string(field)?).map_err(|e| format!("`{field}`: {e}"))
    }

    fn scroll_amount(&self) -> Result<u32, String> {
        let value = self
            .present("scroll_amount")
            .ok_or("missing `scroll_amount` (wheel clicks, at least 1)")?;
        match value.as_u64() {
            Some(n @ 1..=MAX_SCROLL) => Ok(n as u32),
            _ => Err(format!(
                "`scroll_amount` must be an integer from 1 to {MAX_SCROLL}, not {value}"
            )),
        }
    }

    fn duration(&self) -> Result<Duration, String> {
        let value = self
            .present("duration")
            .ok_or("missing `duration` (seconds)")?;
        match value.as_f64() {
            Some(s) if (0.0..=MAX_DURATION_S).contains(&s) => Ok(Duration::from_secs_f64(s)),
            _ => Err(format!(
                "`duration` must be a number of seconds from 0 to {MAX_DURATION_S}, not {value}"
            )),
        }
    }

    fn region(&self) -> Result<[u32; 4], String> {
        let value = self
            .present("region")
            .ok_or("missing `region` ([x1, y1, x2, y2])")?;
        let numbers: Option<Vec<u64>> = value
            .as_array()
            .filter(|a| a.len() == 4)
            .and_then(|a| a.iter().map(Value::as_u64).collect());
        let Some(n) = numbers else {
            return Err(format!(
                "`region` must be [x1, y1, x2, y2], four non-negative integers, not {value}"
            ));
        };
        let Size { width, height } = self.model;
        if n[0] > u64::from(width)
            || n[2] > u64::from(width)
            || n[1] > u64::from(height)
            || n[3] > u64::from(height)
        {
            return Err(format!(
                "`region` {value} is outside the screen ({width}x{height})"
            ));
        }
        if n[0] >= n[2] || n[1] >= n[3] {
            return Err(format!(
                "`region` {value} is empty: x1 < x2 and y1 < y2 are needed"
            ));
        }
        Ok([n[0] as u32, n[1] as u32, n[2] as u32, n[3] as u32])
    }
}

#[cfg(test)]
mod tests {
    use enigo::Key;
    use serde_json::json;

    use super::*;

    const MODEL: Size = Size::new(1366, 768);

    fn ok(input: Value) -> Action {
        parse(&input, MODEL, ToolVersion::V20251124).unwrap_or_else(|e| panic!("{input}: {e}"))
    }

    fn err(input: Value) -> String {
        parse(&input, MODEL, ToolVersion::V20251124).expect_err(&input.to_string())
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
        .unwrap_err();
        assert!(e.starts_with("unknown action `zoom`"), "{e}");
        assert!(!e.contains("zoom,") && !e.ends_with("zoom"), "{e}");
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
