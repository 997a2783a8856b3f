//! Screenshots and attachments as files, `screenshots/ab/<sha256>.<ext>` in the data
//! directory, each stored once however many messages use it. Stored messages and events hold
//! `{"type":"ref","sha256":..,"media_type":..,"bytes":..}` in place of a base64 source (the
//! shape the window's IPC uses); the bytes come back from the file when a session resumes.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::{Store, StoreError};
use crate::images::{ImageRef, content_hash};

/// Where image files live inside the data directory.
pub const SCREENSHOTS_DIR: &str = "screenshots";

/// Stands in for an image whose file is gone, so the history can still be sent.
pub(crate) const MISSING_IMAGE: &str = "[image no longer available: its file was removed]";

pub(crate) fn file_path(data_dir: &Path, sha256: &str, media_type: &str) -> PathBuf {
    let extension = match media_type {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "bin",
    };
    data_dir
        .join(SCREENSHOTS_DIR)
        .join(&sha256[..2])
        .join(format!("{sha256}.{extension}"))
}

/// A lowercase hex SHA-256, the only thing ever joined into a file path.
pub(crate) fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub(crate) fn ref_json(image: &ImageRef) -> Value {
    json!({
        "type": "ref",
        "sha256": image.sha256,
        "media_type": image.media_type,
        "bytes": image.bytes,
    })
}

/// Writes the file (unless it is there already) and notes that `session_id` uses it.
pub(crate) fn save(
    conn: &Connection,
    data_dir: &Path,
    session_id: &str,
    media_type: &str,
    bytes: &[u8],
    now: i64,
) -> Result<ImageRef, StoreError> {
    let sha256 = content_hash(bytes);
    // One file per hash: its media type is the one stored first, else what the bytes are.
    let known: Option<String> = conn
        .prepare_cached("SELECT media_type FROM screenshots WHERE sha256 = ?1")?
        .query_row([&sha256], |r| r.get(0))
        .optional()?;
    let media_type = known.unwrap_or_else(|| {
        crate::images::media_type_of(bytes)
            .unwrap_or(media_type)
            .to_string()
    });
    let media_type = media_type.as_str();
    let image = ImageRef {
        sha256,
        media_type: media_type.into(),
        bytes: bytes.len(),
    };
    let path = file_path(data_dir, &image.sha256, media_type);
    if !path.exists() {
        write_atomically(&path, bytes)?;
    }
    conn.prepare_cached(
        "INSERT OR IGNORE INTO screenshots (sha256, media_type, bytes, created_at)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![image.sha256, media_type, image.bytes as i64, now])?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO session_screenshots (session_id, sha256) VALUES (?1, ?2)",
    )?
    .execute(params![session_id, image.sha256])?;
    Ok(image)
}

/// A reader never sees half a file: write beside it, then rename. Directories and file are
/// private (0700, 0600).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let parent = path.parent().unwrap_or(path);
    for dir in [parent.parent().unwrap_or(parent), parent] {
        crate::files::private_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    }
    let partial = path.with_extension(format!("part{}", std::process::id()));
    if let Err(e) = crate::files::write_private(&partial, bytes, false) {
        let _ = std::fs::remove_file(&partial);
        return Err(StoreError::io(path, e));
    }
    std::fs::rename(&partial, path).map_err(|e| StoreError::io(path, e))
}

/// Keeps an image's bytes (given its media type) and says how to refer to them.
pub(crate) type SaveImage<'a> = dyn FnMut(&str, &[u8]) -> Result<ImageRef, StoreError> + 'a;

