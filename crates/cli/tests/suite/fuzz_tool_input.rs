//! Fuzzing (proptest; this toolchain has no nightly for cargo-fuzz) of what the model sends
//! the computer tool: its input parser and the xdotool key-name parser. The property: no
//! panic, and every input ends in an action that is within the screen, or in an error that
//! says something. `PROPTEST_CASES` sets the number of cases (default 256); a case that
//! fails is kept in proptest's regressions file for this test (commit it) and tried first
//! from then on.

use deskhand_engine::tools::computer::action::{self, Action, ActionName, ComputerInput};
use deskhand_engine::tools::computer::keys;
use deskhand_engine::tools::computer::scaling::Size;
use deskhand_engine::tools::computer::version::ToolVersion;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use strum::IntoEnumIterator;

/// The field names the tool knows, and a few it does not.
const FIELDS: &[&str] = &[
    "coordinate",
    "start_coordinate",
    "text",
    "key",
    "scroll_direction",
    "scroll_amount",
    "duration",
    "region",
    "colour",
];

/// Any JSON value, nested a few levels, numbers of every kind included.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        (0u32..5000).prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
        key_text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,12}", inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Text that looks like key names: real names, single characters, junk, joined by `+`
/// and spaces.
fn key_text() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        prop::sample::select(
            keys::TABLE
                .iter()
                .flat_map(|(x, others, _)| std::iter::once(*x).chain(others.iter().copied()))
                .collect::<Vec<_>>()
        )
        .prop_map(str::to_string),
        any::<char>().prop_map(|c| c.to_string()),
        "[A-Za-z_0-9]{0,10}",
        Just(String::new()),
    ];
    prop::collection::vec(
        (name, prop::sample::select(vec!["+", " ", "  ", "++", "\t"])),
        0..6,
    )
    .prop_map(|parts| {
        parts
            .into_iter()
            .map(|(n, sep)| format!("{n}{sep}"))
            .collect()
    })
}

/// A number near the edges of `0..=size` (where off-by-one mistakes are), or anywhere.
fn near_edges(size: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        prop::sample::select(vec![0, 1, size.saturating_sub(1), size, size + 1, size + 2]),
        0..=size + 10,
    ]
}

/// The fields each action reads (a dictionary for the fuzzer, so that most inputs get
/// past the check for parameters that do not belong).
fn fields_of(action: &str) -> &'static [&'static str] {
    match action {
        "left_click" | "right_click" | "middle_click" | "double_click" | "triple_click" => {
            &["coordinate", "text", "key"]
        }
        "mouse_move" | "left_mouse_down" | "left_mouse_up" => &["coordinate"],
        "left_click_drag" => &["start_coordinate", "coordinate", "text", "key"],
        "scroll" => &["coordinate", "scroll_direction", "scroll_amount", "text"],
        "type" | "key" => &["text"],
        "hold_key" => &["text", "duration"],
        "wait" => &["duration"],
        "zoom" => &["region"],
        _ => FIELDS,
    }
}

/// A value for `field`: mostly of its own shape, near the screen's edges for points.
fn value_of(field: &'static str, width: u32, height: u32) -> BoxedStrategy<Value> {
    let own = match field {
        "coordinate" | "start_coordinate" => (near_edges(width), near_edges(height))
            .prop_map(|(x, y)| json!([x, y]))
            .boxed(),
        "region" => (
            near_edges(width),
            near_edges(height),
            near_edges(width),
            near_edges(height),
        )
            .prop_map(|(a, b, c, d)| json!([a, b, c, d]))
            .boxed(),
        "text" | "key" => prop_oneof![key_text(), ".{0,20}"]
            .prop_map(Value::from)
            .boxed(),
        "scroll_direction" => prop::sample::select(vec!["up", "down", "left", "right", "sideways"])
            .prop_map(Value::from)
            .boxed(),
        "scroll_amount" => (0u32..=110).prop_map(Value::from).boxed(),
        "duration" => (-1.0f64..110.0).prop_map(Value::from).boxed(),
        _ => any_json().boxed(),
    };
    prop_oneof![4 => own, 1 => any_json()].boxed()
}

/// An input object for a screen of `width` x `height`: an action (a known one, mostly) and
/// fields (mostly its own, mostly of the right shape), or anything at all.
fn any_input(width: u32, height: u32) -> impl Strategy<Value = Value> {
    let names: Vec<&'static str> = ActionName::iter().map(ActionName::name).collect();
    let known = prop::sample::select(names).prop_flat_map(move |name| {
        let field = prop_oneof![
            4 => prop::sample::select(fields_of(name)),
            1 => prop::sample::select(FIELDS),
        ];
        let pair = field.prop_flat_map(move |f| (Just(f), value_of(f, width, height)));
        (Just(Value::from(name)), prop::collection::vec(pair, 0..4))
    });
    let unknown = (
        any_json(),
        prop::collection::vec((prop::sample::select(FIELDS), any_json()), 0..4),
    );
    prop_oneof![9 => known, 1 => unknown].prop_map(|(action, fields)| {
        let mut input = Map::new();
        if !action.is_null() {
            input.insert("action".into(), action);
        }
        for (name, value) in fields {
            input.insert(name.to_string(), value);
        }
        Value::Object(input)
    })
}

fn inside(size: Size, p: action::Point) -> bool {
    p.x <= size.width && p.y <= size.height
}

proptest! {
    #[test]
    fn the_computer_input_parser_ends_in_an_action_or_an_error(
        (width, height, input) in (1u32..4000, 1u32..4000).prop_flat_map(|(w, h)| {
            (Just(w), Just(h), prop_oneof![4 => any_input(w, h), 1 => any_json()])
        }),
        newer in any::<bool>(),
    ) {
        let size = Size::new(width, height);
        let version = if newer { ToolVersion::V20251124 } else { ToolVersion::V20250124 };
        let read = ComputerInput::read(&input, version);
        match read.and_then(|call| call.check(&input, size, version)) {
            Ok(parsed) => {
                for point in parsed.points() {
                    prop_assert!(inside(size, point), "{input}: {point:?} is off the {width}x{height} screen");
                }
                match &parsed {
                    Action::Key { combos } => prop_assert!(!combos.is_empty() && combos.iter().all(|c| !c.is_empty())),
                    Action::Type { text } => prop_assert!(!text.is_empty()),
                    Action::Zoom { .. } => prop_assert!(newer, "zoom only in the newer version"),
                    _ => {}
                }
            }
            Err(error) => prop_assert!(!error.to_string().trim().is_empty(), "{input}: an empty error"),
        }
    }

    #[test]
    fn the_key_parser_ends_in_keys_or_an_error(text in prop_oneof![key_text(), ".{0,40}"]) {
        match keys::parse(&text) {
            Ok(combos) => {
                prop_assert!(!combos.is_empty(), "{text:?}");
                prop_assert!(combos.iter().all(|combo| !combo.is_empty()), "{text:?}");
            }
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
        // Modifiers are a subset of keys: whatever `modifiers` accepts, `parse` does too.
        if let Ok(combo) = keys::modifiers(&text) {
            prop_assert!(!combo.is_empty());
            prop_assert!(keys::parse(&text).is_ok());
        }
    }
}
