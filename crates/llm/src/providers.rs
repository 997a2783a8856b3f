//! Every provider Deskhand talks to, one record each: the single place a provider is added.
//! Choosing a provider (`config`), the keyring (`secrets`), the CLI and the window's settings
//! all read this table.

/// Anthropic's Messages API.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// A current Claude model that takes the GA computer toolset (`computer_toolset_20260801`),
/// at an official price: the Claude 5 generation's Sonnet (docs/providers.md says why).
pub const DEFAULT_MODEL: &str = "claude-sonnet-5-5";
/// A current GPT model that takes the Responses API's GA `computer` tool.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-5.4";
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    Anthropic,
    OpenAi,
    Azure,
    OpenRouter,
    Ollama,
    LmStudio,
    Vllm,
    /// Any other server that speaks Chat Completions, at a base URL.
    Compatible,
}

/// How requests to a provider are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    /// Anthropic's Messages API (`llm::anthropic`).
    AnthropicMessages,
    /// OpenAI's Chat Completions (`llm::openai`).
    ChatCompletions,
}

/// Where a provider's API key comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyVariable {
    /// A key is needed: from this variable, else from the keyring under the provider's id.
    Required(&'static str),
    /// A local server may take a key from this variable; none is needed.
    Optional(&'static str),
}

/// One provider, as every part of Deskhand knows it.
#[derive(Debug)]
pub struct ProviderRecord {
    pub kind: ProviderKind,
    /// The name in settings, on the command line, in `LLM_PROVIDER`, and (for those with a
    /// key) of the keyring entry.
    pub id: &'static str,
    /// Other spellings `--provider` and `LLM_PROVIDER` accept.
    pub aliases: &'static [&'static str],
    /// What the window's settings call it.
    pub name: &'static str,
    pub key: KeyVariable,
    /// Variables naming the model, the first one set winning.
    pub model_variables: &'static [&'static str],
    /// The variable naming the base URL, for those that have one.
    pub base_url_variable: Option<&'static str>,
    pub default_model: Option<&'static str>,
    /// Where the service is unless told otherwise.
    pub default_base_url: Option<&'static str>,
    pub wire: WireFormat,
}

/// Every provider, in the order the settings list them.
pub const PROVIDERS: [ProviderRecord; 8] = [
    ProviderRecord {
        kind: ProviderKind::Anthropic,
        id: "anthropic",
        aliases: &[],
        name: "Anthropic",
        key: KeyVariable::Required("ANTHROPIC_API_KEY"),
        model_variables: &["ANTHROPIC_MODEL"],
        base_url_variable: Some("ANTHROPIC_BASE_URL"),
        default_model: Some(DEFAULT_MODEL),
        default_base_url: Some(ANTHROPIC_BASE_URL),
        wire: WireFormat::AnthropicMessages,
    },
    ProviderRecord {
        kind: ProviderKind::OpenAi,
        id: "openai",
        aliases: &[],
        name: "OpenAI",
        key: KeyVariable::Required("OPENAI_API_KEY"),
        model_variables: &["OPENAI_MODEL"],
        base_url_variable: Some("OPENAI_BASE_URL"),
        default_model: Some(DEFAULT_OPENAI_MODEL),
        default_base_url: Some(OPENAI_BASE_URL),
        wire: WireFormat::ChatCompletions,
    },
    ProviderRecord {
        kind: ProviderKind::Azure,
        id: "azure",
        aliases: &["azure-openai", "azure_openai"],
        name: "Azure OpenAI",
        key: KeyVariable::Required("AZURE_OPENAI_API_KEY"),
        model_variables: &["OPENAI_MODEL", "AZURE_OPENAI_DEPLOYMENT"],
        base_url_variable: Some("AZURE_OPENAI_ENDPOINT"),
        default_model: None,
        default_base_url: None,
        wire: WireFormat::ChatCompletions,
    },
    ProviderRecord {
        kind: ProviderKind::OpenRouter,
        id: "openrouter",
        aliases: &[],
        name: "OpenRouter",
        key: KeyVariable::Required("OPENROUTER_API_KEY"),
        model_variables: &["OPENAI_MODEL"],
        base_url_variable: None,
        default_model: Some("anthropic/claude-sonnet-4.5"),
        default_base_url: Some(OPENROUTER_BASE_URL),
        wire: WireFormat::ChatCompletions,
    },
    ProviderRecord {
        kind: ProviderKind::Ollama,
        id: "ollama",
        aliases: &[],
        name: "Ollama (local)",
        key: KeyVariable::Optional("OPENAI_API_KEY"),
        model_variables: &["OPENAI_MODEL"],
        base_url_variable: Some("OPENAI_BASE_URL"),
        default_model: None,
        default_base_url: Some("http://localhost:11434/v1"),
        wire: WireFormat::ChatCompletions,
    },
    ProviderRecord {
        kind: ProviderKind::LmStudio,
        id: "lmstudio",
        aliases: &["lm-studio", "lm_studio"],
        name: "LM Studio (local)",
        key: KeyVariable::Optional("OPENAI_API_KEY"),
        model_variables: &["OPENAI_MODEL"],
        base_url_variable: Some("OPENAI_BASE_URL"),
        default_model: None,
        default_base_url: Some("http://localhost:1234/v1"),
        wire: WireFormat::ChatCompletions,
    },
    ProviderRecord {
        kind: ProviderKind::Vllm,
        id: "vllm",
        aliases: &[],
        name: "vLLM (local)",
        key: KeyVariable::Optional("OPENAI_API_KEY"),
        model_variables: &["OPENAI_MODEL"],
        base_url_variable: Some("OPENAI_BASE_URL"),
        default_model: None,
        default_base_url: Some("http://localhost:8000/v1"),
        wire: WireFormat::ChatCompletions,
    },
    ProviderRecord {
        kind: ProviderKind::Compatible,
        id: "compatible",
        aliases: &["local", "openai-compatible"],
        name: "Other OpenAI-compatible server (base URL)",
        key: KeyVariable::Optional("OPENAI_API_KEY"),
        model_variables: &["OPENAI_MODEL"],
        base_url_variable: Some("OPENAI_BASE_URL"),
        default_model: None,
        default_base_url: None,
        wire: WireFormat::ChatCompletions,
    },
];

