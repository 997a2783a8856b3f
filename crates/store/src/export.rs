//! Exports: JSON that carries everything, images included, and imports back; Markdown for
//! people to read.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rusqlite::params;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::actions::{self, ActionRecord};
use super::sessions::{self, SessionSummary};
use super::{INTERRUPTED, Store, StoreError, images, messages, now_ms, parse_rfc3339};
use deskhand_protocol::history;
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::images::content_hash;
use deskhand_protocol::message::{ContentBlock, ImageSource, Message};
use deskhand_protocol::provenance::Source;

/// The `format` field of a JSON export, checked on import.
pub const EXPORT_FORMAT: &str = "deskhand-session/1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Markdown,
}

#[derive(Serialize, Deserialize)]
struct Export {
    format: String,
    session: SessionSummary,
    messages: Vec<Value>,
    events: Vec<Value>,
    actions: Vec<ActionRecord>,
    /// Every image the messages and events refer to, by hash.
    images: BTreeMap<String, ExportedImage>,
}

#[derive(Serialize, Deserialize)]
struct ExportedImage {
    media_type: String,
    data: String,
}

/// The largest export file [`Store::import_file`] reads.
pub const MAX_IMPORT_BYTES: u64 = 128 * 1024 * 1024;

/// The form of a session id: what Deskhand makes (UUIDs) and short names, never a path or a
/// control character.
fn is_session_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Text from an export with its control characters (terminal escapes) left out.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// Base64 image data as an attachment is checked: decodable, and PNG, JPEG, GIF or WebP
/// bytes of the labelled media type within the API's limits. Returns the bytes.
fn checked_image(media_type: &str, data: &str) -> Result<Vec<u8>, String> {
    // Base64 of the largest image, checked before decoding anything bigger.
    if data.len() > deskhand_protocol::images::MAX_IMAGE_BYTES.div_ceil(3) * 4 + 4 {
        return Err(format!(
            "it is over {} bytes; the API takes images up to that",
            deskhand_protocol::images::MAX_IMAGE_BYTES
        ));
    }
    let bytes = BASE64
        .decode(data)
        .map_err(|e| format!("invalid base64: {e}"))?;
    checked_bytes(media_type, &bytes)?;
    Ok(bytes)
}

fn checked_bytes(media_type: &str, bytes: &[u8]) -> Result<(), String> {
    ContentBlock::image(bytes, "the image").map_err(|e| e.to_string())?;
    let found = deskhand_protocol::images::media_type_of(bytes).unwrap_or_default();
    if found != media_type {
        return Err(format!(
            "it is labelled {media_type:?} but its bytes are {found}"
        ));
    }
    Ok(())
}

/// A message of an export, typed (unknown block types are refused), with its image refs
/// resolved from the export's images and every inline image checked.
fn imported_message(
    message: &Value,
    images: &BTreeMap<String, ExportedImage>,
) -> Result<Message, String> {
    let mut message = message.clone();
    let Some(content) = message.get_mut("content") else {
        return Err("it needs a role (user or assistant) and a content list".into());
    };
    resolve_refs(content, images);
    let mut message: Message = serde_json::from_value(message).map_err(|e| e.to_string())?;
    for source in message
        .content
        .iter_mut()
        .flat_map(ContentBlock::image_sources_mut)
    {
        match source {
            ImageSource::Base64 { media_type, data } => {
                checked_image(media_type, data)?;
            }
            ImageSource::Ref(image) => {
                return Err(format!("image {} is not in the export", image.sha256));
            }
        }
    }
    Ok(message)
}

/// Puts the export's image data in place of each ref (a ref to an image the export does not
/// carry becomes a note, as a removed file does on resume).
fn resolve_refs(value: &mut Value, images: &BTreeMap<String, ExportedImage>) {
    match value {
        Value::Object(map) => {
            if let Some(source) = map.get_mut("source")
                && source["type"] == "ref"
            {
                let image = source["sha256"].as_str().and_then(|sha| images.get(sha));
                match image {
                    Some(image) => {
                        *source = serde_json::json!({
                            "type": "base64",
                            "media_type": image.media_type,
                            "data": image.data,
                        });
                    }
                    None => {
                        *value = serde_json::json!({"type": "text", "text": deskhand_protocol::images::MISSING_IMAGE});
                        return;
                    }
                }
            }
            map.values_mut().for_each(|v| resolve_refs(v, images));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| resolve_refs(v, images)),
        _ => {}
    }
}

/// The hashes of every ref inside `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("ref")
                && let Some(sha) = map.get("sha256").and_then(Value::as_str)
            {
                out.push(sha.to_string());
            }
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

impl Store {
    pub fn export(&self, id: &SessionId, format: ExportFormat) -> Result<String, StoreError> {
        match format {
            ExportFormat::Json => self.export_json(id),
            ExportFormat::Markdown => self.export_markdown(id),
        }
    }

