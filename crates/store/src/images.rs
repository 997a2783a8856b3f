//! Screenshots and attachments as files, `screenshots/ab/<sha256>.<ext>` in the data
//! directory, each stored once however many messages use it. Stored messages and events hold
//! an `ImageSource::Ref` in place of a base64 source (the shape the window's IPC uses too);
//! the bytes come back from the file when a session resumes.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{Store, StoreError};
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::images::{ImageRef, content_hash};
use deskhand_protocol::message::{ContentBlock, ImageSource, Message};

/// Where image files live inside the data directory.
pub const SCREENSHOTS_DIR: &str = "screenshots";

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
        deskhand_protocol::images::media_type_of(bytes)
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
        deskhand_host::files::private_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    }
    let partial = path.with_extension(format!("part{}", std::process::id()));
    if let Err(e) = deskhand_host::files::write_private(&partial, bytes, false) {
        let _ = std::fs::remove_file(&partial);
        return Err(StoreError::io(path, e));
    }
    std::fs::rename(&partial, path).map_err(|e| StoreError::io(path, e))
}

/// Keeps an image's bytes (given its media type) and says how to refer to them.
pub(crate) type SaveImage<'a> = dyn FnMut(&str, &[u8]) -> Result<ImageRef, StoreError> + 'a;

/// Images kept already, each with its base64 text: a source with the same text takes its
/// ref without being decoded and hashed again. The `message` that answers a call carries the
/// images its `tool_result` event carried, and these are how it finds them.
pub(crate) type KnownImages = [(String, ImageRef)];

/// Replaces every base64 image of `content` (image blocks, images inside tool results) by a
/// ref: a known image's, or one `save` gives for its bytes.
pub(crate) fn externalize(
    content: &mut [ContentBlock],
    known: &KnownImages,
    save: &mut SaveImage<'_>,
) -> Result<(), StoreError> {
    keep_sources(
        content.iter_mut().flat_map(ContentBlock::image_sources_mut),
        known,
        save,
    )
    .map(drop)
}

/// Replaces each base64 source by a ref: a known image's, or one `save` gives for its bytes.
/// A source that is not valid base64 stays as it is. Returns the images `save` kept, each
/// with the base64 text it replaced, to be known next time.
pub(crate) fn keep_sources<'a>(
    sources: impl IntoIterator<Item = &'a mut ImageSource>,
    known: &KnownImages,
    save: &mut SaveImage<'_>,
) -> Result<Vec<(String, ImageRef)>, StoreError> {
    let mut kept = Vec::new();
    for source in sources {
        let ImageSource::Base64 { media_type, data } = source else {
            continue;
        };
        if let Some((_, image)) = known.iter().find(|(text, _)| text == data) {
            *source = ImageSource::Ref(image.clone());
        } else if let Ok(bytes) = BASE64.decode(&*data) {
            let image = save(media_type, &bytes)?;
            kept.push((std::mem::take(data), image.clone()));
            *source = ImageSource::Ref(image);
        }
    }
    Ok(kept)
}

/// Externalizes the images of an event as stored: a `message` event's, and those of a
/// delegated task's events inside it.
pub(crate) fn externalize_event(
    event: &mut Value,
    save: &mut SaveImage<'_>,
) -> Result<(), StoreError> {
    match event["type"].as_str() {
        Some("message") => {
            let Ok(mut message) = serde_json::from_value::<Message>(event["message"].take()) else {
                return Err(StoreError::BadExport(
                    "a message event without a valid message".into(),
                ));
            };
            externalize(&mut message.content, &[], save)?;
            event["message"] = serde_json::to_value(message)?;
        }
        Some("child_event") => externalize_event(&mut event["event"], save)?,
        _ => {}
    }
    Ok(())
}

