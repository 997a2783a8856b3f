//! What Deskhand takes from the host it runs on, and the rules it keeps there: its folders and
//! private files, the environment the agent's programs get (with the secrets kept from them),
//! the keeper every such program runs under, and the powers a root process drops.
//! Plain `std` and `libc`: no native library, so every crate may build on it.

pub mod files;
pub mod key_guard;
pub mod paths;
pub mod processes;
pub mod program_env;
pub mod root_powers;
pub mod secret_text;
