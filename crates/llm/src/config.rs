//! Choosing the provider from settings (the window's, the CLI's `--provider`, `--model`,
//! `--base-url`) and the environment. Settings win over the environment, the environment over
//! defaults; everything missing or contradictory is reported at once, in one error, before any
//! request is sent.

use std::sync::Arc;

use super::anthropic::{self, Anthropic, AnthropicConfig};
use super::claude::Effort;
use super::openai::{self, OpenAi, OpenAiConfig, Service};
use super::providers::{KeyVariable, ProviderKind, WireFormat, known_ids};
use super::tool_fallbacks::{self, FallbackMemory};
use super::{Provider, RetryPolicy};
use crate::secrets::ApiKey;

/// What the person chose; `None` leaves it to the environment and the defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderSettings {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// How hard the model thinks (`--effort`, the window's setting): `low`, `medium`, `high`,
    /// `xhigh` or `max`; Claude 5 models take it as `output_config.effort`, GPT models with
    /// the GA computer tool as `reasoning.effort`. `None` is `ANTHROPIC_EFFORT` for Anthropic,
    /// else the default.
    pub effort: Option<String>,
}

/// The model's context window in tokens, as its vendor documents it; a conservative 32k for
/// models this table does not know (local ones are often served with less than they take).
pub fn context_window(model: &str) -> u64 {
    // A provider prefix (`openai/gpt-4o` on OpenRouter) does not change the model.
    let model = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let windows: [(&str, u64); 8] = [
        ("claude", 200_000),
        ("computer-use-preview", 8_192),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("qwen2.5-vl", 128_000),
    ];
    windows
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(32_768, |(_, window)| *window)
}

/// The provider a run uses, and what was chosen for it.
pub struct Chosen {
    pub provider: Arc<dyn Provider>,
    pub kind: ProviderKind,
    pub model: String,
    pub base_url: String,
}

impl std::fmt::Debug for Chosen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chosen")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// Everything wrong with the configuration, in one message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Reads one environment variable; blank counts as unset.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;
/// Reads the stored key of a provider by id (`anthropic`, `openai`, `azure`, `openrouter`);
/// an `Err` says why the store could not be read.
pub type StoredKeyLookup<'a> = &'a dyn Fn(&str) -> Result<Option<String>, String>;

/// The process environment, for [`choose`] (key variables as `key_guard` keeps them).
pub fn process_env(name: &str) -> Option<String> {
    deskhand_host::key_guard::env_var(name)
}

