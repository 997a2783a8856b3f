//! Tools the model can call: the typed trait every tool implements, the one erased face the
//! loop holds them by, and the registry that offers them to the model and checks each call's
//! input against the tool's JSON Schema.

pub mod bash;
pub mod capped;
pub mod catalog;
pub mod computer;
pub use deskhand_protocol::action as detail;
pub mod editor;
mod error;
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
pub use error::ToolError;

/// A tool as it is written: its own input type, read from the call's JSON once (`read`),
/// then handed to `plan` (for the approval gate) and `run` as that type, so the two act on
/// the same call and neither reads JSON or downcasts. The registry and the loop hold it as
/// `Arc<dyn Tool>`, which every `TypedTool` is.
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// A call as this tool reads it: usually a `Deserialize + JsonSchema` type (see
    /// `input`), or the checked value made of one.
    type Input: Send + 'static;

    fn definition(&self) -> ToolDefinition;

    /// Reads an input that already matches the schema. A tool that checks the input against
    /// its own state (the screen it offered, the run's keys) does it here, once.
    fn read(&self, input: &Value) -> Result<Self::Input, ToolError>;

    /// Says what running the call would do, for the approval gate. An `Err` goes back to the
    /// model and nothing runs.
    fn plan(&self, input: &Self::Input) -> Result<ActionPlan, ToolError>;

    async fn run(&self, input: Self::Input, ctx: &ToolContext) -> ToolOutput;

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

/// A tool as the registry and the loop hold it, its input JSON: the one erased face of every
/// `TypedTool` (and of a wrapper such as the window's).
#[async_trait]
pub trait Tool: Send + Sync {
    fn definition(&self) -> ToolDefinition;

    /// Reads a call once into the tool's input type, kept in the call that plans and runs it.
    fn prepare(&self, input: &Value) -> Result<Box<dyn PreparedCall + '_>, ToolError>;

    fn take_events(&self) -> Vec<deskhand_protocol::event::AgentEvent>;

    fn cancel_grace(&self) -> std::time::Duration;

    /// What a call would do, for callers outside the loop.
    fn plan(&self, input: &Value) -> Result<ActionPlan, ToolError> {
        self.prepare(input)?.plan()
    }

    /// Runs a call without planning it, for callers outside the loop; an input the tool
    /// cannot read is an error result.
    async fn run(&self, input: &Value, ctx: &ToolContext) -> ToolOutput {
        match self.prepare(input) {
            Ok(call) => call.run(ctx).await,
            Err(e) => e.into(),
        }
    }
}

/// A call its tool has read: planned as often as the loop needs (again after a person was
/// asked, so that what runs is what they saw), then run once.
#[async_trait]
pub trait PreparedCall: Send {
    fn plan(&self) -> Result<ActionPlan, ToolError>;

    /// Called once a person approved the call, before it is planned again and run: a front
    /// end puts back what asking them changed (its window out of the way, the focus and the
    /// pointer where they were when the plan was made), so that the plan still holds.
    async fn after_approval(&mut self) {}

    async fn run(self: Box<Self>, ctx: &ToolContext) -> ToolOutput;
}

/// A typed tool's call: the tool and the input it read.
struct Prepared<'a, T: TypedTool> {
    tool: &'a T,
    input: T::Input,
}

#[async_trait]
impl<T: TypedTool> PreparedCall for Prepared<'_, T> {
    fn plan(&self) -> Result<ActionPlan, ToolError> {
        self.tool.plan(&self.input)
    }

    async fn run(self: Box<Self>, ctx: &ToolContext) -> ToolOutput {
        let Prepared { tool, input } = *self;
        tool.run(input, ctx).await
    }
}

impl<T: TypedTool> Tool for T {
    fn definition(&self) -> ToolDefinition {
        TypedTool::definition(self)
    }

    fn prepare(&self, input: &Value) -> Result<Box<dyn PreparedCall + '_>, ToolError> {
        let input = self.read(input)?;
        Ok(Box::new(Prepared { tool: self, input }))
    }

    fn take_events(&self) -> Vec<deskhand_protocol::event::AgentEvent> {
        TypedTool::take_events(self)
    }

    fn cancel_grace(&self) -> std::time::Duration {
        TypedTool::cancel_grace(self)
    }
}

pub struct ToolContext {
    pub cancel: CancellationToken,
    /// What a long call reports while it runs (a delegated task's events and cost); the
    /// loop passes it on at once. Sends after the loop stopped listening are dropped.
    pub progress: tokio::sync::mpsc::UnboundedSender<Progress>,
}

