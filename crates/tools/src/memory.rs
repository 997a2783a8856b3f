//! The `memory` tool: the model's notes (remember, update, forget, search) and recall of past
//! sessions (search the history, read one session back). Writes pass the approval gate
//! showing the note, and the gate asks the person about them in every mode (a note enters
//! every later run's prompt); searching and recalling only read the local history.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{ActionDetail, ActionPlan, ToolContext, ToolError, ToolOutput, TypedTool};
use deskhand_llm::ToolDefinition;
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::note::Note;
use deskhand_store::notes::{self as memory, NoteError};
use deskhand_store::{Store, StoreError};

pub const NAME: &str = "memory";

/// What a search answers at most: notes, and past sessions.
const SEARCH_NOTES: usize = 10;
const SEARCH_SESSIONS: usize = 10;
/// Characters of a note a search result shows.
const NOTE_PREVIEW: usize = 300;

/// The history the tool reads and writes, the session it runs in (notes are filed under it,
/// and search leaves it out), and the run's provider keys, which no note may hold.
pub struct MemoryTool {
    store: Store,
    session_id: SessionId,
    run_keys: Vec<String>,
}

impl MemoryTool {
    pub fn new(store: Store, session_id: impl Into<SessionId>) -> Self {
        Self {
            store,
            session_id: session_id.into(),
            run_keys: Vec::new(),
        }
    }

    /// Refuses notes that hold one of `keys` (the run's provider keys) in any form.
    pub fn with_run_keys(mut self, keys: Vec<String>) -> Self {
        self.run_keys = keys;
        self
    }

    fn existing(&self, id: i64) -> Result<Note, ToolError> {
        self.store.note(id).map_err(|e| match e {
            StoreError::NoNote(id) => {
                ToolError::NotFound(format!("no note {id}; `search` finds the notes there are"))
            }
            other => ToolError::Io(other.to_string()),
        })
    }

    fn search(&self, query: &str) -> Result<String, StoreError> {
        let notes = self.store.search_notes(query, SEARCH_NOTES)?;
        let sessions: Vec<_> = self
            .store
            .search(query)?
            .into_iter()
            .filter(|hit| hit.session.id != self.session_id)
            .take(SEARCH_SESSIONS)
            .collect();
        let mut out = format!("Notes matching \"{query}\": {}", notes.len());
        for note in &notes {
            let date: String = note.updated_at.chars().take(10).collect();
            let text: String = note.text.chars().take(NOTE_PREVIEW).collect();
            out.push_str(&format!("\n- [note {}, {date}] {text}", note.id));
        }
        out.push_str(&format!(
            "\nPast sessions matching \"{query}\" (newest first): {}",
            sessions.len()
        ));
        for hit in &sessions {
            let date: String = hit.session.updated_at.chars().take(16).collect();
            out.push_str(&format!(
                "\n- session {} ({}) \"{}\": {}",
                hit.session.id,
                date.replace('T', " "),
                hit.session.title,
                hit.snippet.replace('\n', " ")
            ));
        }
        if !sessions.is_empty() {
            out.push_str("\nUse `recall` with a session id to read what was done there.");
        }
        Ok(out)
    }
}

// Field doc comments are the descriptions the model reads in the schema.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MemoryInput {
    action: MemoryAction,
    /// remember, update: the note (at most 4 KB)
    text: Option<String>,
    /// update, forget: the note's id
    id: Option<i64>,
    /// search: words to find
    query: Option<String>,
    /// recall: the session's id
    session_id: Option<String>,
}

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum MemoryAction {
    Remember,
    Update,
    Forget,
    Search,
    Recall,
}

/// A call with what its action needs, checked.
pub enum MemoryCall {
    Remember { text: String },
    Update { id: i64, text: String },
    Forget { id: i64 },
    Search { query: String },
    Recall { session_id: String },
}

impl MemoryCall {
    fn read(input: &Value, run_keys: &[String]) -> Result<Self, ToolError> {
        let input: MemoryInput = super::input::read(NAME, input)?;
        let action = input.action.name();
        let required = |value: Option<String>, field: &str| {
            value
                .filter(|s| !s.trim().is_empty())
                .ok_or_else(|| ToolError::InvalidInput(format!("`{action}` needs `{field}`")))
        };
        let note = |text: Option<String>| {
            let text = text.unwrap_or_default();
            memory::check_note(&text, run_keys)
                .map(|()| text)
                .map_err(|e| match e {
                    NoteError::Empty => ToolError::InvalidInput(e.to_string()),
                    NoteError::TooLong { .. } => ToolError::OutOfRange(e.to_string()),
                    NoteError::Secret { .. } => ToolError::NotAllowed(e.to_string()),
                })
        };
        let id = || {
            input.id.ok_or_else(|| {
                ToolError::InvalidInput("this action needs the note's `id` (see `search`)".into())
            })
        };
        Ok(match input.action {
            MemoryAction::Remember => Self::Remember {
                text: note(input.text)?,
            },
            MemoryAction::Update => Self::Update {
                id: id()?,
                text: note(input.text)?,
            },
            MemoryAction::Forget => Self::Forget { id: id()? },
            MemoryAction::Search => Self::Search {
                query: required(input.query, "query")?,
            },
            MemoryAction::Recall => Self::Recall {
                session_id: required(input.session_id, "session_id")?,
            },
        })
    }
}

