//! The window's settings: one small JSON file in the config directory
//! (`~/.config/deskhand/settings.json`, `$DESKHAND_CONFIG_DIR`), written atomically. Keys are
//! never in it; they live in the keyring.

use std::path::{Path, PathBuf};

use deskhand_engine::agent::{ApprovalPolicy, Budget, DEFAULT_MAX_TURNS};
use deskhand_engine::llm::claude::Effort;
use deskhand_engine::llm::config::base_url_problem;
use deskhand_engine::llm::providers::{self, ProviderKind};
use deskhand_engine::tools::computer::scaling::{MAX_LONG_EDGE, MAX_PIXELS, Size};
use serde::{Deserialize, Serialize};

use crate::error::{IpcError, IpcResult};

/// The most turns a run may be given from the window.
pub const MAX_TURNS_LIMIT: u32 = 1000;
const MIN_SIDE: u32 = 200;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Settings {
    /// A `ProviderKind` id: anthropic, openai, azure, openrouter, ollama, lmstudio, vllm or
    /// compatible.
    pub provider: String,
    /// Empty: the provider's default (or `ANTHROPIC_MODEL` / `OPENAI_MODEL`).
    pub model: String,
    /// `None`: the provider's own (or its environment variable).
    pub base_url: Option<String>,
    /// The mode new runs start in; the window can switch it mid-run.
    pub approval_mode: ApprovalPolicy,
    pub max_turns: u32,
    /// A monitor's index in `list_monitors`, as `deskhand monitors` numbers them; `None` is
    /// the primary monitor.
    pub monitor: Option<usize>,
    /// The largest screenshot the model sees (the monitor's aspect ratio is kept); `None`
    /// picks the reference sizes (1024x768, 1280x800, 1366x768) by aspect ratio.
    pub screenshot_size: Option<Size>,
    /// How hard the model thinks (`low`, `medium`, `high`, `xhigh`, `max`), as `--effort`;
    /// `None` is the provider's default. Absent in settings written before it existed.
    #[serde(default)]
    pub effort: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            provider: std::env::var("LLM_PROVIDER")
                .ok()
                .and_then(|name| ProviderKind::parse(&name))
                .unwrap_or(ProviderKind::Anthropic)
                .id()
                .into(),
            model: String::new(),
            base_url: None,
            approval_mode: ApprovalPolicy::Ask,
            max_turns: DEFAULT_MAX_TURNS,
            monitor: None,
            screenshot_size: None,
            effort: None,
        }
    }
}

/// What the settings dialog edits: the window's settings, and the run budget and
/// set-of-marks that live in the store beside the history, shared with `deskhand settings`
/// and `deskhand serve`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct WindowSettings {
    #[serde(flatten)]
    pub settings: Settings,
    /// US dollars a run may cost; `None` is no limit.
    pub max_cost_usd: Option<f64>,
    /// Tokens a run may use; `None` is no limit.
    pub max_tokens: Option<u64>,
    /// Numbered marks on the computer tool's screenshots (`deskhand_engine::elements::marks`).
    pub set_of_marks: bool,
}

impl WindowSettings {
    pub fn budget(&self) -> IpcResult<Budget> {
        if self
            .max_cost_usd
            .is_some_and(|usd| !(usd > 0.0 && usd.is_finite()))
        {
            return Err(IpcError::invalid(
                "the cost limit must be a positive number of US dollars (or empty for none)",
            ));
        }
        if self.max_tokens == Some(0) {
            return Err(IpcError::invalid(
                "the token limit must be a positive whole number (or empty for none)",
            ));
        }
        Ok(Budget {
            max_cost_usd: self.max_cost_usd,
            max_tokens: self.max_tokens,
        })
    }
}

/// A provider the settings offer, as the core knows it.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
pub struct ProviderInfo {
    pub id: &'static str,
    pub name: &'static str,
    /// Local servers need no key.
    pub needs_key: bool,
    pub default_model: Option<&'static str>,
    pub default_base_url: Option<&'static str>,
}

/// Every provider the core (and so the CLI) can talk to.
pub fn providers() -> Vec<ProviderInfo> {
    providers::PROVIDERS
        .iter()
        .map(|record| ProviderInfo {
            id: record.id,
            name: record.name,
            needs_key: record.kind.key_variable().is_some(),
            default_model: record.default_model,
            default_base_url: record.default_base_url,
        })
        .collect()
}

