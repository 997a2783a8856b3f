//! `deskhand-app`: the desktop window. Without a display GTK would panic on start; say what
//! is missing instead.
//!
//! On Linux the window's WebKitGTK runs without GPU compositing and without its DMA-BUF
//! renderer, unless those variables are already set: the page is a chat of text and still
//! images, and the two cost about 80 MB of idle memory across WebKit's processes (298 MB PSS
//! with them, 213-224 MB without; `scripts/measure.sh --only memory`).

use std::process::ExitCode;

/// WebKitGTK reads these once, when it starts: only before anything else runs.
#[cfg(target_os = "linux")]
const WEBKIT_DEFAULTS: [(&str, &str); 2] = [
    ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
    ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
];

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    for (name, value) in WEBKIT_DEFAULTS {
        if std::env::var_os(name).is_none() {
            // SAFETY: the first thing main does, before any other thread exists.
            unsafe { std::env::set_var(name, value) };
        }
    }
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
