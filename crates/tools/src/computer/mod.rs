//! The computer tool: Anthropic's `computer_20250124` / `computer_20251124` on the real
//! screen. Model coordinates are mapped onto the chosen monitor, actions go through the
//! `Input` seam, and each action answers with a fresh screenshot once the screen settles.

pub mod action;
pub mod toolset;
pub mod version;

pub use deskhand_platform::computer::{
    capture, fingerprint, input, keys, pipeline, screen, settle, with_keys_held,
};
#[cfg(target_os = "linux")]
pub use deskhand_platform::computer::{portal, wlroots};
pub use deskhand_protocol::scaling;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use self::action::{Action, ActionName, Click, ComputerInput, Point, ScrollDirection};
use self::capture::RealScreen;
use self::fingerprint::ScreenState;
use self::input::{Axis, Button, Direction, Input};
use self::pipeline::{Format, Screenshot};
use self::scaling::{Mapping, Size};
use self::screen::{Frame, Monitor, Screen, ScreenError};
use self::settle::SettlePolicy;
use self::version::ToolVersion;
use super::settings::ToolSettings;
use super::{
    ActionDetail, ActionPlan, PointerDetail, ToolContext, ToolError, ToolOutput, TypedTool,
};
use deskhand_llm::{AnthropicNativeTool, ImageSource, ToolDefinition, ToolResultContent};
use deskhand_platform::elements::refs::RefBook;
use deskhand_platform::elements::{Target, Tree};

/// `type` sends text in pieces this long, so a stop can land between them.
const TYPE_CHUNK_CHARS: usize = 50;
/// A drag moves through this many points, since some applications ignore a jump.
const DRAG_STEPS: i32 = 8;

/// Clones share one driver (screen, input, the last frame shown): the `ui` tool acts
/// through the computer tool's own.
#[derive(Clone)]
pub struct ComputerTool {
    version: ToolVersion,
    driver: Arc<Driver>,
    /// Where the approval's hit test looks for the element under a point; `None` names
    /// nothing.
    tree: Option<Arc<dyn Tree>>,
    /// The refs the model is given (marks here, answers of the `ui` tool), shared by clones.
    refs: Arc<Mutex<RefBook>>,
    /// Set-of-marks: number the interactive elements on each screenshot.
    marks: bool,
}

/// What performs actions; shared with the blocking task that runs each one.
struct Driver {
    screen: Arc<dyn Screen>,
    input: Mutex<Box<dyn Input>>,
    monitor: Monitor,
    mapping: Mapping,
    settle: SettlePolicy,
    format: Format,
    /// The last frame the model was shown, which the next action's result is compared with.
    shown: Mutex<Option<Frame>>,
}

impl ComputerTool {
    /// The tool on `monitor` (the primary one, else the first, when `None`), its screenshots
    /// at most `bound` (see `scaling::model_size_within`).
    pub fn new(
        screen: Arc<dyn Screen>,
        input: Box<dyn Input>,
        monitor: Option<usize>,
        bound: Option<Size>,
        version: ToolVersion,
        settle: SettlePolicy,
    ) -> Result<Self, screen::ScreenError> {
        let monitor = screen::choose(screen.monitors()?, monitor)?;
        let mapping = Mapping::new(monitor.geometry, bound);
        Ok(Self {
            version,
            driver: Arc::new(Driver {
                screen,
                input: Mutex::new(input),
                monitor,
                mapping,
                settle,
                format: Format::Png,
                shown: Mutex::new(None),
            }),
            tree: None,
            refs: Arc::default(),
            marks: false,
        })
    }

    /// The same tool, its screenshots marked with numbered boxes on the interactive elements
    /// and the list of their refs (set-of-marks, for models that ground poorly).
    pub fn with_marks(mut self, on: bool) -> Self {
        self.marks = on;
        self
    }

    /// The refs given to the model, which the `ui` tool resolves.
    pub fn refs(&self) -> Arc<Mutex<RefBook>> {
        self.refs.clone()
    }

    /// The same tool, naming the element under each click, drag or type point in its
    /// approvals (a hit test on `tree`).
    pub fn with_tree(mut self, tree: Arc<dyn Tree>) -> Self {
        self.tree = Some(tree);
        self
    }

    /// The monitor as it is now, at full resolution.
    pub fn capture(&self) -> Result<Frame, screen::ScreenError> {
        self.driver.screen.capture(&self.driver.monitor)
    }

