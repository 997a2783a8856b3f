//! Which version of Anthropic's computer tool a model takes.

/// `computer_20251124` (adds `zoom`) for Opus 4.5+ and Sonnet 4.6+; `computer_20250124` for
/// the other Claude 4 models and anything not recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolVersion {
    V20250124,
    V20251124,
}

impl ToolVersion {
    /// Reads the family and version from ids such as `claude-opus-4-5-20251101`,
    /// `claude-sonnet-4-6` or `anthropic/claude-opus-4.5` (a provider prefix is ignored).
    pub fn for_model(model: &str) -> Self {
        let model = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let parse = |family: &str| -> Option<(u32, u32)> {
            let rest = model
                .strip_prefix("claude-")?
                .strip_prefix(family)?
                .strip_prefix('-')?;
            let mut parts = rest.split(['-', '.']);
            let major = parts.next()?.parse().ok()?;
            // A date (8 digits) after the major version is not a minor version.
            let minor = parts
                .next()
                .and_then(|p| if p.len() <= 2 { p.parse().ok() } else { None });
            Some((major, minor.unwrap_or(0)))
        };
        let newer = match (parse("opus"), parse("sonnet"), parse("haiku")) {
            (Some(v), _, _) => v >= (4, 5),
            (_, Some(v), _) => v >= (4, 6),
            (_, _, Some(v)) => v >= (5, 0),
            _ => false,
        };
        if newer {
            Self::V20251124
        } else {
            Self::V20250124
        }
    }

    pub fn tool_type(self) -> &'static str {
        match self {
            Self::V20250124 => "computer_20250124",
            Self::V20251124 => "computer_20251124",
        }
    }

    pub fn beta(self) -> &'static str {
        match self {
            Self::V20250124 => "computer-use-2025-01-24",
            Self::V20251124 => "computer-use-2025-11-24",
        }
    }

    pub fn has_zoom(self) -> bool {
        self == Self::V20251124
    }
}

#[cfg(test)]
mod tests {
    use super::ToolVersion::{self, *};

    #[test]
    fn newer_models_get_the_zoom_version() {
        for (model, version) in [
            ("claude-opus-4-5-20251101", V20251124),
            ("claude-opus-4-5", V20251124),
            ("claude-opus-4-6", V20251124),
            ("anthropic/claude-opus-4.5", V20251124),
            ("claude-sonnet-4-6", V20251124),
            ("claude-opus-5", V20251124),
            ("claude-sonnet-5-20270101", V20251124),
            ("claude-sonnet-4-5", V20250124),
            ("claude-sonnet-4-5-20250929", V20250124),
            ("claude-sonnet-4-20250514", V20250124),
            ("claude-opus-4-1", V20250124),
            ("claude-opus-4-20250514", V20250124),
            ("claude-haiku-4-5", V20250124),
            ("claude-3-7-sonnet-20250219", V20250124),
            ("qwen2.5-vl", V20250124),
            ("", V20250124),
        ] {
            assert_eq!(ToolVersion::for_model(model), version, "{model}");
        }
    }
}
