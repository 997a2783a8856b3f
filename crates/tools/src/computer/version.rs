//! Which version of Anthropic's computer tool a model takes, and what to fall back to.

use deskhand_llm::claude::Generation;

/// `computer_toolset_20260801` (the GA toolset, one member tool per action, no beta) for the
/// Claude 5 generation; `computer_20251124` (adds `zoom`) for Opus 4.5+ and Sonnet 4.6+;
/// `computer_20250124` for the other Claude 4 models and anything not recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolVersion {
    V20250124,
    V20251124,
    Toolset20260801,
}

/// Models known to need an older version than their generation suggests, checked before the
/// generation rule: the first prefix that matches (ignoring case, after any `vendor/`) wins.
/// Bedrock serves the Claude 5 models under `anthropic.` / `<region>.anthropic.` ids and
/// still takes `computer_20251124`, not the toolset, which only the Claude API and Google
/// Cloud serve.
const KNOWN_OLDER: &[(&str, ToolVersion)] = &[
    ("anthropic.claude-", ToolVersion::V20251124),
    ("us.anthropic.claude-", ToolVersion::V20251124),
    ("eu.anthropic.claude-", ToolVersion::V20251124),
    ("apac.anthropic.claude-", ToolVersion::V20251124),
    ("global.anthropic.claude-", ToolVersion::V20251124),
];

impl ToolVersion {
    /// Reads the family and version from ids such as `claude-opus-4-5-20251101`,
    /// `claude-sonnet-4-6`, `claude-opus-5-5` or `anthropic/claude-opus-4.5` (a provider
    /// prefix is ignored), after the table of models known to need an older version.
    pub fn for_model(model: &str) -> Self {
        let by_generation = match Generation::of(model) {
            Some(g) if g.is_claude_5_or_later() => Self::Toolset20260801,
            Some(g) if g.family == "opus" && (g.major, g.minor) >= (4, 5) => Self::V20251124,
            Some(g) if g.family == "sonnet" && (g.major, g.minor) >= (4, 6) => Self::V20251124,
            _ => Self::V20250124,
        };
        let id = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        match KNOWN_OLDER
            .iter()
            .find(|(prefix, _)| id.starts_with(prefix))
        {
            // An older generation on such a platform still gets its own older version.
            Some((_, version)) => by_generation.min_with(*version),
            None => by_generation,
        }
    }

    fn rank(self) -> u8 {
        match self {
            Self::V20250124 => 0,
            Self::V20251124 => 1,
            Self::Toolset20260801 => 2,
        }
    }

    fn min_with(self, other: Self) -> Self {
        if self.rank() <= other.rank() {
            self
        } else {
            other
        }
    }

    /// The version to offer when an endpoint answers 400 naming this one's tool type.
    pub fn step_down(self) -> Option<Self> {
        match self {
            Self::Toolset20260801 => Some(Self::V20251124),
            Self::V20251124 => Some(Self::V20250124),
            Self::V20250124 => None,
        }
    }

    pub fn tool_type(self) -> &'static str {
        match self {
            Self::V20250124 => "computer_20250124",
            Self::V20251124 => "computer_20251124",
            Self::Toolset20260801 => "computer_toolset_20260801",
        }
    }

    /// The `anthropic-beta` the version needs; the GA toolset needs none.
    pub fn beta(self) -> Option<&'static str> {
        match self {
            Self::V20250124 => Some("computer-use-2025-01-24"),
            Self::V20251124 => Some("computer-use-2025-11-24"),
            Self::Toolset20260801 => None,
        }
    }

    pub fn has_zoom(self) -> bool {
        self != Self::V20250124
    }
}

#[cfg(test)]
mod tests {
    use super::ToolVersion::{self, *};

    #[test]
    fn each_model_gets_its_generations_version() {
        for (model, version) in [
            ("claude-opus-5-5", Toolset20260801),
            ("claude-opus-5", Toolset20260801),
            ("claude-sonnet-5", Toolset20260801),
            ("claude-sonnet-5-5", Toolset20260801),
            ("claude-haiku-5-5", Toolset20260801),
            ("claude-sonnet-5-20270101", Toolset20260801),
            ("claude-mythos-5-2", Toolset20260801),
            ("claude-fable-5", Toolset20260801),
            ("anthropic/claude-opus-5.5", Toolset20260801),
            ("claude-opus-4-5-20251101", V20251124),
            ("claude-opus-4-5", V20251124),
            ("claude-opus-4-6", V20251124),
            ("claude-opus-4-8", V20251124),
            ("anthropic/claude-opus-4.5", V20251124),
            ("claude-sonnet-4-6", V20251124),
            ("claude-sonnet-4-5", V20250124),
            ("claude-sonnet-4-5-20250929", V20250124),
            ("claude-sonnet-4-20250514", V20250124),
            ("claude-opus-4-1", V20250124),
            ("claude-opus-4-20250514", V20250124),
            ("claude-haiku-4-5", V20250124),
            ("claude-mythos-preview", V20250124),
            ("claude-3-7-sonnet-20250219", V20250124),
            ("qwen2.5-vl", V20250124),
            ("", V20250124),
        ] {
            assert_eq!(ToolVersion::for_model(model), version, "{model}");
        }
    }

    #[test]
    fn the_fallback_table_wins_over_the_generation() {
        for (model, version) in [
            ("anthropic.claude-opus-5-5-v1:0", V20251124),
            ("us.anthropic.claude-sonnet-5-v1:0", V20251124),
            ("eu.anthropic.claude-opus-4-5-20251101-v1:0", V20251124),
            ("anthropic.claude-sonnet-4-20250514-v1:0", V20250124),
        ] {
            assert_eq!(ToolVersion::for_model(model), version, "{model}");
        }
    }

    #[test]
    fn steps_down_one_version_at_a_time() {
        assert_eq!(Toolset20260801.step_down(), Some(V20251124));
        assert_eq!(V20251124.step_down(), Some(V20250124));
        assert_eq!(V20250124.step_down(), None);
        assert_eq!(Toolset20260801.beta(), None);
    }
}
