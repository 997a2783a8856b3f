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

use deskhand_engine::elements::Rect;
use deskhand_engine::windows::Desk;
use tauri::{
    LogicalSize, Manager, Monitor, PhysicalPosition, PhysicalSize, Runtime, WebviewWindow,
};

/// The window's label (tauri.conf.json).
pub const MAIN_WINDOW: &str = "main";
const BAR_WIDTH: f64 = 480.0;
const BAR_HEIGHT: f64 = 56.0;
const MARGIN: f64 = 8.0;
/// The longest wait, after hiding, for the desktop to be painted where the window was; also
/// the wait where that cannot be watched (no X11 display).
const HIDE_WAIT: Duration = Duration::from_millis(40);
/// How often the desktop is looked at meanwhile.
const HIDE_POLL: Duration = Duration::from_millis(2);

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

    /// Hides the window while one action on the screen runs; it shows again when the guard
    /// drops. With `desk` (X11) it returns as soon as the window is unmapped and the app below
    /// has painted over where it was, rather than after a fixed wait.
    pub async fn step_aside<R: Runtime>(
        &self,
        window: &WebviewWindow<R>,
        desk: Option<&Desk>,
    ) -> StepAside<R> {
        let own = std::process::id();
        let shown = desk.and_then(|desk| shown_windows(desk, own));
        if window.hide().is_ok() {
            match (desk, shown) {
                (Some(desk), Some(shown)) => painted_over(desk, own, shown, HIDE_WAIT).await,
                _ => {
                    // A getter is answered by the event loop after the hide it queued before,
                    // so the unmap has been sent when this returns.
                    let _ = window.is_visible();
                    tokio::time::sleep(HIDE_WAIT).await;
                }
            }
        }
        StepAside(window.clone())
    }
}

/// Where process `own` shows windows, with the pixels each shows now; `None` when the
/// desktop cannot be read.
fn shown_windows(desk: &Desk, own: u32) -> Option<Vec<(Rect, Vec<u8>)>> {
    desk.windows_of(own)
        .ok()?
        .into_iter()
        .map(|area| Some((area, desk.grab(&area).ok()?)))
        .collect()
}

/// Waits, at most `longest`, until a window of `shown` is no longer mapped and the desktop
/// below has painted its area: something other than the window, the same in two looks in a
/// row. Until the app below redraws, the X server may still hold the window's pixels there.
async fn painted_over(desk: &Desk, own: u32, shown: Vec<(Rect, Vec<u8>)>, longest: Duration) {
    if shown.is_empty() {
        return;
    }
    let deadline = tokio::time::Instant::now() + longest;
    // First one of the windows goes…
    let (area, before) = loop {
        let still = desk.windows_of(own).unwrap_or_default();
        if let Some(gone) = shown.iter().find(|(area, _)| !still.contains(area)) {
            break gone;
        }
        if tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(HIDE_POLL).await;
    };
    // …then the desktop below paints its area.
    let mut last: Option<Vec<u8>> = None;
    while tokio::time::Instant::now() < deadline {
        let Ok(now) = desk.grab(area) else {
            return tokio::time::sleep_until(deadline).await;
        };
        if now != *before && last.as_ref() == Some(&now) {
            return;
        }
        last = Some(now);
        tokio::time::sleep(HIDE_POLL).await;
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use deskhand_test_support::x11::{self, Program, run};

    use super::*;

    fn xterm(title: &str, colour: &str) -> (Program, String) {
        x11::xterm(title, &["-bg", colour, "-geometry", "40x10+500+400"])
    }

    /// The wait ends only once the window is gone and what lies below shows in its place: an
    /// xterm of this process (by `_NET_WM_PID`, as the bar is) over a blue one, unmapped a
    /// moment after the wait began, as a hide request is served.
    #[test]
    fn stepping_aside_waits_until_the_window_is_gone_and_the_desktop_below_shows() {
        let Some(_display) = x11::display() else {
            return;
        };
        let (_below, _) = xterm("deskhand-below-the-bar", "blue");
        let (_bar, id) = xterm("deskhand-the-bar", "red");
        let own = std::process::id();
        x11::claim_window(&id, own);
        let desk = Desk::open().unwrap();
        let shown = shown_windows(&desk, own).unwrap();
        assert_eq!(
            shown.len(),
            1,
            "{:?}",
            shown.iter().map(|s| s.0).collect::<Vec<_>>()
        );
        let (area, before) = shown[0].clone();
        let unmap = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(15));
            run("xdotool", &["windowunmap", &id]);
        });
        // However long the unmap takes on a loaded machine: what is tested is what ends the
        // wait, not how long it is.
        let longest = Duration::from_secs(10);
        tauri::async_runtime::block_on(painted_over(&desk, own, shown, longest));
        let after = desk.grab(&area).unwrap();
        unmap.join().unwrap();
        assert!(after != before, "the window's pixels still show");
        // Pixels are BGRX: most of the area is the blue xterm below.
        let blue = after.chunks(4).filter(|p| p[0] > 200 && p[2] < 50).count();
        assert!(
            blue * 2 > after.len() / 4,
            "{blue} of {} pixels blue",
            after.len() / 4
        );
    }
}
