//! Images between the core and the webview. The webview gets bytes by content hash
//! (`get_image`, a binary response), never base64 inside JSON: a screenshot is a few hundred
//! KB (more as base64), and parsing it out of a JSON event on every message would stall the
//! window.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use deskhand::images::{ImageRef, content_hash, image_block};
use deskhand::llm::{ContentBlock, ImageSource};
use serde::{Deserialize, Serialize};

use crate::error::{IpcError, IpcResult};

/// Image bytes by SHA-256, for `get_image`: the screenshots and attachments of this window's
/// runs, newest first up to a byte limit, so that a long session does not grow the app
/// without end. An image dropped from here is read back from the store, where every run's
/// events are recorded before the window sees them.
pub struct ImageCache {
    limit: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    images: HashMap<String, Cached>,
    /// Hashes, least recently kept first: the order in which they leave.
    order: VecDeque<String>,
    bytes: usize,
}

struct Cached {
    media_type: String,
    bytes: Arc<Vec<u8>>,
}

impl Default for ImageCache {
    /// 64 MB: some two hundred screenshots at the model's size (about 300 KB each as PNG),
    /// more than a window shows at once.
    fn default() -> Self {
        Self::with_limit(64 << 20)
    }
}

impl ImageCache {
    /// Holds images up to `limit` bytes in all (always at least the newest one).
    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            held: Mutex::default(),
        }
    }

    pub fn keep(&self, media_type: &str, bytes: Vec<u8>) -> ImageRef {
        let image = ImageRef {
            sha256: content_hash(&bytes),
            media_type: media_type.to_string(),
            bytes: bytes.len(),
        };
        let mut held = self.lock();
        if held.images.contains_key(&image.sha256) {
            // Kept again (shown again, say): it leaves last now.
            if let Some(at) = held.order.iter().position(|h| *h == image.sha256) {
                let hash = held.order.remove(at).expect("a found position");
                held.order.push_back(hash);
            }
        } else {
            held.bytes += bytes.len();
            held.order.push_back(image.sha256.clone());
            held.images.insert(
                image.sha256.clone(),
                Cached {
                    media_type: media_type.to_string(),
                    bytes: Arc::new(bytes),
                },
            );
            while held.bytes > self.limit && held.order.len() > 1 {
                let Some(oldest) = held.order.pop_front() else {
                    break;
                };
                if let Some(gone) = held.images.remove(&oldest) {
                    held.bytes -= gone.bytes.len();
                }
            }
        }
        image
    }

    /// Keeps a base64 image source's bytes; `None` if it is not valid base64.
    pub fn keep_base64(&self, media_type: &str, data: &str) -> Option<ImageRef> {
        let bytes = BASE64.decode(data).ok()?;
        Some(self.keep(media_type, bytes))
    }

    pub fn get(&self, sha256: &str) -> Option<(String, Arc<Vec<u8>>)> {
        self.lock()
            .images
            .get(sha256)
            .map(|c| (c.media_type.clone(), c.bytes.clone()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

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
    pub fn attach(&self, bytes: Vec<u8>, cache: &ImageCache) -> IpcResult<AttachedImage> {
        let block = image_block(&bytes, "the image")
            .map_err(|e| IpcError::invalid(upper_first(&e.to_string())))?;
        let size = imagesize::blob_size(&bytes)
            .map_err(|e| IpcError::invalid(format!("cannot read the image's size: {e}")))?;
        let ContentBlock::Image { source } = &block else {
            unreachable!("image_block makes image blocks")
        };
        let image = cache.keep(&ImageRef::of(source).media_type, bytes);
        let id = uuid::Uuid::new_v4().to_string();
        let sha256 = image.sha256.clone();
        self.lock().insert(id.clone(), Attached { sha256, block });
        Ok(AttachedImage {
            id,
            sha256: image.sha256,
            media_type: image.media_type,
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

    /// A held attachment's bytes: the window shows its thumbnail until it is sent, and the
    /// cache may have let it go by then (it is in no store yet).
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
    fn the_cache_keeps_the_newest_images_within_its_limit() {
        let cache = ImageCache::with_limit(10);
        let images: Vec<ImageRef> = (0u8..5)
            .map(|i| cache.keep("image/png", vec![i; 4]))
            .collect();
        // 4 bytes each and 10 allowed: the newest two stay, the older ones are dropped.
        let held: Vec<bool> = images
            .iter()
            .map(|i| cache.get(&i.sha256).is_some())
            .collect();
        assert_eq!(held, [false, false, false, true, true]);
        // Keeping an image again neither counts it twice nor drops another, and it now
        // leaves last.
        cache.keep("image/png", vec![3; 4]);
        assert!(cache.get(&images[4].sha256).is_some());
        let newer = cache.keep("image/png", vec![5; 4]);
        assert!(cache.get(&images[3].sha256).is_some());
        assert!(cache.get(&images[4].sha256).is_none());
        assert!(cache.get(&newer.sha256).is_some());
        // One image over the limit is still held: the window is showing it.
        let big = cache.keep("image/png", vec![9; 50]);
        assert_eq!(cache.get(&big.sha256).unwrap().1.len(), 50);
        assert!(cache.get(&images[3].sha256).is_none());
    }

    #[test]
    fn attachments_are_checked_held_and_taken_once() {
        let cache = ImageCache::default();
        let attachments = Attachments::default();
        let error = attachments
            .attach(b"%PDF-1.7".to_vec(), &cache)
            .unwrap_err();
        assert_eq!(
            error.message,
            "The image is not a PNG, JPEG, GIF or WebP image"
        );
        let image = attachments.attach(PNG.to_vec(), &cache).unwrap();
        assert_eq!(
            (image.width, image.height, image.media_type.as_str()),
            (1, 1, "image/png")
        );
        assert!(cache.get(&image.sha256).is_some());
        // Pushed out of a full cache, its bytes are still there for the thumbnail.
        let small = ImageCache::with_limit(1);
        let held = attachments.attach(PNG.to_vec(), &small).unwrap();
        small.keep("image/png", vec![0; 8]);
        assert!(small.get(&held.sha256).is_none());
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