// The table is in the enum's order, so a kind's record is found by its number; checked as
// the crate compiles.
const _: () = {
    let mut i = 0;
    while i < PROVIDERS.len() {
        assert!(
            PROVIDERS[i].kind as usize == i,
            "PROVIDERS must follow ProviderKind's order"
        );
        i += 1;
    }
};

impl ProviderKind {
    pub const ALL: [ProviderKind; PROVIDERS.len()] = {
        let mut all = [ProviderKind::Anthropic; PROVIDERS.len()];
        let mut i = 0;
        while i < PROVIDERS.len() {
            all[i] = PROVIDERS[i].kind;
            i += 1;
        }
        all
    };

    pub fn record(self) -> &'static ProviderRecord {
        &PROVIDERS[self as usize]
    }

    /// The kind named by `name`, its id or an alias, in any case.
    pub fn parse(name: &str) -> Option<Self> {
        let name = name.trim().to_ascii_lowercase();
        PROVIDERS
            .iter()
            .find(|record| record.id == name || record.aliases.contains(&name.as_str()))
            .map(|record| record.kind)
    }

    pub fn id(self) -> &'static str {
        self.record().id
    }

    pub fn name(self) -> &'static str {
        self.record().name
    }

    /// The variable holding its key, for those that need one; local servers do not.
    pub fn key_variable(self) -> Option<&'static str> {
        match self.record().key {
            KeyVariable::Required(variable) => Some(variable),
            KeyVariable::Optional(_) => None,
        }
    }

    pub fn default_base_url(self) -> Option<&'static str> {
        self.record().default_base_url
    }

    pub fn default_model(self) -> Option<&'static str> {
        self.record().default_model
    }
}

/// The ids, for messages that list them.
pub fn known_ids() -> String {
    PROVIDERS.map(|record| record.id).join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_one_record_and_ids_and_aliases_are_unique() {
        for kind in ProviderKind::ALL {
            assert_eq!(PROVIDERS.iter().filter(|r| r.kind == kind).count(), 1);
            assert_eq!(ProviderKind::parse(kind.id()), Some(kind));
        }
        let mut names: Vec<&str> = PROVIDERS
            .iter()
            .flat_map(|r| std::iter::once(r.id).chain(r.aliases.iter().copied()))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
        assert_eq!(
            ProviderKind::parse(" LM-Studio"),
            Some(ProviderKind::LmStudio)
        );
    }
}
