//! The IPC commands (docs/ipc.md). Thin: each checks its input and calls the core or the
//! shell's state.

pub mod agent_desktop;
pub mod capture;
pub mod confirm;
pub mod link;
pub mod notes;
pub mod run;
pub mod sessions;
pub mod settings;
pub mod tasks;

include!("list.rs");
