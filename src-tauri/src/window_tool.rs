//! The window as a run on the person's screen sees it (`RunWindow`): it steps aside while the
//! run's check looks, and wraps each tool. An action that touches the screen
//! (its plan says `on_screen`: input, or a capture the model or a check will see) runs with
//! the bar out of the way, whatever tool it comes from. After an approval, the desktop is put
//! back as it was when the action was planned: the click on Approve moved the pointer and
//! took the focus, and typing must go where the person saw it would. An action that would
//! still land on one of Deskhand's own windows (a dialog) is refused.
//!
//! The images a tool returns need nothing here: the store keeps them as their `tool_result`
//! event is recorded, before the window sees it, and `get_image` reads them there.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskhand_engine::agent::{AgentEvent, RunWindow};
use deskhand_engine::llm::ToolDefinition;
use deskhand_engine::tools::{
    ActionDetail, ActionPlan, PreparedCall, Tool, ToolContext, ToolError, ToolOutput,
};
use deskhand_engine::windows::{Desk, Focus};
use serde_json::Value;
use tauri::{AppHandle, Manager, Runtime};

use crate::bar::{StepAside, main_window};
use crate::state::AppState;

/// How long the window manager may take to give the focus back after an approval.
const REFOCUS_WAIT: Duration = Duration::from_millis(300);

/// The window as a run on the person's screen sees it.
pub struct AppWindow<R: Runtime> {
    pub app: AppHandle<R>,
    /// Where each step's time to step aside is written, one line per step, for the benchmark
    /// (`DESKHAND_ASIDE_LOG`, see docs/benchmarks.md); `None` writes nothing.
    aside_log: Option<Arc<Path>>,
}

impl<R: Runtime> AppWindow<R> {
    pub fn new(app: AppHandle<R>) -> Self {
        let aside_log = std::env::var_os("DESKHAND_ASIDE_LOG").map(|p| Arc::from(PathBuf::from(p)));
        Self { app, aside_log }
    }
}

impl<R: Runtime> std::fmt::Debug for AppWindow<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppWindow")
    }
}

#[async_trait]
impl<R: Runtime> RunWindow for AppWindow<R> {
    fn wrap(&self, inner: Arc<dyn Tool>) -> Arc<dyn Tool> {
        Arc::new(WindowTool {
            inner,
            app: self.app.clone(),
            aside_log: self.aside_log.clone(),
        })
    }

    async fn step_aside(&self) -> Box<dyn Send> {
        let desk = Desk::open().ok();
        Box::new(step_aside(&self.app, desk.as_ref()).await)
    }
}

/// Compacts the window into the bar and hides it, until the guard drops; `None` without a
/// window. `desk` lets it wait for the desktop to be painted rather than a fixed time.
async fn step_aside<R: Runtime>(app: &AppHandle<R>, desk: Option<&Desk>) -> Option<StepAside<R>> {
    let window = main_window(app)?;
    let state = app.state::<AppState>();
    // Finding the captured monitor opens the screen: only the first action of a run needs it.
    if !state.bar.is_compact() {
        let captured = state.captured_monitor(&window);
        let _ = state.bar.compact(&window, captured.as_ref());
    }
    Some(state.bar.step_aside(&window, desk).await)
}

struct WindowTool<R: Runtime> {
    inner: Arc<dyn Tool>,
    app: AppHandle<R>,
    aside_log: Option<Arc<Path>>,
}

impl<R: Runtime> Tool for WindowTool<R> {
    fn definition(&self) -> ToolDefinition {
        self.inner.definition()
    }

    fn prepare(&self, input: &Value) -> Result<Box<dyn PreparedCall + '_>, ToolError> {
        Ok(Box::new(WindowCall {
            call: self.inner.prepare(input)?,
            app: &self.app,
            first: Mutex::new(None),
            aside: None,
            aside_log: self.aside_log.as_deref(),
        }))
    }

    fn take_events(&self) -> Vec<AgentEvent> {
        self.inner.take_events()
    }

    fn cancel_grace(&self) -> Duration {
        self.inner.cancel_grace()
    }
}

/// The wrapped tool's call, run with the bar out of the way when it touches the screen.
struct WindowCall<'a, R: Runtime> {
    call: Box<dyn PreparedCall + 'a>,
    app: &'a AppHandle<R>,
    first: Mutex<Option<FirstPlan>>,
    /// The window is out of the way until the call has run.
    aside: Option<StepAside<R>>,
    aside_log: Option<&'a Path>,
}

