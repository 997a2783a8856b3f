//! Waiting for the screen to settle after an action, instead of the reference's fixed 2 s:
//! capture until two consecutive frames agree, after a short floor and up to a cap.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::screen::{Frame, ScreenError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettlePolicy {
    /// Always wait this long first: input needs a moment to reach the application.
    pub floor: Duration,
    /// Time between two captures that are compared.
    pub interval: Duration,
    /// Give up waiting and return the newest frame after this long.
    pub cap: Duration,
}

impl Default for SettlePolicy {
    fn default() -> Self {
        Self {
            floor: Duration::from_millis(50),
            interval: Duration::from_millis(40),
            cap: Duration::from_millis(1500),
        }
    }
}

/// The frame to return, and how it was reached.
#[derive(Debug)]
pub struct Settled {
    pub frame: Frame,
    /// False when the cap was reached with the screen still changing (or on a stop).
    pub stable: bool,
    pub captures: u32,
    /// Time spent capturing, out of the whole wait.
    pub capturing: Duration,
    pub waited: Duration,
}

/// Captures until two consecutive frames are identical. A stop ends the wait early with
/// the newest frame.
pub fn settle(
    capture: &mut dyn FnMut() -> Result<Frame, ScreenError>,
    policy: SettlePolicy,
    cancel: &CancellationToken,
) -> Result<Settled, ScreenError> {
    let started = Instant::now();
    let mut capturing = Duration::ZERO;
    let mut timed = || {
        let t = Instant::now();
        let frame = capture();
        capturing += t.elapsed();
        frame
    };
    std::thread::sleep(policy.floor);
    let mut previous = timed()?;
    let mut captures = 1;
    loop {
        if started.elapsed() >= policy.cap || cancel.is_cancelled() {
            return Ok(Settled {
                frame: previous,
                stable: false,
                captures,
                capturing,
                waited: started.elapsed(),
            });
        }
        std::thread::sleep(policy.interval);
        let next = timed()?;
        captures += 1;
        if next == previous {
            return Ok(Settled {
                frame: next,
                stable: true,
                captures,
                capturing,
                waited: started.elapsed(),
            });
        }
        previous = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskhand_protocol::scaling::Size;

    fn policy(cap_ms: u64) -> SettlePolicy {
        SettlePolicy {
            floor: Duration::from_millis(1),
            interval: Duration::from_millis(1),
            cap: Duration::from_millis(cap_ms),
        }
    }

    /// A screen that changes for the first `changing` captures, then stays still.
    fn screen(changing: u8) -> impl FnMut() -> Result<Frame, ScreenError> {
        let mut n = 0u8;
        move || {
            n = n.saturating_add(1);
            Ok(Frame::filled(Size::new(4, 4), n.min(changing + 1)))
        }
    }

    #[test]
    fn an_idle_screen_settles_after_two_captures() {
        let s = settle(&mut screen(0), policy(1000), &CancellationToken::new()).unwrap();
        assert!(s.stable);
        assert_eq!(s.captures, 2);
    }

    #[test]
    fn a_changing_screen_is_captured_until_it_stops_changing() {
        let s = settle(&mut screen(5), policy(1000), &CancellationToken::new()).unwrap();
        assert!(s.stable);
        assert_eq!(s.captures, 7);
        assert_eq!(s.frame, Frame::filled(Size::new(4, 4), 6));
    }

    #[test]
    fn a_screen_that_never_settles_ends_at_the_cap_with_the_newest_frame() {
        let mut n = 0u8;
        let mut always_changing = || {
            n = n.wrapping_add(1);
            Ok(Frame::filled(Size::new(4, 4), n))
        };
        let s = settle(&mut always_changing, policy(30), &CancellationToken::new()).unwrap();
        assert!(!s.stable);
        assert!(s.waited >= Duration::from_millis(30));
        assert_eq!(s.frame, Frame::filled(Size::new(4, 4), s.captures as u8));
    }

    #[test]
    fn a_stop_ends_the_wait_and_capture_errors_come_back() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let s = settle(&mut screen(50), policy(10_000), &cancel).unwrap();
        assert_eq!(s.captures, 1);
        let mut broken = || Err(ScreenError::Capture("gone".into()));
        assert!(settle(&mut broken, policy(100), &CancellationToken::new()).is_err());
    }
}
