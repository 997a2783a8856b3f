//! Sessions: listing, renaming, deleting and pruning, with the screenshots only they used.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use super::{Store, StoreError, images, messages, now_ms, rfc3339};
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::message::Usage;
pub use deskhand_protocol::session::{LoadedSession, SessionHit, SessionSummary};

pub(crate) const SUMMARY_COLUMNS: &str = "s.id, s.title, s.created_at, s.updated_at, \
     s.provider, s.model, s.message_count, s.input_tokens, s.output_tokens, \
     s.cache_creation_input_tokens, s.cache_read_input_tokens, s.cost_usd";

pub(crate) fn summary_from_row(row: &Row<'_>) -> rusqlite::Result<SessionSummary> {
    Ok(SessionSummary {
        id: row.get::<_, String>(0)?.into(),
        title: row.get(1)?,
        created_at: rfc3339(row.get(2)?),
        updated_at: rfc3339(row.get(3)?),
        provider: row.get(4)?,
        model: row.get(5)?,
        message_count: row.get::<_, i64>(6)? as u64,
        usage: Usage {
            input_tokens: row.get::<_, i64>(7)? as u64,
            output_tokens: row.get::<_, i64>(8)? as u64,
            cache_creation_input_tokens: row.get::<_, i64>(9)? as u64,
            cache_read_input_tokens: row.get::<_, i64>(10)? as u64,
        },
        cost_usd: row.get(11)?,
    })
}

pub(crate) fn summary(conn: &Connection, id: &str) -> Result<SessionSummary, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {SUMMARY_COLUMNS} FROM sessions s WHERE s.id = ?1"
    ))?
    .query_row([id], summary_from_row)
    .optional()?
    .ok_or_else(|| StoreError::NotFound(id.into()))
}

/// Fails with `NotFound` unless the session exists.
pub(crate) fn require(conn: &Connection, id: &str) -> Result<(), StoreError> {
    let found = conn
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
        .exists([id])?;
    if found {
        Ok(())
    } else {
        Err(StoreError::NotFound(id.into()))
    }
}

pub(crate) fn events(conn: &Connection, id: &str) -> Result<Vec<Value>, StoreError> {
    let mut statement =
        conn.prepare_cached("SELECT body FROM events WHERE session_id = ?1 ORDER BY id")?;
    let rows = statement.query_map([id], |r| r.get::<_, String>(0))?;
    let mut events = Vec::new();
    for body in rows {
        events.push(super::from_stored(&body?)?);
    }
    Ok(events)
}

/// A title from the first words of a prompt.
pub fn title_from(text: &str) -> String {
    const MAX: usize = 80;
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= MAX {
        return line.to_string();
    }
    let mut title: String = line.chars().take(MAX - 1).collect();
    title.push('…');
    title
}

/// Deletes sessions with everything of theirs, and the screenshots nothing else uses; the
/// files go after the commit, so a failure never leaves a row pointing at a missing file.
fn delete_sessions(store: &Store, ids: &[SessionId]) -> Result<(), StoreError> {
    let gone = store.with(|conn| {
        let tx = conn.transaction()?;
        let mut candidates = Vec::new();
        for id in ids {
            let mut used =
                tx.prepare_cached("SELECT sha256 FROM session_screenshots WHERE session_id = ?1")?;
            for sha in used.query_map([id.as_str()], |r| r.get::<_, String>(0))? {
                candidates.push(sha?);
            }
            drop(used);
            tx.prepare_cached("DELETE FROM sessions WHERE id = ?1")?
                .execute([id.as_str()])?;
            for key in [
                super::settings::check_key(id.as_str()),
                super::settings::desktop_key(id.as_str()),
            ] {
                tx.prepare_cached("DELETE FROM settings WHERE key = ?1")?
                    .execute([key])?;
            }
        }
        let gone = images::forget_unused(&tx, &candidates)?;
        tx.commit()?;
        Ok(gone)
    })?;
    images::remove_files(store.dir(), &gone);
    Ok(())
}