impl Settings {
    /// Checks settings from the window; the error names the field.
    pub fn validate(&self) -> IpcResult<()> {
        if ProviderKind::parse(&self.provider).map(ProviderKind::id) != Some(self.provider.as_str())
        {
            return Err(IpcError::invalid(format!(
                "unknown provider `{}`; the known providers are: {}",
                self.provider,
                providers::known_ids()
            )));
        }
        if self.model.len() > 200 {
            return Err(IpcError::invalid(
                "the model name must be at most 200 characters",
            ));
        }
        // The core's rule, the CLI's too: HTTP only, and a key over plain http:// to this
        // machine only.
        if let (Some(url), Some(kind)) = (&self.base_url, ProviderKind::parse(&self.provider))
            && let Some(problem) = base_url_problem(kind, url)
        {
            return Err(IpcError::invalid(format!("the base URL: {problem}")));
        }
        if let Some(effort) = &self.effort
            && Effort::parse(effort).is_none()
        {
            return Err(IpcError::invalid(format!(
                "the effort `{effort}` is not one of low, medium, high, xhigh or max"
            )));
        }
        if !(1..=MAX_TURNS_LIMIT).contains(&self.max_turns) {
            return Err(IpcError::invalid(format!(
                "the turn limit must be between 1 and {MAX_TURNS_LIMIT}"
            )));
        }
        if let Some(Size { width, height }) = self.screenshot_size
            && (width.min(height) < MIN_SIDE
                || width.max(height) > MAX_LONG_EDGE
                || width * height > MAX_PIXELS)
        {
            return Err(IpcError::invalid(format!(
                "a screenshot size of {width}x{height} is outside what the API takes unscaled \
                 (at least {MIN_SIDE} px a side, at most {MAX_LONG_EDGE} px on the long edge \
                 and {MAX_PIXELS} pixels)"
            )));
        }
        Ok(())
    }
}

/// Where the settings live, and reading and writing them.
pub struct SettingsFile {
    path: PathBuf,
}

impl SettingsFile {
    pub fn new(config_dir: &Path) -> Self {
        Self {
            path: config_dir.join("settings.json"),
        }
    }

    /// The stored settings, the defaults when there are none, or an error naming the file
    /// when it cannot be read (it is left as it is).
    pub fn load(&self) -> Result<Settings, String> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice::<Settings>(&bytes)
                .map_err(|e| format!("{} is not valid settings: {e}", self.path.display()))
                .and_then(|s| s.validate().map(|()| s).map_err(|e| e.message)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(format!("cannot read {}: {e}", self.path.display())),
        }
    }

    /// Writes through a temporary file and a rename, so a crash never leaves half a file. A
    /// file that could not be read is kept beside it as `settings.json.bad`.
    pub fn save(&self, settings: &Settings) -> IpcResult<()> {
        let write = || -> std::io::Result<()> {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            if self.path.exists() && self.load().is_err() {
                std::fs::rename(&self.path, self.path.with_extension("json.bad"))?;
            }
            let temporary = self.path.with_extension("json.tmp");
            let json = serde_json::to_vec_pretty(settings).map_err(std::io::Error::other)?;
            std::fs::write(&temporary, json)?;
            std::fs::rename(&temporary, &self.path)
        };
        write().map_err(|e| IpcError::internal(format!("cannot save {}: {e}", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_problem() {
        assert!(Settings::default().validate().is_ok());
        let bad = |change: fn(&mut Settings)| {
            let mut s = Settings::default();
            change(&mut s);
            s.validate().unwrap_err().message
        };
        assert!(bad(|s| s.provider = "nope".into()).contains("unknown provider `nope`"));
        assert!(bad(|s| s.provider = "lm-studio".into()).contains("unknown provider"));
        assert!(bad(|s| s.model = "m".repeat(201)).contains("model"));
        assert!(bad(|s| s.base_url = Some("localhost:1234".into())).contains("http://"));
        // The window's settings path refuses what the CLI refuses: a key over plain http://
        // to another machine.
        assert!(bad(|s| s.base_url = Some("http://example.com".into())).contains("plain http://"));
        let local = |provider: &str, url: &str| Settings {
            provider: provider.into(),
            base_url: Some(url.into()),
            ..Settings::default()
        };
        assert!(
            local("openai", "http://127.0.0.1:8000/v1")
                .validate()
                .is_ok()
        );
        assert!(local("vllm", "http://10.0.0.5:8000/v1").validate().is_ok());
        assert!(local("openai", "https://example.com/v1").validate().is_ok());
        assert!(bad(|s| s.max_turns = 0).contains("turn limit"));
        assert!(bad(|s| s.screenshot_size = Some(Size::new(1920, 800))).contains("1920x800"));
        let budget = |max_cost_usd, max_tokens| {
            WindowSettings {
                settings: Settings::default(),
                max_cost_usd,
                max_tokens,
                set_of_marks: false,
            }
            .budget()
        };
        assert!(budget(Some(-1.0), None).is_err());
        assert!(budget(None, Some(0)).is_err());
        assert_eq!(budget(Some(0.5), None).unwrap().max_cost_usd, Some(0.5));
    }

    #[test]
    fn round_trip_and_a_corrupt_file_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = SettingsFile::new(dir.path());
        assert_eq!(file.load().unwrap(), Settings::default());
        std::fs::write(dir.path().join("settings.json"), b"{not json").unwrap();
        assert!(file.load().unwrap_err().contains("not valid settings"));
        let settings = Settings {
            max_turns: 7,
            ..Settings::default()
        };
        file.save(&settings).unwrap();
        assert_eq!(file.load().unwrap(), settings);
        assert_eq!(
            std::fs::read(dir.path().join("settings.json.bad")).unwrap(),
            b"{not json"
        );
    }
}
