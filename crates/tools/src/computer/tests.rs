//! The tool over a fake screen and a recording input: what each action sends to the input
//! driver, what comes back, and that bad input performs nothing.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use strum::IntoEnumIterator;
use tokio_util::sync::CancellationToken;

use super::ComputerTool;
use super::action::ActionName;
use super::input::{Axis, Button, Direction, InputEvent, Key, RecordingInput};
use super::scaling::{Geometry, Size};
use super::screen::{FakeScreen, Frame, Monitor};
use super::settle::SettlePolicy;
use super::version::ToolVersion;
use crate::{Tool, ToolContext, ToolError, ToolOutput};
use deskhand_llm::{ImageSource, ToolResultContent};

fn quick() -> SettlePolicy {
    SettlePolicy {
        floor: Duration::from_millis(1),
        interval: Duration::from_millis(1),
        cap: Duration::from_millis(200),
    }
}

fn tool_on(
    screen: FakeScreen,
    monitor: Option<usize>,
    version: ToolVersion,
) -> (ComputerTool, RecordingInput) {
    let input = RecordingInput::default();
    let tool = ComputerTool::new(
        Arc::new(screen),
        Box::new(input.clone()),
        monitor,
        None,
        version,
        quick(),
    )
    .unwrap();
    (tool, input)
}

fn tool() -> (ComputerTool, RecordingInput) {
    tool_on(FakeScreen::single(1920, 1080), None, ToolVersion::V20251124)
}

async fn run(tool: &ComputerTool, input: Value) -> ToolOutput {
    tool.run(&input, &ToolContext::new(CancellationToken::new()))
        .await
}

fn image_size(output: &ToolOutput) -> (usize, usize) {
    use base64::Engine as _;
    let image = output.content.iter().find_map(|c| match c {
        ToolResultContent::Image {
            source: ImageSource::Base64 { data, .. },
        } => Some(data),
        _ => None,
    });
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(image.expect("an image"))
        .unwrap();
    let size = imagesize::blob_size(&bytes).unwrap();
    (size.width, size.height)
}

fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|c| match c {
            ToolResultContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_definition_declares_the_model_size_and_the_beta() {
    let (new, _) = tool();
    let def = new.definition();
    let native = def.anthropic.unwrap();
    assert_eq!(
        native.definition,
        json!({"type": "computer_20251124", "name": "computer", "display_width_px": 1366, "display_height_px": 768, "enable_zoom": true})
    );
    assert_eq!(native.beta, Some("computer-use-2025-11-24"));
    assert!(def.description.contains("1366x768"));
    assert!(
        def.input_schema["properties"]["action"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("zoom"))
    );

    let (old, _) = tool_on(FakeScreen::single(1920, 1080), None, ToolVersion::V20250124);
    let def = old.definition();
    let native = def.anthropic.unwrap();
    assert_eq!(native.definition["type"], "computer_20250124");
    assert!(native.definition.get("enable_zoom").is_none());
    assert_eq!(native.beta, Some("computer-use-2025-01-24"));
    assert!(
        !def.input_schema["properties"]["action"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("zoom"))
    );
    assert!(def.input_schema["properties"].get("region").is_none());
}

#[test]
fn plans_say_where_on_the_screen_an_action_lands() {
    let (tool, _) = tool();
    let plan = tool
        .plan(&json!({"action": "left_click", "coordinate": [683, 384]}))
        .unwrap();
    assert_eq!(plan.kind, "computer.left_click");
    assert!(!plan.read_only);
    assert_eq!(plan.summary, "left_click (683, 384) → screen (960, 540)");
    let detail = serde_json::to_value(&plan.detail).unwrap();
    assert_eq!(detail["screen_points"], json!([{"x": 960, "y": 540}]));
    assert_eq!(detail["model_points"], json!([[683, 384]]));
    let drag = tool.plan(&json!({"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [1365, 767]})).unwrap();
    assert_eq!(
        serde_json::to_value(&drag.detail).unwrap()["screen_points"],
        json!([{"x": 0, "y": 0}, {"x": 1919, "y": 1079}])
    );
    let typed = tool
        .plan(&json!({"action": "type", "text": "hello"}))
        .unwrap();
    assert_eq!(typed.summary, "type \"hello\"");
    // A long text shows its start, an ellipsis and its whole length: never cut silently.
    let long = tool
        .plan(&json!({"action": "type", "text": format!("{}rm -rf ~", "a".repeat(1226))}))
        .unwrap();
    assert_eq!(
        long.summary,
        format!("type \"{}\"… (1,234 characters)", "a".repeat(60))
    );
    for read_only in [
        json!({"action": "screenshot"}),
        json!({"action": "cursor_position"}),
        json!({"action": "zoom", "region": [0, 0, 10, 10]}),
    ] {
        assert!(tool.plan(&read_only).unwrap().read_only, "{read_only}");
    }
    let off_screen = tool
        .plan(&json!({"action": "mouse_move", "coordinate": [5000, 1]}))
        .unwrap_err();
    assert!(
        matches!(&off_screen, ToolError::OutOfRange(text) if text.contains("outside the screen")),
        "{off_screen:?}"
    );
}

#[tokio::test]
async fn a_click_moves_to_the_mapped_point_clicks_and_returns_a_screenshot() {
    let (tool, input) = tool();
    let out = run(
        &tool,
        json!({"action": "left_click", "coordinate": [683, 384], "text": "shift"}),
    )
    .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(image_size(&out), (1366, 768));
    assert_eq!(
        input.events(),
        vec![
            InputEvent::MoveTo(960, 540),
            InputEvent::Key(Key::Shift, Direction::Press),
            InputEvent::Button(Button::Left, Direction::Click),
            InputEvent::Key(Key::Shift, Direction::Release),
        ]
    );
}

/// The loop reads a call once: the prepared call is planned, as often as the loop asks, and
/// runs the action that was read.
#[tokio::test]
async fn a_prepared_call_runs_as_it_was_read() {
    let (tool, input) = tool();
    let click = json!({"action": "left_click", "coordinate": [683, 384]});
    let call = tool.prepare(&click).unwrap();
    assert_eq!(call.plan().unwrap(), tool.plan(&click).unwrap());
    assert_eq!(call.plan().unwrap(), call.plan().unwrap());
    assert!(input.events().is_empty(), "planning performs nothing");
    let out = call.run(&ToolContext::new(CancellationToken::new())).await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(
        input.events(),
        vec![
            InputEvent::MoveTo(960, 540),
            InputEvent::Button(Button::Left, Direction::Click),
        ]
    );
}

#[tokio::test]
async fn clicks_drags_scrolls_keys_and_typing_reach_the_input_driver() {
    let (tool, input) = tool();
    for action in [
        json!({"action": "triple_click", "coordinate": [0, 0]}),
        json!({"action": "right_click"}),
        json!({"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [683, 384]}),
        json!({"action": "scroll", "coordinate": [1365, 767], "scroll_direction": "up", "scroll_amount": 4}),
        json!({"action": "scroll", "scroll_direction": "right", "scroll_amount": 2}),
        json!({"action": "key", "text": "ctrl+shift+t Return"}),
        json!({"action": "type", "text": "x".repeat(120)}),
        json!({"action": "left_mouse_down", "coordinate": [10, 10]}),
        json!({"action": "left_mouse_up"}),
    ] {
        let out = run(&tool, action.clone()).await;
        assert!(!out.is_error, "{action}: {}", text(&out));
    }
    let events = input.events();
    use InputEvent as E;
    let expected_start = [
        E::MoveTo(0, 0),
        E::Button(Button::Left, Direction::Click),
        E::Button(Button::Left, Direction::Click),
        E::Button(Button::Left, Direction::Click),
        E::Button(Button::Right, Direction::Click),
        E::MoveTo(0, 0),
        E::Button(Button::Left, Direction::Press),
    ];
    assert_eq!(&events[..7], &expected_start[..]);
    // The drag glides in steps and ends exactly on the target before releasing.
    let release = events
        .iter()
        .position(|e| *e == E::Button(Button::Left, Direction::Release))
        .unwrap();
    assert_eq!(events[release - 1], E::MoveTo(960, 540));
    assert_eq!(release, 7 + super::DRAG_STEPS as usize);
    let rest = &events[release + 1..];
    assert_eq!(
        rest,
        &[
            E::MoveTo(1919, 1079),
            E::Scroll(-4, Axis::Vertical),
            E::Scroll(2, Axis::Horizontal),
            E::Key(Key::Control, Direction::Press),
            E::Key(Key::Shift, Direction::Press),
            E::Key(Key::Unicode('t'), Direction::Click),
            E::Key(Key::Shift, Direction::Release),
            E::Key(Key::Control, Direction::Release),
            E::Key(Key::Return, Direction::Click),
            E::Text("x".repeat(50)),
            E::Text("x".repeat(50)),
            E::Text("x".repeat(20)),
            E::MoveTo(14, 14),
            E::Button(Button::Left, Direction::Press),
            E::Button(Button::Left, Direction::Release),
        ][..]
    );
}

#[tokio::test]
async fn bad_input_performs_nothing_and_names_the_problem() {
    let (tool, input) = tool();
    for (action, expected) in [
        (
            json!({"action": "left_click", "coordinate": [1367, 0]}),
            "outside the screen",
        ),
        (
            json!({"action": "type", "text": "hi", "coordinate": [5, 5]}),
            "`type` does not take `coordinate`",
        ),
        (json!({"action": "mouse_move"}), "missing `coordinate`"),
        (
            json!({"action": "key", "text": "ctrl+Retrun"}),
            "unknown key `Retrun`",
        ),
        (json!({"action": "type", "text": ""}), "`text` is empty"),
        (json!({"action": "explode"}), "unknown action `explode`"),
        (
            json!({"action": "scroll", "scroll_direction": "up", "scroll_amount": "3"}),
            "`scroll_amount` must be an integer",
        ),
    ] {
        let out = run(&tool, action.clone()).await;
        assert!(out.is_error, "{action}");
        assert!(text(&out).contains(expected), "{action}: {}", text(&out));
    }
    assert!(input.events().is_empty());
}

#[tokio::test]
async fn screenshots_zoom_and_cursor_position_only_look() {
    let (tool, input) = tool();
    assert_eq!(
        image_size(&run(&tool, json!({"action": "screenshot"})).await),
        (1366, 768)
    );
    // Zoom on a quarter of the screen: 960x540 frame pixels, sent at full resolution.
    assert_eq!(
        image_size(&run(&tool, json!({"action": "zoom", "region": [0, 0, 683, 384]})).await),
        (960, 540)
    );
    let out = run(&tool, json!({"action": "cursor_position"})).await;
    assert_eq!(text(&out), "X=0,Y=0");
    run(
        &tool,
        json!({"action": "mouse_move", "coordinate": [683, 384]}),
    )
    .await;
    assert_eq!(
        text(&run(&tool, json!({"action": "cursor_position"})).await),
        "X=683,Y=384"
    );
    assert_eq!(input.events(), vec![InputEvent::MoveTo(960, 540)]);
}

#[tokio::test]
async fn the_second_monitor_maps_onto_its_own_origin() {
    let left = Size::new(1920, 1080);
    let right = Size::new(1280, 1024);
    let monitors = vec![
        Monitor {
            index: 0,
            id: 1,
            name: "left".into(),
            primary: true,
            scale_factor: 1.0,
            geometry: Geometry {
                x: 0,
                y: 0,
                input: left,
                pixels: left,
            },
        },
        Monitor {
            index: 1,
            id: 2,
            name: "right".into(),
            primary: false,
            scale_factor: 1.0,
            geometry: Geometry {
                x: 1920,
                y: 0,
                input: right,
                pixels: right,
            },
        },
    ];
    let screen = FakeScreen::new(monitors, vec![Frame::filled(right, 9)]);
    let (tool, input) = tool_on(screen, Some(1), ToolVersion::V20250124);
    let model = tool.mapping().model;
    let out = run(&tool, json!({"action": "left_click", "coordinate": [0, 0]})).await;
    assert_eq!(
        image_size(&out),
        (model.width as usize, model.height as usize)
    );
    let out = run(
        &tool,
        json!({"action": "mouse_move", "coordinate": [model.width - 1, model.height - 1]}),
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(input.events()[0], InputEvent::MoveTo(1920, 0));
    assert_eq!(input.events()[2], InputEvent::MoveTo(1920 + 1279, 1023));
}

#[tokio::test]
async fn a_failed_capture_is_a_clear_error() {
    // A fake with no frames to serve fails every capture.
    let broken = FakeScreen::new(FakeScreen::single(800, 600).monitors, vec![]);
    let (tool, _) = tool_on(broken, None, ToolVersion::V20250124);
    let out = run(&tool, json!({"action": "screenshot"})).await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        "screenshot failed: screen capture failed: the fake screen has no frames"
    );
}

#[tokio::test]
async fn a_stop_ends_a_long_wait() {
    let (tool, _) = tool();
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stopper.cancel();
    });
    let started = std::time::Instant::now();
    let out = tool
        .run(
            &json!({"action": "wait", "duration": 30}),
            &ToolContext::new(cancel),
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.is_error);
    assert!(text(&out).contains("stopped by the user"));
}

#[tokio::test]
async fn a_drag_with_a_modifier_holds_it_from_press_to_release() {
    let (tool, input) = tool();
    let out = run(
        &tool,
        json!({"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [683, 384], "text": "shift"}),
    )
    .await;
    assert!(!out.is_error, "{}", text(&out));
    let events = input.events();
    assert_eq!(events[0], InputEvent::MoveTo(0, 0));
    assert_eq!(events[1], InputEvent::Key(Key::Shift, Direction::Press));
    assert_eq!(
        events[2],
        InputEvent::Button(Button::Left, Direction::Press)
    );
    let n = events.len();
    assert_eq!(events[n - 3], InputEvent::MoveTo(960, 540));
    assert_eq!(
        events[n - 2],
        InputEvent::Button(Button::Left, Direction::Release)
    );
    assert_eq!(
        events[n - 1],
        InputEvent::Key(Key::Shift, Direction::Release)
    );
}

/// The far edge the API allows ([width, height] of the declared size) lands on the
/// screen's last pixel; the near edge on its first.
#[tokio::test]
async fn both_edges_land_on_the_screen() {
    let (tool, input) = tool();
    for point in [[1366, 768], [0, 0]] {
        let out = run(&tool, json!({"action": "mouse_move", "coordinate": point})).await;
        assert!(!out.is_error, "{point:?}: {}", text(&out));
    }
    assert_eq!(
        input.events(),
        vec![InputEvent::MoveTo(1919, 1079), InputEvent::MoveTo(0, 0)]
    );
}

/// The schema check's error for an unknown action lists every valid one.
#[test]
fn an_unknown_action_is_answered_with_every_valid_one() {
    let (tool, _) = tool();
    let mut registry = crate::ToolRegistry::default();
    registry.register(Arc::new(tool)).unwrap();
    let Err(error) = registry.resolve("computer", &json!({"action": "fly"})) else {
        panic!("`fly` passed the schema");
    };
    assert!(matches!(error, ToolError::Schema { .. }), "{error:?}");
    let error = error.to_string();
    for action in ActionName::iter().map(ActionName::name) {
        assert!(
            error.contains(&format!("\"{action}\"")),
            "{action} missing: {error}"
        );
    }
    assert!(!error.contains("other candidates"), "{error}");
}

/// A tree whose bus is not there.
struct NoBus;

impl deskhand_platform::elements::Tree for NoBus {
    fn snapshot(
        &self,
    ) -> Result<deskhand_platform::elements::Snapshot, deskhand_platform::elements::ElementError>
    {
        Err(deskhand_platform::elements::ElementError::NoBus(
            "not running".into(),
        ))
    }
}

#[tokio::test]
async fn set_of_marks_lists_the_marks_beside_the_screenshot_or_says_why_there_are_none() {
    let tree = deskhand_platform::elements::FakeTree(deskhand_platform::elements::Snapshot {
        elements: vec![deskhand_platform::elements::fixtures::element(
            "/3",
            "push button",
            "Delete",
            (100, 100, 80, 30),
        )],
        notes: Vec::new(),
    });
    let (tool, _) = tool();
    let marked = tool.clone().with_tree(Arc::new(tree)).with_marks(true);
    let out = run(&marked, json!({"action": "screenshot"})).await;
    assert_eq!(image_size(&out), (1366, 768), "the image keeps its size");
    assert!(
        text(&out).contains(
            "Marks on this screenshot (number = ref, role, name):\n1 = e1 push button \"Delete\""
        ),
        "{}",
        text(&out)
    );
    let unmarked = tool.clone().with_tree(Arc::new(NoBus)).with_marks(false);
    let out = run(&unmarked, json!({"action": "screenshot"})).await;
    assert!(
        !text(&out).contains("arks on this screenshot"),
        "{}",
        text(&out)
    );
    let no_bus = tool.with_tree(Arc::new(NoBus)).with_marks(true);
    let out = run(&no_bus, json!({"action": "screenshot"})).await;
    assert_eq!(image_size(&out), (1366, 768), "the screenshot still comes");
    assert!(
        text(&out).contains("No marks on this screenshot: no accessibility bus: not running"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_click_with_no_accessibility_bus_names_that_and_not_an_empty_point() {
    let (tool, _) = tool();
    let plan = |tool: &ComputerTool| {
        tool.plan(&json!({"action": "left_click", "coordinate": [100, 100]}))
            .unwrap()
            .target
            .unwrap()
    };
    let no_bus = plan(&tool.clone().with_tree(Arc::new(NoBus)));
    assert!(!no_bus.known);
    assert_eq!(
        no_bus.describe(),
        "an unknown target (no accessibility bus)"
    );
    let empty =
        deskhand_platform::elements::FakeTree(deskhand_platform::elements::Snapshot::default());
    let nothing_there = plan(&tool.with_tree(Arc::new(empty)));
    assert_eq!(
        nothing_there.describe(),
        "an unknown target (no accessible element there)"
    );
}
