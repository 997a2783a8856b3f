//! The `memory` tool: the model's notes (remember, update, forget, search) and recall of past
//! sessions (search the history, read one session back). Writes pass the approval gate
//! showing the note; searching and recalling only read the local history.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{ActionPlan, Tool, ToolContext, ToolOutput};
use crate::llm::ToolDefinition;
use crate::memory::{self, Note};
use crate::store::{Store, StoreError};

pub const NAME: &str = "memory";

/// What a search answers at most: notes, and past sessions.
const SEARCH_NOTES: usize = 10;
const SEARCH_SESSIONS: usize = 10;
/// Characters of a note a search result shows.
const NOTE_PREVIEW: usize = 300;

/// The history the tool reads and writes, and the session it runs in (notes are filed under
/// it, and search leaves it out).
pub struct MemoryTool {
    store: Store,
    session_id: String,
}

impl MemoryTool {
    pub fn new(store: Store, session_id: impl Into<String>) -> Self {
        Self {
            store,
            session_id: session_id.into(),
        }
    }

    fn existing(&self, input: &Value) -> Result<Note, String> {
        let id = input["id"]
            .as_i64()
            .ok_or("this action needs the note's `id` (see `search`)")?;
        self.store.note(id).map_err(|e| match e {
            StoreError::NoNote(id) => format!("no note {id}; `search` finds the notes there are"),
            other => other.to_string(),
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

fn required<'a>(input: &'a Value, field: &str, action: &str) -> Result<&'a str, String> {
    input[field]
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| format!("`{action}` needs `{field}`"))
}

#[async_trait]
impl Tool for MemoryTool {
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
            input_schema: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["remember", "update", "forget", "search", "recall"]},
                    "text": {"type": "string", "description": "remember, update: the note (at most 4 KB)"},
                    "id": {"type": "integer", "description": "update, forget: the note's id"},
                    "query": {"type": "string", "description": "search: words to find"},
                    "session_id": {"type": "string", "description": "recall: the session's id"}
                },
                "required": ["action"],
                "additionalProperties": false
            }),
            anthropic: None,
        }
    }

    fn plan(&self, input: &Value) -> Result<ActionPlan, String> {
        let action = input["action"].as_str().unwrap_or_default();
        let kind = format!("{NAME}.{action}");
        let (read_only, summary, detail) = match action {
            "remember" => {
                let text = input["text"].as_str().unwrap_or_default();
                memory::check_note(text)?;
                (
                    false,
                    format!("remember: \"{text}\""),
                    json!({"note": text}),
                )
            }
            "update" => {
                let note = self.existing(input)?;
                let text = input["text"].as_str().unwrap_or_default();
                memory::check_note(text)?;
                (
                    false,
                    format!("update note {}: \"{}\" → \"{text}\"", note.id, note.text),
                    json!({"id": note.id, "before": note.text, "note": text}),
                )
            }
            "forget" => {
                let note = self.existing(input)?;
                (
                    false,
                    format!("forget note {}: \"{}\"", note.id, note.text),
                    json!({"id": note.id, "note": note.text}),
                )
            }
            "search" => {
                let query = required(input, "query", action)?;
                (true, format!("search memory for \"{query}\""), Value::Null)
            }
            "recall" => {
                let id = required(input, "session_id", action)?;
                let id = self.store.resolve_id(id).map_err(|e| match e {
                    StoreError::NotFound(id) => {
                        format!("no session `{id}`; `search` finds past sessions and their ids")
                    }
                    other => other.to_string(),
                })?;
                (
                    true,
                    format!("recall session {id}"),
                    json!({"session_id": id}),
                )
            }
            other => return Err(format!("unknown action `{other}`")),
        };
        Ok(ActionPlan {
            kind,
            read_only,
            summary,
            detail,
            target: None,
        })
    }

    async fn run(&self, input: &Value, _ctx: &ToolContext) -> ToolOutput {
        let text = input["text"].as_str().unwrap_or_default();
        let result = match input["action"].as_str().unwrap_or_default() {
            "remember" => self
                .store
                .add_note(text, Some(&self.session_id))
                .map(|n| format!("Remembered as note {}.", n.id)),
            "update" => match input["id"].as_i64() {
                Some(id) => self
                    .store
                    .update_note(id, text)
                    .map(|n| format!("Note {} updated.", n.id)),
                None => Err(StoreError::BadNote("`update` needs `id`".into())),
            },
            "forget" => match input["id"].as_i64() {
                Some(id) => self
                    .store
                    .delete_note(id)
                    .map(|n| format!("Note {} forgotten.", n.id)),
                None => Err(StoreError::BadNote("`forget` needs `id`".into())),
            },
            "search" => self.search(input["query"].as_str().unwrap_or_default()),
            "recall" => {
                let id = input["session_id"].as_str().unwrap_or_default();
                self.store.resolve_id(id).and_then(|id| {
                    Ok(memory::transcript(
                        &self.store.session(&id)?,
                        &self.store.history(&id)?,
                    ))
                })
            }
            other => Err(StoreError::BadNote(format!("unknown action `{other}`"))),
        };
        match result {
            Ok(text) => ToolOutput::text(text),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}
