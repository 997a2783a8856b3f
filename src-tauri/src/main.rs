//! `deskhand-app`: the desktop window. Without a display GTK would panic on start; say what
//! is missing instead.

use std::process::ExitCode;

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        eprintln!(
            "deskhand-app: no display (neither DISPLAY nor WAYLAND_DISPLAY is set). Start it in \
             a desktop session, or use the headless CLI: deskhand ask PROMPT"
        );
        return ExitCode::from(2);
    }
    match deskhand_app::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("deskhand-app: {e}");
            ExitCode::FAILURE
        }
    }
}
