//! Local history: one SQLite file in the data directory (WAL, versioned migrations), image
//! files beside it stored once per content hash, every `AgentEvent` persisted as it happens,
//! full-text search, export and import. API keys never come here (see `secrets`).
//!
//! ```no_run
//! # fn main() -> Result<(), deskhand_store::StoreError> {
//! let store = deskhand_store::Store::open(deskhand_host::paths::data_dir())?;
//! for session in store.sessions()? {
//!     println!("{} {}", session.id, session.title);
//! }
//! # Ok(()) }
//! ```

mod actions;
mod error;
mod export;
mod images;
mod messages;
pub mod migrations;
pub mod notes;
mod open;
mod plans;
mod recorder;
mod schedules;
mod search;
mod sessions;
mod settings;
mod tasks;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

pub use actions::ActionRecord;
pub use error::StoreError;
pub use export::{EXPORT_FORMAT, ExportFormat};
pub use images::SCREENSHOTS_DIR;
pub use open::DB_FILE;
pub use recorder::{INTERRUPTED, Recorder};
pub use schedules::ScheduleRow;
pub use sessions::title_from;
pub use sessions::{LoadedSession, SessionHit, SessionSummary};

/// The history in one data directory. Cheap to clone; every clone shares one connection, so
/// a `Store` can be handed to the window's commands and to a running `Recorder` at once.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Mutex<Connection>,
    dir: PathBuf,
    db_path: PathBuf,
    /// The mode the data directory had when this open made it private.
    tightened_from: Option<u32>,
}

impl Store {
    /// Opens the history in `dir` (created if missing), migrating it to this version's
    /// schema. Refuses, untouched, a file that is not a Deskhand history, is damaged or was
    /// written by a newer version, and a directory it cannot write.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        let dir = dir.as_ref();
        let (conn, tightened_from) = open::open(dir)?;
        Ok(Self {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                dir: dir.into(),
                db_path: dir.join(DB_FILE),
                tightened_from,
            }),
        })
    }

    /// A line to show the person when this open found the data directory readable by others
    /// and made it private; `None` otherwise (so it is said once).
    pub fn privacy_notice(&self) -> Option<String> {
        self.inner.tightened_from.map(|mode| {
            format!(
                "the data directory {} was open to other users (mode {mode:o}); it is now \
                 private (700), readable by you only",
                self.inner.dir.display()
            )
        })
    }

    /// The history in `dir`, else `$DESKHAND_DATA_DIR`, else the OS data directory: what the
    /// CLI (`--data-dir`) and the window open.
    pub fn open_default(dir: Option<PathBuf>) -> Result<Self, StoreError> {
        Self::open(dir.unwrap_or_else(deskhand_host::paths::data_dir))
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        &self.inner.db_path
    }

    /// Runs `f` on the connection, naming SQLite's failures for this file.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self
            .inner
            .conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        f(&mut conn).map_err(|e| e.at(&self.inner.db_path, os_error(&conn)))
    }
}

/// The system error behind the connection's last failed call, if it was one.
fn os_error(conn: &Connection) -> Option<std::io::Error> {
    // SAFETY: `handle` is the live connection `conn` owns; sqlite3_system_errno only reads
    // a field of it, and the connection is not used concurrently (it is behind a Mutex).
    let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
    (errno != 0).then(|| std::io::Error::from_raw_os_error(errno))
}

/// JSON as a row holds it, refused past the depth the store reads back
/// ([`deskhand_protocol::json_depth::MAX_STORED_DEPTH`]): what is written can always be read.
fn to_stored(value: &serde_json::Value) -> Result<String, StoreError> {
    let depth = deskhand_protocol::json_depth::value_depth(value);
    if depth > deskhand_protocol::json_depth::MAX_STORED_DEPTH {
        return Err(StoreError::TooDeep { depth });
    }
    Ok(value.to_string())
}

/// A row's JSON, read with the limit it was written with.
fn from_stored<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    let depth = deskhand_protocol::json_depth::text_depth(text);
    if depth > deskhand_protocol::json_depth::MAX_STORED_DEPTH {
        return Err(StoreError::TooDeep { depth });
    }
    Ok(serde_json::from_str(text)?)
}

/// Now, in Unix milliseconds: how times are stored.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Unix milliseconds as RFC 3339 (UTC), as the window and exports show times.
fn rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// RFC 3339 back to Unix milliseconds.
fn parse_rfc3339(text: &str) -> Option<i64> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_through_rfc3339() {
        let ms = 1_763_900_000_123;
        let text = rfc3339(ms);
        assert_eq!(text, "2025-11-23T12:13:20.123Z");
        assert_eq!(parse_rfc3339(&text), Some(ms));
    }
}
