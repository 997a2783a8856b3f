//! The schema, as a list of steps. `PRAGMA user_version` says how many have been applied; a
//! database is brought forward one step per transaction, so an interrupted upgrade leaves
//! the last complete version behind.

use rusqlite::Connection;

use super::StoreError;

/// Identifies a Deskhand history in the SQLite header ("DkHd"), so another program's
/// database is never mistaken for one and changed.
pub const APPLICATION_ID: i32 = 0x446b_4864;

/// Step `n` (from 0) takes the schema from version `n` to `n + 1`.
pub const MIGRATIONS: &[&str] = &[
    V1_HISTORY,
    V2_ACTIONS_AND_SEARCH,
    V3_SETTINGS,
    V4_NOTES,
    V5_TASKS,
    V6_SCHEDULES,
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Sessions, messages, screenshots and the raw event stream.
const V1_HISTORY: &str = "
PRAGMA application_id = 1147881572;
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,              -- Unix milliseconds
    updated_at INTEGER NOT NULL,
    provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    message_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_creation_input_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_input_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL                             -- NULL while no price is known
);
CREATE INDEX sessions_by_update ON sessions (updated_at);
-- The history as sent to the model: content blocks as JSON, images as
-- {\"type\":\"ref\",\"sha256\":..} in place of their base64 source.
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    text TEXT NOT NULL,                       -- what search indexes
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);
-- Image files under screenshots/, stored once per content hash.
CREATE TABLE screenshots (
    sha256 TEXT PRIMARY KEY NOT NULL,
    media_type TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE session_screenshots (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    sha256 TEXT NOT NULL REFERENCES screenshots (sha256),
    PRIMARY KEY (session_id, sha256)
) WITHOUT ROWID;
CREATE INDEX session_screenshots_by_hash ON session_screenshots (sha256);
-- Every AgentEvent as it happened, images as refs.
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    at INTEGER NOT NULL
);
CREATE INDEX events_by_session ON events (session_id, id);
";

/// The action log, and full-text search over message text.
const V2_ACTIONS_AND_SEARCH: &str = "
CREATE TABLE actions (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_use_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,
    decision TEXT,                            -- approve | approve_kind | deny; NULL: never decided
    decided_by TEXT,                          -- policy | session_rule | user
    reason TEXT,
    is_error INTEGER,
    result TEXT,
    images TEXT,                              -- JSON ImageRefs of the result
    called_at INTEGER NOT NULL,
    decided_at INTEGER,
    finished_at INTEGER,
    duration_ms INTEGER
);
CREATE INDEX actions_by_session ON actions (session_id, id);
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text, content = 'messages', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
";

/// Settings of the window and CLI, as JSON values by key.
const V3_SETTINGS: &str = "
CREATE TABLE settings (
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
";

/// The agent's notes, full-text indexed, each with the session it was written in.
const V4_NOTES: &str = "
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    session_id TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX notes_by_update ON notes (updated_at);
CREATE INDEX notes_by_session ON notes (session_id);
CREATE VIRTUAL TABLE notes_fts USING fts5 (
    text, content = 'notes', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER notes_fts_update AFTER UPDATE OF text ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO notes_fts (rowid, text) VALUES (new.id, new.text);
END;
";

/// Runs as tasks (`deskhand_engine::tasks`): one row per task, and each event marked with the task
/// that made it, so a watcher can replay a task's events from the store. Event ids become
/// AUTOINCREMENT: they are the sequence numbers watchers resume from (`Last-Event-ID`), and
/// a plain rowid would hand out again the ids of streamed text pieces dropped once their
/// message is stored.
const V5_TASKS: &str = "
CREATE TABLE tasks (
    id TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,                 -- no foreign key: a new session is made later
    state TEXT NOT NULL,                      -- queued | running | waiting_for_approval | done | ...
    origin TEXT NOT NULL,                     -- cli | api | window
    prompt TEXT NOT NULL,
    pid INTEGER NOT NULL,                     -- the process that runs it
    waiting_for TEXT,                         -- JSON ApprovalRequest while waiting
    error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX tasks_by_session ON tasks (session_id, created_at);
CREATE TABLE events_v4 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    at INTEGER NOT NULL,
    task_id TEXT
);
INSERT INTO events_v4 (id, session_id, type, body, at) SELECT id, session_id, type, body, at FROM events;
DROP TABLE events;
ALTER TABLE events_v4 RENAME TO events;
CREATE INDEX events_by_session ON events (session_id, id);
CREATE INDEX events_by_task ON events (task_id, id);
";

/// Schedules (`deskhand_engine::tasks::schedules`) and their runs. `last_due` is the last due
/// time fired or skipped, written in the same transaction as the runs it started, so a
/// restart or a clock that jumps never fires a due time twice.
const V6_SCHEDULES: &str = "
CREATE TABLE schedules (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL UNIQUE,
    spec TEXT NOT NULL,                       -- JSON ScheduleSpec
    paused INTEGER NOT NULL DEFAULT 0,
    paused_reason TEXT,
    last_due INTEGER,                         -- Unix milliseconds
    next_due INTEGER,
    failures INTEGER NOT NULL DEFAULT 0,      -- failed runs in a row
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE schedule_runs (
    task_id TEXT PRIMARY KEY NOT NULL,
    schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    due_at INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at INTEGER,
    outcome TEXT,                             -- verified | unverified | failed | ...; NULL: running
    screenshot TEXT                           -- the sha256 of the run's last screenshot
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id, started_at);
";

/// Applies the steps a database at `user_version` has not had yet.
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    migrate_to(conn, LATEST)
}

/// Brings a database to exactly `target` (at most [`LATEST`]). Public so tests can build a
/// history as an earlier Deskhand left it.
pub fn migrate_to(conn: &mut Connection, target: i64) -> Result<(), StoreError> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    for (step, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(current.max(0) as usize)
        .take(target.saturating_sub(current).max(0) as usize)
    {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", step as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_id_is_the_one_the_schema_sets() {
        assert_eq!(APPLICATION_ID, 1_147_881_572);
        assert!(V1_HISTORY.contains(&format!("application_id = {APPLICATION_ID};")));
    }
}
