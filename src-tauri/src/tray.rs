//! The tray icon: Stop the agent from anywhere, bring the window back, or quit.

use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, CloseRequestApi, Manager, Runtime, Window};

use crate::bar::main_window;
use crate::state::AppState;

pub const SHOW: &str = "show";
pub const STOP: &str = "stop";
pub const QUIT: &str = "quit";
const TRAY: &str = "deskhand";

pub fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let menu = Menu::with_items(
        app,
        &[
            &MenuItem::with_id(app, SHOW, "Show Deskhand", true, None::<&str>)?,
            &MenuItem::with_id(app, STOP, "Stop the agent", true, None::<&str>)?,
            &MenuItem::with_id(app, QUIT, "Quit", true, None::<&str>)?,
        ],
    )?;
    let mut tray = TrayIconBuilder::with_id(TRAY)
        .tooltip("Deskhand")
        .menu(&menu)
        .on_menu_event(|app, event| on_item(app, event.id().as_ref()));
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    tray.build(app)?;
    Ok(())
}

/// What a tray menu item does; apart from the menu so the command tests can click it (no
/// tray host under Xvfb).
pub fn on_item<R: Runtime>(app: &AppHandle<R>, id: &str) {
    match id {
        SHOW => {
            if let Some(window) = main_window(app) {
                let state = app.state::<AppState>();
                let _ = state.bar.restore(&window);
                let _ = window.show();
                let _ = window.set_focus();
            }
        }
        STOP => app.state::<AppState>().stop(),
        QUIT => {
            app.state::<AppState>().stop();
            app.exit(0);
        }
        _ => {}
    }
}

/// Closing the window while a run goes on hides it to the tray instead, so the run goes on;
/// "Show Deskhand" brings it back, and so does the run when it needs the person or ends,
/// announced by a notification. With nothing running, or no tray icon, closing quits.
pub fn on_close_requested<R: Runtime>(window: &Window<R>, api: &CloseRequestApi) {
    let app = window.app_handle();
    if app.state::<AppState>().is_busy() && app.tray_by_id(TRAY).is_some() {
        api.prevent_close();
        let _ = window.hide();
    }
}