    fn export_json(&self, id: &SessionId) -> Result<String, StoreError> {
        let loaded = self.load_session(id)?;
        let actions = self.actions(id)?;
        let mut hashes = Vec::new();
        refs(&Value::Array(loaded.messages.clone()), &mut hashes);
        refs(&Value::Array(loaded.events.clone()), &mut hashes);
        let mut images = BTreeMap::new();
        for sha in hashes {
            if images.contains_key(&sha) {
                continue;
            }
            // An image whose file was removed is left out; its refs import as missing.
            if let Ok((media_type, bytes)) = self.image(&sha) {
                let data = BASE64.encode(bytes);
                images.insert(sha, ExportedImage { media_type, data });
            }
        }
        let export = Export {
            format: EXPORT_FORMAT.into(),
            session: loaded.session,
            messages: loaded.messages,
            events: loaded.events,
            actions,
            images,
        };
        Ok(serde_json::to_string_pretty(&export)?)
    }

    /// Imports the JSON export in the file at `path` (see [`Store::import`]). The file is
    /// read only if it is a regular file of at most [`MAX_IMPORT_BYTES`], and its open never
    /// blocks (a FIFO is refused at once).
    pub fn import_file(&self, path: &Path) -> Result<SessionId, StoreError> {
        let bytes = deskhand_host::files::read_regular(path, MAX_IMPORT_BYTES)?;
        let text = String::from_utf8(bytes)
            .map_err(|_| StoreError::BadExport(format!("{} is not UTF-8 text", path.display())))?;
        self.import(&text)
    }