    /// What a pointer action at `points` (the last one, where the button goes) or a `type`
    /// (into what has the focus, found at the pointer) will touch.
    fn target(&self, action: &Action, points: &[(i32, i32)]) -> Option<Target> {
        let tree = self.tree.as_ref()?;
        let at = match action {
            Action::Click { .. }
            | Action::Drag { .. }
            | Action::MouseDown { .. }
            | Action::MouseUp { .. } => match points.last() {
                Some(p) => *p,
                None => self.driver.input().location().ok()?,
            },
            Action::Type { .. } => self.driver.input().location().ok()?,
            _ => return None,
        };
        Some(match tree.at(at.0, at.1) {
            Ok(Some(element)) => element.target(),
            Ok(None) => Target::default(),
            Err(e) => e.target(),
        })
    }

    /// The real screen and input, or why they cannot work here.
    pub fn open(settings: &ToolSettings) -> Result<Self, ToolError> {
        let unavailable = |e: &dyn std::fmt::Display| ToolError::Unavailable(e.to_string());
        let screen = match &settings.display {
            #[cfg(target_os = "linux")]
            Some(display) => RealScreen::open_x11(display),
            #[cfg(not(target_os = "linux"))]
            Some(_) => return Err(unavailable(&"an agent desktop needs Linux")),
            None => RealScreen::open(),
        }
        .map_err(|e| unavailable(&e))?;
        let input = screen.input().map_err(|e| unavailable(&e))?;
        Self::new(
            Arc::new(screen),
            input,
            settings.monitor,
            settings.screenshot_size,
            ToolVersion::for_model(&settings.model),
            SettlePolicy::default(),
        )
        .map(|tool| {
            tool.with_tree(deskhand_platform::elements::tree_of(
                settings.display.is_some(),
                settings.accessibility_bus.as_deref(),
            ))
            .with_marks(settings.set_of_marks)
        })
        .map_err(|e| unavailable(&e))
    }

    /// Where this tool's approvals look up elements, for the `ui` tool to share.
    pub fn tree(&self) -> Option<Arc<dyn Tree>> {
        self.tree.clone()
    }

    pub fn mapping(&self) -> Mapping {
        self.driver.mapping
    }

    pub fn monitor(&self) -> &Monitor {
        &self.driver.monitor
    }
}

/// The native definition of `version` for a screen of `model` pixels, with the older
/// versions to step down to behind it. The toolset entry carries only its `type`: every
/// member is on by default and Deskhand implements all 17, so it needs no `configs`.
fn native_definition(model: Size, version: ToolVersion) -> AnthropicNativeTool {
    let definition = match version {
        ToolVersion::Toolset20260801 => json!({"type": version.tool_type()}),
        _ => {
            let mut native = json!({
                "type": version.tool_type(),
                "name": "computer",
                "display_width_px": model.width,
                "display_height_px": model.height,
            });
            if version.has_zoom() {
                native["enable_zoom"] = json!(true);
            }
            native
        }
    };
    AnthropicNativeTool {
        definition,
        beta: version.beta(),
        fallback: version
            .step_down()
            .map(|older| Box::new(native_definition(model, older))),
    }
}

fn description(mapping: &Mapping, version: ToolVersion) -> String {
    let size = mapping.model;
    let zoom = if version.has_zoom() {
        " `zoom` (region [x1, y1, x2, y2]) returns that part of the screen at full resolution."
    } else {
        ""
    };
    format!(
        "Use the computer's mouse and keyboard and see its screen. The screen is {size} pixels; \
         coordinates are [x, y] in those pixels, from [0, 0] at the top left. Actions: \
         `screenshot`; `left_click`, `right_click`, `middle_click`, `double_click`, \
         `triple_click` (optional `coordinate`, optional modifier such as \"shift\" in `text`); \
         `mouse_move` (`coordinate`); `left_click_drag` (`coordinate`, optional \
         `start_coordinate` and modifier); `left_mouse_down`, `left_mouse_up` (optional \
         `coordinate`); `scroll` (optional \
         `coordinate`, `scroll_direction` up/down/left/right, `scroll_amount` in wheel clicks); \
         `type` (`text`); `key` (`text` in xdotool syntax, e.g. \"ctrl+s\", \"Return\", \
         \"alt+Tab\"); `hold_key` (`text`, `duration` in seconds); `wait` (`duration`); \
         `cursor_position`.{zoom} A parameter an action does not take is refused. Every \
         action except `cursor_position` returns a new screenshot. Take a screenshot first, and check each step's result."
    )
}

/// A computer call as the tool read it, checked against the screen the model was told of.
pub struct ComputerCall {
    name: ActionName,
    /// The input's `text` (what `type` types, a click's modifier), shown in the plan.
    text: Option<String>,
    action: Action,
}

