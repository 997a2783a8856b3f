//! What a Claude model id says about the model: its family and version, and from them what
//! its generation accepts (the computer tool's version, thinking, `tool_choice`).

/// `claude-opus-4-5-20251101` is family `opus`, version (4, 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generation {
    pub family: String,
    pub major: u32,
    pub minor: u32,
}

impl Generation {
    /// Reads ids such as `claude-opus-4-5-20251101`, `claude-sonnet-5`, `anthropic/claude-opus-4.5`
    /// (a `vendor/` prefix is ignored) or Bedrock's `us.anthropic.claude-opus-5-5-v1:0`. Older ids
    /// that put the version first (`claude-3-7-sonnet`) and anything else give `None`.
    pub fn of(model: &str) -> Option<Self> {
        let model = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let (_, rest) = model.split_once("claude-")?;
        let mut parts = rest.split(['-', '.', ':']);
        let family = parts
            .next()
            .filter(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_alphabetic()))?;
        let major = parts.next()?.parse().ok()?;
        // A date (8 digits) or a Bedrock suffix (`v1`) after the major version is no minor.
        let minor = parts
            .next()
            .and_then(|p| if p.len() <= 2 { p.parse().ok() } else { None })
            .unwrap_or(0);
        Some(Self {
            family: family.to_string(),
            major,
            minor,
        })
    }

    /// The Claude 5 generation and later: thinking cannot be turned off (so `adaptive` with an
    /// `effort`), a forced `tool_choice` is refused, thinking blocks must come back unchanged,
    /// and computer use is the GA toolset.
    pub fn is_claude_5_or_later(&self) -> bool {
        self.major >= 5
    }
}

/// Whether requests for `model` carry `thinking: {"type": "adaptive"}` and an `effort`.
pub fn takes_adaptive_thinking(model: &str) -> bool {
    Generation::of(model).is_some_and(|g| g.is_claude_5_or_later())
}

/// How much effort the model spends, for models that take it: Claude 5 as
/// `output_config.effort`, GPT models with the GA computer tool as `reasoning.effort`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl Effort {
    /// Its name as flags, settings and the APIs spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(text.trim().to_ascii_lowercase())).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_from_model_ids() {
        let g = |family: &str, major, minor| {
            Some(Generation {
                family: family.into(),
                major,
                minor,
            })
        };
        assert_eq!(Generation::of("claude-opus-4-5-20251101"), g("opus", 4, 5));
        assert_eq!(Generation::of("claude-sonnet-5"), g("sonnet", 5, 0));
        assert_eq!(Generation::of("anthropic/claude-opus-4.5"), g("opus", 4, 5));
        assert_eq!(
            Generation::of("us.anthropic.claude-opus-5-5-v1:0"),
            g("opus", 5, 5)
        );
        assert_eq!(Generation::of("claude-3-7-sonnet-20250219"), None);
        assert_eq!(Generation::of("claude-mythos-preview"), None);
        assert_eq!(Generation::of("gpt-5"), None);
        assert!(takes_adaptive_thinking("claude-opus-5-5"));
        assert!(takes_adaptive_thinking("claude-haiku-5-5"));
        assert!(!takes_adaptive_thinking("claude-opus-4-8"));
        assert_eq!(Effort::parse(" High"), Some(Effort::High));
        assert_eq!(Effort::parse("xhigh"), Some(Effort::Xhigh));
        assert_eq!(Effort::parse("extreme"), None);
    }
}
