//! Opening the history: refuse anything that is not ours or not understood, before a single
//! byte of it changes.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::StoreError;
use super::migrations::{self, APPLICATION_ID, LATEST};
use deskhand_host::files;

/// The database's file name inside the data directory.
pub const DB_FILE: &str = "history.db";

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Opens (creating if needed) the history in `dir`, migrated to the latest schema. The
/// directory is made private (0700) and the database file too (0600, created so before
/// SQLite opens it; SQLite gives its WAL and shared-memory files the database's mode).
/// Returns the mode `dir` had if it had to be tightened.
pub fn open(dir: &Path) -> Result<(Connection, Option<u32>), StoreError> {
    let tightened =
        files::private_dir(dir).map_err(|source| match StoreError::io(dir, source) {
            StoreError::Io { source, .. } => StoreError::CreateDir {
                path: dir.into(),
                source,
            },
            other => other,
        })?;
    let screenshots = dir.join(super::SCREENSHOTS_DIR);
    files::private_dir(&screenshots).map_err(|e| StoreError::io(&screenshots, e))?;
    check_writable(dir)?;
    let path = dir.join(DB_FILE);
    let existing = check_header(&path)?;
    if existing {
        for file in [
            path.clone(),
            wal_file(&path, "-wal"),
            wal_file(&path, "-shm"),
        ] {
            match files::make_private(&file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(StoreError::io(&file, e));
                }
                _ => {}
            }
        }
    } else {
        files::create_private(&path, false).map_err(|e| StoreError::io(&path, e))?;
    }
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if !existing {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let mut conn = Connection::open_with_flags(&path, flags)
        .map_err(|e| StoreError::from(e).at(&path, None))?;
    if conn.is_readonly("main").unwrap_or(false) {
        return Err(StoreError::ReadOnly { path: dir.into() });
    }
    if let Err(e) = prepare(&mut conn) {
        let os_error = super::os_error(&conn);
        return Err(e.at(&path, os_error));
    }
    Ok((conn, tightened))
}

/// SQLite's companion file of the database at `path` (`-wal`, `-shm`).
fn wal_file(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// Identity and version first (reads only), then the connection settings and migrations.
fn prepare(conn: &mut Connection) -> Result<(), StoreError> {
    conn.busy_timeout(Duration::from_secs(5))?;
    let path = conn.path().unwrap_or_default().to_string();
    let application_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    if application_id != APPLICATION_ID && (application_id != 0 || tables > 0 || version != 0) {
        return Err(StoreError::Foreign {
            path: path.into(),
            detail: "an SQLite database of another program".into(),
        });
    }
    if version > LATEST {
        return Err(StoreError::TooNew {
            path: path.into(),
            found: version,
            supported: LATEST,
        });
    }
    // WAL: readers never block the one writer, and a killed process loses nothing committed.
    // NORMAL sync is durable against a crash of the program (not of the machine) and keeps an
    // append well under a millisecond.
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::NoWal {
            path: path.into(),
            mode,
        });
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    migrations::migrate(conn)
}

/// Whether the file at `path` starts like an SQLite database.
pub(crate) fn has_sqlite_header(path: &Path) -> bool {
    let mut header = Vec::with_capacity(16);
    std::fs::File::open(path)
        .and_then(|file| file.take(16).read_to_end(&mut header))
        .is_ok()
        && header == SQLITE_MAGIC
}

/// Whether `path` holds a database already (a zero-byte file counts as none); a file that is
/// not SQLite is refused untouched.
fn check_header(path: &Path) -> Result<bool, StoreError> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let mut header = Vec::with_capacity(16);
    (&mut file)
        .take(16)
        .read_to_end(&mut header)
        .map_err(|e| StoreError::io(path, e))?;
    if header.is_empty() {
        return Ok(false);
    }
    if header != SQLITE_MAGIC {
        return Err(StoreError::Foreign {
            path: path.into(),
            detail: "not an SQLite file".into(),
        });
    }
    Ok(true)
}

/// SQLite would open a read-only directory's database read-only and fail later, at the first
/// write, in the middle of a run: find out now.
fn check_writable(dir: &Path) -> Result<(), StoreError> {
    let probe = dir.join(format!(".deskhand-write-test-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(StoreError::io(&dir.join(DB_FILE), e)),
    }
}
