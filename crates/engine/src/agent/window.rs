//! A front end's window on the screen a run acts on. The run keeps it out of what it touches
//! and sees: each tool is wrapped (the window gets out of the way of the actions that touch
//! the screen), and the window steps aside while the run's check looks. Only the desktop app
//! has one; a run on an agent desktop does not use it (nothing of the window is there).

use std::sync::Arc;

use async_trait::async_trait;

use crate::tools::Tool;

#[async_trait]
pub trait RunWindow: Send + Sync + std::fmt::Debug {
    /// The tool as the window runs it.
    fn wrap(&self, tool: Arc<dyn Tool>) -> Arc<dyn Tool>;

    /// Out of the way of the screen until the returned guard is dropped.
    async fn step_aside(&self) -> Box<dyn Send>;
}
