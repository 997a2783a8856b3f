//! A tool as the window runs it: computer actions run with the bar out of the way. The images
//! a tool returns need nothing here: the store keeps them as their `tool_result` event is
//! recorded, before the window sees it, and `get_image` reads them there.

use std::sync::Arc;

use async_trait::async_trait;
use deskhand_engine::llm::ToolDefinition;
use deskhand_engine::tools::{ActionPlan, CheckedCall, Tool, ToolContext, ToolOutput};
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

#[async_trait]
impl<R: Runtime> Tool for WindowTool<R> {
    fn definition(&self) -> ToolDefinition {
        self.inner.definition()
    }

    fn plan(&self, input: &Value) -> Result<ActionPlan, String> {
        self.inner.plan(input)
    }

    fn plan_call(&self, input: &Value) -> Result<(ActionPlan, CheckedCall), String> {
        self.inner.plan_call(input)
    }

    async fn run(&self, input: &Value, ctx: &ToolContext) -> ToolOutput {
        match main_window(&self.app) {
            Some(window) if self.inner.definition().name == SCREEN_TOOL => {
                let state = self.app.state::<AppState>();
                let captured = state.captured_monitor(&window);
                let _ = state.bar.compact(&window, captured.as_ref());
                let _aside = state.bar.step_aside(&window).await;
                self.inner.run(input, ctx).await
            }
            _ => self.inner.run(input, ctx).await,
        }
    }

    fn take_events(&self) -> Vec<deskhand_engine::agent::AgentEvent> {
        self.inner.take_events()
    }
}