/// Picks and builds the provider. The key comes from the provider's variable, else from the
/// store (asked only then, since a keyring can be slow).
pub fn choose(
    settings: &ProviderSettings,
    env: EnvLookup<'_>,
    stored_key: StoredKeyLookup<'_>,
    retry: RetryPolicy,
) -> Result<Chosen, ConfigError> {
    let var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let setting = |value: &Option<String>| {
        value
            .as_ref()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let kind = kind_of(setting(&settings.provider), &var)?;
    let mut problems = Vec::new();

    let record = kind.record();
    let model = setting(&settings.model)
        .or_else(|| record.model_variables.iter().find_map(|name| var(name)))
        .or_else(|| record.default_model.map(str::to_string));
    let model = model.unwrap_or_else(|| {
        problems.push(match kind {
            ProviderKind::Azure => {
                "set AZURE_OPENAI_DEPLOYMENT (or --model) to the deployment to use".to_string()
            }
            _ => "name the model the server serves with --model or OPENAI_MODEL".to_string(),
        });
        String::new()
    });

    let base_url = setting(&settings.base_url)
        .or_else(|| record.base_url_variable.and_then(&var))
        .or_else(|| record.default_base_url.map(str::to_string));
    let base_url = base_url.unwrap_or_else(|| {
        problems.push(match kind {
            ProviderKind::Azure => {
                "set AZURE_OPENAI_ENDPOINT (or --base-url) to the resource's endpoint, e.g. \
                 https://NAME.openai.azure.com"
                    .to_string()
            }
            _ => "set the server's base URL with --base-url or OPENAI_BASE_URL, e.g. \
                  http://localhost:8000/v1"
                .to_string(),
        });
        String::new()
    });
    if !base_url.is_empty() {
        problems.extend(base_url_problem(kind, &base_url));
    }
    problems.extend(model_problem(kind, &model, &base_url));

    let (effort_text, effort_source) = match setting(&settings.effort) {
        Some(text) => (Some(text), "--effort"),
        None if kind == ProviderKind::Anthropic => (var("ANTHROPIC_EFFORT"), "ANTHROPIC_EFFORT"),
        None => (None, ""),
    };
    let effort = effort_text.and_then(|text| {
        let effort = Effort::parse(&text);
        if effort.is_none() {
            problems.push(format!(
                "{effort_source} is {text:?}: use low, medium, high, xhigh or max"
            ));
        }
        effort
    });

    let api_key = match record.key {
        KeyVariable::Optional(variable) => var(variable).and_then(|key| ApiKey::new(key).ok()),
        KeyVariable::Required(variable) => {
            let key = match var(variable) {
                Some(key) => Ok(Some(key)),
                None => stored_key(kind.id()),
            };
            match key.map(|key| key.and_then(|key| ApiKey::new(key).ok())) {
                Ok(Some(key)) => Some(key),
                Ok(None) => {
                    problems.push(format!(
                        "no API key: set {variable} or store one with `deskhand key set {}`",
                        kind.id()
                    ));
                    None
                }
                Err(why) => {
                    problems.push(format!(
                        "no API key: {variable} is not set and the stored key cannot be read ({why})"
                    ));
                    None
                }
            }
        }
    };

    if !problems.is_empty() {
        return Err(ConfigError(format!(
            "cannot use {}: {}",
            kind.id(),
            problems.join("; ")
        )));
    }

    let provider: Arc<dyn Provider> = match record.wire {
        WireFormat::AnthropicMessages => Arc::new(
            Anthropic::new(AnthropicConfig {
                api_key: api_key
                    .ok_or_else(|| ConfigError(format!("cannot use {}: no API key", kind.id())))?,
                base_url: base_url.clone(),
                retry,
                effort,
                fallbacks: FallbackMemory::in_file(
                    deskhand_host::paths::config_dir().join(tool_fallbacks::FILE_NAME),
                ),
            })
            .map_err(|e| ConfigError(e.to_string()))?,
        ),
        WireFormat::ChatCompletions => {
            let service = match kind {
                ProviderKind::OpenAi => Service::OpenAi,
                ProviderKind::OpenRouter => Service::OpenRouter,
                ProviderKind::Azure => Service::Azure {
                    deployment: var("AZURE_OPENAI_DEPLOYMENT").unwrap_or_else(|| model.clone()),
                    api_version: var("AZURE_OPENAI_API_VERSION")
                        .unwrap_or_else(|| openai::AZURE_API_VERSION.to_string()),
                },
                _ => Service::Compatible,
            };
            Arc::new(
                OpenAi::new(OpenAiConfig {
                    service,
                    base_url: base_url.clone(),
                    api_key,
                    retry,
                    effort,
                })
                .map_err(|e| ConfigError(e.to_string()))?,
            )
        }
    };
    Ok(Chosen {
        provider,
        kind,
        model,
        base_url,
    })
}

/// The provider named in settings or `LLM_PROVIDER`; without either, Anthropic if its key is
/// set, else the one provider whose variables are set.
fn kind_of(
    setting: Option<String>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<ProviderKind, ConfigError> {
    if let Some(name) = setting {
        return ProviderKind::parse(&name).ok_or_else(|| {
            ConfigError(format!(
                "unknown provider `{name}`; the providers are: {}",
                known_ids()
            ))
        });
    }
    if let Some(name) = var("LLM_PROVIDER") {
        return ProviderKind::parse(&name).ok_or_else(|| {
            ConfigError(format!(
                "LLM_PROVIDER={name} is not a provider; the providers are: {}",
                known_ids()
            ))
        });
    }
    if var("ANTHROPIC_API_KEY").is_some() {
        return Ok(ProviderKind::Anthropic);
    }
    let openai_kind = match var("OPENAI_BASE_URL") {
        Some(url) if !url.starts_with(openai::OPENAI_BASE_URL) => ProviderKind::Compatible,
        _ => ProviderKind::OpenAi,
    };
    let candidates: Vec<(ProviderKind, &str)> = [
        (openai_kind, "OPENAI_API_KEY"),
        (openai_kind, "OPENAI_BASE_URL"),
        (ProviderKind::Azure, "AZURE_OPENAI_API_KEY"),
        (ProviderKind::Azure, "AZURE_OPENAI_ENDPOINT"),
        (ProviderKind::OpenRouter, "OPENROUTER_API_KEY"),
    ]
    .into_iter()
    .filter(|(_, variable)| var(variable).is_some())
    .collect();
    let mut kinds: Vec<ProviderKind> = candidates.iter().map(|(kind, _)| *kind).collect();
    kinds.dedup();
    match kinds.as_slice() {
        [] => Ok(ProviderKind::Anthropic),
        [kind] => Ok(*kind),
        _ => {
            let variables: Vec<&str> = candidates.iter().map(|(_, v)| *v).collect();
            Err(ConfigError(format!(
                "several providers are configured ({}): choose one with --provider or \
                 LLM_PROVIDER ({})",
                variables.join(", "),
                known_ids()
            )))
        }
    }
}

/// A base URL that cannot be right for the provider: not HTTP, a full endpoint where a base
/// is expected (a common paste), or plain `http://` to another machine for a provider with a
/// key, which would send the key across the network in clear text. The one rule for the
/// CLI (`--base-url`, the variables) and the window's settings.
pub fn base_url_problem(kind: ProviderKind, url: &str) -> Option<String> {
    let trimmed = url.trim_end_matches('/');
    if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
        return Some(format!("`{url}` is not an http:// or https:// URL"));
    }
    if let Some(variable) = kind.key_variable()
        && trimmed.starts_with("http://")
        && !is_loopback(url)
    {
        return Some(format!(
            "`{url}` is plain http:// to another machine, which would send the {} key \
             ({variable}) unencrypted; use https://, or http:// to this machine only \
             (localhost, 127.0.0.0/8, [::1])",
            kind.name()
        ));
    }
    match kind {
        ProviderKind::Anthropic if trimmed.ends_with("/v1") || trimmed.ends_with("/messages") => {
            Some(format!(
                "the Anthropic base URL is the host without the path (e.g. \
                 https://api.anthropic.com), not `{url}`"
            ))
        }
        ProviderKind::Azure if trimmed.contains("/openai/") || trimmed.contains('?') => {
            Some(format!(
                "the Azure endpoint is the resource's address only (e.g. \
                 https://NAME.openai.azure.com); the deployment and API version go in \
                 AZURE_OPENAI_DEPLOYMENT and AZURE_OPENAI_API_VERSION, not in `{url}`"
            ))
        }
        _ if kind != ProviderKind::Anthropic && trimmed.ends_with("/chat/completions") => {
            Some(format!(
                "the base URL ends before /chat/completions (e.g. http://localhost:8000/v1), \
                 not `{url}`"
            ))
        }
        _ => None,
    }
}

/// Whether `url`'s host is this machine: `localhost`, 127.0.0.0/8 or `[::1]`, and nothing
/// that only looks like them (`127.0.0.1.example.com`; in `http://127.0.0.1@example.com`
/// the host is `example.com`).
fn is_loopback(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    // The parser has already turned every spelling of an address into its usual form.
    let host = parsed.host_str().unwrap_or_default();
    let address = host.trim_start_matches('[').trim_end_matches(']');
    match address.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

/// A model that the chosen service cannot serve under that name.
fn model_problem(kind: ProviderKind, model: &str, base_url: &str) -> Option<String> {
    if model.is_empty() {
        return None;
    }
    let official = |default: &str| base_url.trim_end_matches('/') == default;
    match kind {
        ProviderKind::Anthropic
            if official(anthropic::DEFAULT_BASE_URL) && !model.starts_with("claude") =>
        {
            Some(format!(
                "`{model}` is not a Claude model; choose its provider with --provider or \
                 LLM_PROVIDER"
            ))
        }
        ProviderKind::OpenAi
            if official(openai::OPENAI_BASE_URL) && model.starts_with("claude") =>
        {
            Some(format!(
                "OpenAI does not serve `{model}`; use --provider anthropic, or openrouter with \
                 anthropic/{model}"
            ))
        }
        ProviderKind::OpenRouter
            if official(openai::OPENROUTER_BASE_URL) && !model.contains('/') =>
        {
            Some(format!(
                "OpenRouter models are named vendor/model (e.g. anthropic/claude-sonnet-4.5), \
                 not `{model}`"
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn choose_with(
        settings: ProviderSettings,
        env: &[(&str, &str)],
        stored: Result<Option<String>, String>,
    ) -> Result<Chosen, ConfigError> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        choose(
            &settings,
            &|name| env.get(name).cloned(),
            &|_| stored.clone(),
            RetryPolicy::default(),
        )
    }

    fn flags(provider: &str) -> ProviderSettings {
        ProviderSettings {
            provider: Some(provider.into()),
            ..ProviderSettings::default()
        }
    }

    #[test]
    fn anthropic_by_default_and_the_one_configured_provider_otherwise() {
        let chosen = choose_with(
            ProviderSettings::default(),
            &[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "o")],
            Ok(None),
        )
        .unwrap();
        assert_eq!(chosen.kind, ProviderKind::Anthropic);
        assert_eq!(chosen.model, anthropic::DEFAULT_MODEL);
        assert_eq!(chosen.provider.name(), "Anthropic");

        let chosen = choose_with(
            ProviderSettings::default(),
            &[("OPENROUTER_API_KEY", "r")],
            Ok(None),
        )
        .unwrap();
        assert_eq!(chosen.kind, ProviderKind::OpenRouter);
        assert_eq!(chosen.base_url, openai::OPENROUTER_BASE_URL);
        assert_eq!(chosen.provider.name(), "OpenRouter");

        let chosen = choose_with(
            ProviderSettings::default(),
            &[
                ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
                ("OPENAI_MODEL", "qwen2.5-vl"),
            ],
            Ok(None),
        )
        .unwrap();
        assert_eq!(chosen.kind, ProviderKind::Compatible);

        let error = choose_with(
            ProviderSettings::default(),
            &[("OPENAI_API_KEY", "o"), ("OPENROUTER_API_KEY", "r")],
            Ok(None),
        )
        .unwrap_err();
        assert!(error.0.contains("several providers"), "{error}");
    }

    #[test]
    fn settings_win_over_the_environment() {
        let chosen = choose_with(
            ProviderSettings {
                provider: Some("openai".into()),
                model: Some("gpt-4o".into()),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                effort: None,
            },
            &[
                ("LLM_PROVIDER", "anthropic"),
                ("OPENAI_API_KEY", "o"),
                ("OPENAI_MODEL", "gpt-4.1"),
                ("OPENAI_BASE_URL", "http://elsewhere/v1"),
            ],
            Ok(None),
        )
        .unwrap();
        assert_eq!(
            (chosen.kind, chosen.model.as_str(), chosen.base_url.as_str()),
            (ProviderKind::OpenAi, "gpt-4o", "http://127.0.0.1:9/v1")
        );
    }

    #[test]
    fn anthropic_reads_its_model_and_base_url_from_the_environment() {
        let env = [
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_MODEL", "claude-opus-4-5"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
        ];
        let chosen = choose_with(ProviderSettings::default(), &env, Ok(None)).unwrap();
        assert_eq!(
            (chosen.kind, chosen.model.as_str(), chosen.base_url.as_str()),
            (
                ProviderKind::Anthropic,
                "claude-opus-4-5",
                "http://127.0.0.1:9"
            )
        );
        let chosen = choose_with(
            ProviderSettings {
                model: Some("claude-haiku-4-5".into()),
                ..ProviderSettings::default()
            },
            &env,
            Ok(None),
        )
        .unwrap();
        assert_eq!(chosen.model, "claude-haiku-4-5");
    }

    #[test]
    fn the_stored_key_is_used_when_the_variable_is_unset() {
        let chosen = choose_with(flags("openai"), &[], Ok(Some("stored".into()))).unwrap();
        assert_eq!(chosen.kind, ProviderKind::OpenAi);
        let error = choose_with(flags("openai"), &[], Err("no keyring".into())).unwrap_err();
        assert!(error.0.contains("OPENAI_API_KEY") && error.0.contains("no keyring"));
    }

    #[test]
    fn every_problem_is_reported_in_one_error() {
        let error = choose_with(flags("azure"), &[], Ok(None)).unwrap_err();
        for needle in [
            "AZURE_OPENAI_DEPLOYMENT",
            "AZURE_OPENAI_ENDPOINT",
            "AZURE_OPENAI_API_KEY",
        ] {
            assert!(error.0.contains(needle), "{error}");
        }
        let error = choose_with(flags("compatible"), &[], Ok(None)).unwrap_err();
        assert!(error.0.contains("OPENAI_BASE_URL") && error.0.contains("OPENAI_MODEL"));
        let error = choose_with(flags("gemini"), &[], Ok(None)).unwrap_err();
        assert!(error.0.contains("unknown provider `gemini`") && error.0.contains("openrouter"));
    }

    #[test]
    fn contradictions_are_errors() {
        type Case<'a> = (ProviderSettings, &'a [(&'a str, &'a str)], &'a str);
        let cases: [Case; 5] = [
            (
                ProviderSettings {
                    model: Some("gpt-4o".into()),
                    ..ProviderSettings::default()
                },
                &[("ANTHROPIC_API_KEY", "k")],
                "not a Claude model",
            ),
            (
                ProviderSettings {
                    model: Some("claude-sonnet-4-5".into()),
                    ..flags("openai")
                },
                &[("OPENAI_API_KEY", "k")],
                "OpenAI does not serve",
            ),
            (
                ProviderSettings {
                    model: Some("gpt-4o".into()),
                    ..flags("openrouter")
                },
                &[("OPENROUTER_API_KEY", "k")],
                "vendor/model",
            ),
            (
                flags("azure"),
                &[
                    ("AZURE_OPENAI_API_KEY", "k"),
                    ("AZURE_OPENAI_DEPLOYMENT", "d"),
                    (
                        "AZURE_OPENAI_ENDPOINT",
                        "https://x.openai.azure.com/openai/deployments/d/chat/completions",
                    ),
                ],
                "resource's address only",
            ),
            (
                flags("vllm"),
                &[
                    ("OPENAI_MODEL", "m"),
                    ("OPENAI_BASE_URL", "localhost:8000/v1"),
                ],
                "not an http",
            ),
        ];
        for (settings, env, needle) in cases {
            let error = choose_with(settings, env, Ok(None)).unwrap_err();
            assert!(error.0.contains(needle), "{error}");
        }
    }

    /// A key never crosses the network in clear text: plain http:// is refused for every
    /// provider with a key unless the host is this machine, however the host is spelled.
    #[test]
    fn a_keyed_provider_refuses_plain_http_to_another_machine() {
        for url in [
            "http://example.com/v1",
            "http://10.0.0.5:8000/v1",
            "http://127.0.0.1.example.com/v1",
            "http://localhost.example.com/v1",
            "http://127.0.0.1@example.com/v1",
            "http://[::2]/v1",
        ] {
            for kind in [ProviderKind::OpenAi, ProviderKind::OpenRouter] {
                let problem = base_url_problem(kind, url).unwrap_or_default();
                assert!(problem.contains("plain http://"), "{url}: {problem}");
            }
            assert_eq!(base_url_problem(ProviderKind::Ollama, url), None, "{url}");
        }
        for url in [
            "https://example.com/v1",
            "http://localhost:8000/v1",
            "http://LOCALHOST/v1",
            "http://127.0.0.1:9/v1",
            "http://127.9.8.7/v1",
            "http://[::1]:8080/v1",
            "http://0x7f.1/v1",
        ] {
            assert_eq!(base_url_problem(ProviderKind::OpenAi, url), None, "{url}");
        }
        let error = choose_with(
            ProviderSettings {
                base_url: Some("http://api.example.com".into()),
                effort: None,
                ..flags("anthropic")
            },
            &[("ANTHROPIC_API_KEY", "k")],
            Ok(None),
        )
        .unwrap_err();
        assert!(error.0.contains("ANTHROPIC_API_KEY"), "{error}");
    }

    #[test]
    fn context_windows_by_model() {
        assert_eq!(context_window("claude-sonnet-4-5"), 200_000);
        assert_eq!(context_window("openai/gpt-4o-mini"), 128_000);
        assert_eq!(context_window("gpt-4.1-mini"), 1_047_576);
        assert_eq!(context_window("Qwen/Qwen2.5-VL-7B-Instruct"), 128_000);
        assert_eq!(context_window("llava:13b"), 32_768);
        assert_eq!(context_window("computer-use-preview-2025-03-11"), 8_192);
    }

    #[test]
    fn local_presets_need_a_model_but_no_key() {
        let chosen = choose_with(
            ProviderSettings {
                model: Some("qwen2.5vl:7b".into()),
                ..flags("ollama")
            },
            &[],
            Err("never asked".into()),
        )
        .unwrap();
        assert_eq!(chosen.base_url, "http://localhost:11434/v1");
        assert_eq!(chosen.provider.name(), "OpenAI-compatible server");
    }
}
