//! How much a plugin server may send. Its tool definitions go out in every request, and
//! its messages are read into memory whole, so each is bounded: pages and tools in its
//! list, a description's length, an input schema's size, one message's size. The
//! transport drops a message over its line limit without a word; [`OversizeWatch`] sees it
//! happen, so that the call waiting for that message fails at once, saying why.

use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

/// The most `tools/list` pages read from one server.
pub const MAX_PAGES: usize = 16;
/// The most tools offered from one server.
pub const MAX_TOOLS: usize = 128;
/// The most characters of a tool's description; the rest is cut with a note.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// The largest input schema (as JSON) of a tool that is offered.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;

/// A description cut to [`MAX_DESCRIPTION_CHARS`], with a note if it was longer.
pub fn description(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!(
            "{} [description cut at {MAX_DESCRIPTION_CHARS} characters]",
            &text[..cut]
        ),
    }
}

/// Refuses a tool whose input schema is over [`MAX_SCHEMA_BYTES`]; the error is the note to
/// show.
pub fn check_schema(tool: &str, schema: &Value) -> Result<(), SchemaTooLarge> {
    let bytes = schema.to_string().len();
    if bytes > MAX_SCHEMA_BYTES {
        return Err(SchemaTooLarge {
            tool: tool.to_string(),
            bytes,
        });
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
#[error(
    "its tool `{tool}` is not offered: its input schema is {bytes} bytes, over the limit of {MAX_SCHEMA_BYTES}"
)]
pub struct SchemaTooLarge {
    tool: String,
    bytes: usize,
}

/// The transport's limit on one message, in words.
pub fn message_limit() -> String {
    let limit = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
    format!("{} MiB ({limit} bytes)", limit >> 20)
}

/// Resolves when the watched server has sent another message over the limit.
pub async fn oversized(seen: &mut watch::Receiver<u64>) {
    if seen.changed().await.is_err() {
        // The reader is gone (the connection closed): nothing more will be counted.
        std::future::pending::<()>().await;
    }
}

/// The server's stdout, passed through unchanged while it counts the bytes since the last
/// newline: each line (one message) that grows past `limit` adds one to the count.
pub struct OversizeWatch<R> {
    inner: R,
    limit: usize,
    since_newline: usize,
    counted: bool,
    count: watch::Sender<u64>,
}

impl<R> OversizeWatch<R> {
    pub fn new(inner: R, limit: usize) -> (Self, watch::Receiver<u64>) {
        let (count, seen) = watch::channel(0);
        let watch = Self {
            inner,
            limit,
            since_newline: 0,
            counted: false,
            count,
        };
        (watch, seen)
    }

    /// Counts as the transport does: a line with its newline over `limit` is dropped.
    fn saw(&mut self, mut bytes: &[u8]) {
        while let Some(at) = bytes.iter().position(|&b| b == b'\n') {
            self.grow(at + 1);
            self.since_newline = 0;
            self.counted = false;
            bytes = &bytes[at + 1..];
        }
        self.grow(bytes.len());
    }

    fn grow(&mut self, bytes: usize) {
        self.since_newline += bytes;
        if !self.counted && self.since_newline > self.limit {
            self.counted = true;
            self.count.send_modify(|n| *n += 1);
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for OversizeWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            self.saw(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(chunks: &[&[u8]], limit: usize) -> u64 {
        let (mut watch, seen) = OversizeWatch::new(tokio::io::empty(), limit);
        for chunk in chunks {
            watch.saw(chunk);
        }
        *seen.borrow()
    }

    #[test]
    fn each_line_over_the_limit_counts_once() {
        assert_eq!(count(&[b"short\n", b"also\n"], 10), 0);
        assert_eq!(count(&[b"0123456789ab"], 10), 1);
        assert_eq!(count(&[b"01234", b"56789", b"ab", b"cd\n"], 10), 1);
        assert_eq!(count(&[b"0123456789ab\nok\n0123456789ab\n"], 10), 2);
        // A line that goes over only in the chunk where it ends.
        assert_eq!(count(&[b"012345678", b"9abc\nok\n"], 10), 1);
        assert_eq!(count(&[b"012345678\n"], 10), 0);
        assert_eq!(count(&[b"0123456789\n"], 10), 1);
    }

    #[test]
    fn long_descriptions_are_cut_with_a_note() {
        assert_eq!(description("  short  "), "short");
        let long = "é".repeat(MAX_DESCRIPTION_CHARS + 5);
        let cut = description(&long);
        assert!(cut.ends_with(" [description cut at 2000 characters]"));
        assert_eq!(
            cut.chars().filter(|&c| c == 'é').count(),
            MAX_DESCRIPTION_CHARS
        );
    }
}