/// Puts the bytes back into every ref'd image of `content`; an image whose file is gone
/// becomes a text note, so the history stays sendable.
pub(crate) fn internalize(content: &mut [ContentBlock], data_dir: &Path) {
    for block in content {
        block.resolve_refs(&mut |image| {
            let bytes = is_sha256(&image.sha256)
                .then(|| std::fs::read(file_path(data_dir, &image.sha256, &image.media_type)))?
                .ok()?;
            Some(ImageSource::Base64 {
                media_type: image.media_type.clone(),
                data: BASE64.encode(bytes),
            })
        });
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
        session_id: &SessionId,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<ImageRef, StoreError> {
        let dir = self.dir().to_path_buf();
        self.with(|conn| {
            save(
                conn,
                &dir,
                session_id.as_str(),
                media_type,
                bytes,
                super::now_ms(),
            )
        })
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
    use deskhand_protocol::images::MISSING_IMAGE;
    use deskhand_protocol::message::ToolResultContent;
    use serde_json::json;

    /// A message's copy of an image its tool result's event kept takes that ref; only an image
    /// not known yet is decoded and handed to `save`.
    #[test]
    fn a_known_image_takes_its_ref_without_being_saved_again() {
        let known_data = BASE64.encode(b"known bytes");
        let known = [(
            known_data.clone(),
            ImageRef {
                sha256: "k".repeat(64),
                media_type: "image/png".into(),
                bytes: 11,
            },
        )];
        let source = |data: &str| ImageSource::Base64 {
            media_type: "image/png".into(),
            data: data.into(),
        };
        let mut sources = [source(&known_data), source(&BASE64.encode(b"new bytes"))];
        let mut saved = Vec::new();
        let kept = keep_sources(sources.iter_mut(), &known, &mut |media_type, bytes| {
            saved.push(bytes.to_vec());
            Ok(ImageRef {
                sha256: content_hash(bytes),
                media_type: media_type.into(),
                bytes: bytes.len(),
            })
        })
        .unwrap();
        assert_eq!(saved, [b"new bytes".to_vec()]);
        assert_eq!(sources[0], ImageSource::Ref(known[0].1.clone()));
        assert!(
            matches!(&sources[1], ImageSource::Ref(image) if image.sha256 == content_hash(b"new bytes"))
        );
        // The newly kept image, with its text, to be known next time.
        let [(text, image)] = &kept[..] else {
            panic!("one image kept: {kept:?}")
        };
        assert_eq!(*text, BASE64.encode(b"new bytes"));
        assert_eq!(sources[1], ImageSource::Ref(image.clone()));
    }

    #[test]
    fn refs_replace_sources_and_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\n fake pixels".to_vec();
        let data = BASE64.encode(&png);
        let source = ImageSource::Base64 {
            media_type: "image/png".into(),
            data: data.clone(),
        };
        let mut content = vec![
            ContentBlock::text("look"),
            ContentBlock::Image {
                source: source.clone(),
            },
            ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: vec![ToolResultContent::Image { source }],
                is_error: false,
                toolset_name: None,
            },
        ];
        let original = content.clone();
        let mut saved = Vec::new();
        externalize(&mut content, &[], &mut |media_type, bytes| {
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
        let stored = serde_json::to_value(&content).unwrap();
        assert_eq!(
            stored[1]["source"],
            json!({"type": "ref", "sha256": saved[0].sha256, "media_type": "image/png",
                   "bytes": png.len()})
        );
        assert_eq!(stored[2]["content"][0]["source"]["sha256"], saved[0].sha256);
        assert!(!stored.to_string().contains(&data));

        let mut restored = content.clone();
        internalize(&mut restored, dir.path());
        assert_eq!(restored, original);

        std::fs::remove_dir_all(dir.path().join(SCREENSHOTS_DIR)).unwrap();
        internalize(&mut content, dir.path());
        assert_eq!(content[1], ContentBlock::text(MISSING_IMAGE));
        assert!(matches!(
            &content[2],
            ContentBlock::ToolResult { content, .. }
                if content[0] == ToolResultContent::Text { text: MISSING_IMAGE.into() }
        ));
    }
}
