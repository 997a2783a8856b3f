//! Plugins are MCP (Model Context Protocol) servers, the ecosystem's way to add tools.
//! Declared in `mcp.json` (Claude Desktop's shape), started at launch over stdio with the
//! official Rust SDK (`rmcp`), and offered to the model as `server__tool`. Every call passes
//! the approval gate (a tool's `readOnlyHint` makes it read-only). A server that fails to
//! start, crashes or hangs only fails its own tools, and is restarted on the next call.

mod config;
mod content;
mod limits;
mod server;
mod tool;

use std::path::Path;
use std::sync::Arc;

pub use config::{CONFIG_FILE, PluginConfig, Selection, ServerConfig};
pub use server::{PluginServer, PluginTimeouts, PluginToolInfo, ServerState, namespaced};
pub use tool::PluginTool;

use super::{Tool as _, ToolRegistry};

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("cannot read the plugin config {path}: {message}")]
    Config { path: String, message: String },
    #[error("the plugin server `{0}` is disabled in the plugin config")]
    Disabled(String),
}

impl PluginError {
    fn config(path: &Path, error: impl std::fmt::Display) -> Self {
        Self::Config {
            path: path.display().to_string(),
            message: error.to_string(),
        }
    }
}

/// The plugin servers of a run or of the app.
#[derive(Default)]
pub struct Plugins {
    servers: Vec<Arc<PluginServer>>,
}

impl Plugins {
    /// Starts the named servers of `config` side by side (disabled ones stay off) and waits
    /// until each runs or has failed.
    pub async fn start(config: &PluginConfig, names: &[String], timeouts: PluginTimeouts) -> Self {
        let servers: Vec<Arc<PluginServer>> = names
            .iter()
            .filter_map(|name| {
                let server = config.servers.get(name)?;
                Some(Arc::new(PluginServer::new(name, server.clone(), timeouts)))
            })
            .collect();
        futures_util::future::join_all(servers.iter().map(|server| server.restart())).await;
        Self { servers }
    }

    pub fn servers(&self) -> &[Arc<PluginServer>] {
        &self.servers
    }

    /// Offers the tools of every running server. Returns what could not be offered: servers
    /// that failed to start, tools the registry refused.
    pub async fn add_tools(&self, registry: &mut ToolRegistry) -> Vec<String> {
        let mut problems = Vec::new();
        for server in &self.servers {
            if let ServerState::Failed { error } = server.state().await {
                problems.push(format!(
                    "the plugin server `{}` failed to start: {error}",
                    server.name()
                ));
            }
            for note in server.notes().await {
                problems.push(format!("the plugin server `{}`: {note}", server.name()));
            }
            for info in server.tools().await {
                let name = info.name.clone();
                if let Err(e) = registry.register(Arc::new(PluginTool::new(server.clone(), info))) {
                    problems.push(format!(
                        "the tool `{name}` of the plugin server `{}` is not offered: {e}",
                        server.name()
                    ));
                }
            }
        }
        problems
    }

    /// About how many input tokens the tool definitions of `server` add to every request
    /// (the estimate the context budget uses).
    pub async fn definition_tokens(server: &Arc<PluginServer>) -> u64 {
        let definitions: Vec<_> = server
            .tools()
            .await
            .into_iter()
            .map(|info| PluginTool::new(server.clone(), info).definition())
            .collect();
        deskhand_llm::estimate::estimate_request("", &definitions, &[])
    }

    /// Stops every server.
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.servers.iter().map(|server| server.shutdown())).await;
    }
}
