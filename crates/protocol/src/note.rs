//! The agent's notes as stored and as a run's `started` event names them.

use serde::{Deserialize, Serialize};

use crate::ids::SessionId;

/// The most bytes one note may hold: a note is a fact or a preference, not a document.
pub const NOTE_LIMIT: usize = 4096;

/// A note as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Note {
    pub id: i64,
    pub text: String,
    /// The session the note was written in; `None` for notes the person wrote (`deskhand
    /// notes add`, the window) and once that session is deleted.
    pub session_id: Option<SessionId>,
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
