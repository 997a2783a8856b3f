//! The agent's memory: durable notes about the person and their machine, kept in the history
//! database, checked before they are stored, and the most relevant of them put into each
//! run's system prompt; and a compact transcript of a past session for recall.

mod prompt;

pub use deskhand_host::secret_text::looks_like_secret;
pub use deskhand_protocol::note::{NOTE_LIMIT, Note, NoteRef};
pub use deskhand_store::notes::{IN_PROMPT_SETTING, check_note, estimate_tokens};
pub use deskhand_tools::recall::{RECALL_LIMIT, transcript};
pub use prompt::{DEFAULT_PROMPT_TOKENS, for_run, system_with_notes};
