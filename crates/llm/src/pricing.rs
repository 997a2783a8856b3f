//! What tokens cost, per model, so a session can show its cost and a budget can stop a run.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Usage;

/// US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Writing the prompt cache (Anthropic: 1.25 × input).
    pub cache_write: f64,
    /// Reading the prompt cache (Anthropic: 0.1 × input).
    pub cache_read: f64,
}

impl Price {
    const fn anthropic(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_write: input * 1.25,
            cache_read: input * 0.1,
        }
    }

    const fn openai(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_write: input,
            cache_read: input * 0.5,
        }
    }

    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_creation_input_tokens as f64 * self.cache_write
            + usage.cache_read_input_tokens as f64 * self.cache_read)
            / 1e6
    }
}

/// Prices by model-name prefix; the longest matching prefix wins, so a dated model id
/// (`claude-sonnet-4-5-20250929`) finds its family's price.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriceTable(pub BTreeMap<String, Price>);

impl Default for PriceTable {
    fn default() -> Self {
        let entries = [
            ("claude-opus-4-5", Price::anthropic(5.0, 25.0)),
            ("claude-opus-4-6", Price::anthropic(5.0, 25.0)),
            ("claude-opus-4", Price::anthropic(15.0, 75.0)),
            ("claude-sonnet-4", Price::anthropic(3.0, 15.0)),
            ("claude-3-7-sonnet", Price::anthropic(3.0, 15.0)),
            ("claude-haiku-4-5", Price::anthropic(1.0, 5.0)),
            ("gpt-4o-mini", Price::openai(0.15, 0.6)),
            ("gpt-4o", Price::openai(2.5, 10.0)),
            ("gpt-4.1-mini", Price::openai(0.4, 1.6)),
            ("gpt-4.1", Price::openai(2.0, 8.0)),
            ("computer-use-preview", Price::openai(3.0, 12.0)),
        ];
        Self(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read the price table {path}: {message}")]
pub struct PriceTableError {
    path: String,
    message: String,
}

impl PriceTable {
    /// The price of `model` (a provider prefix such as `anthropic/` is ignored, and so is
    /// case: servers name `Qwen/Qwen2.5-VL-7B-Instruct` what a table calls `qwen2.5-vl`).
    pub fn price(&self, model: &str) -> Option<Price> {
        let model = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        self.0
            .iter()
            .filter(|(prefix, _)| model.starts_with(&prefix.to_ascii_lowercase()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, price)| *price)
    }

    /// The defaults, with entries from a JSON file (`{"model-prefix": {"input": .., "output":
    /// .., "cache_write": .., "cache_read": ..}}`) added or replacing them, if the file exists.
    pub fn with_overrides(path: &Path) -> Result<Self, PriceTableError> {
        let mut table = Self::default();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(table),
            Err(e) => {
                return Err(PriceTableError {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        let overrides: BTreeMap<String, Price> =
            serde_json::from_str(&text).map_err(|e| PriceTableError {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        table.0.extend(overrides);
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_cost_counts_cache_tokens() {
        let table = PriceTable::default();
        assert_eq!(
            table.price("claude-opus-4-5-20251101"),
            Some(Price::anthropic(5.0, 25.0))
        );
        assert_eq!(
            table.price("claude-opus-4-1"),
            Some(Price::anthropic(15.0, 75.0))
        );
        assert_eq!(
            table.price("openai/gpt-4o-mini"),
            Some(Price::openai(0.15, 0.6))
        );
        assert_eq!(table.price("qwen2.5-vl"), None);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_creation_input_tokens: 1_000_000,
            cache_read_input_tokens: 1_000_000,
        };
        let cost = table.price("claude-sonnet-4-5").unwrap().cost(&usage);
        assert!((cost - (3.0 + 1.5 + 3.75 + 0.3)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn overrides_come_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        assert_eq!(
            PriceTable::with_overrides(&path).unwrap(),
            PriceTable::default()
        );
        std::fs::write(
            &path,
            r#"{"qwen": {"input": 0.1, "output": 0.2, "cache_write": 0.1, "cache_read": 0.01}}"#,
        )
        .unwrap();
        let table = PriceTable::with_overrides(&path).unwrap();
        assert_eq!(table.price("qwen2.5-vl").unwrap().output, 0.2);
        assert_eq!(
            table.price("Qwen/Qwen2.5-VL-7B-Instruct").unwrap().output,
            0.2
        );
        std::fs::write(&path, "{").unwrap();
        assert!(
            PriceTable::with_overrides(&path)
                .unwrap_err()
                .to_string()
                .contains("prices.json")
        );
    }
}
