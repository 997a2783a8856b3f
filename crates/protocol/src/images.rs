//! Images as the model sees them: format sniffing, the API's limits, content hashes.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The Messages API's per-image limits.
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
pub const MAX_IMAGE_SIDE: usize = 8000;

/// An image by content hash, for events and the store: never the pixels themselves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ImageRef {
    pub sha256: String,
    pub media_type: String,
    pub bytes: usize,
}

/// Stands in for an image whose bytes are gone (a removed file, an export without it), so
/// the history can still be sent.
pub const MISSING_IMAGE: &str = "[image no longer available: its file was removed]";

pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{path} is not a PNG, JPEG, GIF or WebP image")]
    UnsupportedFormat { path: String },
    #[error("{path} is {bytes} bytes; the API takes images up to {MAX_IMAGE_BYTES} bytes")]
    TooLarge { path: String, bytes: usize },
    #[error(
        "{path} is {width}x{height} pixels; the API takes at most {MAX_IMAGE_SIDE} on each side"
    )]
    TooManyPixels {
        path: String,
        width: usize,
        height: usize,
    },
}

/// The media type of PNG, JPEG, GIF or WebP bytes, by their magic numbers.
pub fn media_type_of(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

/// The media type of bytes the API would take as an image (PNG, JPEG, GIF or WebP by their
/// magic numbers, a readable size within the limits), whatever they were labelled: an
/// attachment, or an image a remote service sends.
pub fn checked_media_type(bytes: &[u8], name: &str) -> Result<&'static str, ImageError> {
    let path = name.to_string();
    let media_type =
        media_type_of(bytes).ok_or_else(|| ImageError::UnsupportedFormat { path: path.clone() })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge {
            path,
            bytes: bytes.len(),
        });
    }
    let size = imagesize::blob_size(bytes)
        .map_err(|_| ImageError::UnsupportedFormat { path: path.clone() })?;
    if size.width > MAX_IMAGE_SIDE || size.height > MAX_IMAGE_SIDE {
        return Err(ImageError::TooManyPixels {
            path,
            width: size.width,
            height: size.height,
        });
    }
    Ok(media_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_formats() {
        assert_eq!(media_type_of(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(media_type_of(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type_of(b"%PDF-1.7"), None);
        assert!(matches!(
            crate::message::ContentBlock::image(b"%PDF-1.7", "a.pdf"),
            Err(ImageError::UnsupportedFormat { .. })
        ));
    }
}
