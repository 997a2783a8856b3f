//! What tokens cost, per model, so a session can show its cost and a budget can stop a run.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Usage;
pub use deskhand_protocol::budget::PriceSource;

/// US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Writing the prompt cache, 5-minute lifetime (Anthropic: 1.25 × input). Deskhand asks
    /// for no 1-hour cache, so its price is not kept.
    pub cache_write: f64,
    /// Reading the prompt cache (Anthropic: 0.1 × input).
    pub cache_read: f64,
    /// Other rates for a request whose prompt is longer (Haiku 5.5 above 100k tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_context: Option<LongContext>,
    /// Where the price comes from; a `prices.json` entry is always `file`.
    #[serde(default)]
    pub source: PriceSource,
}

/// The rates of a request whose prompt (input, cache writes and reads together) is more than
/// `above_tokens`; they apply to all of that request's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LongContext {
    pub above_tokens: u64,
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

impl Price {
    const fn anthropic(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_write: input * 1.25,
            cache_read: input * 0.1,
            long_context: None,
            source: PriceSource::Official,
        }
    }

    /// OpenAI's cached input at half the input price: the rate of the GPT-4o generation, and
    /// more than any later one, so a cost is never under-counted.
    const fn openai(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_write: input,
            cache_read: input * 0.5,
            long_context: None,
            source: PriceSource::Official,
        }
    }

    /// The same, with the cache read rate a price page gives where it is not 0.1 × input.
    const fn read(mut self, cache_read: f64) -> Self {
        self.cache_read = cache_read;
        self
    }

    /// The same, known from reseller lists only.
    const fn reseller(mut self) -> Self {
        self.source = PriceSource::Reseller;
        self
    }

    /// The same, with Anthropic's rates of a longer prompt (cache at the usual multiples).
    const fn above(mut self, above_tokens: u64, input: f64, output: f64) -> Self {
        self.long_context = Some(LongContext {
            above_tokens,
            input,
            output,
            cache_write: input * 1.25,
            cache_read: input * 0.1,
        });
        self
    }

    pub fn cost(&self, usage: &Usage) -> f64 {
        let prompt =
            usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
        let (input, output, cache_write, cache_read) = match self.long_context {
            Some(long) if prompt > long.above_tokens => {
                (long.input, long.output, long.cache_write, long.cache_read)
            }
            _ => (self.input, self.output, self.cache_write, self.cache_read),
        };
        (usage.input_tokens as f64 * input
            + usage.output_tokens as f64 * output
            + usage.cache_creation_input_tokens as f64 * cache_write
            + usage.cache_read_input_tokens as f64 * cache_read)
            / 1e6
    }
}

/// Prices by model-name prefix; the longest matching prefix wins, so a dated model id
/// (`claude-sonnet-4-5-20250929`) finds its family's price.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriceTable(pub BTreeMap<String, Price>);

/// Every model's price, as `../shared/reference/anthropic-computer-use.md` collected them
/// (late 2026) with their sources; docs/providers.md has the table with each source.
const PRICES: [(&str, Price); 24] = [
    // Only one official page variant has it; a reseller agrees.
    (
        "claude-fable-5-2",
        Price::anthropic(8.0, 40.0).read(0.20).reseller(),
    ),
    ("claude-fable-5-1", Price::anthropic(10.0, 50.0)),
    ("claude-fable-5", Price::anthropic(10.0, 50.0)),
    ("claude-opus-5-5", Price::anthropic(4.0, 20.0).read(0.20)),
    ("claude-opus-5", Price::anthropic(5.0, 25.0)),
    ("claude-sonnet-5-5", Price::anthropic(2.0, 10.0).read(0.10)),
    ("claude-sonnet-5", Price::anthropic(2.0, 10.0)),
    (
        "claude-haiku-5-5",
        Price::anthropic(0.10, 0.50).above(100_000, 0.50, 2.50),
    ),
    ("claude-opus-4-8", Price::anthropic(5.0, 25.0).reseller()),
    ("claude-opus-4-7", Price::anthropic(5.0, 25.0).reseller()),
    ("claude-opus-4-6", Price::anthropic(5.0, 25.0).reseller()),
    ("claude-opus-4-5", Price::anthropic(5.0, 25.0)),
    ("claude-opus-4", Price::anthropic(15.0, 75.0)),
    ("claude-sonnet-4-6", Price::anthropic(3.0, 15.0).reseller()),
    ("claude-sonnet-4-5", Price::anthropic(3.0, 15.0)),
    ("claude-sonnet-4", Price::anthropic(3.0, 15.0)),
    ("claude-3-7-sonnet", Price::anthropic(3.0, 15.0)),
    ("claude-haiku-4-5", Price::anthropic(1.0, 5.0)),
    ("gpt-5.4", Price::openai(2.5, 15.0).reseller()),
    ("gpt-4o-mini", Price::openai(0.15, 0.6)),
    ("gpt-4o", Price::openai(2.5, 10.0)),
    ("gpt-4.1-mini", Price::openai(0.4, 1.6)),
    ("gpt-4.1", Price::openai(2.0, 8.0)),
    ("computer-use-preview", Price::openai(3.0, 12.0)),
];

