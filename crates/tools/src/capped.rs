//! Output that may be huge, kept to its start and end in bounded memory, with a note of
//! what was cut from the middle.

/// Keeps the first and the last `limit / 2` bytes of everything pushed into it.
pub struct CappedOutput {
    head: Vec<u8>,
    tail: Vec<u8>,
    half: usize,
    cut_bytes: u64,
    cut_lines: u64,
}

impl CappedOutput {
    pub fn new(limit: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: Vec::new(),
            half: (limit / 2).max(1),
            cut_bytes: 0,
            cut_lines: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < self.half {
            let take = bytes.len().min(self.half - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend_from_slice(bytes);
        // Trim in batches so that a stream of small pushes costs amortized O(1) per byte.
        if self.tail.len() >= 2 * self.half {
            let cut = self.tail.len() - self.half;
            self.cut_bytes += cut as u64;
            self.cut_lines += self.tail[..cut].iter().filter(|&&b| b == b'\n').count() as u64;
            self.tail.drain(..cut);
        }
    }

    /// The kept text (bytes that are not UTF-8 become U+FFFD), with a note where bytes were cut.
    pub fn text(&self) -> String {
        let over = self.tail.len().saturating_sub(self.half);
        let (cut_away, tail) = self.tail.split_at(over);
        let cut_bytes = self.cut_bytes + over as u64;
        let cut_lines = self.cut_lines + cut_away.iter().filter(|&&b| b == b'\n').count() as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if cut_bytes > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[... {cut_bytes} bytes ({cut_lines} lines) cut from the middle ...]\n"
            ));
        }
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut out = CappedOutput::new(100);
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(out.text(), "hello world");
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_says_what_was_cut() {
        let mut out = CappedOutput::new(20);
        for i in 0..1000 {
            out.push(format!("{i:03}\n").as_bytes());
        }
        let text = out.text();
        assert!(text.starts_with("000\n001\n00"), "{text}");
        assert!(text.ends_with("998\n999\n"), "{text}");
        assert!(
            text.contains("[... 3980 bytes (995 lines) cut from the middle ...]"),
            "{text}"
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let mut out = CappedOutput::new(100);
        out.push(b"ok \xff\xfe end");
        assert_eq!(out.text(), "ok \u{fffd}\u{fffd} end");
    }
}
