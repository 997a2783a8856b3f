//! The environment of the programs Deskhand starts for the agent (the shell, plugin servers,
//! the proof-of-done check) and for the person (the browser a link opens in): the one the
//! person started Deskhand with, less provider API keys, so that a key never reaches the
//! model through `env`, and less what this process set for itself alone.

use std::ffi::{OsStr, OsString};
use std::sync::OnceLock;

/// Whether the programs Deskhand starts go without the variable `name`.
pub fn is_withheld(name: &OsStr) -> bool {
    let key = name.to_str().is_some_and(|n| {
        let n = n.to_ascii_uppercase();
        n.ends_with("API_KEY") || n.starts_with(crate::tools::delegate::TOKEN_VARIABLE_PREFIX)
    });
    key || OWN_VARIABLES
        .get()
        .is_some_and(|own| own.iter().any(|n| n == name))
}

/// The variables of this process's environment that a program it starts must not get: each
/// caller removes them from its `Command` (`std` and `tokio` commands alike).
pub fn withheld() -> impl Iterator<Item = OsString> {
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| is_withheld(name))
}

static OWN_VARIABLES: OnceLock<Vec<OsString>> = OnceLock::new();

/// Names variables this process set for its own use (the desktop app's WebKit settings, say),
/// so that the programs the agent starts see the environment the person started Deskhand
/// with. Called once, at start; later calls change nothing.
pub fn withhold_from_programs(names: Vec<OsString>) {
    let _ = OWN_VARIABLES.set(names);
}