impl ToolContext {
    /// A context whose progress goes nowhere: for callers that run a tool outside the loop.
    pub fn new(cancel: CancellationToken) -> Self {
        Self {
            cancel,
            progress: tokio::sync::mpsc::unbounded_channel().0,
        }
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

/// A refused or failed call as the model reads it: the error's words.
impl From<ToolError> for ToolOutput {
    fn from(error: ToolError) -> Self {
        Self::error(error.to_string())
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
    pub fn resolve(&self, name: &str, input: &Value) -> Result<&Arc<dyn Tool>, ToolError> {
        let Some(entry) = self.tools.iter().find(|t| t.definition.name == name) else {
            return Err(ToolError::UnknownTool {
                name: name.to_string(),
                available: self.names().into_iter().map(String::from).collect(),
            });
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
            Err(ToolError::Schema {
                tool: name.to_string(),
                problems,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;

    /// Counts how often its input is read, planned and run; refuses a `count` over 3 when
    /// planning, as a tool refuses a value out of range.
    #[derive(Default)]
    struct Counting {
        reads: AtomicUsize,
        plans: AtomicUsize,
        ran: std::sync::Mutex<Vec<u64>>,
    }

    #[async_trait]
    impl TypedTool for Counting {
        type Input = u64;

        fn definition(&self) -> ToolDefinition {
            ToolDefinition {
                name: "count".into(),
                description: "Counts.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"count": {"type": "integer", "minimum": 0}},
                    "required": ["count"],
                }),
                anthropic: None,
            }
        }

        fn read(&self, input: &Value) -> Result<u64, ToolError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            input["count"]
                .as_u64()
                .ok_or_else(|| ToolError::InvalidInput("`count` must be a number".into()))
        }

        fn plan(&self, count: &u64) -> Result<ActionPlan, ToolError> {
            self.plans.fetch_add(1, Ordering::SeqCst);
            if *count > 3 {
                return Err(ToolError::OutOfRange(format!(
                    "`count` must be 0 to 3, not {count}"
                )));
            }
            Ok(ActionPlan {
                kind: "count".into(),
                read_only: true,
                summary: format!("count to {count}"),
                detail: ActionDetail::None,
                on_screen: false,
                safety_checks: Vec::new(),
                target: None,
            })
        }

        async fn run(&self, count: u64, _ctx: &ToolContext) -> ToolOutput {
            self.ran.lock().unwrap().push(count);
            ToolOutput::text(format!("counted to {count}"))
        }
    }

    fn ctx() -> ToolContext {
        ToolContext::new(CancellationToken::new())
    }

    /// A prepared call reads its input once however often it is planned, and runs the
    /// value that was read.
    #[tokio::test]
    async fn a_call_is_read_once_then_planned_and_run_as_read() {
        let tool = Counting::default();
        let erased: &dyn Tool = &tool;
        let call = erased.prepare(&json!({"count": 2})).unwrap();
        assert_eq!(call.plan().unwrap().summary, "count to 2");
        assert_eq!(call.plan().unwrap().summary, "count to 2");
        let output = call.run(&ctx()).await;
        assert_eq!(output, ToolOutput::text("counted to 2"));
        assert_eq!(tool.reads.load(Ordering::SeqCst), 1);
        assert_eq!(tool.plans.load(Ordering::SeqCst), 2);
        assert_eq!(*tool.ran.lock().unwrap(), [2]);
    }

    /// A refusal keeps its kind for code, and the model reads its text in an error result.
    #[tokio::test]
    async fn a_refusal_has_its_kind_and_the_model_reads_its_text() {
        let tool = Counting::default();
        let erased: &dyn Tool = &tool;
        let error = erased.plan(&json!({"count": 7})).unwrap_err();
        assert_eq!(
            error,
            ToolError::OutOfRange("`count` must be 0 to 3, not 7".into())
        );
        assert_eq!(
            ToolOutput::from(error),
            ToolOutput::error("`count` must be 0 to 3, not 7")
        );
        let unread = erased.run(&json!({"count": "two"}), &ctx()).await;
        assert_eq!(unread, ToolOutput::error("`count` must be a number"));
        assert!(tool.ran.lock().unwrap().is_empty(), "nothing ran");
        assert_eq!(
            ToolOutput::from(ToolError::Cancelled),
            ToolOutput::error(deskhand_protocol::event::CANCELLED)
        );
    }

    /// The registry's refusals are typed too, in the words the model has always read.
    #[test]
    fn the_registry_names_an_unknown_tool_and_each_schema_violation() {
        let mut registry = ToolRegistry::default();
        registry.register(Arc::new(Counting::default())).unwrap();
        let Err(unknown) = registry.resolve("paint", &json!({})) else {
            panic!("`paint` is no tool");
        };
        assert!(matches!(&unknown, ToolError::UnknownTool { name, .. } if name == "paint"));
        assert_eq!(
            unknown.to_string(),
            "unknown tool `paint`; the available tools are: count"
        );
        let Err(invalid) = registry.resolve("count", &json!({"count": -1})) else {
            panic!("-1 is under the minimum");
        };
        assert!(
            matches!(&invalid, ToolError::Schema { tool, problems } if tool == "count" && problems.len() == 1)
        );
        assert!(
            invalid
                .to_string()
                .starts_with("invalid input for tool `count`: at `/count`: -1 is less than"),
            "{invalid}"
        );
    }
}
