//! Task rows (`deskhand_engine::tasks`) and a task's stored events, for watchers that replay them.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use super::{Store, StoreError, now_ms, rfc3339};
use deskhand_protocol::approval::ApprovalRequest;
use deskhand_protocol::ids::TaskId;
use deskhand_protocol::task::{Origin, TaskInfo, TaskState};

const COLUMNS: &str =
    "id, session_id, state, origin, prompt, pid, waiting_for, error, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<TaskInfo> {
    let text = |i| row.get::<_, String>(i);
    let waiting_for: Option<String> = row.get(6)?;
    Ok(TaskInfo {
        id: text(0)?.into(),
        session_id: text(1)?.into(),
        state: TaskState::parse(&text(2)?).unwrap_or(TaskState::Error),
        origin: Origin::parse(&text(3)?).unwrap_or(Origin::Api),
        prompt: text(4)?,
        pid: row.get::<_, i64>(5)? as u32,
        waiting_for: waiting_for.and_then(|w| serde_json::from_str::<ApprovalRequest>(&w).ok()),
        error: row.get(7)?,
        created_at: rfc3339(row.get(8)?),
        updated_at: rfc3339(row.get(9)?),
    })
}

fn get(conn: &Connection, id: &str) -> Result<Option<TaskInfo>, StoreError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

impl Store {
    /// Records a new task (its state as given, now as its times).
    pub fn insert_task(&self, task: &TaskInfo) -> Result<(), StoreError> {
        self.with(|conn| {
            let now = now_ms();
            conn.prepare_cached(&format!(
                "INSERT INTO tasks ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, NULL, ?7, ?7)"
            ))?
            .execute(params![
                task.id.as_str(),
                task.session_id.as_str(),
                task.state.name(),
                task.origin.name(),
                task.prompt,
                i64::from(task.pid),
                now
            ])?;
            Ok(())
        })
    }

    /// Moves a task to `state`, with the action it waits for and why it failed.
    pub fn set_task_state(
        &self,
        id: &TaskId,
        state: TaskState,
        waiting_for: Option<&ApprovalRequest>,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let waiting_for = waiting_for.map(serde_json::to_string).transpose()?;
        self.with(|conn| {
            conn.prepare_cached(
                "UPDATE tasks SET state = ?2, waiting_for = ?3, error = ?4, updated_at = ?5
                 WHERE id = ?1",
            )?
            .execute(params![
                id.as_str(),
                state.name(),
                waiting_for,
                error,
                now_ms()
            ])?;
            Ok(())
        })
    }

    pub fn task(&self, id: &TaskId) -> Result<Option<TaskInfo>, StoreError> {
        self.with(|conn| get(conn, id.as_str()))
    }

    /// Tasks, newest first: every live one, and the newest `limit` finished ones.
    pub fn tasks(&self, limit: usize) -> Result<Vec<TaskInfo>, StoreError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tasks
                 WHERE state IN ('queued', 'running', 'waiting_for_approval')
                    OR id IN (SELECT id FROM tasks ORDER BY created_at DESC, rowid DESC LIMIT ?1)
                 ORDER BY created_at DESC, rowid DESC"
            ))?;
            let rows = statement.query_map([limit as i64], from_row)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// A page of a task's stored events after event `after` (0: from the start) up to event
    /// `upto` (`None`: the last), oldest first, with their ids: as many as fit in
    /// `max_bytes` of stored JSON, and at least one. Streamed text is compacted into its
    /// message once that is stored, so a replay has the message where a live watcher saw the
    /// pieces. Paged so that a replay holds one page in memory, never the whole task.
    pub fn task_events(
        &self,
        task_id: &TaskId,
        after: i64,
        upto: Option<i64>,
        max_bytes: usize,
    ) -> Result<Vec<(i64, Value)>, StoreError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT id, body FROM events WHERE task_id = ?1 AND id > ?2 AND id <= ?3 \
                 ORDER BY id",
            )?;
            let rows = statement.query_map(
                params![task_id.as_str(), after, upto.unwrap_or(i64::MAX)],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
            )?;
            let mut events = Vec::new();
            let mut bytes = 0;
            for row in rows {
                let (id, body) = row?;
                bytes += body.len();
                events.push((id, serde_json::from_str(&body)?));
                if bytes >= max_bytes {
                    break;
                }
            }
            Ok(events)
        })
    }
}
