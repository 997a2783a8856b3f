//! Exports: JSON that carries everything, images included, and imports back; Markdown for
//! people to read.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rusqlite::params;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::actions::{self, ActionRecord};
use super::sessions::{self, SessionSummary};
use super::{Store, StoreError, images, messages, now_ms, parse_rfc3339};
use crate::images::content_hash;

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
    pub fn export(&self, id: &str, format: ExportFormat) -> Result<String, StoreError> {
        match format {
            ExportFormat::Json => self.export_json(id),
            ExportFormat::Markdown => self.export_markdown(id),
        }
    }

    fn export_json(&self, id: &str) -> Result<String, StoreError> {
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

    /// Imports a JSON export as a session with its original id; returns that id.
    pub fn import(&self, json: &str) -> Result<String, StoreError> {
        let export: Export =
            serde_json::from_str(json).map_err(|e| StoreError::BadExport(format!("{e}")))?;
        if export.format != EXPORT_FORMAT {
            return Err(StoreError::BadExport(format!(
                "format `{}`, expected `{EXPORT_FORMAT}`",
                export.format
            )));
        }
        let session = &export.session;
        if session.id.trim().is_empty() {
            return Err(StoreError::BadExport("the session has no id".into()));
        }
        let mut decoded = Vec::new();
        for (sha, image) in &export.images {
            let bytes = BASE64
                .decode(&image.data)
                .map_err(|e| StoreError::BadExport(format!("image {sha}: {e}")))?;
            if !images::is_sha256(sha) || content_hash(&bytes) != *sha {
                return Err(StoreError::BadExport(format!(
                    "image {sha} does not match its content hash"
                )));
            }
            decoded.push((image.media_type.as_str(), bytes));
        }
        for (index, message) in export.messages.iter().enumerate() {
            let role = message["role"].as_str();
            if !matches!(role, Some("user" | "assistant")) || !message["content"].is_array() {
                return Err(StoreError::BadExport(format!(
                    "message {index} needs a role (user or assistant) and a content list"
                )));
            }
        }
        let id = session.id.clone();
        let dir = self.dir().to_path_buf();
        self.with(|conn| {
            let tx = conn.transaction()?;
            if sessions::require(&tx, &id).is_ok() {
                return Err(StoreError::AlreadyExists(id.clone()));
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
                    session.title,
                    created,
                    updated,
                    session.provider,
                    session.model,
                    session.usage.input_tokens as i64,
                    session.usage.output_tokens as i64,
                    session.usage.cache_creation_input_tokens as i64,
                    session.usage.cache_read_input_tokens as i64,
                    session.cost_usd
                ],
            )?;
            for (media_type, bytes) in &decoded {
                images::save(&tx, &dir, &id, media_type, bytes, now)?;
            }
            for (seq, message) in export.messages.iter().enumerate() {
                let role = message["role"].as_str().unwrap_or_default();
                messages::write(&tx, &id, seq as i64, role, &message["content"], created)?;
            }
            for event in &export.events {
                tx.prepare_cached(
                    "INSERT INTO events (session_id, type, body, at) VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![
                    id,
                    event["type"].as_str().unwrap_or_default(),
                    event.to_string(),
                    updated
                ])?;
            }
            for record in &export.actions {
                actions::import(&tx, &id, record)?;
            }
            // Writing the messages touched the session; keep the exported time.
            tx.execute(
                "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
                params![id, updated],
            )?;
            tx.commit()?;
            Ok(id.clone())
        })
    }

    fn export_markdown(&self, id: &str) -> Result<String, StoreError> {
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
        for message in &loaded.messages {
            let heading = if message["role"] == "user" {
                "You"
            } else {
                "Deskhand"
            };
            let _ = writeln!(out, "## {heading}\n");
            for block in message["content"].as_array().into_iter().flatten() {
                self.markdown_block(block, &mut out);
            }
        }
        Ok(out)
    }

    fn markdown_block(&self, block: &Value, out: &mut String) {
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
                let _ = writeln!(out, "**Result**{}\n", if failed { " (error)" } else { "" });
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
