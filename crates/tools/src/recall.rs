//! A compact transcript of a past session, for `memory recall`: what was said and what the
//! tools did, no images, bounded in size.

use deskhand_llm::{ContentBlock, Message, Role, ToolResultContent};
use deskhand_store::SessionSummary;

/// The most characters a transcript holds; a longer session keeps its start and its end.
pub const RECALL_LIMIT: usize = 16_000;

/// Characters kept of one tool input or result.
const ACTION_CHARS: usize = 400;

/// The session's header and messages as plain lines, at most [`RECALL_LIMIT`] characters.
pub fn transcript(session: &SessionSummary, messages: &[Message]) -> String {
    let mut lines = vec![format!(
        "Session {} \"{}\", started {}, last updated {}, {} messages.",
        session.id, session.title, session.created_at, session.updated_at, session.message_count
    )];
    for message in messages {
        let who = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for block in &message.content {
            match block {
                ContentBlock::Text { text } if !text.trim().is_empty() => {
                    lines.push(format!("{who}: {}", text.trim()));
                }
                ContentBlock::ToolUse { name, input, .. } => {
                    lines.push(format!(
                        "→ {name} {}",
                        cut(&input.to_string(), ACTION_CHARS)
                    ));
                }
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => {
                    let mut text = Vec::new();
                    let mut images = 0;
                    for part in content {
                        match part {
                            ToolResultContent::Text { text: t } => text.push(t.as_str()),
                            ToolResultContent::Image { .. } => images += 1,
                        }
                    }
                    let mark = if *is_error { "← error:" } else { "←" };
                    let mut line = format!("{mark} {}", cut(&text.join(" "), ACTION_CHARS));
                    if images > 0 {
                        line.push_str(&format!(" [{images} image(s) not shown]"));
                    }
                    lines.push(line);
                }
                ContentBlock::Image { .. } => lines.push(format!("{who}: [an image]")),
                _ => {}
            }
        }
    }
    bounded(lines.join("\n"))
}

/// The first `max` characters of `text`, with "…" if cut, on one line.
fn cut(text: &str, max: usize) -> String {
    let flat = text.replace('\n', " ");
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// The start (a quarter) and the end of an over-long transcript, with what was left out.
fn bounded(text: String) -> String {
    let total = text.chars().count();
    if total <= RECALL_LIMIT {
        return text;
    }
    let head_chars = RECALL_LIMIT / 4;
    let tail_chars = RECALL_LIMIT - head_chars - 100;
    let head: String = text.chars().take(head_chars).collect();
    let tail: String = text.chars().skip(total - tail_chars).collect();
    format!(
        "{head}\n[… {} characters left out …]\n{tail}",
        total - head_chars - tail_chars
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskhand_llm::Usage;

    #[test]
    fn long_sessions_keep_their_start_and_end_within_the_limit() {
        let session = SessionSummary {
            id: "s1".into(),
            title: "t".into(),
            created_at: "2026-11-20T10:00:00Z".into(),
            updated_at: "2026-11-20T10:05:00Z".into(),
            provider: String::new(),
            model: String::new(),
            message_count: 2000,
            usage: Usage::default(),
            cost_usd: None,
        };
        let messages: Vec<Message> = (0..2000)
            .map(|i| Message::user(vec![ContentBlock::text(format!("message number {i}"))]))
            .collect();
        let text = transcript(&session, &messages);
        assert!(text.chars().count() <= RECALL_LIMIT);
        assert!(text.contains("message number 0\n"));
        assert!(text.ends_with("message number 1999"));
        assert!(text.contains("characters left out"));
    }
}
