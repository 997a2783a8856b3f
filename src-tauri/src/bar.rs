//! Staying out of the way while the agent acts on the screen.
//!
//! The choice: when a computer action is about to run, the window shrinks to a small
//! always-on-top bar (480 x 56) showing the current step and Stop, at the top edge of a
//! monitor other than the captured one when there is one, otherwise at the top right corner
//! of the captured one. For the instant of each computer action the bar is hidden, so the
//! action can never land on Deskhand and its screenshot never shows it. The full window comes
//! back for each approval and at the end of the run, without taking the focus: a key the
//! person meant for another program must not land on an approval card (the run asks for
//! attention instead).
//!
//! Why: a bar keeps Stop one click away and shows progress without covering what the agent
//! works on. Minimising the window would lose the visible Stop; a second overlay window would
//! need a second webview (about 100 MB more, and more capabilities). The bar does not take
//! keyboard focus, so text the agent types goes where it clicked. Runs that only talk (no
//! computer action) never shrink the window.

use std::sync::Mutex;
use std::time::Duration;

use tauri::{
    LogicalSize, Manager, Monitor, PhysicalPosition, PhysicalSize, Runtime, WebviewWindow,
};

/// The window's label (tauri.conf.json).
pub const MAIN_WINDOW: &str = "main";
const BAR_WIDTH: f64 = 480.0;
const BAR_HEIGHT: f64 = 56.0;
const MARGIN: f64 = 8.0;
/// After the unmap request, time for the X server and the window below to redraw.
const UNMAP_SETTLE: Duration = Duration::from_millis(40);

#[derive(Clone, Copy, Debug)]
struct Geometry {
    position: PhysicalPosition<i32>,
    size: PhysicalSize<u32>,
    maximized: bool,
}

/// The window's geometry before it became the bar, while it is the bar.
#[derive(Default)]
pub struct Bar {
    saved: Mutex<Option<Geometry>>,
}

impl Bar {
    fn saved(&self) -> std::sync::MutexGuard<'_, Option<Geometry>> {
        self.saved.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_compact(&self) -> bool {
        self.saved().is_some()
    }

    /// Shrinks the window into the bar, away from `captured` (the monitor the agent sees).
    pub fn compact<R: Runtime>(
        &self,
        window: &WebviewWindow<R>,
        captured: Option<&Monitor>,
    ) -> tauri::Result<()> {
        let mut saved = self.saved();
        if saved.is_some() {
            return Ok(());
        }
        *saved = Some(Geometry {
            position: window.outer_position()?,
            size: window.inner_size()?,
            maximized: window.is_maximized()?,
        });
        let monitors = window.available_monitors()?;
        let elsewhere = captured.and_then(|c| monitors.iter().find(|m| m.name() != c.name()));
        let (monitor, centred) = match (elsewhere, captured) {
            (Some(other), _) => (Some(other), true),
            (None, Some(captured)) => (Some(captured), false),
            (None, None) => (monitors.first(), false),
        };
        if saved.is_some_and(|g| g.maximized) {
            window.unmaximize()?;
        }
        window.set_decorations(false)?;
        window.set_always_on_top(true)?;
        window.set_focusable(false)?;
        window.set_size(LogicalSize::new(BAR_WIDTH, BAR_HEIGHT))?;
        if let Some(monitor) = monitor {
            let scale = monitor.scale_factor();
            let origin = monitor.position();
            let width = monitor.size().width as f64;
            let bar = BAR_WIDTH * scale;
            let x = if centred {
                (width - bar) / 2.0
            } else {
                width - bar - MARGIN * scale
            };
            window.set_position(PhysicalPosition::new(
                origin.x + x as i32,
                origin.y + (MARGIN * scale) as i32,
            ))?;
        }
        Ok(())
    }

    /// Brings the full window back where it was, from the bar or from the tray (closed
    /// mid-run: a tray a desktop does not show must not keep it away). It does not take the
    /// focus.
    pub fn restore<R: Runtime>(&self, window: &WebviewWindow<R>) -> tauri::Result<()> {
        let Some(geometry) = self.saved().take() else {
            return match window.is_visible()? {
                true => Ok(()),
                false => window.show(),
            };
        };
        window.set_always_on_top(false)?;
        window.set_focusable(true)?;
        window.set_decorations(true)?;
        window.set_size(geometry.size)?;
        window.set_position(geometry.position)?;
        if geometry.maximized {
            window.maximize()?;
        }
        window.show()
    }

    /// Hides the bar while one computer action runs; it shows again when the guard drops.
    pub async fn step_aside<R: Runtime>(&self, window: &WebviewWindow<R>) -> StepAside<R> {
        if window.hide().is_ok() {
            // A getter is answered by the event loop after the hide it queued before, so the
            // unmap has been sent when this returns.
            let _ = window.is_visible();
            tokio::time::sleep(UNMAP_SETTLE).await;
        }
        StepAside(window.clone())
    }
}

pub struct StepAside<R: Runtime>(WebviewWindow<R>);

impl<R: Runtime> Drop for StepAside<R> {
    fn drop(&mut self) {
        let _ = self.0.show();
    }
}

/// The main window, if it exists.
pub fn main_window<R: Runtime, M: Manager<R>>(manager: &M) -> Option<WebviewWindow<R>> {
    manager.get_webview_window(MAIN_WINDOW)
}
