//! Why a tool call was refused or failed. The kind is for the code that handles it; the
//! `Display` is what the model reads in the error result, written for it to correct itself.

use deskhand_protocol::event::CANCELLED;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// No tool of that name is offered in this run.
    #[error("unknown tool `{name}`; the available tools are: {}", .available.join(", "))]
    UnknownTool {
        name: String,
        available: Vec<String>,
    },
    /// The input breaks the tool's JSON Schema: each violation in words.
    #[error("invalid input for tool `{tool}`: {}", .problems.join("; "))]
    Schema { tool: String, problems: Vec<String> },
    /// The input matches the schema but is not a call the tool takes: a missing or empty
    /// field, a parameter the action does not take, an unknown key name.
    #[error("{0}")]
    InvalidInput(String),
    /// A number outside what the tool allows: a point off the screen, a line past a file's
    /// end, a duration or count over its limit.
    #[error("{0}")]
    OutOfRange(String),
    /// What the call names does not exist: a note, a session, a plan step, an element, a
    /// delegation target, a file to edit.
    #[error("{0}")]
    NotFound(String),
    /// A rule refuses the call: a note holding a secret, a write the editor does not make.
    #[error("{0}")]
    NotAllowed(String),
    /// The tool cannot act here now: no screen, a shell or a child task that did not start.
    #[error("{0}")]
    Unavailable(String),
    /// Reading or writing a file or the history failed.
    #[error("{0}")]
    Io(String),
    /// The run was stopped before the call finished.
    #[error("{CANCELLED}")]
    Cancelled,
}