/// Replaces every base64 image source inside `value` (image blocks, images inside tool
/// results) by a ref, handing the bytes to `save`.
pub(crate) fn externalize(value: &mut Value, save: &mut SaveImage<'_>) -> Result<(), StoreError> {
    match value {
        Value::Object(map) => {
            if let Some(source) = map.get_mut("source")
                && source["type"] == "base64"
                && let (Some(media_type), Some(data)) =
                    (source["media_type"].as_str(), source["data"].as_str())
                && let Ok(bytes) = BASE64.decode(data)
            {
                let image = save(media_type, &bytes)?;
                *source = ref_json(&image);
            }
            for child in map.values_mut() {
                externalize(child, save)?;
            }
        }
        Value::Array(items) => {
            for item in items {
                externalize(item, save)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Puts the bytes back into every ref'd image block of `value`; a block whose file is gone
/// becomes a text note, so the history stays sendable.
pub(crate) fn internalize(value: &mut Value, data_dir: &Path) {
    match value {
        Value::Array(items) => {
            for item in items {
                let source = &item["source"];
                if source["type"] == "ref" {
                    let loaded = source["sha256"]
                        .as_str()
                        .zip(source["media_type"].as_str())
                        .filter(|(sha, _)| is_sha256(sha))
                        .and_then(|(sha, media_type)| {
                            let bytes = std::fs::read(file_path(data_dir, sha, media_type)).ok()?;
                            Some(json!({
                                "type": "base64",
                                "media_type": media_type,
                                "data": BASE64.encode(bytes),
                            }))
                        });
                    match loaded {
                        Some(source) => item["source"] = source,
                        None => *item = json!({"type": "text", "text": MISSING_IMAGE}),
                    }
                } else {
                    internalize(item, data_dir);
                }
            }
        }
        Value::Object(map) => {
            for child in map.values_mut() {
                internalize(child, data_dir);
            }
        }
        _ => {}
    }
}

/// The screenshot rows among `candidates` that no session uses any more: deleted here, and
/// returned so their files can go once the transaction has committed.
pub(crate) fn forget_unused(
    conn: &Connection,
    candidates: &[String],
) -> Result<Vec<(String, String)>, StoreError> {
    let mut gone = Vec::new();
    let mut unused = conn.prepare_cached(
        "DELETE FROM screenshots WHERE sha256 = ?1
         AND NOT EXISTS (SELECT 1 FROM session_screenshots WHERE sha256 = ?1)
         RETURNING media_type",
    )?;
    for sha in candidates {
        if let Some(media_type) = unused
            .query_row([sha], |r| r.get::<_, String>(0))
            .optional()?
        {
            gone.push((sha.clone(), media_type));
        }
    }
    Ok(gone)
}

pub(crate) fn remove_files(data_dir: &Path, gone: &[(String, String)]) {
    for (sha, media_type) in gone {
        let path = file_path(data_dir, sha, media_type);
        let _ = std::fs::remove_file(&path);
        if let Some(parent) = path.parent() {
            let _ = std::fs::remove_dir(parent); // only if now empty
        }
    }
}

impl Store {
    /// Keeps an image that arrived from elsewhere (a remote delegated task's screenshot) with
    /// `session_id`, so it is found by hash like the session's own, and goes with the session.
    pub fn keep_image(
        &self,
        session_id: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<ImageRef, StoreError> {
        let dir = self.dir().to_path_buf();
        self.with(|conn| save(conn, &dir, session_id, media_type, bytes, super::now_ms()))
    }

    /// An image's media type and bytes by content hash (the window's `get_image`).
    pub fn image(&self, sha256: &str) -> Result<(String, Vec<u8>), StoreError> {
        let not_found = || StoreError::NotFound(format!("image {sha256}"));
        if !is_sha256(sha256) {
            return Err(not_found());
        }
        let media_type: Option<String> = self.with(|conn| {
            Ok(conn
                .query_row(
                    "SELECT media_type FROM screenshots WHERE sha256 = ?1",
                    [sha256],
                    |r| r.get(0),
                )
                .optional()?)
        })?;
        let media_type = media_type.ok_or_else(not_found)?;
        let bytes =
            std::fs::read(file_path(self.dir(), sha256, &media_type)).map_err(|_| not_found())?;
        Ok((media_type, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_replace_sources_and_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\n fake pixels".to_vec();
        let data = BASE64.encode(&png);
        let mut content = json!([
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
            ]}
        ]);
        let original = content.clone();
        let mut saved = Vec::new();
        externalize(&mut content, &mut |media_type, bytes| {
            let image = ImageRef {
                sha256: content_hash(bytes),
                media_type: media_type.into(),
                bytes: bytes.len(),
            };
            saved.push(image.clone());
            write_atomically(&file_path(dir.path(), &image.sha256, media_type), bytes)?;
            Ok(image)
        })
        .unwrap();
        assert_eq!(saved.len(), 2);
        assert_eq!(content[1]["source"]["type"], "ref");
        assert_eq!(
            content[2]["content"][0]["source"]["sha256"],
            saved[0].sha256
        );
        assert!(!content.to_string().contains(&data));

        let mut restored = content.clone();
        internalize(&mut restored, dir.path());
        assert_eq!(restored, original);

        std::fs::remove_dir_all(dir.path().join(SCREENSHOTS_DIR)).unwrap();
        internalize(&mut content, dir.path());
        assert_eq!(content[1], json!({"type": "text", "text": MISSING_IMAGE}));
        assert_eq!(content[2]["content"][0]["type"], "text");
    }
}
