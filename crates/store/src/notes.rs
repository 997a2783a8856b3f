//! The agent's notes: stored, full-text indexed (FTS5), each with the session it came from,
//! and chosen for a run's system prompt by relevance to the prompt.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::search::{fts_query, lowercase_words};
use super::{Store, StoreError, now_ms, rfc3339};
use deskhand_host::secret_text::looks_like_secret;
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::note::{NOTE_LIMIT, Note};

const NOTE_COLUMNS: &str = "n.id, n.text, n.session_id, n.created_at, n.updated_at";

fn note_from_row(row: &Row<'_>) -> rusqlite::Result<Note> {
    Ok(Note {
        id: row.get(0)?,
        text: row.get(1)?,
        session_id: row.get::<_, Option<String>>(2)?.map(SessionId::from),
        created_at: rfc3339(row.get(3)?),
        updated_at: rfc3339(row.get(4)?),
    })
}

fn note(conn: &Connection, id: i64) -> Result<Note, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {NOTE_COLUMNS} FROM notes n WHERE n.id = ?1"
    ))?
    .query_row([id], note_from_row)
    .optional()?
    .ok_or(StoreError::NoNote(id))
}

/// Words too common to say what a prompt is about; matching them would rank every note.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "you", "your", "are", "was", "were", "from",
    "what", "when", "where", "which", "who", "how", "can", "could", "would", "should", "please",
    "into", "onto", "then", "than", "there", "here", "have", "has", "had", "not", "but", "all",
    "any", "our", "out", "its", "it's", "did", "does", "just", "also", "about", "again", "some",
    "use", "using", "make", "like", "need", "want",
];

/// The most words of a prompt that choose notes; the most notes read as candidates.
const PROMPT_WORDS: usize = 16;
const CANDIDATES: usize = 200;

/// A word found in this many notes or more says little about which are relevant (bm25 gives
/// it almost no weight), and ranking every one of its matches would cost more than a run's
/// start may: such words do not choose notes.
const COMMON_WORD_NOTES: usize = 1000;

/// Whether `word` occurs in fewer than [`COMMON_WORD_NOTES`] notes: FTS5 stops reading its
/// matches at that count, so a common word costs about what a rare one does.
fn is_distinctive(conn: &Connection, word: &str) -> Result<bool, StoreError> {
    let matches: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM notes_fts WHERE notes_fts MATCH ?1 LIMIT ?2)",
        )?
        .query_row(
            params![format!("\"{word}\""), COMMON_WORD_NOTES as i64],
            |r| r.get(0),
        )?;
    Ok((matches as usize) < COMMON_WORD_NOTES)
}

/// The stored setting (`true`/`false`, default `true`) that puts notes into the system
/// prompt; `deskhand ask --no-memory` turns it off for one run.
pub const IN_PROMPT_SETTING: &str = "memory.in_prompt";

/// Tokens a note takes in the prompt, estimated as the context budget estimates text (a
/// token per 4 bytes), with its line's markup.
pub fn estimate_tokens(note: &Note) -> u64 {
    note.text.len() as u64 / 4 + 8
}

/// Why a text cannot be stored as a note, worded for the model or the person to act on; `None`
/// when it can. Every way into the notes table (the tool, the CLI, the window) goes through it;
/// the tool passes its run's provider keys as `run_keys`, the others none.
pub fn check_note(text: &str, run_keys: &[String]) -> Result<(), NoteError> {
    if text.trim().is_empty() {
        return Err(NoteError::Empty);
    }
    if text.len() > NOTE_LIMIT {
        return Err(NoteError::TooLong { bytes: text.len() });
    }
    if let Some(what) = looks_like_secret(text, run_keys) {
        return Err(NoteError::Secret { what });
    }
    Ok(())
}

/// Why a text cannot be a note.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("a note cannot be empty; write the fact or preference to keep")]
    Empty,
    #[error(
        "a note holds at most 4 KB ({NOTE_LIMIT} bytes) and this one has {bytes} bytes; keep \
         the fact itself, or split it into several notes"
    )]
    TooLong { bytes: usize },
    /// `what` names the kind of secret, never the secret.
    #[error(
        "refused: this note contains {what}. Notes never hold API keys, passwords or other \
         secrets, since they are sent to the model in later runs; leave the secret out"
    )]
    Secret { what: &'static str },
}

impl Store {
    /// Stores a new note, written in `session_id` (or by the person: `None`).
    pub fn add_note(&self, text: &str, session_id: Option<&SessionId>) -> Result<Note, StoreError> {
        check_note(text, &[]).map_err(StoreError::BadNote)?;
        self.with(|conn| {
            let now = now_ms();
            conn.prepare_cached(
                "INSERT INTO notes (text, session_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
            )?
            .execute(params![text, session_id.map(SessionId::as_str), now])?;
            note(conn, conn.last_insert_rowid())
        })
    }