    /// Imports a JSON export as a session with its original id; returns that id. Everything
    /// is checked before a byte is stored: the id's form; every image (its hash, and the
    /// checks an attachment gets: PNG, JPEG, GIF or WebP bytes of the labelled type, 10 MB,
    /// 8000 px); every message (roles, known block types, object tool inputs, unique
    /// `tool_use` ids). What the API would refuse and can be mended without guessing (empty
    /// or blank text, empty messages, unanswered calls, results answering nothing) is
    /// repaired as a resumed session is, so an imported session can always be continued.
    pub fn import(&self, json: &str) -> Result<SessionId, StoreError> {
        let bad = StoreError::BadExport;
        let export: Export = serde_json::from_str(json).map_err(|e| bad(format!("{e}")))?;
        if export.format != EXPORT_FORMAT {
            return Err(bad(format!(
                "format {:?}, expected `{EXPORT_FORMAT}`",
                export.format
            )));
        }
        let session = &export.session;
        if !is_session_id(session.id.as_str()) {
            return Err(bad(format!(
                "the session id {:?} is not a Deskhand id (1 to 64 letters, digits, `-` or `_`)",
                session.id
            )));
        }
        let mut decoded = Vec::new();
        for (sha, image) in &export.images {
            if !images::is_sha256(sha) {
                return Err(bad(format!("image {sha:?} is not named by its SHA-256")));
            }
            let bytes = checked_image(&image.media_type, &image.data)
                .map_err(|e| bad(format!("image {sha}: {e}")))?;
            if content_hash(&bytes) != *sha {
                return Err(bad(format!("image {sha} does not match its content hash")));
            }
            decoded.push(bytes);
        }
        let mut history = Vec::with_capacity(export.messages.len());
        let mut tool_use_ids = std::collections::HashSet::new();
        for (index, message) in export.messages.iter().enumerate() {
            let message = imported_message(message, &export.images)
                .map_err(|e| bad(format!("message {index}: {e}")))?;
            for call in message.tool_uses() {
                if !call.input.is_object() {
                    return Err(bad(format!(
                        "message {index}: the input of tool call {:?} is not a JSON object",
                        call.id
                    )));
                }
                if !tool_use_ids.insert(call.id.to_string()) {
                    return Err(bad(format!(
                        "message {index}: tool call id {:?} is used twice",
                        call.id
                    )));
                }
            }
            history.push(message);
        }
        history::repair(&mut history, INTERRUPTED);
        let mut events = export.events.clone();
        for (index, event) in events.iter().enumerate() {
            if !event["type"].is_string() {
                return Err(bad(format!("event {index} has no type")));
            }
        }
        let id = session.id.as_str();
        let dir = self.dir().to_path_buf();
        self.with(|conn| {
            let tx = conn.transaction()?;
            if sessions::require(&tx, id).is_ok() {
                return Err(StoreError::AlreadyExists(id.into()));
            }
            let now = now_ms();
            let created = parse_rfc3339(&session.created_at).unwrap_or(now);
            let updated = parse_rfc3339(&session.updated_at).unwrap_or(now);
            tx.execute(
                "INSERT INTO sessions (id, title, created_at, updated_at, provider, model,
                     input_tokens, output_tokens, cache_creation_input_tokens,
                     cache_read_input_tokens, cost_usd)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    id,
                    printable(&session.title),
                    created,
                    updated,
                    printable(&session.provider),
                    printable(&session.model),
                    session.usage.input_tokens as i64,
                    session.usage.output_tokens as i64,
                    session.usage.cache_creation_input_tokens as i64,
                    session.usage.cache_read_input_tokens as i64,
                    session.cost_usd
                ],
            )?;
            for bytes in &decoded {
                let media_type =
                    deskhand_protocol::images::media_type_of(bytes).unwrap_or_default();
                images::save(&tx, &dir, id, media_type, bytes, now)?;
            }
            for (seq, message) in history.iter().enumerate() {
                messages::upsert(&tx, &dir, id, seq as i64, message, &[])?;
            }
            for event in &mut events {
                // Images inline in an event are checked and kept as files, as in messages.
                images::externalize_event(event, &mut |media_type, bytes| {
                    checked_bytes(media_type, bytes)
                        .map_err(|e| StoreError::BadExport(format!("an event's image: {e}")))?;
                    images::save(&tx, &dir, id, media_type, bytes, now)
                })?;
                tx.prepare_cached(
                    "INSERT INTO events (session_id, type, body, at) VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![
                    id,
                    event["type"].as_str().unwrap_or_default(),
                    super::to_stored(event)?,
                    updated
                ])?;
            }
            for record in &export.actions {
                actions::import(&tx, id, record)?;
            }
            // Writing the messages touched the session; keep the exported time.
            tx.execute(
                "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
                params![id, updated],
            )?;
            tx.commit()?;
            Ok(session.id.clone())
        })
    }

    fn export_markdown(&self, id: &SessionId) -> Result<String, StoreError> {
        let loaded = self.load_session(id)?;
        let session = &loaded.session;
        let mut out = String::new();
        let title = if session.title.is_empty() {
            "(untitled)"
        } else {
            &session.title
        };
        let _ = writeln!(out, "# {title}\n");
        let _ = writeln!(out, "- Session: `{}`", session.id);
        let _ = writeln!(out, "- Model: {} ({})", session.model, session.provider);
        let _ = writeln!(
            out,
            "- Created {}, updated {}",
            session.created_at, session.updated_at
        );
        let usage = &session.usage;
        let _ = write!(
            out,
            "- Tokens: {} input, {} output, {} cache write, {} cache read",
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens
        );
        if let Some(cost) = session.cost_usd {
            let _ = write!(out, "; ${cost:.4}");
        }
        out.push_str("\n\n");
        // Which tool each result answers, for its source.
        let mut calls: std::collections::HashMap<&str, (&str, Option<&str>)> =
            std::collections::HashMap::new();
        for message in &loaded.messages {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_use" {
                    calls.insert(
                        block["id"].as_str().unwrap_or_default(),
                        (
                            block["name"].as_str().unwrap_or_default(),
                            block["input"]["action"].as_str(),
                        ),
                    );
                }
            }
        }
        for message in &loaded.messages {
            let heading = if message["role"] == "user" {
                "You"
            } else {
                "Deskhand"
            };
            let _ = writeln!(out, "## {heading}\n");
            for block in message["content"].as_array().into_iter().flatten() {
                self.markdown_block(block, &calls, &mut out);
            }
        }
        Ok(out)
    }

    fn markdown_block(
        &self,
        block: &Value,
        calls: &std::collections::HashMap<&str, (&str, Option<&str>)>,
        out: &mut String,
    ) {
        match block["type"].as_str() {
            Some("text") => {
                let _ = writeln!(out, "{}\n", block["text"].as_str().unwrap_or_default());
            }
            Some("image") => self.markdown_image(&block["source"], out),
            Some("tool_use") => {
                let _ = writeln!(
                    out,
                    "**Action** `{}`\n\n```json\n{}\n```\n",
                    block["name"].as_str().unwrap_or_default(),
                    serde_json::to_string_pretty(&block["input"]).unwrap_or_default()
                );
            }
            Some("tool_result") => {
                let failed = block["is_error"].as_bool().unwrap_or(false);
                // Where it came from (issue 34): every tool's result is data, not the person's.
                let (name, action) = calls
                    .get(block["tool_use_id"].as_str().unwrap_or_default())
                    .copied()
                    .unwrap_or_default();
                let source = Source::of_tool(name, action);
                let _ = writeln!(
                    out,
                    "**Result**{} (source: {}, untrusted)\n",
                    if failed { " (error)" } else { "" },
                    source.name()
                );
                for item in block["content"].as_array().into_iter().flatten() {
                    match item["type"].as_str() {
                        Some("text") => {
                            let _ = writeln!(
                                out,
                                "```\n{}\n```\n",
                                item["text"].as_str().unwrap_or_default()
                            );
                        }
                        Some("image") => self.markdown_image(&item["source"], out),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn markdown_image(&self, source: &Value, out: &mut String) {
        let (Some(sha), Some(media_type)) =
            (source["sha256"].as_str(), source["media_type"].as_str())
        else {
            return;
        };
        if !images::is_sha256(sha) {
            return;
        }
        let path = images::file_path(self.dir(), sha, media_type);
        let _ = writeln!(out, "![image {}]({})\n", &sha[..12], path.display());
    }
}
