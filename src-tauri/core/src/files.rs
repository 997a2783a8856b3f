//! Reading files that may be hostile: a path from the model, an attachment or an import can
//! name a FIFO (whose open blocks forever), a device (`/dev/zero` never ends), a sparse file
//! of gigabytes or a symlink loop. Every read of such a path goes through `read_regular`:
//! regular files only, the size checked before a byte is read, the read itself bounded, and
//! the open never blocking.

use std::fmt;
use std::fs::File;
use std::io::Read;
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
}
