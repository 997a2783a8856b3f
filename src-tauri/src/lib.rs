//! Deskhand's desktop shell: a Tauri 2 window over the `deskhand` core. Thin on purpose: it
//! turns IPC commands into core calls, streams each run's events over one `Channel`, waits
//! for the window's approvals, and keeps the window out of the agent's way. No agent logic.

mod bar;
#[cfg(test)]
mod bindings;
pub mod commands;
mod config;
pub mod desktop;
pub mod error;
mod images;
mod keys;
pub mod navigation;
mod state;
pub mod tray;
#[cfg(test)]
mod typescript;
#[cfg(target_os = "linux")]
pub mod webkit_env;
mod window_tool;

use tauri::{Builder, Manager, Runtime};
use tauri_plugin_global_shortcut::{GlobalShortcutExt, ShortcutState};

pub use state::AppState;

/// Stops the agent from anywhere, where the platform lets an app grab a key.
pub const STOP_SHORTCUT: &str = "ctrl+shift+Escape";

/// The app's state and exactly the commands of `commands::COMMANDS`. Shared by the app and
/// the command tests, which build it on Tauri's mock runtime.
pub fn configure<R: Runtime>(builder: Builder<R>, state: AppState) -> Builder<R> {
    use commands::{agent_desktop, capture, link, notes, run, sessions, settings, tasks};
    builder
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            run::send_message,
            run::approve,
            run::stop,
            run::set_approval_mode,
            capture::get_image,
            capture::capture_screen,
            capture::attach_image,
            capture::discard_attachment,
            sessions::list_sessions,
            sessions::search_sessions,
            sessions::rename_session,
            sessions::delete_session,
            sessions::export_session,
            sessions::load_session,
            settings::get_settings,
            settings::set_settings,
            settings::list_providers,
            settings::list_monitors,
            settings::set_api_key,
            settings::key_status,
            link::open_link,
            notes::list_notes,
            notes::search_notes,
            notes::add_note,
            notes::edit_note,
            notes::delete_note,
            notes::get_memory_in_prompt,
            notes::set_memory_in_prompt,
            run::answer_stall,
            sessions::get_session_check,
            sessions::set_session_check,
            tasks::list_tasks,
            tasks::list_schedules,
            tasks::watch_task,
            agent_desktop::get_session_desktop,
            agent_desktop::set_session_desktop,
            agent_desktop::watch_agent_desktop,
            agent_desktop::unwatch_agent_desktop,
            agent_desktop::take_over_input,
        ])
}

/// The app's context: tauri.conf.json, the embedded frontend and the capabilities.
pub fn context<R: Runtime>() -> tauri::Context<R> {
    tauri::generate_context!()
}

/// Runs the desktop app until its window closes.
pub fn run() -> tauri::Result<()> {
    let state = AppState::new(
        &deskhand_engine::paths::config_dir(),
        &deskhand_engine::paths::data_dir(),
    );
    configure(tauri::Builder::default(), state)
        .plugin(tauri_plugin_global_shortcut::Builder::new().build())
        .setup(|app| {
            navigation::main_window(app)?;
            let handle = app.handle();
            if let Err(e) = tray::build(handle) {
                eprintln!("deskhand-app: no tray icon ({e}); Stop stays in the window");
            }
            let stop = |app: &tauri::AppHandle, _: &_, event: tauri_plugin_global_shortcut::ShortcutEvent| {
                if event.state == ShortcutState::Pressed {
                    app.state::<AppState>().stop();
                }
            };
            if let Err(e) = handle.global_shortcut().on_shortcut(STOP_SHORTCUT, stop) {
                eprintln!("deskhand-app: the global stop shortcut is unavailable ({e}); use Esc in the window or the tray");
            }
            Ok(())
        })
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::CloseRequested { api, .. } = event {
                tray::on_close_requested(window, api);
            }
        })
        .run(context())
}
