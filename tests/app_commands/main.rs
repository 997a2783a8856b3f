//! The window's IPC commands on Tauri's mock runtime, with the app's real context (its
//! capabilities included) and a stand-in model server over real HTTP/SSE. Channel events are
//! caught by a channel interceptor, as the webview would receive them. One module per command
//! group; what they share is in `support`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

mod agent_desktop;
mod approvals;
mod capture;
mod finish_or_ask;
mod keys;
mod notes;
mod page;
mod runs;
mod sessions;
mod settings;
mod tasks;