impl MemoryAction {
    fn name(self) -> &'static str {
        match self {
            Self::Remember => "remember",
            Self::Update => "update",
            Self::Forget => "forget",
            Self::Search => "search",
            Self::Recall => "recall",
        }
    }
}

#[async_trait]
impl TypedTool for MemoryTool {
    type Input = MemoryCall;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: NAME.into(),
            description: "Your long-term memory of this user, kept on their machine. \
                `remember` a durable fact or preference the user tells you or that you find \
                out (where their files are, which apps they prefer), one fact per note; \
                `update` or `forget` a note by id when it changes. Before asking the user \
                something they may have told you before, `search` first: it finds notes and \
                past sessions (prompts, answers and actions) by words, with session ids and \
                dates. `recall` a session id to read what was done in it, e.g. to repeat a \
                task from last week. Never store passwords or keys."
                .into(),
            input_schema: super::input::schema::<MemoryInput>(),
            anthropic: None,
        }
    }

    fn read(&self, input: &Value) -> Result<MemoryCall, ToolError> {
        MemoryCall::read(input, &self.run_keys)
    }

    fn plan(&self, call: &MemoryCall) -> Result<ActionPlan, ToolError> {
        let (action, read_only, summary, detail) = match call {
            MemoryCall::Remember { text } => (
                "remember",
                false,
                format!("remember: \"{text}\""),
                ActionDetail::NoteRemember { note: text.clone() },
            ),
            MemoryCall::Update { id, text } => {
                let note = self.existing(*id)?;
                (
                    "update",
                    false,
                    format!("update note {}: \"{}\" → \"{text}\"", note.id, note.text),
                    ActionDetail::NoteUpdate {
                        id: note.id,
                        before: note.text,
                        note: text.clone(),
                    },
                )
            }
            MemoryCall::Forget { id } => {
                let note = self.existing(*id)?;
                (
                    "forget",
                    false,
                    format!("forget note {}: \"{}\"", note.id, note.text),
                    ActionDetail::NoteForget {
                        id: note.id,
                        note: note.text,
                    },
                )
            }
            MemoryCall::Search { query } => (
                "search",
                true,
                format!("search memory for \"{query}\""),
                ActionDetail::None,
            ),
            MemoryCall::Recall { session_id } => {
                let id = self.store.resolve_id(session_id).map_err(|e| match e {
                    StoreError::NotFound(id) => ToolError::NotFound(format!(
                        "no session `{id}`; `search` finds past sessions and their ids"
                    )),
                    e @ (StoreError::EmptyId | StoreError::Ambiguous { .. }) => {
                        ToolError::InvalidInput(e.to_string())
                    }
                    other => ToolError::Io(other.to_string()),
                })?;
                (
                    "recall",
                    true,
                    format!("recall session {id}"),
                    ActionDetail::Recall { session_id: id },
                )
            }
        };
        let kind = format!("{NAME}.{action}");
        Ok(ActionPlan {
            kind,
            read_only,
            summary,
            detail,
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn run(&self, call: MemoryCall, _ctx: &ToolContext) -> ToolOutput {
        let result = match call {
            MemoryCall::Remember { text } => self
                .store
                .add_note(&text, Some(&self.session_id))
                .map(|n| format!("Remembered as note {}.", n.id)),
            MemoryCall::Update { id, text } => self
                .store
                .update_note(id, &text)
                .map(|n| format!("Note {} updated.", n.id)),
            MemoryCall::Forget { id } => self
                .store
                .delete_note(id)
                .map(|n| format!("Note {} forgotten.", n.id)),
            MemoryCall::Search { query } => self.search(&query),
            MemoryCall::Recall { session_id } => {
                self.store.resolve_id(&session_id).and_then(|id| {
                    Ok(crate::recall::transcript(
                        &self.store.session(&id)?,
                        &self.store.history(&id)?,
                    ))
                })
            }
        };
        match result {
            Ok(text) => ToolOutput::text(text),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}