/// Why an action failed once it was under way.
#[derive(Debug, thiserror::Error)]
enum ActError {
    #[error(transparent)]
    Screen(#[from] screen::ScreenError),
    #[error(transparent)]
    Input(#[from] input::InputError),
    #[error("stopped by the user")]
    Stopped,
}

#[async_trait]
impl TypedTool for ComputerTool {
    type Input = ComputerCall;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "computer".into(),
            description: description(&self.driver.mapping, self.version),
            input_schema: action::schema(self.version),
            anthropic: Some(native_definition(self.driver.mapping.model, self.version)),
        }
    }

    fn read(&self, input: &Value) -> Result<ComputerCall, ToolError> {
        let read = ComputerInput::read(input, self.version)?;
        let action = read.check(input, self.driver.mapping.model, self.version)?;
        Ok(ComputerCall {
            name: read.action,
            text: read.text,
            action,
        })
    }

    fn plan(&self, call: &ComputerCall) -> Result<ActionPlan, ToolError> {
        let mapping = &self.driver.mapping;
        let name = call.name.name();
        let action = &call.action;
        let points = action.points();
        let screen: Vec<(i32, i32)> = points.iter().map(|p| mapping.to_screen(p.x, p.y)).collect();
        let mut summary = name.to_string();
        for (p, s) in points.iter().zip(&screen) {
            summary.push_str(&format!(" ({}, {}) → screen ({}, {})", p.x, p.y, s.0, s.1));
        }
        if let Some(text) = &call.text {
            let (start, rest) = deskhand_protocol::visible::shortened(
                text,
                deskhand_protocol::visible::TYPED_CHARS,
            );
            // Typed text is the model's: its `*` must not turn into emphasis.
            let typed = deskhand_protocol::emphasis::escape(&format!("{start:?}"));
            summary.push_str(&format!(" {typed}{rest}"));
        }
        let target = self.target(action, &screen);
        if let Some(target) = &target {
            summary.push_str(&format!(": {}", target.describe()));
        }
        let plan = ActionPlan {
            kind: format!("computer.{name}"),
            read_only: action.is_read_only(),
            summary,
            detail: ActionDetail::Pointer(Box::new(PointerDetail {
                monitor: Some(self.driver.monitor.index),
                ..PointerDetail::new(
                    name,
                    mapping.model,
                    points.iter().map(|p| [p.x, p.y]).zip(screen),
                )
            })),
            // Every action but reading the pointer's place moves the pointer, types or
            // returns a screenshot.
            on_screen: !matches!(action, Action::CursorPosition),
            safety_checks: Vec::new(),
            target: target.map(Box::new),
        };
        Ok(plan)
    }

    async fn run(&self, call: ComputerCall, ctx: &ToolContext) -> ToolOutput {
        let (label, action) = (call.name.name(), call.action);
        let driver = self.driver.clone();
        let cancel = ctx.cancel.clone();
        let marks = self.tree.clone().filter(|_| self.marks);
        let refs = self.refs.clone();
        let perform = move || {
            let output = driver.perform(&action, label, &cancel)?;
            Ok::<_, ActError>(match marks {
                Some(tree) => driver.marked(output, tree.as_ref(), &refs),
                None => output,
            })
        };
        match tokio::task::spawn_blocking(perform).await {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => ToolOutput::error(format!("{label} failed: {e}")),
            Err(e) => ToolOutput::error(format!("{label} failed: {e}")),
        }
    }
}

fn image_content(shot: &Screenshot) -> ToolResultContent {
    ToolResultContent::Image {
        source: ImageSource::Base64 {
            media_type: shot.media_type.into(),
            data: BASE64.encode(&shot.bytes),
        },
    }
}

/// Sleeps in small steps so that a stop ends it; says whether it was stopped.
fn sleep_unless_stopped(duration: Duration, cancel: &CancellationToken) -> bool {
    let until = Instant::now() + duration;
    while !cancel.is_cancelled() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
    true
}

