//! Server-sent events, split from a byte stream that may break anywhere (mid-line, mid-UTF-8).
//!
//! The server is not trusted to be small: each byte is scanned for a newline once (a line
//! arriving in many chunks is not rescanned from its start), and a line or an event larger
//! than the cap is an error instead of a buffer that grows until memory runs out.

/// The largest line, and the largest event (its data lines together), that a stream may
/// carry. Far above anything a model service sends in one event (they stream in small
/// deltas), far below what would strain memory.
pub const MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
    /// The event's `id` field, when it had one (Deskhand's own API numbers its events).
    pub id: Option<String>,
}

/// A stream that breaks the SSE format's bounds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("broken stream: a line is longer than {limit} bytes")]
    LineTooLong { limit: usize },
    #[error("broken stream: an event is larger than {limit} bytes")]
    EventTooLarge { limit: usize },
}

pub struct SseParser {
    /// Bytes of the line in progress (and any lines after it in the current chunk).
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no newline.
    scanned: usize,
    event: String,
    id: Option<String>,
    /// The event's data lines joined by `\n`; `None` until a data line arrives.
    data: Option<String>,
    limit: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser whose line and event cap is `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            buffer: Vec::new(),
            scanned: 0,
            event: String::new(),
            id: None,
            data: None,
            limit,
        }
    }

    /// Feeds bytes and returns the events they complete, or the bound the stream broke.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &self.buffer[self.scanned..]) {
            let end = self.scanned + offset;
            let mut line = &self.buffer[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.len() > self.limit {
                return Err(SseError::LineTooLong { limit: self.limit });
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.scanned = start;
            if let Some(event) = self.apply_line(&line)? {
                events.push(event);
            }
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        // The open line may be one byte over: its `\r` before the `\n`.
        if self.buffer.len() > self.limit + 1 {
            return Err(SseError::LineTooLong { limit: self.limit });
        }
        Ok(events)
    }

    /// Applies one line; a blank line completes the event.
    fn apply_line(&mut self, line: &str) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            if self.data.is_none() && self.event.is_empty() {
                return Ok(None);
            }
            return Ok(Some(SseEvent {
                event: std::mem::take(&mut self.event),
                data: self.data.take().unwrap_or_default(),
                id: self.id.take(),
            }));
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        // Counted as decoded: a byte that is not UTF-8 becomes three (U+FFFD).
        let too_large = Err(SseError::EventTooLarge { limit: self.limit });
        match field {
            "event" if value.len() > self.limit => return too_large,
            "event" => self.event = value.to_string(),
            "id" if value.len() > self.limit => return too_large,
            "id" => self.id = Some(value.to_string()),
            "data" => match &mut self.data {
                None if value.len() > self.limit => return too_large,
                None => self.data = Some(value.to_string()),
                Some(data) => {
                    if data.len() + 1 + value.len() > self.limit {
                        return too_large;
                    }
                    data.push('\n');
                    data.push_str(value);
                }
            },
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_arbitrary_chunk_boundaries() {
        let raw = "event: ping\ndata: {}\n\n: comment\r\nevent: message_start\r\ndata: {\"a\":\r\ndata: \"é\"}\r\n\r\ndata:\ndata: x\n\n";
        for split in 0..raw.len() {
            let mut parser = SseParser::default();
            let mut events = parser.push(&raw.as_bytes()[..split]).unwrap();
            events.extend(parser.push(&raw.as_bytes()[split..]).unwrap());
            assert_eq!(
                events,
                vec![
                    SseEvent {
                        id: None,
                        event: "ping".into(),
                        data: "{}".into()
                    },
                    SseEvent {
                        id: None,
                        event: "message_start".into(),
                        data: "{\"a\":\n\"é\"}".into()
                    },
                    SseEvent {
                        id: None,
                        event: String::new(),
                        data: "\nx".into()
                    },
                ],
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_line_or_an_event_over_the_cap_is_an_error() {
        let mut parser = SseParser::with_limit(16);
        assert_eq!(parser.push(b"data: 0123456789a").unwrap(), vec![]);
        assert_eq!(
            parser.push(b"bcdef"),
            Err(SseError::LineTooLong { limit: 16 }),
            "a line without its newline counts too"
        );
        let mut parser = SseParser::with_limit(16);
        assert_eq!(
            parser.push(b"data: 0123456789abcdef\n"),
            Err(SseError::LineTooLong { limit: 16 })
        );
        let mut parser = SseParser::with_limit(16);
        assert_eq!(
            parser.push(b"data: 01234567\ndata: 01234567\n"),
            Err(SseError::EventTooLarge { limit: 16 })
        );
        assert!(
            SseError::EventTooLarge { limit: 16 }
                .to_string()
                .starts_with("broken stream")
        );
    }

    /// A long line in small chunks is scanned once: 8 MB in 1 kB chunks took minutes when
    /// every chunk rescanned the line from its start.
    #[test]
    fn a_long_line_in_small_chunks_is_scanned_once() {
        let mut parser = SseParser::default();
        let started = std::time::Instant::now();
        parser.push(b"data: ").unwrap();
        let piece = [b'x'; 1024];
        for _ in 0..8 * 1024 {
            assert!(parser.push(&piece).unwrap().is_empty());
        }
        let events = parser.push(b"\n\n").unwrap();
        assert_eq!(events[0].data.len(), 8 * 1024 * 1024);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
    }
}
