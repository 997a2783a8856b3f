//! The notes section of a run's system prompt. It is written once at the start of the run
//! and stays byte-identical for every request of the run, so the cached prefix (tools and
//! system prompt) keeps hitting.

use super::{Note, NoteRef};
use crate::store::{Store, StoreError};

/// The most tokens the notes may add to the system prompt, unless the caller says otherwise.
pub const DEFAULT_PROMPT_TOKENS: u64 = 1500;

/// `system` followed by the notes, or `system` unchanged without notes.
pub fn system_with_notes(system: &str, notes: &[Note]) -> String {
    if notes.is_empty() {
        return system.to_string();
    }
    let mut out = String::from(system);
    out.push_str(
        "\n\nNotes you kept in earlier sessions with the `memory` tool (the user's facts, \
         preferences and where things are; the most relevant to this task, newest first \
         where equally relevant). Rely on them, and update or forget a note that turns out \
         wrong:",
    );
    for note in notes {
        let date: String = note.updated_at.chars().take(10).collect();
        out.push_str(&format!("\n- [note {}, {date}] {}", note.id, note.text));
    }
    out
}

/// A run's system prompt: `system` with the notes chosen for `prompt` (none when `enabled` is
/// false or the `memory.in_prompt` setting is off), and the notes, for the `started` event.
pub fn for_run(
    store: &Store,
    system: &str,
    prompt: &str,
    enabled: bool,
) -> Result<(String, Vec<NoteRef>), StoreError> {
    if !enabled || !store.memory_in_prompt()? {
        return Ok((system.to_string(), Vec::new()));
    }
    let notes = store.notes_for_prompt(prompt, DEFAULT_PROMPT_TOKENS)?;
    Ok((
        system_with_notes(system, &notes),
        notes.iter().map(NoteRef::from).collect(),
    ))
}
