//! Server-sent events, split from a byte stream that may break anywhere (mid-line, mid-UTF-8).

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

#[derive(Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl SseParser {
    /// Feeds bytes and returns the events they complete.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.buffer[start..].iter().position(|&b| b == b'\n') {
            let end = start + offset;
            let mut line = &self.buffer[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            if line.is_empty() {
                if !self.data.is_empty() || !self.event.is_empty() {
                    events.push(SseEvent {
                        event: std::mem::take(&mut self.event),
                        data: std::mem::take(&mut self.data).join("\n"),
                    });
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line.as_str(), ""),
            };
            match field {
                "event" => self.event = value.to_string(),
                "data" => self.data.push(value.to_string()),
                _ => {}
            }
        }
        self.buffer.drain(..start);
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_arbitrary_chunk_boundaries() {
        let raw = "event: ping\ndata: {}\n\n: comment\r\nevent: message_start\r\ndata: {\"a\":\r\ndata: \"é\"}\r\n\r\n";
        for split in 0..raw.len() {
            let mut parser = SseParser::default();
            let mut events = parser.push(&raw.as_bytes()[..split]);
            events.extend(parser.push(&raw.as_bytes()[split..]));
            assert_eq!(
                events,
                vec![
                    SseEvent {
                        event: "ping".into(),
                        data: "{}".into()
                    },
                    SseEvent {
                        event: "message_start".into(),
                        data: "{\"a\":\n\"é\"}".into()
                    },
                ],
                "split at {split}"
            );
        }
    }
}