/// What the first plan said, and for an action on the screen, the desktop it was made
/// against: made before any approval card is up, so the person's focus and pointer are
/// where the action will act.
struct FirstPlan {
    plan: ActionPlan,
    /// The display, when it is X11 (elsewhere nothing is put back and nothing refused).
    desk: Option<Desk>,
    focus: Option<Focus>,
}

impl<R: Runtime> WindowCall<'_, R> {
    fn first(&self) -> std::sync::MutexGuard<'_, Option<FirstPlan>> {
        self.first.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn first_plan(&self) -> Option<ActionPlan> {
        self.first().as_ref().map(|first| first.plan.clone())
    }

    async fn step_aside(&mut self) {
        if self.aside.is_none() {
            let first = self.first.get_mut().unwrap_or_else(|e| e.into_inner());
            let desk = first.as_ref().and_then(|first| first.desk.as_ref());
            self.aside = step_aside(self.app, desk).await;
        }
    }

    /// Why `plan` would land on one of Deskhand's own windows, if it would: a point of a
    /// click or drag inside one, or typing while one has the focus.
    fn lands_on_own_window(&self, plan: &ActionPlan) -> Option<String> {
        let first = self.first();
        let desk = first.as_ref()?.desk.as_ref()?;
        let own = std::process::id();
        // Each check asks the display only for what it needs: the windows for a point,
        // the focus for typing; a screenshot asks nothing.
        if let ActionDetail::Pointer(pointer) = &plan.detail
            && !pointer.screen_points.is_empty()
            && let Ok(windows) = desk.windows_of(own)
            && let Some(point) = pointer
                .screen_points
                .iter()
                .find(|p| windows.iter().any(|w| w.contains(p.x, p.y)))
        {
            return Some(format!(
                "nothing was done: the point ({}, {}) is on Deskhand's own window, which is \
                 never a target; take a screenshot and act on the app itself",
                point.x, point.y
            ));
        }
        let typing = ["type", "key", "hold_key"]
            .iter()
            .any(|verb| plan.kind.rsplit('.').next() == Some(verb));
        if !typing {
            return None;
        }
        let focused = desk.focus().ok()?.window;
        (desk.owner(focused) == Some(own)).then(|| {
            "nothing was done: Deskhand's own window has the keyboard focus, and typing never \
             goes there; click into the app first"
                .to_string()
        })
    }
}

#[async_trait]
impl<R: Runtime> PreparedCall for WindowCall<'_, R> {
    fn plan(&self) -> Result<ActionPlan, ToolError> {
        let plan = self.call.plan()?;
        let mut first = self.first();
        if first.is_none() {
            let desk = plan.on_screen.then(|| Desk::open().ok()).flatten();
            let focus = desk.as_ref().and_then(|desk| desk.focus().ok());
            *first = Some(FirstPlan {
                plan: plan.clone(),
                desk,
                focus,
            });
        }
        Ok(plan)
    }

    async fn after_approval(&mut self) {
        if !self.first_plan().is_some_and(|plan| plan.on_screen) {
            return;
        }
        self.step_aside().await;
        let first = self.first.get_mut().unwrap_or_else(|e| e.into_inner());
        let Some(FirstPlan {
            desk: Some(desk),
            focus: Some(then),
            ..
        }) = first
        else {
            return;
        };
        if desk.restore(then).is_err() {
            return;
        }
        // The window manager gives the focus back in its own time: wait for it, briefly.
        let deadline = Instant::now() + REFOCUS_WAIT;
        while desk.focus().is_ok_and(|now| now.window != then.window) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn run(mut self: Box<Self>, ctx: &ToolContext) -> ToolOutput {
        // A call run without the loop's planning (the screenshot taken before a run resumes)
        // is planned here, so that it too steps aside.
        let plan = match self.first_plan() {
            Some(plan) => plan,
            None => match self.plan() {
                Ok(plan) => plan,
                Err(e) => return e.into(),
            },
        };
        if !plan.on_screen {
            return self.call.run(ctx).await;
        }
        let stepping = Instant::now();
        self.step_aside().await;
        if let Some(log) = self.aside_log {
            note_aside(log, &plan.kind, stepping.elapsed());
        }
        if let Some(why) = self.lands_on_own_window(&plan) {
            return ToolOutput::error(why);
        }
        let WindowCall { call, aside, .. } = *self;
        let output = call.run(ctx).await;
        drop(aside);
        output
    }
}

