//! Reading files that may be hostile: a path from the model, an attachment or an import can
//! name a FIFO (whose open blocks forever), a device (`/dev/zero` never ends), a sparse file
//! of gigabytes or a symlink loop. Every read of such a path goes through `read_regular`:
//! regular files only, the size checked before a byte is read, the read itself bounded, and
//! the open never blocking.
//!
//! It also writes Deskhand's private files: the history holds screenshots of the person's
//! screen and whole transcripts, so its directories are the owner's alone (0700) and its
//! files too (0600), whatever the umask says.

use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

/// Why a file was not read. The Display is one sentence naming the path and the cause once.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path} does not exist")]
    NotFound { path: String },
    #[error("{path} is a directory, not a file")]
    Directory { path: String },
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: String, kind: FileKind },
    #[error("{path} is {bytes} bytes; the limit is {limit} bytes")]
    TooLarge {
        path: String,
        bytes: u64,
        limit: u64,
    },
    #[error("cannot read {path}: {reason}")]
    Io { path: String, reason: String },
}

/// What a path is when it is not a regular file, for the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    Other,
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Fifo => "a named pipe (FIFO)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "a special file",
        })
    }
}

/// The bytes of the regular file at `path`, at most `limit` of them, else a clear error.
/// Symlinks are followed; one whose target is missing is `NotFound`.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut file = open_regular(path, limit)?;
    let mut bytes = Vec::new();
    // The size was checked on the open file; a file that grows while it is read is still cut
    // at the limit, then refused.
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, &e))?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: path.display().to_string(),
            bytes: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// The regular file at `path`, opened for reading without blocking (a FIFO would otherwise
/// wait for a writer), and checked to be at most `limit` bytes before anything is read.
pub fn open_regular(path: &Path, limit: u64) -> Result<File, ReadError> {
    let shown = || path.display().to_string();
    let file = open_nonblocking(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound { path: shown() },
        _ => io_error(path, &e),
    })?;
    let meta = file.metadata().map_err(|e| io_error(path, &e))?;
    if meta.is_dir() {
        return Err(ReadError::Directory { path: shown() });
    }
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            path: shown(),
            kind: kind_of(&meta),
        });
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            path: shown(),
            bytes: meta.len(),
            limit,
        });
    }
    Ok(file)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn kind_of(meta: &std::fs::Metadata) -> FileKind {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        FileKind::Fifo
    } else if t.is_socket() {
        FileKind::Socket
    } else if t.is_char_device() {
        FileKind::CharDevice
    } else if t.is_block_device() {
        FileKind::BlockDevice
    } else {
        FileKind::Other
    }
}

#[cfg(not(unix))]
fn kind_of(_meta: &std::fs::Metadata) -> FileKind {
    FileKind::Other
}

/// An I/O error, its cause said once (callers add no cause of their own).
fn io_error(path: &Path, e: &std::io::Error) -> ReadError {
    ReadError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// The mode of every directory Deskhand keeps history in: the owner's alone.
pub const PRIVATE_DIR_MODE: u32 = 0o700;
/// The mode of every file of the history and of every export.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Creates `dir` (with any missing parent) readable by its owner only. An existing `dir`
/// that others may read or enter is tightened to 0700; the mode it had is returned then, so
/// the caller can say so (once: the next time it is 0700 already).
pub fn private_dir(dir: &Path) -> std::io::Result<Option<u32>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 == 0 {
                    return Ok(None);
                }
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(PRIVATE_DIR_MODE))?;
                Ok(Some(mode))
            }
            Ok(_) => Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "it exists and is not a directory",
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(PRIVATE_DIR_MODE)
                    .create(dir)?;
                // mkdir's mode passes through the umask: set it outright.
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(PRIVATE_DIR_MODE))?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir).map(|()| None)
    }
}

/// Opens `path` for writing as a private file (0600 whatever the umask), creating it if
/// missing (`new_only`: refusing an existing one), else truncating it and tightening its
/// mode.
pub fn create_private(path: &Path, new_only: bool) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if new_only {
        options.create_new(true);
    } else {
        options.create(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let file = options.mode(PRIVATE_FILE_MODE).open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_FILE_MODE))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        options.open(path)
    }
}

/// Writes `bytes` to `path` as a private file (see [`create_private`]).
pub fn write_private(path: &Path, bytes: &[u8], new_only: bool) -> std::io::Result<()> {
    create_private(path, new_only)?.write_all(bytes)
}

/// Makes an existing file private (0600) if it is not; used for a history written before
/// Deskhand kept its files private.
pub fn make_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        if mode != PRIVATE_FILE_MODE {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(PRIVATE_FILE_MODE))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn reads_a_small_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, b"hello").unwrap();
        assert_eq!(read_regular(&path, 5).unwrap(), b"hello");
        assert!(matches!(
            read_regular(&path, 4),
            Err(ReadError::TooLarge {
                bytes: 5,
                limit: 4,
                ..
            })
        ));
    }

    #[test]
    fn refuses_devices_directories_and_missing_files_at_once() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_regular(Path::new("/dev/zero"), 1 << 20),
            Err(ReadError::NotRegular {
                kind: FileKind::CharDevice,
                ..
            })
        ));
        assert!(matches!(
            read_regular(dir.path(), 1 << 20),
            Err(ReadError::Directory { .. })
        ));
        let dangling = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("missing"), &dangling).unwrap();
        let err = read_regular(&dangling, 1 << 20).unwrap_err();
        assert!(matches!(err, ReadError::NotFound { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!("{} does not exist", dangling.display())
        );
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = Instant::now();
        let err = read_regular(&fifo, 1 << 20).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(
            matches!(
                err,
                ReadError::NotRegular {
                    kind: FileKind::Fifo,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .ends_with("is a named pipe (FIFO), not a regular file")
        );
    }

    #[test]
    fn a_sparse_giant_is_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        let file = File::create(&path).unwrap();
        file.set_len(2 << 30).unwrap();
        let started = Instant::now();
        assert!(matches!(
            read_regular(&path, 10 << 20),
            Err(ReadError::TooLarge { .. })
        ));
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_dirs_and_files_ignore_a_lax_umask() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: umask only sets this process's file mode mask; restored below.
        let old = unsafe { libc::umask(0o022) };
        let nested = dir.path().join("a/b");
        let made = private_dir(&nested);
        let file = nested.join("f");
        let written = write_private(&file, b"x", true);
        let again = write_private(&file, b"x", true);
        unsafe { libc::umask(old) };
        assert_eq!(made.unwrap(), None);
        written.unwrap();
        assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(mode(&nested), 0o700);
        assert_eq!(mode(&file), 0o600);

        std::fs::set_permissions(&nested, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert_eq!(private_dir(&nested).unwrap(), Some(0o755));
        assert_eq!(mode(&nested), 0o700);
        assert_eq!(private_dir(&nested).unwrap(), None, "said once");
    }
}
