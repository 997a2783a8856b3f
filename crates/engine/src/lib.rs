//! Deskhand's engine: an agent that sees the screen and works the mouse and keyboard, with
//! every action behind an approval gate. No Tauri here: the CLI, the tests and the window all
//! drive this same crate.

pub mod agent;
pub mod delegate;
pub use deskhand_host::{files, key_guard, paths, processes, program_env, root_powers};
pub use deskhand_llm as llm;
pub use deskhand_llm::secrets;
pub use deskhand_platform::{desktop, elements, sandbox, windows};
pub use deskhand_protocol::{emphasis, ids, images, json_depth, visible};
pub mod memory;
pub mod schedules;
pub use deskhand_store as store;
pub mod tasks;
#[cfg(test)]
mod tool_schemas;
pub use deskhand_tools as tools;

/// The engine version, shared by the CLI and the app.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
