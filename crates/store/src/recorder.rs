//! Persists a run as it happens: each `AgentEvent` is committed before it is shown, so a
//! crash loses at most the event in flight, and a session a crash cut short is repaired when
//! it is resumed.

use std::collections::HashMap;

use rusqlite::{Connection, params};
use serde_json::Value;

use super::{Store, StoreError, actions, images, messages, now_ms, sessions};
use deskhand_protocol::event::AgentEvent;
use deskhand_protocol::history;
use deskhand_protocol::ids::{SessionId, TaskId, ToolUseId};
use deskhand_protocol::images::ImageRef;
use deskhand_protocol::message::{ContentBlock, Message, Role};

/// The result given to a call whose run ended before it was answered (a crash, a kill).
pub const INTERRUPTED: &str = "interrupted: Deskhand stopped before this action's result was \
saved, so it may or may not have run; check before repeating it";

/// Writes one session's events to the store. Hand every event of the run to
/// [`Recorder::record`] before showing it.
pub struct Recorder {
    store: Store,
    session_id: SessionId,
    /// Messages stored so far, and the role of the last: a user message after a user message
    /// replaces it, because the loop merged content into it.
    message_count: i64,
    last_role: Option<Role>,
    /// The session's message count in the store as this recorder last saw it: a message is
    /// written only if it is still so, so a second writer fails instead of overwriting.
    stored_count: i64,
    /// The task whose events these are (`deskhand_engine::tasks`), if any.
    task_id: Option<TaskId>,
    /// The id of the last event stored: the event's sequence number for watchers.
    last_event_id: Option<i64>,
    /// Action-log rows by `tool_use` id, for the decision and result that follow the call.
    actions: HashMap<ToolUseId, i64>,
    /// The first `text_delta` or `thinking_delta` row since the last message: once the
    /// assistant's message is stored, the pieces it was streamed in are dropped.
    first_delta: Option<i64>,
    /// The images of this turn's tool results as they were kept, with their base64 text: the
    /// `message` that carries the results takes their refs, so a screenshot is hashed once.
    turn_images: Vec<(String, ImageRef)>,
}

/// How a recorded event changes the recorder, applied once its transaction commits.
enum Change {
    None,
    Message { seq: i64, role: Role },
    Action { id: ToolUseId, row: i64 },
    Delta(i64),
    ImagesKept(Vec<(String, ImageRef)>),
}