    /// Replaces a note's text.
    pub fn update_note(&self, id: i64, text: &str) -> Result<Note, StoreError> {
        check_note(text, &[]).map_err(StoreError::BadNote)?;
        self.with(|conn| {
            let changed = conn
                .prepare_cached("UPDATE notes SET text = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, text, now_ms()])?;
            if changed == 0 {
                return Err(StoreError::NoNote(id));
            }
            note(conn, id)
        })
    }

    /// Deletes a note; returns it as it was.
    pub fn delete_note(&self, id: i64) -> Result<Note, StoreError> {
        self.with(|conn| {
            let gone = note(conn, id)?;
            conn.prepare_cached("DELETE FROM notes WHERE id = ?1")?
                .execute([id])?;
            Ok(gone)
        })
    }

    pub fn note(&self, id: i64) -> Result<Note, StoreError> {
        self.with(|conn| note(conn, id))
    }

    /// Every note, the most recently changed first.
    pub fn notes(&self) -> Result<Vec<Note>, StoreError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {NOTE_COLUMNS} FROM notes n ORDER BY n.updated_at DESC, n.id DESC"
            ))?;
            let notes = statement
                .query_map([], note_from_row)?
                .collect::<Result<_, _>>()?;
            Ok(notes)
        })
    }

    /// Notes holding every word of `query` (the last as a prefix), the newest first, at most
    /// `limit`. Like the history's search, newest first rather than by bm25, whose statistics
    /// read every match of a common word.
    pub fn search_notes(&self, query: &str, limit: usize) -> Result<Vec<Note>, StoreError> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.with(|conn| {
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {NOTE_COLUMNS} FROM notes_fts JOIN notes n ON n.id = notes_fts.rowid
                 WHERE notes_fts MATCH ?1 ORDER BY notes_fts.rowid DESC LIMIT ?2"
            ))?;
            let notes = statement
                .query_map(params![fts, limit as i64], note_from_row)?
                .collect::<Result<_, _>>()?;
            Ok(notes)
        })
    }

    /// The notes for a run on `prompt`, within `token_cap` tokens: first those sharing
    /// distinctive words with the prompt (not stop words, not words in a thousand notes or
    /// more), by full-text rank (bm25) and, where equally relevant, the newest first; then the
    /// most recently changed others, while they fit.
    pub fn notes_for_prompt(&self, prompt: &str, token_cap: u64) -> Result<Vec<Note>, StoreError> {
        let mut words: Vec<String> = Vec::new();
        for word in lowercase_words(prompt) {
            if word.chars().count() >= 3
                && !STOP_WORDS.contains(&word.as_str())
                && !words.contains(&word)
                && words.len() < PROMPT_WORDS
            {
                words.push(word);
            }
        }
        self.with(|conn| {
            let mut distinctive = Vec::new();
            for word in words {
                if is_distinctive(conn, &word)? {
                    distinctive.push(word);
                }
            }
            let words = distinctive;
            let mut candidates: Vec<Note> = Vec::new();
            if !words.is_empty() {
                let any_word = words
                    .iter()
                    .map(|w| format!("\"{w}\""))
                    .collect::<Vec<_>>()
                    .join(" OR ");
                let mut statement = conn.prepare_cached(&format!(
                    "SELECT {NOTE_COLUMNS} FROM notes_fts JOIN notes n ON n.id = notes_fts.rowid
                     WHERE notes_fts MATCH ?1 ORDER BY notes_fts.rank, n.updated_at DESC LIMIT ?2"
                ))?;
                for note in
                    statement.query_map(params![any_word, CANDIDATES as i64], note_from_row)?
                {
                    candidates.push(note?);
                }
            }
            let mut recent = conn.prepare_cached(&format!(
                "SELECT {NOTE_COLUMNS} FROM notes n ORDER BY n.updated_at DESC, n.id DESC LIMIT ?1"
            ))?;
            for note in recent.query_map([CANDIDATES as i64], note_from_row)? {
                candidates.push(note?);
            }
            let mut chosen = Vec::new();
            let mut seen = HashSet::new();
            let mut tokens = 0;
            for note in candidates {
                let cost = estimate_tokens(&note);
                if tokens + cost <= token_cap && seen.insert(note.id) {
                    tokens += cost;
                    chosen.push(note);
                }
            }
            Ok(chosen)
        })
    }

    /// Whether notes go into each run's system prompt (the `memory.in_prompt` setting; on
    /// unless turned off).
    pub fn memory_in_prompt(&self) -> Result<bool, StoreError> {
        Ok(self
            .setting(IN_PROMPT_SETTING)?
            .and_then(|v| v.as_bool())
            .unwrap_or(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_long_and_secret_notes_are_refused_with_the_reason() {
        assert!(check_note("invoices are in ~/Documents/Acme", &[]).is_ok());
        assert_eq!(check_note("  \n ", &[]), Err(NoteError::Empty));
        assert!(NoteError::Empty.to_string().contains("empty"));
        let long = "a".repeat(NOTE_LIMIT + 1);
        let too_long = check_note(&long, &[]).unwrap_err();
        assert_eq!(
            too_long,
            NoteError::TooLong {
                bytes: NOTE_LIMIT + 1
            }
        );
        assert!(too_long.to_string().contains("4 KB"));
        assert!(check_note(&"a".repeat(NOTE_LIMIT), &[]).is_ok());
        let key = check_note(
            "my key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
            &[],
        )
        .unwrap_err();
        assert!(matches!(key, NoteError::Secret { .. }), "{key:?}");
        let key = key.to_string();
        assert!(key.starts_with("refused"), "{key}");
        assert!(
            !key.contains("abcdefghij"),
            "the refusal does not repeat the key: {key}"
        );
    }
}