/// Appends `kind`'s time to step aside to `log` (best effort: it only feeds a benchmark).
fn note_aside(log: &Path, kind: &str, took: Duration) {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log);
    if let Ok(mut file) = file {
        let _ = writeln!(file, "{kind} {:.1}", took.as_secs_f64() * 1000.0);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use deskhand_engine::tools::computer::scaling::Size;
    use deskhand_engine::tools::{PointerDetail, ToolContext};
    use deskhand_test_support::x11;
    use serde_json::json;

    use super::*;

    /// A tool whose one action clicks at a screen point, and which notes that it ran.
    #[derive(Default)]
    struct ClickAt(AtomicBool);

    struct ClickCall<'a> {
        tool: &'a ClickAt,
        point: (i32, i32),
    }

    #[async_trait]
    impl PreparedCall for ClickCall<'_> {
        fn plan(&self) -> Result<ActionPlan, ToolError> {
            Ok(ActionPlan {
                kind: "computer.left_click".into(),
                read_only: false,
                summary: "left_click".into(),
                detail: ActionDetail::Pointer(Box::new(PointerDetail::new(
                    "left_click",
                    Size::new(1920, 1080),
                    [([0, 0], self.point)],
                ))),
                on_screen: true,
                safety_checks: Vec::new(),
                target: None,
            })
        }

        async fn run(self: Box<Self>, _: &ToolContext) -> ToolOutput {
            self.tool.0.store(true, Ordering::SeqCst);
            ToolOutput::text("clicked")
        }
    }

    impl Tool for ClickAt {
        fn definition(&self) -> ToolDefinition {
            ToolDefinition {
                name: "computer".into(),
                description: String::new(),
                input_schema: json!({"type": "object"}),
                anthropic: None,
            }
        }

        fn prepare(&self, input: &Value) -> Result<Box<dyn PreparedCall + '_>, ToolError> {
            let at = |i: usize| input["at"][i].as_i64().unwrap_or_default() as i32;
            Ok(Box::new(ClickCall {
                tool: self,
                point: (at(0), at(1)),
            }))
        }

        fn take_events(&self) -> Vec<AgentEvent> {
            Vec::new()
        }

        fn cancel_grace(&self) -> Duration {
            Duration::ZERO
        }
    }

    /// A click whose point falls on a window of this process (an xterm's, said to be ours
    /// with `_NET_WM_PID`, as a Deskhand dialog would be) is refused and never runs; one beside
    /// it runs.
    #[test]
    fn a_click_on_deskhands_own_window_is_refused_with_the_reason() {
        let Some(_display) = x11::display() else {
            return;
        };
        let (_xterm, id) = x11::xterm("deskhand-own-window", &["-geometry", "40x10+300+300"]);
        x11::claim_window(&id, std::process::id());
        let app = tauri::test::mock_app();
        for (at, refused) in [([320, 320], true), ([1200, 900], false)] {
            let inner = Arc::new(ClickAt::default());
            let tool = WindowTool {
                inner: inner.clone(),
                app: app.handle().clone(),
                aside_log: None,
            };
            let call = tool.prepare(&json!({ "at": at })).unwrap();
            assert!(call.plan().unwrap().on_screen);
            let (progress, _reports) = tokio::sync::mpsc::unbounded_channel();
            let ctx = ToolContext {
                cancel: Default::default(),
                progress,
            };
            let output = tauri::async_runtime::block_on(call.run(&ctx));
            let text = format!("{:?}", output.content);
            assert_eq!(output.is_error, refused, "{at:?}: {text}");
            assert_eq!(
                text.contains("is on Deskhand's own window, which is never a target"),
                refused,
                "{text}"
            );
            assert_eq!(inner.0.load(Ordering::SeqCst), !refused, "{at:?} ran");
        }
        // Run without the loop's planning (as the screenshot before a resumed run is), the
        // call is planned all the same, and refused.
        let inner = Arc::new(ClickAt::default());
        let tool = WindowTool {
            inner: inner.clone(),
            app: app.handle().clone(),
            aside_log: None,
        };
        let (progress, _reports) = tokio::sync::mpsc::unbounded_channel();
        let ctx = ToolContext {
            cancel: Default::default(),
            progress,
        };
        let output =
            tauri::async_runtime::block_on(Tool::run(&tool, &json!({"at": [320, 320]}), &ctx));
        assert!(output.is_error);
        assert!(!inner.0.load(Ordering::SeqCst), "it never ran");
    }
}