impl Default for PriceTable {
    fn default() -> Self {
        Self(
            PRICES
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
        let mut model = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        // OpenRouter writes Claude's versions with a dot (`claude-opus-4.5`).
        if model.starts_with("claude-") {
            model = model.replace('.', "-");
        }
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
        table
            .0
            .extend(overrides.into_iter().map(|(model, mut price)| {
                price.source = PriceSource::File;
                (model, price)
            }));
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
    fn every_reference_price_with_its_source_and_haiku_5_5s_long_context_tier() {
        let table = PriceTable::default();
        let price = |model: &str| table.price(model).unwrap();
        assert_eq!(price("claude-opus-5-5").input, 4.0);
        assert_eq!(price("claude-opus-5-5").cache_read, 0.20);
        assert_eq!(price("claude-opus-5-5").cache_write, 5.0);
        assert_eq!(price("claude-opus-5-20260301").output, 25.0);
        assert_eq!(price("claude-fable-5-1").cache_write, 12.5);
        assert_eq!(price("claude-sonnet-5-5").cache_read, 0.10);
        assert_eq!(price("claude-sonnet-5").cache_write, 2.5);
        assert_eq!(price("anthropic/claude-opus-4.5").input, 5.0);
        for (model, source) in [
            ("claude-fable-5-2", PriceSource::Reseller),
            ("claude-opus-4-8", PriceSource::Reseller),
            ("claude-opus-4-7", PriceSource::Reseller),
            ("claude-opus-4-6", PriceSource::Reseller),
            ("claude-sonnet-4-6", PriceSource::Reseller),
            ("gpt-5.4", PriceSource::Reseller),
            ("claude-sonnet-4-5", PriceSource::Official),
            ("claude-haiku-5-5", PriceSource::Official),
            ("computer-use-preview", PriceSource::Official),
        ] {
            assert_eq!(price(model).source, source, "{model}");
        }
        let haiku = price("claude-haiku-5-5");
        let at = |input, cache_read| Usage {
            input_tokens: input,
            output_tokens: 1_000_000,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: cache_read,
        };
        // 100k prompt tokens: the low rates. One more: the high ones, for every token.
        let cost = haiku.cost(&at(60_000, 40_000));
        assert!((cost - (0.006 + 0.5 + 0.0004)).abs() < 1e-9, "{cost}");
        let cost = haiku.cost(&at(60_001, 40_000));
        assert!((cost - (0.0300005 + 2.5 + 0.002)).abs() < 1e-9, "{cost}");
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
        assert_eq!(table.price("qwen2.5-vl").unwrap().source, PriceSource::File);
        // Any price, a reseller's or an official one, with a long-context tier if need be.
        std::fs::write(
            &path,
            r#"{"gpt-5.4": {"input": 2.5, "output": 15, "cache_write": 2.5, "cache_read": 0.25,
                "long_context": {"above_tokens": 272000, "input": 5, "output": 22.5, "cache_write": 5, "cache_read": 0.5}}}"#,
        )
        .unwrap();
        let table = PriceTable::with_overrides(&path).unwrap();
        let gpt = table.price("gpt-5.4-2026-03-05").unwrap();
        assert_eq!(gpt.source, PriceSource::File);
        assert_eq!(gpt.cache_read, 0.25);
        assert_eq!(gpt.long_context.unwrap().above_tokens, 272_000);
        assert_eq!(table.price("claude-opus-5-5").unwrap().input, 4.0);
        std::fs::write(&path, "{").unwrap();
        assert!(
            PriceTable::with_overrides(&path)
                .unwrap_err()
                .to_string()
                .contains("prices.json")
        );
    }
}
