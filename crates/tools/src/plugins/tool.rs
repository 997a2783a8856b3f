//! One tool of a plugin server, offered to the model under its namespaced name.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::server::{PluginServer, PluginToolInfo};
use crate::{ActionDetail, ActionPlan, ToolContext, ToolError, ToolOutput, TypedTool};
use deskhand_llm::ToolDefinition;

pub struct PluginTool {
    server: Arc<PluginServer>,
    info: PluginToolInfo,
}

impl PluginTool {
    pub fn new(server: Arc<PluginServer>, info: PluginToolInfo) -> Self {
        Self { server, info }
    }
}

#[async_trait]
impl TypedTool for PluginTool {
    /// What the input is, the server's own schema says: it is passed on as it came.
    type Input = Value;

    fn definition(&self) -> ToolDefinition {
        let mut schema = self.info.input_schema.clone();
        // The API wants an object schema; MCP servers sometimes leave the type implicit.
        if schema.get("type").is_none() {
            schema["type"] = json!("object");
        }
        ToolDefinition {
            name: self.info.name.clone(),
            description: format!(
                "{} (from the plugin server `{}`)",
                self.info.description.trim(),
                self.server.name()
            ),
            input_schema: schema,
            anthropic: None,
        }
    }

    fn read(&self, input: &Value) -> Result<Value, ToolError> {
        Ok(input.clone())
    }

    fn plan(&self, input: &Value) -> Result<ActionPlan, ToolError> {
        Ok(ActionPlan {
            kind: self.info.name.clone(),
            read_only: self.info.read_only,
            summary: format!("{}: {} {input}", self.server.name(), self.info.tool),
            detail: ActionDetail::PluginCall {
                server: self.server.name().into(),
                tool: self.info.tool.clone(),
                arguments: Box::new(input.clone()),
            },
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        self.server.call(&self.info.tool, &input, &ctx.cancel).await
    }
}
