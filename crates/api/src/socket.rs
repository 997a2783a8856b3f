//! The API's Unix socket: in a directory only this user can enter (0700), the socket itself
//! 0600. A socket file a crash left behind is found stale (nothing answers) and replaced; a
//! live one is "already serving".

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

use deskhand_engine::tasks::{LockError, SessionLock};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("Deskhand is already serving at {0}; stop that `deskhand serve` first")]
    AlreadyServing(PathBuf),
    #[error(
        "{0} exists and is not a socket; it was left untouched. Move it away or choose another path with --socket"
    )]
    NotASocket(PathBuf),
    #[error("cannot listen at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// `$XDG_RUNTIME_DIR/deskhand/api.sock`, else `api.sock` in the data directory.
pub fn default_socket_path(data_dir: &Path) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("deskhand").join("api.sock"),
        None => data_dir.join("api.sock"),
    }
}

/// The socket's file, and the lock that says this process serves it; dropping it removes
/// the file.
pub struct SocketFile {
    pub path: PathBuf,
    _lock: SessionLock,
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds the socket at `path`, replacing a stale one. Two `serve`s starting together are
/// told apart by a file lock beside the socket, which the kernel drops with its process.
pub fn bind_socket(path: &Path) -> Result<(UnixListener, SocketFile), ServeError> {
    let io = |source| ServeError::Io {
        path: path.into(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let lock = SessionLock::try_acquire(dir, &format!("api socket {}", name.unwrap_or_default()))
        .map_err(|e| match e {
        LockError::Busy(_) => ServeError::AlreadyServing(path.into()),
        LockError::Io { source, .. } => io(source),
    })?;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(ServeError::NotASocket(path.into()));
        }
        Ok(_) => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(ServeError::AlreadyServing(path.into()));
            }
            // Nothing answers: a crash left it.
            std::fs::remove_file(path).map_err(io)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    // Bound under another name and made 0600 before it appears at `path`: nobody can
    // connect in between.
    let fresh = path.with_extension(format!("new-{}", std::process::id()));
    let _ = std::fs::remove_file(&fresh);
    let listener = UnixListener::bind(&fresh).map_err(io)?;
    std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    std::fs::rename(&fresh, path).map_err(io)?;
    Ok((
        listener,
        SocketFile {
            path: path.into(),
            _lock: lock,
        },
    ))
}
