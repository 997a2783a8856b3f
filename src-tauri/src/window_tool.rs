//! A tool as the window runs it: computer actions run with the bar out of the way. The images
//! a tool returns need nothing here: the store keeps them as their `tool_result` event is
//! recorded, before the window sees it, and `get_image` reads them there.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deskhand_engine::agent::AgentEvent;
use deskhand_engine::llm::ToolDefinition;
use deskhand_engine::tools::{ActionPlan, PreparedCall, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::Value;
use tauri::{AppHandle, Manager, Runtime};

use crate::bar::main_window;
use crate::state::AppState;

/// The tool that acts on the screen; the others (bash, editor) leave the window as it is.
const SCREEN_TOOL: &str = "computer";

pub struct WindowTool<R: Runtime> {
    pub inner: Arc<dyn Tool>,
    pub app: AppHandle<R>,
}

impl<R: Runtime> Tool for WindowTool<R> {
    fn definition(&self) -> ToolDefinition {
        self.inner.definition()
    }

    fn prepare(&self, input: &Value) -> Result<Box<dyn PreparedCall + '_>, ToolError> {
        Ok(Box::new(WindowCall {
            call: self.inner.prepare(input)?,
            app: &self.app,
            on_screen: self.inner.definition().name == SCREEN_TOOL,
        }))
    }

    fn take_events(&self) -> Vec<AgentEvent> {
        self.inner.take_events()
    }

    fn cancel_grace(&self) -> Duration {
        self.inner.cancel_grace()
    }
}

/// The wrapped tool's call, run with the bar out of the way when it acts on the screen.
struct WindowCall<'a, R: Runtime> {
    call: Box<dyn PreparedCall + 'a>,
    app: &'a AppHandle<R>,
    on_screen: bool,
}

#[async_trait]
impl<R: Runtime> PreparedCall for WindowCall<'_, R> {
    fn plan(&self) -> Result<ActionPlan, ToolError> {
        self.call.plan()
    }

    async fn run(self: Box<Self>, ctx: &ToolContext) -> ToolOutput {
        match main_window(self.app) {
            Some(window) if self.on_screen => {
                let state = self.app.state::<AppState>();
                let captured = state.captured_monitor(&window);
                let _ = state.bar.compact(&window, captured.as_ref());
                let _aside = state.bar.step_aside(&window).await;
                self.call.run(ctx).await
            }
            _ => self.call.run(ctx).await,
        }
    }
}
