//! Full-text search (SQLite FTS5) over what was said, typed and shown as results.

use rusqlite::params;
use serde_json::Value;

use super::sessions::{SUMMARY_COLUMN_COUNT, SUMMARY_COLUMNS, SessionHit, summary_from_row};
use super::{Store, StoreError};

/// The words of a message worth finding it by: its text, the string values of tool inputs
/// (commands, typed text, file paths) and tool results' text.
pub(crate) fn indexed_text(content: &Value) -> String {
    let mut parts = Vec::new();
    for block in content.as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => parts.extend(block["text"].as_str()),
            Some("tool_use") => strings(&block["input"], &mut parts),
            Some("tool_result") => {
                for item in block["content"].as_array().into_iter().flatten() {
                    parts.extend(item["text"].as_str());
                }
            }
            _ => {}
        }
    }
    parts.join("\n")
}

fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// A person's words as an FTS5 query: every word must occur (a prefix for the last one, as
/// they may still be typing), and quotes and operators are taken literally.
fn fts_query(text: &str) -> Option<String> {
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

/// How many of the newest matching messages are ranked. FTS5 walks a term's matches newest
/// first and stops here, so a word found in half a million messages costs what a rare one
/// does; a rare word's matches are all ranked.
const RANKED_MATCHES: usize = 2_000;

impl Store {
    /// Sessions whose messages match `query`, best match (bm25) first among the most recent
    /// matching messages, each with a snippet of its best-matching message.
    pub fn search(&self, query: &str) -> Result<Vec<SessionHit>, StoreError> {
        let Some(query) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.with(|conn| {
            let sql = format!(
                "WITH recent AS (
                     SELECT rowid AS id, bm25(messages_fts) AS rank FROM messages_fts
                     WHERE messages_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?3
                 ),
                 best AS (
                     SELECT m.session_id AS session_id, recent.id AS id, min(recent.rank) AS rank
                     FROM recent JOIN messages m ON m.id = recent.id GROUP BY m.session_id
                 )
                 SELECT {SUMMARY_COLUMNS}, best.id FROM best JOIN sessions s ON s.id = best.session_id
                 ORDER BY best.rank LIMIT ?2"
            );
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map(
                params![query, MAX_HITS as i64, RANKED_MATCHES as i64],
                |row| {
                    Ok((
                        summary_from_row(row)?,
                        row.get::<_, i64>(SUMMARY_COLUMN_COUNT)?,
                    ))
                },
            )?;
            let best: Vec<_> = rows.collect::<Result<_, _>>()?;
            // Snippets for the hits only, not for every ranked match.
            let mut snippet = conn.prepare_cached(
                "SELECT snippet(messages_fts, 0, '', '', '…', 16) FROM messages_fts
                 WHERE messages_fts MATCH ?1 AND rowid = ?2",
            )?;
            let mut hits = Vec::with_capacity(best.len());
            for (session, message) in best {
                hits.push(SessionHit {
                    session,
                    snippet: snippet.query_row(params![query, message], |r| r.get(0))?,
                });
            }
            Ok(hits)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
}
