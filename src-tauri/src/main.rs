//! `deskhand-app`: the desktop window. Without a display GTK would panic on start; say what
//! is missing instead. On Linux it first sets how WebKitGTK starts (`webkit_env`).

use std::process::ExitCode;

fn main() -> ExitCode {
    // SAFETY: the first thing main does, before any other thread exists.
    #[cfg(target_os = "linux")]
    unsafe {
        deskhand_app::webkit_env::prepare()
    };
    // SAFETY: as above, no other thread exists yet.
    unsafe { deskhand_engine::key_guard::protect_secrets() };
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
