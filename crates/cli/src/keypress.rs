//! Reading a person's answer from the terminal so that nothing typed before the question was
//! on screen can answer it: input waiting when a question appears is thrown away, a key
//! counts only once the question has been shown for [`SETTLE`] (as the window's approval
//! card waits), and one key press answers one question.

use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a question is on screen before a key counts: the window's `SETTLE_MS`.
pub const SETTLE: Duration = Duration::from_millis(700);

/// Escape, the key that denies in the window too.
pub const ESCAPE: u8 = 0x1b;

/// The terminal on stdin in "one key at a time" mode (no line editing, no echo) while this
/// lives; its settings are put back on drop, or by [`restore`] when the process exits first.
pub struct OneKey {
    fd: i32,
}

/// The terminal's own settings while a [`OneKey`] lives.
static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);

impl OneKey {
    /// Switches stdin's terminal to one-key mode; `None` when stdin is no terminal.
    pub fn start() -> Option<Self> {
        let fd = std::io::stdin().as_raw_fd();
        // SAFETY: `termios` is plain data, filled by `tcgetattr` before it is read.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is stdin and `saved` a valid `termios` to write into.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: as above, with a `termios` derived from the terminal's own.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(saved);
        Some(Self { fd })
    }

    /// The first key pressed once the question, shown at `shown`, has been on screen for
    /// [`SETTLE`]: what was typed before then is thrown away. `None` at end of input.
    pub fn key_after(&self, shown: Instant) -> Option<u8> {
        std::thread::sleep(SETTLE.saturating_sub(shown.elapsed()));
        discard_pending_input();
        self.next_key()
    }

    /// The next key pressed. `None` at end of input.
    pub fn next_key(&self) -> Option<u8> {
        // Straight from the descriptor: std's buffered stdin would keep the keys after this
        // one where no flush reaches them.
        let mut key = 0u8;
        loop {
            // SAFETY: reads at most one byte into `key`, which lives through the call.
            let read = unsafe { libc::read(self.fd, (&raw mut key).cast(), 1) };
            match read {
                1 => return Some(key),
                -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                }
                _ => return None,
            }
        }
    }
}

impl Drop for OneKey {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal's own settings back if a question left it in one-key mode: for an exit
/// in the middle of a question (a second Ctrl-C).
pub fn restore() {
    if let Some(saved) = SAVED.lock().unwrap_or_else(|e| e.into_inner()).take() {
        // SAFETY: puts back the settings `tcgetattr` read from stdin.
        unsafe { libc::tcsetattr(std::io::stdin().as_raw_fd(), libc::TCSANOW, &saved) };
    }
}

/// Throws away what was typed on stdin's terminal and not read yet.
pub fn discard_pending_input() {
    // SAFETY: `tcflush` takes a descriptor and a constant; on a non-terminal it fails
    // harmlessly.
    unsafe { libc::tcflush(std::io::stdin().as_raw_fd(), libc::TCIFLUSH) };
}
