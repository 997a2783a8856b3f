//! The `Screen` seam: which monitors there are, and a frame of one of them. The real screen in
//! the app, a scripted fake in unit tests.

#[cfg(any(test, feature = "test-support"))]
use std::collections::VecDeque;
#[cfg(any(test, feature = "test-support"))]
use std::sync::Mutex;
#[cfg(any(test, feature = "test-support"))]
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use deskhand_protocol::scaling::{Geometry, Size};

/// One monitor as Deskhand uses it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Monitor {
    /// Position in the list, what `--monitor N` and the setting pick.
    pub index: usize,
    /// The capture backend's id for it.
    pub id: u32,
    pub name: String,
    pub primary: bool,
    pub scale_factor: f32,
    pub geometry: Geometry,
}

/// Captured pixels, RGBA, row by row.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub size: Size,
    pub rgba: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScreenError {
    #[error("no display: {0}")]
    NoDisplay(String),
    #[error("cannot list the monitors: {0}")]
    Monitors(String),
    #[error("there is no monitor {index}; this desktop has {count} (0 to {last})", last = .count.saturating_sub(1))]
    NoSuchMonitor { index: usize, count: usize },
    #[error("screen capture failed: {0}")]
    Capture(String),
    /// Scaling or encoding a captured frame failed (a frame whose buffer is not its size, a
    /// crop outside it).
    #[error("cannot scale or encode the screenshot: {0}")]
    Image(String),
}

pub trait Screen: Send + Sync {
    fn monitors(&self) -> Result<Vec<Monitor>, ScreenError>;
    fn capture(&self, monitor: &Monitor) -> Result<Frame, ScreenError>;
}

/// The monitor to use: `index` if given, else the primary one, else the first.
pub fn choose(mut monitors: Vec<Monitor>, index: Option<usize>) -> Result<Monitor, ScreenError> {
    let count = monitors.len();
    if count == 0 {
        return Err(ScreenError::NoDisplay(
            "the display reports no monitors".into(),
        ));
    }
    match index {
        Some(index) => monitors
            .into_iter()
            .nth(index)
            .ok_or(ScreenError::NoSuchMonitor { index, count }),
        None => {
            let at = monitors.iter().position(|m| m.primary).unwrap_or(0);
            Ok(monitors.swap_remove(at))
        }
    }
}

/// A screen for unit tests: fixed monitors, frames served in order (the last one repeats).
#[cfg(any(test, feature = "test-support"))]
pub struct FakeScreen {
    pub monitors: Vec<Monitor>,
    frames: Mutex<VecDeque<Frame>>,
    captures: AtomicUsize,
}

#[cfg(any(test, feature = "test-support"))]
impl FakeScreen {
    pub fn new(monitors: Vec<Monitor>, frames: Vec<Frame>) -> Self {
        Self {
            monitors,
            frames: Mutex::new(frames.into()),
            captures: AtomicUsize::new(0),
        }
    }

    /// One monitor of `width` x `height` at the origin, showing a flat frame.
    pub fn single(width: u32, height: u32) -> Self {
        let size = Size::new(width, height);
        let monitor = Monitor {
            index: 0,
            id: 1,
            name: "fake".into(),
            primary: true,
            scale_factor: 1.0,
            geometry: Geometry {
                x: 0,
                y: 0,
                input: size,
                pixels: size,
            },
        };
        Self::new(vec![monitor], vec![Frame::filled(size, 0x40)])
    }

    pub fn captures(&self) -> usize {
        self.captures.load(Ordering::SeqCst)
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Frame {
    /// A frame of one grey level, for tests.
    pub fn filled(size: Size, level: u8) -> Self {
        Self {
            size,
            rgba: vec![level; size.width as usize * size.height as usize * 4],
        }
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Screen for FakeScreen {
    fn monitors(&self) -> Result<Vec<Monitor>, ScreenError> {
        Ok(self.monitors.clone())
    }

    fn capture(&self, _: &Monitor) -> Result<Frame, ScreenError> {
        self.captures.fetch_add(1, Ordering::SeqCst);
        let mut frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        match frames.len() {
            0 => Err(ScreenError::Capture("the fake screen has no frames".into())),
            1 => Ok(frames[0].clone()),
            _ => frames
                .pop_front()
                .ok_or_else(|| ScreenError::Capture("the fake screen has no frames".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monitor(index: usize, primary: bool) -> Monitor {
        let size = Size::new(100, 100);
        Monitor {
            index,
            id: index as u32,
            name: format!("m{index}"),
            primary,
            scale_factor: 1.0,
            geometry: Geometry {
                x: 100 * index as i32,
                y: 0,
                input: size,
                pixels: size,
            },
        }
    }

    #[test]
    fn the_primary_monitor_is_the_default_and_an_index_picks_another() {
        let all = vec![monitor(0, false), monitor(1, true)];
        assert_eq!(choose(all.clone(), None).unwrap().index, 1);
        assert_eq!(choose(all.clone(), Some(0)).unwrap().index, 0);
        let err = choose(all, Some(2)).unwrap_err().to_string();
        assert_eq!(err, "there is no monitor 2; this desktop has 2 (0 to 1)");
        // Xvfb reports no primary monitor: the first one is used.
        assert_eq!(choose(vec![monitor(0, false)], None).unwrap().index, 0);
        assert!(matches!(
            choose(vec![], None),
            Err(ScreenError::NoDisplay(_))
        ));
    }
}