impl Driver {
    /// Performs `action` (called `name` by the model) and answers with the settled screen.
    fn perform(
        &self,
        action: &Action,
        name: &str,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ActError> {
        match action {
            Action::Screenshot => {
                // At the mapping's size, which a screenshot-size setting may have bounded.
                let started = Instant::now();
                let frame = self.screen.capture(&self.monitor)?;
                let shot =
                    pipeline::finish(&frame, self.mapping.model, self.format, started.elapsed())?;
                *self.shown() = Some(frame);
                return Ok(ToolOutput {
                    content: vec![image_content(&shot)],
                    is_error: false,
                    screen: None,
                });
            }
            Action::CursorPosition => {
                let (x, y) = self.input().location()?;
                return Ok(match self.mapping.to_model(x, y) {
                    Some((mx, my)) => ToolOutput::text(format!("X={mx},Y={my}")),
                    None => ToolOutput::error(format!(
                        "the pointer is at ({x}, {y}) on the desktop, outside this screen"
                    )),
                });
            }
            Action::Zoom { from, to } => return self.zoom(*from, *to),
            _ => {}
        }
        // Compared with what the model saw; captured now only when it saw nothing yet.
        let before = match self.shown().take() {
            Some(frame) => frame,
            None => self.screen.capture(&self.monitor)?,
        };
        if self.act(action, cancel)? {
            return Err(ActError::Stopped);
        }
        let settled = settle::settle(
            &mut || self.screen.capture(&self.monitor),
            self.settle,
            cancel,
        )?;
        let shot = pipeline::finish(
            &settled.frame,
            self.mapping.model,
            self.format,
            settled.capturing,
        )?;
        let state = ScreenState {
            hash: fingerprint::perceptual_hash(&settled.frame),
            changed: settled.frame != before,
        };
        let mut content = vec![image_content(&shot)];
        if !state.changed {
            content.push(ToolResultContent::Text {
                text: format!("the screen did not change after this {name}"),
            });
        }
        *self.shown() = Some(settled.frame);
        Ok(ToolOutput {
            content,
            is_error: false,
            screen: Some(state),
        })
    }

    /// `output` with its screenshot replaced by the same frame with numbered marks on the
    /// interactive elements, and their refs as text; where the tree cannot be read, the
    /// screenshot unmarked and a line saying why, so the model is not left looking for marks.
    fn marked(&self, mut output: ToolOutput, tree: &dyn Tree, refs: &Mutex<RefBook>) -> ToolOutput {
        let Some(at) = output
            .content
            .iter()
            .position(|c| matches!(c, ToolResultContent::Image { .. }))
        else {
            return output;
        };
        let Some(frame) = self.shown().clone() else {
            return output;
        };
        let marked = tree
            .snapshot()
            .map_err(|e| e.to_string())
            .and_then(|snapshot| {
                marks_for(&frame, &snapshot, &self.mapping, self.format, refs)
                    .map_err(|e| e.to_string())
            });
        let (image, list) = match marked {
            Ok(marked) => marked,
            Err(e) => {
                let text = format!("No marks on this screenshot: {e}");
                output
                    .content
                    .insert(at + 1, ToolResultContent::Text { text });
                return output;
            }
        };
        output.content[at] = image_content(&image);
        output
            .content
            .insert(at + 1, ToolResultContent::Text { text: list });
        output
    }

    fn shown(&self) -> std::sync::MutexGuard<'_, Option<Frame>> {
        self.shown.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn input(&self) -> std::sync::MutexGuard<'_, Box<dyn Input>> {
        self.input.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn zoom(&self, from: Point, to: Point) -> Result<ToolOutput, ActError> {
        let frame = self.screen.capture(&self.monitor)?;
        let mut mapping = self.mapping;
        // Map onto the frame actually captured.
        mapping.geometry.pixels = frame.size;
        let (l, t, w, h) = mapping.to_pixels(from.x, from.y, to.x, to.y);
        let size = scaling::within_limits(scaling::Size::new(w, h));
        let crop = pipeline::resize(&frame, Some((l, t, w, h)), size)?;
        let shot = Screenshot {
            bytes: pipeline::encode(&crop, self.format)?,
            media_type: self.format.media_type(),
            screen: frame.size,
            model: size,
            timings: Default::default(),
        };
        Ok(ToolOutput {
            content: vec![image_content(&shot)],
            is_error: false,
            screen: None,
        })
    }

    fn move_to(&self, input: &mut Box<dyn Input>, p: Point) -> Result<(), input::InputError> {
        let (x, y) = self.mapping.to_screen(p.x, p.y);
        input.move_to(x, y)
    }

    /// Performs an input action; true if a stop cut it short.
    fn act(&self, action: &Action, cancel: &CancellationToken) -> Result<bool, input::InputError> {
        let mut input = self.input();
        match action {
            Action::Click {
                click,
                at,
                modifiers,
            } => {
                if let Some(p) = at {
                    self.move_to(&mut input, *p)?;
                }
                let (button, times) = match click {
                    Click::Left => (Button::Left, 1),
                    Click::Right => (Button::Right, 1),
                    Click::Middle => (Button::Middle, 1),
                    Click::Double => (Button::Left, 2),
                    Click::Triple => (Button::Left, 3),
                };
                with_keys_held(&mut input, modifiers, |input| {
                    for _ in 0..times {
                        input.button(button, Direction::Click)?;
                    }
                    Ok(())
                })?;
            }
            Action::MouseMove { to } => self.move_to(&mut input, *to)?,
            Action::Drag {
                from,
                to,
                modifiers,
            } => {
                if let Some(p) = from {
                    self.move_to(&mut input, *p)?;
                }
                let (x0, y0) = input.location()?;
                let (x1, y1) = self.mapping.to_screen(to.x, to.y);
                // The modifiers are held from before the press until after the release.
                with_keys_held(&mut input, modifiers, |input| {
                    input.button(Button::Left, Direction::Press)?;
                    let glide = (|| {
                        for step in 1..=DRAG_STEPS {
                            std::thread::sleep(Duration::from_millis(10));
                            input.move_to(
                                x0 + (x1 - x0) * step / DRAG_STEPS,
                                y0 + (y1 - y0) * step / DRAG_STEPS,
                            )?;
                        }
                        Ok(())
                    })();
                    let released = input.button(Button::Left, Direction::Release);
                    glide.and(released)
                })?;
            }
            Action::MouseDown { at } | Action::MouseUp { at } => {
                if let Some(p) = at {
                    self.move_to(&mut input, *p)?;
                }
                let direction = if matches!(action, Action::MouseDown { .. }) {
                    Direction::Press
                } else {
                    Direction::Release
                };
                input.button(Button::Left, direction)?;
            }
            Action::Scroll {
                at,
                direction,
                amount,
                modifiers,
            } => {
                if let Some(p) = at {
                    self.move_to(&mut input, *p)?;
                }
                let amount = *amount as i32;
                let (length, axis) = match direction {
                    ScrollDirection::Up => (-amount, Axis::Vertical),
                    ScrollDirection::Down => (amount, Axis::Vertical),
                    ScrollDirection::Left => (-amount, Axis::Horizontal),
                    ScrollDirection::Right => (amount, Axis::Horizontal),
                };
                with_keys_held(&mut input, modifiers, |input| input.scroll(length, axis))?;
            }
            Action::Type { text } => {
                let chars: Vec<char> = text.chars().collect();
                for chunk in chars.chunks(TYPE_CHUNK_CHARS) {
                    if cancel.is_cancelled() {
                        return Ok(true);
                    }
                    input.text(&chunk.iter().collect::<String>())?;
                }
            }
            Action::Key { combos } => {
                for combo in combos {
                    if cancel.is_cancelled() {
                        return Ok(true);
                    }
                    // Reading the input refused an empty combo.
                    let Some((last, held)) = combo.split_last() else {
                        continue;
                    };
                    with_keys_held(&mut input, held, |input| input.key(*last, Direction::Click))?;
                }
            }
            Action::HoldKey { keys, duration } => {
                let mut stopped = false;
                with_keys_held(&mut input, keys, |_| {
                    stopped = sleep_unless_stopped(*duration, cancel);
                    Ok(())
                })?;
                return Ok(stopped);
            }
            Action::Wait { duration } => {
                drop(input);
                return Ok(sleep_unless_stopped(*duration, cancel));
            }
            Action::Screenshot | Action::CursorPosition | Action::Zoom { .. } => {}
        }
        Ok(false)
    }
}

/// The screenshot of `frame` at the model's size with numbered marks on the interactive
/// elements of `snapshot`, and the list "1 = e3 push button \"Delete\"", one a line.
pub fn marks_for(
    frame: &Frame,
    snapshot: &deskhand_platform::elements::Snapshot,
    mapping: &Mapping,
    format: Format,
    refs: &Mutex<RefBook>,
) -> Result<(Screenshot, String), ScreenError> {
    let mut refs = refs.lock().unwrap_or_else(|e| e.into_inner());
    let mut model = pipeline::resize(frame, None, mapping.model)?;
    let mut marks = Vec::new();
    let mut list = String::from("Marks on this screenshot (number = ref, role, name):");
    for element in snapshot.elements.iter().filter(|e| e.is_interactive()) {
        let Some(bounds) = element.bounds.to_model(mapping) else {
            continue;
        };
        let number = marks.len() + 1;
        marks.push((number, bounds));
        list.push_str(&format!(
            "\n{number} = {} {} {:?}",
            refs.reference(element),
            element.role,
            element.name
        ));
    }
    deskhand_platform::elements::marks::draw(&mut model, &marks);
    let shot = Screenshot {
        bytes: pipeline::encode(&model, format)?,
        media_type: format.media_type(),
        screen: frame.size,
        model: mapping.model,
        timings: Default::default(),
    };
    Ok((shot, list))
}

#[cfg(test)]
mod tests;
