//! Tools the model can call: the trait every tool implements, and the registry that offers
//! them to the model and checks each call's input against the tool's JSON Schema.

pub mod bash;
pub mod capped;
pub mod catalog;
pub mod computer;
pub use deskhand_protocol::action as detail;
pub mod editor;
pub mod input;
pub use deskhand_platform::launch;
pub mod memory;
pub mod plan;
pub mod plugins;
pub mod recall;
pub mod settings;
pub mod ui;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use deskhand_llm::{ToolDefinition, ToolResultContent};
pub use deskhand_protocol::action::{ActionDetail, ActionPlan, PointerDetail, SafetyCheck};

#[async_trait]
pub trait Tool: Send + Sync {
    fn definition(&self) -> ToolDefinition;

    /// Checks an input that already matches the schema and says what running it would do,
    /// for the approval gate. An `Err` goes back to the model and nothing runs.
    fn plan(&self, input: &Value) -> Result<ActionPlan, String>;

    /// `plan`, and what the tool read the call into, which the loop hands to `run` in
    /// `ToolContext::call` so that it acts without reading the input again. A tool whose
    /// reading is more than a lookup (the computer tool) returns it; others read at `run`.
    fn plan_call(&self, input: &Value) -> Result<(ActionPlan, CheckedCall), String> {
        Ok((self.plan(input)?, CheckedCall::default()))
    }

    async fn run(&self, input: &Value, ctx: &ToolContext) -> ToolOutput;

    /// Events the last call has to report beside its result (the plan tool's
    /// `plan_updated`); the loop sends them on once the call has run. Most tools have none.
    fn take_events(&self) -> Vec<deskhand_protocol::event::AgentEvent> {
        Vec::new()
    }

    /// How long a stopped run waits for this tool to finish after its cancellation token
    /// fired (a delegate cancels its child task first); most tools are dropped at once.
    fn cancel_grace(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

pub struct ToolContext {
    pub cancel: CancellationToken,
    /// The call as `Tool::plan_call` read it, when the loop planned it; empty otherwise.
    pub call: CheckedCall,
    /// What a long call reports while it runs (a delegated task's events and cost); the
    /// loop passes it on at once. Sends after the loop stopped listening are dropped.
    pub progress: tokio::sync::mpsc::UnboundedSender<Progress>,
}

impl ToolContext {
    /// A context whose progress goes nowhere: for callers that run a tool outside the loop.
    pub fn new(cancel: CancellationToken) -> Self {
        Self {
            cancel,
            call: CheckedCall::default(),
            progress: tokio::sync::mpsc::unbounded_channel().0,
        }
    }
}

/// A call as its tool read and checked it, opaque to all but that tool.
#[derive(Clone, Default)]
pub struct CheckedCall(Option<Arc<dyn std::any::Any + Send + Sync>>);

impl CheckedCall {
    pub fn new<T: std::any::Any + Send + Sync>(call: T) -> Self {
        Self(Some(Arc::new(call)))
    }

    /// The call, if it was read into a `T`.
    pub fn get<T: std::any::Any>(&self) -> Option<&T> {
        self.0.as_ref()?.downcast_ref()
    }
}

/// What a running call reports before its result.
#[derive(Debug)]
pub enum Progress {
    /// An event to store and show beside the call's (a child task's `child_event`, an
    /// approval the child asks the person for).
    Event(Box<deskhand_protocol::event::AgentEvent>),
    /// Money the call spent (a child task's model cost), in US dollars: it counts against
    /// the run's cost budget.
    Spent(f64),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<ToolResultContent>,
    pub is_error: bool,
    /// What a computer action left on the screen, for the stall breaker and the front ends.
    pub screen: Option<computer::fingerprint::ScreenState>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ToolResultContent::Text { text: text.into() }],
            is_error: false,
            screen: None,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }
}

/// One schema violation in words. A value outside an `enum` lists every allowed value (the
/// validator's own text names three and "N other candidates"): the model needs the list
/// to correct itself.
fn schema_problem(error: &jsonschema::ValidationError) -> String {
    match error.kind() {
        jsonschema::error::ValidationErrorKind::Enum { options } => {
            let allowed: Vec<String> = options
                .as_array()
                .into_iter()
                .flatten()
                .map(Value::to_string)
                .collect();
            format!("{} is not one of {}", error.instance(), allowed.join(", "))
        }
        _ => error.to_string(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("two tools are named `{0}`")]
    Duplicate(String),
    #[error("tool `{name}` has an invalid input schema: {message}")]
    BadSchema { name: String, message: String },
}

struct Registered {
    tool: Arc<dyn Tool>,
    definition: ToolDefinition,
    validator: jsonschema::Validator,
}

/// The tools offered in one run, with their compiled schemas.
#[derive(Default)]
pub struct ToolRegistry {
    tools: Vec<Registered>,
    definitions: Vec<ToolDefinition>,
}

impl ToolRegistry {
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let definition = tool.definition();
        if self
            .tools
            .iter()
            .any(|t| t.definition.name == definition.name)
        {
            return Err(RegistryError::Duplicate(definition.name));
        }
        let validator = jsonschema::validator_for(&definition.input_schema).map_err(|e| {
            RegistryError::BadSchema {
                name: definition.name.clone(),
                message: e.to_string(),
            }
        })?;
        self.definitions.push(definition.clone());
        self.tools.push(Registered {
            tool,
            definition,
            validator,
        });
        Ok(())
    }

    /// The same tools, each wrapped: the window keeps their screenshots and steps out of
    /// the way while they act. Definitions and schemas stay as they were.
    pub fn wrap_tools(mut self, wrap: impl Fn(Arc<dyn Tool>) -> Arc<dyn Tool>) -> Self {
        for entry in &mut self.tools {
            entry.tool = wrap(entry.tool.clone());
        }
        self
    }

    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    pub fn names(&self) -> Vec<&str> {
        self.definitions.iter().map(|d| d.name.as_str()).collect()
    }

    /// Finds the tool and checks the input against its schema. The error says exactly what
    /// is wrong, for the model to correct.
    pub fn resolve(&self, name: &str, input: &Value) -> Result<&Arc<dyn Tool>, String> {
        let Some(entry) = self.tools.iter().find(|t| t.definition.name == name) else {
            return Err(format!(
                "unknown tool `{name}`; the available tools are: {}",
                self.names().join(", ")
            ));
        };
        let problems: Vec<String> = entry
            .validator
            .iter_errors(input)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    schema_problem(&e)
                } else {
                    format!("at `{path}`: {}", schema_problem(&e))
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(&entry.tool)
        } else {
            Err(format!(
                "invalid input for tool `{name}`: {}",
                problems.join("; ")
            ))
        }
    }
}
