//! The history as sent to the model, one row per message, images as refs.

use rusqlite::{Connection, params};
use serde_json::{Value, json};

use super::{Store, StoreError, images, now_ms};
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::message::{ContentBlock, Message, Role};

pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// Writes message `seq` of a session (replacing it if present, as when user content is
/// merged into a trailing user message) and returns its stored content, images as refs.
pub(crate) fn upsert(
    conn: &Connection,
    data_dir: &std::path::Path,
    session_id: &str,
    seq: i64,
    message: &Message,
    known: &images::KnownImages,
) -> Result<Vec<ContentBlock>, StoreError> {
    let now = now_ms();
    let mut content = message.content.clone();
    images::externalize(&mut content, known, &mut |media_type, bytes| {
        images::save(conn, data_dir, session_id, media_type, bytes, now)
    })?;
    write(
        conn,
        session_id,
        seq,
        role_name(message.role),
        &serde_json::to_value(&content)?,
        now,
    )?;
    Ok(content)
}

/// Writes a message whose images are refs already (an import, a repair).
pub(crate) fn write(
    conn: &Connection,
    session_id: &str,
    seq: i64,
    role: &str,
    content: &Value,
    now: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO messages (session_id, seq, role, content, text, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (session_id, seq) DO UPDATE
         SET role = excluded.role, content = excluded.content, text = excluded.text",
    )?
    .execute(params![
        session_id,
        seq,
        role,
        super::to_stored(content)?,
        indexed_text(content),
        now
    ])?;
    conn.prepare_cached(
        "UPDATE sessions SET message_count = max(message_count, ?2), updated_at = ?3
         WHERE id = ?1",
    )?
    .execute(params![session_id, seq + 1, now])?;
    Ok(())
}

/// Drops a session's messages from `len` on (a repair that merged or removed some).
pub(crate) fn truncate(conn: &Connection, session_id: &str, len: i64) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM messages WHERE session_id = ?1 AND seq >= ?2")?
        .execute(params![session_id, len])?;
    conn.prepare_cached("UPDATE sessions SET message_count = ?2 WHERE id = ?1")?
        .execute(params![session_id, len])?;
    Ok(())
}

/// A session's messages as stored: `{"role", "content"}` with images as refs.
pub(crate) fn load(conn: &Connection, session_id: &str) -> Result<Vec<Value>, StoreError> {
    let mut statement = conn
        .prepare_cached("SELECT role, content FROM messages WHERE session_id = ?1 ORDER BY seq")?;
    let rows = statement.query_map([session_id], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
    })?;
    let mut messages = Vec::new();
    for row in rows {
        let (role, content) = row?;
        let content: Value = super::from_stored(&content)?;
        messages.push(json!({"role": role, "content": content}));
    }
    Ok(messages)
}

impl Store {
    /// A session's history ready to send again: images read back from their files. See
    /// [`super::Recorder::resume`] to also repair a history a crash cut short.
    pub fn history(&self, session_id: &SessionId) -> Result<Vec<Message>, StoreError> {
        let stored = self.messages(session_id)?;
        stored
            .into_iter()
            .map(|message| {
                let mut message: Message = serde_json::from_value(message)?;
                images::internalize(&mut message.content, self.dir());
                Ok(message)
            })
            .collect()
    }
}
/// The words of a message worth finding it by: its text, the string values of tool inputs
/// (commands, typed text, file paths) and tool results' text.
pub(crate) fn indexed_text(content: &Value) -> String {
    let mut parts = Vec::new();
    for block in content.as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => parts.extend(block["text"].as_str()),
            Some("tool_use") => strings(&block["input"], &mut parts),
            Some("tool_result") => {
                for item in block["content"].as_array().into_iter().flatten() {
                    parts.extend(item["text"].as_str());
                }
            }
            _ => {}
        }
    }
    parts.join("\n")
}

fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}
