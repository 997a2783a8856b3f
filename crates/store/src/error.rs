//! What can go wrong with the history, each case worded for the person who has to fix it.

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error(
        "the data directory {path} is read-only, and Deskhand needs to write its history there; \
         make it writable or choose another with --data-dir or DESKHAND_DATA_DIR"
    )]
    ReadOnly { path: PathBuf },
    #[error(
        "{path} is not a Deskhand history database ({detail}); it was left untouched. Move it \
         away or choose another data directory with --data-dir or DESKHAND_DATA_DIR"
    )]
    Foreign { path: PathBuf, detail: String },
    #[error(
        "the history database {path} is damaged ({detail}); it was left untouched. Restore it \
         from a backup, or move it away to start a new history"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "the history database {path} was written by a newer Deskhand (history version {found}; \
         this one knows up to {supported}); it was left untouched. Update Deskhand to open it"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error(
        "the disk holding {path} is full; free some space and try again (what was saved \
         before is intact)"
    )]
    DiskFull { path: PathBuf },
    #[error(
        "the file system of {path} does not support SQLite's write-ahead log (journal mode \
         stayed `{mode}`); choose a local data directory with --data-dir"
    )]
    NoWal { path: PathBuf, mode: String },
    #[error("no session `{0}`")]
    NotFound(String),
    #[error("the session id is empty; give a session's id or its first characters")]
    EmptyId,
    #[error("`{prefix}` matches several sessions ({matches}); give more of the id")]
    Ambiguous { prefix: String, matches: String },
    #[error("a session with id `{0}` already exists; delete it first to import this file again")]
    AlreadyExists(String),
    #[error("no note {0}")]
    NoNote(i64),
    /// A note that cannot be stored: empty, too long, or holding a secret.
    #[error(transparent)]
    BadNote(crate::notes::NoteError),
    /// Another writer stored messages in this session since this one last read it: writing
    /// would overwrite or interleave with its rows, so nothing is written.
    #[error(
        "session `{session}` was changed by another writer (it has {found} messages where this \
         run expected {expected}); nothing was overwritten. Only one run may write a session at \
         a time"
    )]
    Conflict {
        session: String,
        expected: i64,
        found: i64,
    },
    #[error("a schedule named `{0}` exists already")]
    ScheduleNameTaken(String),
    #[error("not a Deskhand session export: {0}")]
    BadExport(String),
    /// A file to import could not be read (not a regular file, too large, missing...).
    #[error(transparent)]
    Read(#[from] deskhand_host::files::ReadError),
    #[error(
        "JSON nested {depth} levels deep cannot be kept in the history (the limit is {})",
        deskhand_protocol::json_depth::MAX_STORED_DEPTH
    )]
    TooDeep { depth: usize },
    #[error("screenshot file {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("history database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored JSON cannot be read: {0}")]
    Json(#[from] serde_json::Error),
}

impl StoreError {
    /// Names SQLite's generic failures after what they mean for the file at `path`;
    /// `os_error` is the system error behind the last failure on its connection, which tells
    /// a full disk from other I/O errors (SQLite reports ENOSPC on its shared-memory file as
    /// a plain I/O error).
    pub(crate) fn at(self, path: &Path, os_error: Option<io::Error>) -> Self {
        let Self::Sqlite(error) = self else {
            return self;
        };
        let detail = error.to_string();
        let kind = error.sqlite_error_code();
        if matches!(
            kind,
            Some(ErrorCode::SystemIoFailure | ErrorCode::CannotOpen)
        ) && let Some(os_error) = os_error
            && os_error.raw_os_error().is_some_and(|code| code != 0)
        {
            match Self::io(path, os_error) {
                Self::Io { .. } => {}
                named => return named,
            }
        }
        match kind {
            Some(ErrorCode::DatabaseCorrupt) => Self::Corrupt {
                path: path.into(),
                detail,
            },
            // The header says SQLite, yet SQLite cannot read it: damage, not a stranger.
            Some(ErrorCode::NotADatabase) if super::open::has_sqlite_header(path) => {
                Self::Corrupt {
                    path: path.into(),
                    detail,
                }
            }
            Some(ErrorCode::NotADatabase) => Self::Foreign {
                path: path.into(),
                detail,
            },
            Some(ErrorCode::DiskFull) => Self::DiskFull { path: path.into() },
            Some(ErrorCode::ReadOnly) => Self::ReadOnly {
                path: path.parent().unwrap_or(path).into(),
            },
            _ => Self::Sqlite(error),
        }
    }

    /// A file operation on a screenshot, with a full disk named as such.
    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        match source.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
                Self::DiskFull { path: path.into() }
            }
            io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied => Self::ReadOnly {
                path: path.parent().unwrap_or(path).into(),
            },
            _ => Self::Io {
                path: path.into(),
                source,
            },
        }
    }
}
