//! Images between the core and the webview. The webview gets bytes by content hash
//! (`get_image`, a binary response), never base64 inside JSON: a screenshot is a few hundred
//! KB (more as base64), and parsing it out of a JSON event on every message would stall the
//! window.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use deskhand_engine::images::{content_hash, media_type_of};
use deskhand_engine::llm::{ContentBlock, ImageSource};
use serde::{Deserialize, Serialize};

use crate::error::{IpcError, IpcResult};

/// An image held for the next message, as the window sees it.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
pub struct AttachedImage {
    pub id: String,
    pub sha256: String,
    pub media_type: String,
    pub width: usize,
    pub height: usize,
}

#[derive(Clone, Debug, Deserialize, ts_rs::TS)]
pub struct AttachmentRef {
    pub id: String,
}

/// Images attached in the window (a file, a paste, a drop or a capture) until `send_message`
/// takes them or the person removes them.
#[derive(Default)]
pub struct Attachments(Mutex<HashMap<String, Attached>>);

struct Attached {
    sha256: String,
    block: ContentBlock,
}

impl Attachments {
    /// Checks encoded image bytes as the API would, and holds them.
    pub fn attach(&self, bytes: Vec<u8>) -> IpcResult<AttachedImage> {
        let block = ContentBlock::image(&bytes, "the image")
            .map_err(|e| IpcError::invalid(upper_first(&e.to_string())))?;
        let size = imagesize::blob_size(&bytes)
            .map_err(|e| IpcError::invalid(format!("cannot read the image's size: {e}")))?;
        // Known: `ContentBlock::image` took the bytes for one of the formats it names.
        let media_type = media_type_of(&bytes).unwrap_or_default().to_string();
        let id = uuid::Uuid::new_v4().to_string();
        let sha256 = content_hash(&bytes);
        let attached = Attached {
            sha256: sha256.clone(),
            block,
        };
        self.lock().insert(id.clone(), attached);
        Ok(AttachedImage {
            id,
            sha256,
            media_type,
            width: size.width,
            height: size.height,
        })
    }

    /// The attachments' image blocks in order, all or none.
    pub fn take(&self, refs: &[AttachmentRef]) -> IpcResult<Vec<ContentBlock>> {
        let mut held = self.lock();
        if let Some(missing) = refs.iter().find(|r| !held.contains_key(&r.id)) {
            return Err(IpcError::not_found(format!(
                "attachment `{}` is not held (removed, or already sent)",
                missing.id
            )));
        }
        Ok(refs
            .iter()
            .filter_map(|r| held.remove(&r.id))
            .map(|attached| attached.block)
            .collect())
    }

    /// A held attachment's bytes, for its thumbnail until it is sent: it is in no store yet.
    pub fn bytes(&self, sha256: &str) -> Option<Vec<u8>> {
        let held = self.lock();
        let attached = held.values().find(|a| a.sha256 == sha256)?;
        match &attached.block {
            ContentBlock::Image {
                source: ImageSource::Base64 { data, .. },
            } => BASE64.decode(data).ok(),
            _ => None,
        }
    }

    pub fn discard(&self, id: &str) -> IpcResult<()> {
        self.lock()
            .remove(id)
            .map(|_| ())
            .ok_or_else(|| IpcError::not_found(format!("attachment `{id}` is not held")))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Attached>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {

    use super::*;

    /// The smallest valid PNG: 1x1.
    pub const PNG: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0,
        0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44,
        0x41, 0x54, 0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0,
        0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn attachments_are_checked_held_and_taken_once() {
        let attachments = Attachments::default();
        let error = attachments.attach(b"%PDF-1.7".to_vec()).unwrap_err();
        assert_eq!(
            error.message,
            "The image is not a PNG, JPEG, GIF or WebP image"
        );
        let image = attachments.attach(PNG.to_vec()).unwrap();
        assert_eq!(
            (image.width, image.height, image.media_type.as_str()),
            (1, 1, "image/png")
        );
        assert_eq!(image.sha256, content_hash(PNG));
        // Its bytes are there for the thumbnail until it is sent.
        let held = attachments.attach(PNG.to_vec()).unwrap();
        assert_eq!(attachments.bytes(&held.sha256).unwrap(), PNG);
        attachments.discard(&held.id).unwrap();
        let refs = [AttachmentRef {
            id: image.id.clone(),
        }];
        assert_eq!(attachments.take(&refs).unwrap().len(), 1);
        assert!(attachments.bytes(&image.sha256).is_none());
        assert_eq!(
            attachments.take(&refs).unwrap_err().kind,
            crate::error::ErrorKind::NotFound
        );
    }
}