impl Store {
    /// A session's messages with images as refs, as the window shows them.
    pub fn messages(&self, session_id: &SessionId) -> Result<Vec<Value>, StoreError> {
        self.with(|conn| {
            require(conn, session_id.as_str())?;
            messages::load(conn, session_id.as_str())
        })
    }

    /// Every session, most recently updated first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, StoreError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM sessions s ORDER BY s.updated_at DESC, s.id"
            ))?;
            let rows = statement.query_map([], summary_from_row)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    pub fn session(&self, id: &SessionId) -> Result<SessionSummary, StoreError> {
        self.with(|conn| summary(conn, id.as_str()))
    }

    /// The full id of the one session whose id is or starts with `id` (ids are long; a
    /// person types the first few characters).
    pub fn resolve_id(&self, id: &str) -> Result<SessionId, StoreError> {
        if id.is_empty() {
            return Err(StoreError::EmptyId);
        }
        self.with(|conn| {
            if require(conn, id).is_ok() {
                return Ok(id.into());
            }
            let escaped = id
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            let mut statement = conn.prepare_cached(
                "SELECT id FROM sessions WHERE id LIKE ?1 || '%' ESCAPE '\\' ORDER BY id LIMIT 6",
            )?;
            let matches: Vec<String> = statement
                .query_map([escaped], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            match matches.as_slice() {
                [one] if !id.is_empty() => Ok(one.clone().into()),
                [] | [_] => Err(StoreError::NotFound(id.into())),
                several => Err(StoreError::Ambiguous {
                    prefix: id.into(),
                    matches: several.join(", "),
                }),
            }
        })
    }

    /// A session with its messages and events, images as refs (the window's
    /// `load_session`).
    pub fn load_session(&self, id: &SessionId) -> Result<LoadedSession, StoreError> {
        let id = id.as_str();
        self.with(|conn| {
            Ok(LoadedSession {
                session: summary(conn, id)?,
                messages: messages::load(conn, id)?,
                events: events(conn, id)?,
            })
        })
    }

    /// A session's stored events in order, over all its runs.
    pub fn events(&self, id: &SessionId) -> Result<Vec<Value>, StoreError> {
        self.with(|conn| {
            require(conn, id.as_str())?;
            events(conn, id.as_str())
        })
    }

    pub fn rename(&self, id: &SessionId, title: &str) -> Result<(), StoreError> {
        self.with(|conn| {
            let changed = conn.execute(
                "UPDATE sessions SET title = ?2, updated_at = ?3 WHERE id = ?1",
                params![id.as_str(), title.trim(), now_ms()],
            )?;
            if changed == 0 {
                return Err(StoreError::NotFound(id.to_string()));
            }
            Ok(())
        })
    }

    /// Deletes a session, and its screenshots unless another session uses them too.
    pub fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        self.with(|conn| require(conn, id.as_str()))?;
        delete_sessions(self, std::slice::from_ref(id))
    }

    /// Deletes every session not updated for `older_than`; returns their ids.
    pub fn prune(&self, older_than: Duration) -> Result<Vec<SessionId>, StoreError> {
        let cutoff = now_ms() - older_than.as_millis() as i64;
        let ids: Vec<SessionId> = self.with(|conn| {
            let mut statement =
                conn.prepare_cached("SELECT id FROM sessions WHERE updated_at < ?1")?;
            let ids =
                statement.query_map([cutoff], |r| r.get::<_, String>(0).map(SessionId::from))?;
            Ok(ids.collect::<Result<_, _>>()?)
        })?;
        delete_sessions(self, &ids)?;
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_the_first_line_shortened() {
        assert_eq!(
            title_from("\n  open the mail  \nthen more"),
            "open the mail"
        );
        let long = "x".repeat(200);
        let title = title_from(&long);
        assert_eq!(title.chars().count(), 80);
        assert!(title.ends_with('…'));
    }
}
