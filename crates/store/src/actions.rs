//! The action log: each tool call with its input, the approval decision and who made it,
//! the result and its timings. Written from the events as they happen.

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Store, StoreError, rfc3339};
use deskhand_protocol::approval::{DecidedBy, Decision};
use deskhand_protocol::ids::{SessionId, ToolUseId};
use deskhand_protocol::images::ImageRef;

/// One tool call as the log keeps it. Times are RFC 3339; `decision` is `approve`,
/// `approve_kind` or `deny`, absent when the call never reached the gate (an invalid input,
/// the turn limit, a stop).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub tool_use_id: ToolUseId,
    pub tool: String,
    pub input: Value,
    pub decision: Option<String>,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    pub is_error: Option<bool>,
    pub result: Option<String>,
    pub images: Vec<ImageRef>,
    pub called_at: String,
    pub decided_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<u64>,
}

fn name_of<T: Serialize>(value: &T, field: Option<&str>) -> Option<String> {
    let value = serde_json::to_value(value).ok()?;
    let value = match field {
        Some(field) => value.get(field)?.clone(),
        None => value,
    };
    value.as_str().map(str::to_string)
}

pub(crate) fn called(
    conn: &Connection,
    session_id: &str,
    tool_use_id: &str,
    tool: &str,
    input: &Value,
    now: i64,
) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO actions (session_id, tool_use_id, tool, input, called_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        session_id,
        tool_use_id,
        tool,
        super::to_stored(input)?,
        now
    ])?;
    Ok(conn.last_insert_rowid())
}

pub(crate) fn decided(
    conn: &Connection,
    row: i64,
    decision: &Decision,
    by: DecidedBy,
    now: i64,
) -> Result<(), StoreError> {
    let reason = match decision {
        Decision::Deny { reason } => reason.clone(),
        _ => None,
    };
    conn.prepare_cached(
        "UPDATE actions SET decision = ?2, decided_by = ?3, reason = ?4, decided_at = ?5
         WHERE id = ?1",
    )?
    .execute(params![
        row,
        name_of(decision, Some("decision")),
        name_of(&by, None),
        reason,
        now
    ])?;
    Ok(())
}

pub(crate) fn finished(
    conn: &Connection,
    row: i64,
    is_error: bool,
    text: &str,
    images: &[ImageRef],
    duration_ms: u64,
    now: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE actions SET is_error = ?2, result = ?3, images = ?4, duration_ms = ?5,
         finished_at = ?6 WHERE id = ?1",
    )?
    .execute(params![
        row,
        is_error,
        text,
        serde_json::to_string(images)?,
        duration_ms as i64,
        now
    ])?;
    Ok(())
}

/// Closes the log entry of a call a crash left open.
pub(crate) fn interrupted(
    conn: &Connection,
    session_id: &str,
    tool_use_id: &str,
    reason: &str,
    now: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE actions SET is_error = 1, result = ?3, images = '[]', finished_at = ?4
         WHERE session_id = ?1 AND tool_use_id = ?2 AND finished_at IS NULL",
    )?
    .execute(params![session_id, tool_use_id, reason, now])?;
    Ok(())
}

pub(crate) fn load(conn: &Connection, session_id: &str) -> Result<Vec<ActionRecord>, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT tool_use_id, tool, input, decision, decided_by, reason, is_error, result,
                images, called_at, decided_at, finished_at, duration_ms
         FROM actions WHERE session_id = ?1 ORDER BY id",
    )?;
    let rows = statement.query_map([session_id], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, Option<String>>(3)?,
            row.get::<_, Option<String>>(4)?,
            row.get::<_, Option<String>>(5)?,
            row.get::<_, Option<bool>>(6)?,
            row.get::<_, Option<String>>(7)?,
            row.get::<_, Option<String>>(8)?,
            row.get::<_, i64>(9)?,
            row.get::<_, Option<i64>>(10)?,
            row.get::<_, Option<i64>>(11)?,
            row.get::<_, Option<i64>>(12)?,
        ))
    })?;
    let mut records = Vec::new();
    for row in rows {
        let (
            id,
            tool,
            input,
            decision,
            decided_by,
            reason,
            is_error,
            result,
            images,
            called,
            decided,
            finished,
            duration,
        ) = row?;
        records.push(ActionRecord {
            tool_use_id: id.into(),
            tool,
            input: super::from_stored(&input)?,
            decision,
            decided_by,
            reason,
            is_error,
            result,
            images: images
                .map(|i| super::from_stored(&i))
                .transpose()?
                .unwrap_or_default(),
            called_at: rfc3339(called),
            decided_at: decided.map(rfc3339),
            finished_at: finished.map(rfc3339),
            duration_ms: duration.map(|d| d as u64),
        });
    }
    Ok(records)
}

/// Writes a record as an export carried it.
pub(crate) fn import(
    conn: &Connection,
    session_id: &str,
    record: &ActionRecord,
) -> Result<(), StoreError> {
    let time = |t: &Option<String>| t.as_deref().and_then(super::parse_rfc3339);
    conn.prepare_cached(
        "INSERT INTO actions (session_id, tool_use_id, tool, input, decision, decided_by, reason,
             is_error, result, images, called_at, decided_at, finished_at, duration_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        session_id,
        record.tool_use_id.as_str(),
        record.tool,
        super::to_stored(&record.input)?,
        record.decision,
        record.decided_by,
        record.reason,
        record.is_error,
        record.result,
        serde_json::to_string(&record.images)?,
        super::parse_rfc3339(&record.called_at).unwrap_or_default(),
        time(&record.decided_at),
        time(&record.finished_at),
        record.duration_ms.map(|d| d as i64),
    ])?;
    Ok(())
}

impl Store {
    /// A session's action log, oldest first.
    pub fn actions(&self, session_id: &SessionId) -> Result<Vec<ActionRecord>, StoreError> {
        self.with(|conn| {
            super::sessions::require(conn, session_id.as_str())?;
            load(conn, session_id.as_str())
        })
    }
}
