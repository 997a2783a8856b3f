//! The tray icon: Stop the agent from anywhere, bring the window back, or quit.

use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

use crate::bar::main_window;
use crate::state::AppState;

const SHOW: &str = "show";
const STOP: &str = "stop";
const QUIT: &str = "quit";

pub fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let menu = Menu::with_items(
        app,
        &[
            &MenuItem::with_id(app, SHOW, "Show Deskhand", true, None::<&str>)?,
            &MenuItem::with_id(app, STOP, "Stop the agent", true, None::<&str>)?,
            &MenuItem::with_id(app, QUIT, "Quit", true, None::<&str>)?,
        ],
    )?;
    let mut tray = TrayIconBuilder::with_id("deskhand")
        .tooltip("Deskhand")
        .menu(&menu)
        .on_menu_event(|app, event| match event.id().as_ref() {
            SHOW => {
                if let Some(window) = main_window(app) {
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
        });
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    tray.build(app)?;
    Ok(())
}
