//! Deskhand's engine: an agent that sees the screen and works the mouse and keyboard, with
//! every action behind an approval gate. No Tauri here: the CLI, the tests and the window all
//! drive this same crate.

pub mod agent;
pub mod api;
pub mod desktop;
pub mod elements;
pub mod files;
pub mod images;
pub mod json_depth;
pub mod key_guard;
pub mod llm;
pub mod memory;
pub mod paths;
pub mod processes;
pub mod program_env;
pub mod root_powers;
pub mod sandbox;
pub mod secrets;
pub mod store;
pub mod tasks;
pub mod tools;
pub mod visible;

/// The engine version, shared by the CLI and the app.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
