//! Full-text search (SQLite FTS5) over what was said, typed and shown as results.

use std::collections::HashSet;

use rusqlite::params;

use super::sessions::{SessionHit, summary};
use super::{Store, StoreError};

/// A person's words as an FTS5 query: every word must occur (a prefix for the last one, as
/// they may still be typing), and quotes and operators are taken literally.
pub(crate) fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    if words.is_empty() {
        return None;
    }
    Some(format!("{}*", words.join(" ")))
}

/// The most sessions a search returns.
const MAX_HITS: usize = 50;

/// How many matching messages a search reads, newest first, looking for `MAX_HITS`
/// sessions. FTS5 walks matches in rowid order and stops when told, so a word found in half a
/// million messages costs about what a rare one does. (Ranking by bm25 would not: its
/// statistics count every match of every word, 4 s for a common one in a million messages.)
const SCANNED_MATCHES: usize = 10_000;

/// Words a snippet shows.
const SNIPPET_WORDS: usize = 16;

impl Store {
    /// Sessions whose messages match `query`, the most recently matching first, each with a
    /// snippet of its newest matching message.
    pub fn search(&self, query: &str) -> Result<Vec<SessionHit>, StoreError> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.with(|conn| {
            let mut newest: Vec<(String, i64)> = Vec::new();
            {
                let mut matches = conn.prepare_cached(
                    "SELECT m.session_id, m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
                     WHERE messages_fts MATCH ?1 ORDER BY messages_fts.rowid DESC LIMIT ?2",
                )?;
                let mut rows = matches.query(params![fts, SCANNED_MATCHES as i64])?;
                let mut seen = HashSet::new();
                while let Some(row) = rows.next()? {
                    let session: String = row.get(0)?;
                    if seen.insert(session.clone()) {
                        newest.push((session, row.get(1)?));
                        if newest.len() == MAX_HITS {
                            break;
                        }
                    }
                }
            }
            // Snippets are cut here, not by FTS5's snippet(): that would run the query again
            // for each hit, and a prefix query's setup is slow for a common word
            // (docs/benchmarks.md, "The history and the notes").
            let terms = lowercase_words(query);
            let mut text = conn.prepare_cached("SELECT text FROM messages WHERE id = ?1")?;
            let mut hits = Vec::with_capacity(newest.len());
            for (session, message) in newest {
                let message: String = text.query_row([message], |r| r.get(0))?;
                hits.push(SessionHit {
                    session: summary(conn, &session)?,
                    snippet: snippet(&message, &terms),
                });
            }
            Ok(hits)
        })
    }
}

/// Byte ranges of the words of `text`: runs of letters and digits, as FTS5's unicode61
/// tokenizer splits it.
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                spans.push((from, at));
                start = None;
            }
            _ => {}
        }
    }
    spans.extend(start.map(|from| (from, text.len())));
    spans
}

pub(crate) fn lowercase_words(text: &str) -> Vec<String> {
    word_spans(text)
        .into_iter()
        .map(|(from, to)| text[from..to].to_lowercase())
        .collect()
}

/// Up to `SNIPPET_WORDS` words of `text` from a little before its first word that matches
/// one of `terms` (the last as a prefix, as in the query), with "…" where text is left out.
fn snippet(text: &str, terms: &[String]) -> String {
    let spans = word_spans(text);
    let Some((last, whole)) = terms.split_last() else {
        return String::new();
    };
    let first = spans
        .iter()
        .position(|&(from, to)| {
            let word = text[from..to].to_lowercase();
            whole.contains(&word) || word.starts_with(last.as_str())
        })
        .unwrap_or(0);
    let start = first.saturating_sub(SNIPPET_WORDS / 4);
    let end = (start + SNIPPET_WORDS).min(spans.len());
    let start = end.saturating_sub(SNIPPET_WORDS);
    let (Some(&(from, _)), Some(&(_, to))) = (spans.get(start), spans.get(end.wrapping_sub(1)))
    else {
        return String::new();
    };
    let before = if start > 0 { "…" } else { "" };
    let after = if end < spans.len() { "…" } else { "" };
    format!("{before}{}{after}", &text[from..to])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::messages::indexed_text;

    #[test]
    fn indexes_text_inputs_and_results() {
        let content = json!([
            {"type": "text", "text": "open the report"},
            {"type": "tool_use", "id": "t", "name": "bash", "input": {"command": "ls ~/reports", "n": 3}},
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "q3.pdf"}]},
            {"type": "image", "source": {"type": "ref", "sha256": "ab"}}
        ]);
        assert_eq!(
            indexed_text(&content),
            "open the report\nls ~/reports\nq3.pdf"
        );
    }

    #[test]
    fn queries_are_literal_words() {
        assert_eq!(fts_query("  "), None);
        assert_eq!(
            fts_query("q3 \"report OR"),
            Some("\"q3\" \"\"\"report\" \"OR\"*".into())
        );
    }

    #[test]
    fn snippets_show_the_first_match_in_context() {
        let terms = lowercase_words("Quarterly NUMB");
        let long = "one two three four five six seven eight nine ten: the quarterly numbers, \
                    as asked, are in the report on the shared drive under finance/q3 today";
        assert_eq!(
            snippet(long, &terms),
            "…eight nine ten: the quarterly numbers, as asked, are in the report on the shared drive…"
        );
        // Near the end the window slides back to keep its length.
        let end = "a b c d e f g h i j k l m n o p q r s numbers";
        assert_eq!(
            snippet(end, &terms),
            "…e f g h i j k l m n o p q r s numbers"
        );
        // A short text is shown whole; one where no word is found from its start.
        assert_eq!(snippet("Numbers!", &terms), "Numbers");
        assert_eq!(
            snippet("café crème", &lowercase_words("cafe")),
            "café crème"
        );
        assert_eq!(snippet("", &terms), "");
        assert_eq!(snippet("…", &terms), "");
    }
}
