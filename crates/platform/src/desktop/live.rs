//! The live view of an agent desktop: a scaled-down JPEG each time its screen changes, at most
//! [`MAX_FPS`] a second. XDamage says when something changed, so an idle desktop costs a
//! thread blocked in `poll(2)` and nothing else: no capture, no comparison.

use std::os::fd::AsRawFd as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use x11rb::connection::Connection as _;
use x11rb::protocol::damage::{ConnectionExt as _, ReportLevel};
use x11rb::rust_connection::RustConnection;

use crate::computer::capture::RealScreen;
use crate::computer::pipeline::{self, Format};
use crate::computer::screen::{self, Screen as _};
use deskhand_protocol::scaling::Size;

/// Frames a second, at most: a desktop that changes all the time is shown at this rate.
pub const MAX_FPS: u32 = 10;
/// How long the thread waits for a change before it looks whether it should stop.
const STOP_CHECK: Duration = Duration::from_millis(100);
const JPEG_QUALITY: u8 = 70;

#[derive(Debug, thiserror::Error)]
pub enum LiveViewError {
    #[error("cannot watch the agent desktop {display}: {reason}")]
    Connect { display: String, reason: String },
}

/// One frame: a JPEG of the whole desktop, scaled to at most the width asked for.
#[derive(Clone, Debug)]
pub struct LiveFrame {
    pub jpeg: Vec<u8>,
    /// The JPEG's size.
    pub size: Size,
    /// The desktop's size, which input coordinates are in.
    pub screen: Size,
}

/// A running live view; dropping it stops its thread.
pub struct LiveView {
    screen: Size,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LiveView {
    /// Watches `display` (`:N`): a first frame at once, then one after each change.
    /// `on_frame` returns false when nobody looks any more, which ends the view; so does the
    /// desktop ending.
    pub fn start(
        display: &str,
        max_width: u32,
        on_frame: impl FnMut(LiveFrame) -> bool + Send + 'static,
    ) -> Result<Self, LiveViewError> {
        let failed = |reason: String| LiveViewError::Connect {
            display: display.to_string(),
            reason,
        };
        let watcher = Watcher::open(display, max_width).map_err(failed)?;
        let screen = watcher.monitor.geometry.pixels;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("live-view".into())
            .spawn(move || watcher.run(&stopped, on_frame))
            .map_err(|e| failed(e.to_string()))?;
        Ok(Self {
            screen,
            stop,
            thread: Some(thread),
        })
    }

    /// The desktop's size: what take-over coordinates are in.
    pub fn screen(&self) -> Size {
        self.screen
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Watcher {
    /// Damage events arrive here; frames are read through `screen`'s shared memory.
    events: RustConnection,
    damage: u32,
    screen: RealScreen,
    monitor: screen::Monitor,
    size: Size,
}

impl Watcher {
    fn open(display: &str, max_width: u32) -> Result<Self, String> {
        let (events, number) = x11rb::connect(Some(display)).map_err(|e| e.to_string())?;
        let no_damage = |e: &dyn std::fmt::Display| format!("the display has no XDamage: {e}");
        events
            .damage_query_version(1, 1)
            .map_err(|e| no_damage(&e))?
            .reply()
            .map_err(|e| no_damage(&e))?;
        let root = events.setup().roots[number].root;
        let damage = events.generate_id().map_err(|e| e.to_string())?;
        events
            .damage_create(damage, root, ReportLevel::NON_EMPTY)
            .map_err(|e| e.to_string())?;
        events.flush().map_err(|e| e.to_string())?;
        let screen = RealScreen::open_x11(display).map_err(|e| e.to_string())?;
        let monitor = screen::choose(screen.monitors().map_err(|e| e.to_string())?, None)
            .map_err(|e| e.to_string())?;
        let full = monitor.geometry.pixels;
        let width = max_width.clamp(16, full.width.max(16));
        let height = (u64::from(full.height) * u64::from(width) / u64::from(full.width.max(1)))
            .max(1) as u32;
        Ok(Self {
            events,
            damage,
            screen,
            monitor,
            size: Size::new(width, height),
        })
    }

    fn run(self, stop: &AtomicBool, mut on_frame: impl FnMut(LiveFrame) -> bool) {
        let interval = Duration::from_secs(1) / MAX_FPS;
        let mut last: Option<Instant> = None;
        while !stop.load(Ordering::Relaxed) {
            if last.is_some() {
                match self.wait_for_change(STOP_CHECK) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    // The desktop ended.
                    Err(()) => return,
                }
                // Changes that come within the interval make one frame.
                if let Some(wait) = last.and_then(|l| interval.checked_sub(l.elapsed())) {
                    std::thread::sleep(wait);
                }
            }
            // Emptied before the capture: a change during it is reported again.
            let reset = x11rb::NONE;
            if self
                .events
                .damage_subtract(self.damage, reset, reset)
                .is_err()
                || self.events.flush().is_err()
            {
                return;
            }
            while let Ok(Some(_)) = self.events.poll_for_event() {}
            last = Some(Instant::now());
            let Ok(frame) = self.screen.capture(&self.monitor) else {
                return;
            };
            let Ok(shot) = pipeline::finish(
                &frame,
                self.size,
                Format::Jpeg {
                    quality: JPEG_QUALITY,
                },
                Duration::ZERO,
            ) else {
                return;
            };
            let frame = LiveFrame {
                jpeg: shot.bytes,
                size: shot.model,
                screen: shot.screen,
            };
            if !on_frame(frame) {
                return;
            }
        }
    }

    /// Whether a damage event came within `limit`; `Err` when the connection is gone.
    fn wait_for_change(&self, limit: Duration) -> Result<bool, ()> {
        match self.events.poll_for_event() {
            Ok(Some(_)) => return Ok(true),
            Ok(None) => {}
            Err(_) => return Err(()),
        }
        let mut fd = libc::pollfd {
            fd: self.events.stream().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = i32::try_from(limit.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd for the connection's socket, which outlives the call.
        let ready = unsafe { libc::poll(&mut fd, 1, millis) };
        if ready <= 0 {
            return Ok(false);
        }
        if fd.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            return Err(());
        }
        match self.events.poll_for_event() {
            Ok(event) => Ok(event.is_some()),
            Err(_) => Err(()),
        }
    }
}
