//! The agent's memory: durable notes about the person and their machine, kept in the history
//! database, checked before they are stored, and the most relevant of them put into each
//! run's system prompt; and a compact transcript of a past session for recall.

mod prompt;
mod recall;
mod secret;

use serde::{Deserialize, Serialize};

pub use prompt::{
    DEFAULT_PROMPT_TOKENS, IN_PROMPT_SETTING, estimate_tokens, for_run, system_with_notes,
};
pub use recall::{RECALL_LIMIT, transcript};
pub use secret::looks_like_secret;

/// The most bytes one note may hold: a note is a fact or a preference, not a document.
pub const NOTE_LIMIT: usize = 4096;

/// A note as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Note {
    pub id: i64,
    pub text: String,
    /// The session the note was written in; `None` for notes the person wrote (`deskhand
    /// notes add`, the window) and once that session is deleted.
    pub session_id: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub updated_at: String,
}

/// A note as the `started` event names it: what went into the system prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct NoteRef {
    pub id: i64,
    pub text: String,
}

impl From<&Note> for NoteRef {
    fn from(note: &Note) -> Self {
        Self {
            id: note.id,
            text: note.text.clone(),
        }
    }
}

/// Why a text cannot be stored as a note, worded for the model or the person to act on; `None`
/// when it can. Every way into the notes table (the tool, the CLI, the window) goes through it;
/// the tool passes its run's provider keys as `run_keys`, the others none.
pub fn check_note(text: &str, run_keys: &[String]) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("a note cannot be empty; write the fact or preference to keep".into());
    }
    if text.len() > NOTE_LIMIT {
        return Err(format!(
            "a note holds at most 4 KB ({NOTE_LIMIT} bytes) and this one has {} bytes; keep \
             the fact itself, or split it into several notes",
            text.len()
        ));
    }
    if let Some(what) = looks_like_secret(text, run_keys) {
        return Err(format!(
            "refused: this note contains {what}. Notes never hold API keys, passwords or other \
             secrets, since they are sent to the model in later runs; leave the secret out"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_long_and_secret_notes_are_refused_with_the_reason() {
        assert!(check_note("invoices are in ~/Documents/Acme", &[]).is_ok());
        assert!(check_note("  \n ", &[]).unwrap_err().contains("empty"));
        let long = "a".repeat(NOTE_LIMIT + 1);
        assert!(check_note(&long, &[]).unwrap_err().contains("4 KB"));
        assert!(check_note(&"a".repeat(NOTE_LIMIT), &[]).is_ok());
        let key = check_note(
            "my key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
            &[],
        )
        .unwrap_err();
        assert!(key.starts_with("refused"), "{key}");
        assert!(
            !key.contains("abcdefghij"),
            "the refusal does not repeat the key: {key}"
        );
    }
}
