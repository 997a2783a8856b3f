//! One task per session across processes: an OS file lock (`flock`) per session in the data
//! directory. The kernel releases it when the process holding it ends, however it ends, so a
//! crash never leaves a stale lock behind.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Held while a task runs its session; dropping it unlocks.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("session `{0}` is busy: another Deskhand process is running a task on it")]
    Busy(String),
    #[error("cannot lock session `{session}` ({path}): {source}")]
    Io {
        session: String,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The lock file of a session: named by a hash of the id, so no id (imported sessions keep
/// theirs) can name a path.
fn lock_path(data_dir: &Path, session_id: &str) -> PathBuf {
    let hash = Sha256::digest(session_id.as_bytes());
    let name: String = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
    data_dir.join("locks").join(format!("{name}.lock"))
}

impl SessionLock {
    /// Takes the session's lock without waiting: `Busy` when another open file (another
    /// process, or another engine) holds it.
    pub fn try_acquire(data_dir: &Path, session_id: &str) -> Result<Self, LockError> {
        let path = lock_path(data_dir, session_id);
        let io = |source| LockError::Io {
            session: session_id.into(),
            path: path.clone(),
            source,
        };
        // Private like the rest of the data directory (the lock files are empty).
        if let Some(dir) = path.parent() {
            crate::files::private_dir(dir).map_err(io)?;
        }
        let file: File = crate::files::create_private(&path, false).map_err(io)?;
        // SAFETY: flock on a descriptor this function owns; it only changes the lock state.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked == 0 {
            return Ok(Self { _file: file });
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Err(LockError::Busy(session_id.into()))
        } else {
            Err(io(error))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = SessionLock::try_acquire(dir.path(), "s1").unwrap();
        assert!(matches!(
            SessionLock::try_acquire(dir.path(), "s1"),
            Err(LockError::Busy(_))
        ));
        SessionLock::try_acquire(dir.path(), "s2").unwrap();
        drop(first);
        SessionLock::try_acquire(dir.path(), "s1").unwrap();
        assert!(lock_path(dir.path(), "../../etc/x").starts_with(dir.path().join("locks")));
    }
}