impl Recorder {
    /// Records into a new session with this id.
    pub fn create(store: &Store, session_id: &SessionId) -> Result<Self, StoreError> {
        store.with(|conn| {
            let now = now_ms();
            conn.execute(
                "INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?2)",
                params![session_id.as_str(), now],
            )
            .map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::ConstraintViolation) => {
                    StoreError::AlreadyExists(session_id.to_string())
                }
                _ => e.into(),
            })?;
            Ok(())
        })?;
        Ok(Self::at(store, session_id, &[], 0))
    }

    /// Continues a stored session: returns its history ready to send, repaired if a run was
    /// cut off (text streamed before the cut becomes the assistant's message; unanswered
    /// `tool_use` blocks get an error result). The repair is stored, with the events that
    /// tell the window about it.
    pub fn resume(
        store: &Store,
        session_id: &SessionId,
    ) -> Result<(Self, Vec<Message>), StoreError> {
        let mut history = store.history(session_id)?;
        let stored = history.len();
        let partial = store.with(|conn| trailing_text(conn, session_id.as_str()))?;
        if !partial.is_empty() && history.last().is_some_and(|m| m.role == Role::User) {
            history.push(Message::assistant(vec![ContentBlock::text(partial)]));
        }
        let before = history.clone();
        history::repair(&mut history, INTERRUPTED);
        let first_change = (0..history.len())
            .find(|&i| before.get(i) != history.get(i) || i >= stored)
            .unwrap_or(history.len());
        let mut recorder = Self::at(store, session_id, &history[..first_change], stored as i64);
        for (index, message) in history.iter().enumerate().skip(first_change) {
            for block in &message.content {
                if let ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error: true,
                    ..
                } = block
                    && !before.get(index).is_some_and(|m| m.content.contains(block))
                {
                    recorder.record_interrupted(tool_use_id, &history, content)?;
                }
            }
            recorder.store_message(index as i64, message)?;
        }
        if history.len() < stored {
            // The repair removed or merged messages: the rows past the end go.
            let len = history.len() as i64;
            store.with(|conn| messages::truncate(conn, session_id.as_str(), len))?;
            recorder.message_count = len;
            recorder.stored_count = len;
            recorder.last_role = history.last().map(|m| m.role);
        }
        Ok((recorder, history))
    }

    fn at(store: &Store, session_id: &SessionId, history: &[Message], stored_count: i64) -> Self {
        Self {
            store: store.clone(),
            session_id: session_id.clone(),
            message_count: history.len() as i64,
            last_role: history.last().map(|m| m.role),
            stored_count,
            task_id: None,
            last_event_id: None,
            actions: HashMap::new(),
            first_delta: None,
            turn_images: Vec::new(),
        }
    }

    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// Marks every event recorded from now on as the task's.
    pub fn for_task(mut self, task_id: &TaskId) -> Self {
        self.task_id = Some(task_id.clone());
        self
    }

    /// The stored id of the last event recorded: events' ids grow with time, so a watcher
    /// that has seen this one asks for those after it.
    pub fn last_event_id(&self) -> Option<i64> {
        self.last_event_id
    }

    /// Stores one event, committed before this returns. Returns the event as stored: images
    /// as refs, the form watchers are handed.
    pub fn record(&mut self, event: &AgentEvent) -> Result<AgentEvent, StoreError> {
        let store = self.store.clone();
        let (stored, change, event_id) = store.with(|conn| {
            let tx = conn.transaction()?;
            let (stored, change) = self.write(&tx, event)?;
            let event_id = tx.last_insert_rowid();
            tx.commit()?;
            Ok((stored, change, event_id))
        })?;
        self.last_event_id = Some(event_id);
        match change {
            Change::None => {}
            Change::Message { seq, role } => {
                self.message_count = seq + 1;
                self.stored_count = self.stored_count.max(seq + 1);
                self.last_role = Some(role);
                if role == Role::Assistant {
                    self.first_delta = None;
                    self.turn_images.clear();
                }
            }
            Change::Action { id, row } => {
                self.actions.insert(id, row);
            }
            Change::Delta(row) => {
                self.first_delta.get_or_insert(row);
            }
            Change::ImagesKept(images) => self.turn_images.extend(images),
        }
        Ok(stored)
    }

    fn write(
        &self,
        tx: &Connection,
        event: &AgentEvent,
    ) -> Result<(AgentEvent, Change), StoreError> {
        let now = now_ms();
        let id = self.session_id.as_str();
        // A tool result's images are kept as it arrives, so whoever is shown the event can
        // read them back by hash at once. A message's are kept below, with the message.
        let kept;
        let mut change = Change::None;
        let event = match event {
            AgentEvent::ToolResult { .. } => {
                let images;
                (kept, images) = self.with_images_kept(tx, event.clone(), now)?;
                change = Change::ImagesKept(images);
                &kept
            }
            _ => event,
        };
        let mut stored = None;
        match event {
            AgentEvent::Started {
                provider, model, ..
            } => {
                tx.prepare_cached("UPDATE sessions SET provider = ?2, model = ?3 WHERE id = ?1")?
                    .execute(params![id, provider, model])?;
            }
            AgentEvent::Message { message } => {
                let seq = match history::merges_into(self.last_role, message.role) {
                    true => self.message_count - 1,
                    false => self.message_count,
                };
                // The rows themselves (the session's counter may be an import's).
                let found: i64 = tx
                    .prepare_cached(
                        "SELECT coalesce(max(seq) + 1, 0) FROM messages WHERE session_id = ?1",
                    )?
                    .query_row([id], |r| r.get(0))?;
                if found != self.stored_count {
                    return Err(StoreError::Conflict {
                        session: id.into(),
                        expected: self.stored_count,
                        found,
                    });
                }
                let content =
                    messages::upsert(tx, self.store.dir(), id, seq, message, &self.turn_images)?;
                stored = Some(AgentEvent::Message {
                    message: Message {
                        role: message.role,
                        content,
                    },
                });
                if message.role == Role::User {
                    tx.prepare_cached(
                        "UPDATE sessions SET title = ?2 WHERE id = ?1 AND title = ''",
                    )?
                    .execute(params![id, sessions::title_from(&message.text())])?;
                }
                if let (Role::Assistant, Some(first)) = (message.role, self.first_delta) {
                    tx.prepare_cached(
                        "DELETE FROM events WHERE session_id = ?1 AND id >= ?2 \
                         AND type IN ('text_delta', 'thinking_delta')",
                    )?
                    .execute(params![id, first])?;
                }
                change = Change::Message {
                    seq,
                    role: message.role,
                };
            }
            AgentEvent::ToolCall {
                id: call,
                name,
                input,
            } => {
                let row = actions::called(tx, id, call.as_str(), name, input, now)?;
                change = Change::Action {
                    id: call.clone(),
                    row,
                };
            }
            AgentEvent::ApprovalDecided {
                id: call,
                decision,
                by,
                ..
            } => {
                if let Some(&row) = self.actions.get(call) {
                    actions::decided(tx, row, decision, *by, now)?;
                }
            }
            AgentEvent::ToolResult {
                id: call,
                is_error,
                text,
                images,
                duration_ms,
                ..
            } => {
                if let Some(&row) = self.actions.get(call) {
                    let refs: Vec<_> = images
                        .iter()
                        .map(deskhand_protocol::images::ImageRef::of)
                        .collect();
                    actions::finished(tx, row, *is_error, text, &refs, *duration_ms, now)?;
                }
            }
            AgentEvent::Usage {
                turn,
                turn_cost_usd,
                ..
            } => {
                tx.prepare_cached(
                    "UPDATE sessions SET input_tokens = input_tokens + ?2,
                         output_tokens = output_tokens + ?3,
                         cache_creation_input_tokens = cache_creation_input_tokens + ?4,
                         cache_read_input_tokens = cache_read_input_tokens + ?5,
                         cost_usd = CASE WHEN ?6 IS NULL THEN cost_usd
                                         ELSE coalesce(cost_usd, 0) + ?6 END
                     WHERE id = ?1",
                )?
                .execute(params![
                    id,
                    turn.input_tokens as i64,
                    turn.output_tokens as i64,
                    turn.cache_creation_input_tokens as i64,
                    turn.cache_read_input_tokens as i64,
                    turn_cost_usd
                ])?;
            }
            _ => {}
        }
        let stored = stored.unwrap_or_else(|| event.clone());
        tx.prepare_cached(
            "INSERT INTO events (session_id, type, body, at, task_id) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            id,
            stored.kind(),
            super::to_stored(&serde_json::to_value(&stored)?)?,
            now,
            self.task_id.as_ref().map(TaskId::as_str)
        ])?;
        if matches!(
            event,
            AgentEvent::TextDelta { .. } | AgentEvent::ThinkingDelta { .. }
        ) {
            change = Change::Delta(tx.last_insert_rowid());
        }
        tx.prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
            .execute(params![id, now])?;
        Ok((stored, change))
    }

    /// The tool result with its images' bytes in the store and refs in their place, and
    /// each image's base64 text with its ref.
    fn with_images_kept(
        &self,
        tx: &Connection,
        mut event: AgentEvent,
        now: i64,
    ) -> Result<(AgentEvent, Vec<(String, ImageRef)>), StoreError> {
        let AgentEvent::ToolResult {
            images: sources, ..
        } = &mut event
        else {
            return Ok((event, Vec::new()));
        };
        let kept = images::keep_sources(sources.iter_mut(), &[], &mut |media_type, bytes| {
            images::save(
                tx,
                self.store.dir(),
                self.session_id.as_str(),
                media_type,
                bytes,
                now,
            )
        })?;
        Ok((event, kept))
    }

    /// Stores a repaired or recovered message at `seq`, with its `message` event.
    fn store_message(&mut self, seq: i64, message: &Message) -> Result<(), StoreError> {
        self.message_count = seq;
        self.last_role = None;
        self.record(&AgentEvent::Message {
            message: message.clone(),
        })?;
        Ok(())
    }

    /// The `tool_result` event and action-log entry of a call a crash left unanswered.
    fn record_interrupted(
        &mut self,
        tool_use_id: &ToolUseId,
        history: &[Message],
        content: &[deskhand_protocol::message::ToolResultContent],
    ) -> Result<(), StoreError> {
        let name = history
            .iter()
            .flat_map(Message::tool_uses)
            .find(|call| call.id == tool_use_id)
            .map(|call| call.name.to_string())
            .unwrap_or_default();
        let text = content
            .iter()
            .filter_map(|c| match c {
                deskhand_protocol::message::ToolResultContent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let session_id = self.session_id.clone();
        self.store.with(|conn| {
            actions::interrupted(
                conn,
                session_id.as_str(),
                tool_use_id.as_str(),
                &text,
                now_ms(),
            )
        })?;
        self.record(&AgentEvent::ToolResult {
            id: tool_use_id.clone(),
            name,
            is_error: true,
            status: Some(deskhand_protocol::event::ToolStatus::Error),
            text,
            images: Vec::new(),
            duration_ms: 0,
            changed: None,
        })?;
        Ok(())
    }
}

/// Text streamed after the session's last stored message: a response cut off by a crash.
fn trailing_text(conn: &Connection, session_id: &str) -> Result<String, StoreError> {
    let mut statement = conn.prepare_cached(
        "SELECT body FROM events WHERE session_id = ?1 AND type = 'text_delta' AND id > coalesce(
             (SELECT max(id) FROM events WHERE session_id = ?1 AND type = 'message'), 0)
         ORDER BY id",
    )?;
    let mut text = String::new();
    for body in statement.query_map([session_id], |r| r.get::<_, String>(0))? {
        let event: Value = super::from_stored(&body?)?;
        text.push_str(event["text"].as_str().unwrap_or_default());
    }
    Ok(text)
}
