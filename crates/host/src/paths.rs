//! Where Deskhand keeps things: overridable by environment for tests and portable installs.

use std::path::PathBuf;

/// Settings, the price table and plugin configuration: `$DESKHAND_CONFIG_DIR`, else the OS
/// config directory (`~/.config/deskhand` on Linux).
pub fn config_dir() -> PathBuf {
    dir_from("DESKHAND_CONFIG_DIR", dirs::config_dir)
}

/// History and screenshots: `$DESKHAND_DATA_DIR`, else the OS data directory
/// (`~/.local/share/deskhand` on Linux).
pub fn data_dir() -> PathBuf {
    dir_from("DESKHAND_DATA_DIR", dirs::data_dir)
}

fn dir_from(variable: &str, os_dir: fn() -> Option<PathBuf>) -> PathBuf {
    match std::env::var_os(variable) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => os_dir()
            .unwrap_or_else(|| PathBuf::from("."))
            .join("deskhand"),
    }
}
