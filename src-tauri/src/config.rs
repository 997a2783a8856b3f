//! The window's settings: one small JSON file in the config directory
//! (`~/.config/deskhand/settings.json`, `$DESKHAND_CONFIG_DIR`), written atomically. Keys are
//! never in it; they live in the keyring.

use std::path::{Path, PathBuf};

use deskhand::agent::{ApprovalPolicy, DEFAULT_MAX_TURNS};
use deskhand::llm::anthropic;
use serde::{Deserialize, Serialize};

use crate::error::{IpcError, IpcResult};

/// The most turns a run may be given from the window.
pub const MAX_TURNS_LIMIT: u32 = 1000;
/// The Messages API scales larger images down itself, which moves clicks: stay within it.
const MAX_LONG_EDGE: u32 = 1568;
const MAX_PIXELS: u32 = 1_150_000;
const MIN_SIDE: u32 = 200;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenshotSize {
    pub width: u32,
    pub height: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub provider: String,
    pub model: String,
    /// The mode new runs start in; the window can switch it mid-run.
    pub approval_mode: ApprovalPolicy,
    pub max_turns: u32,
    /// A monitor id from `list_monitors`; `None` is the primary monitor.
    pub monitor: Option<String>,
    /// What the model sees: screenshots are scaled to this size.
    pub screenshot_size: ScreenshotSize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            provider: ANTHROPIC.id.into(),
            model: std::env::var("ANTHROPIC_MODEL")
                .ok()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| anthropic::DEFAULT_MODEL.into()),
            approval_mode: ApprovalPolicy::Ask,
            max_turns: DEFAULT_MAX_TURNS,
            monitor: None,
            screenshot_size: ScreenshotSize {
                width: 1280,
                height: 800,
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProviderInfo {
    pub id: &'static str,
    pub name: &'static str,
    pub models: &'static [&'static str],
}

const ANTHROPIC: ProviderInfo = ProviderInfo {
    id: "anthropic",
    name: "Anthropic",
    models: &[
        anthropic::DEFAULT_MODEL,
        "claude-opus-4-5",
        "claude-haiku-4-5",
        "claude-sonnet-4",
        "claude-opus-4-1",
    ],
};

/// The providers the core can talk to.
pub const PROVIDERS: &[ProviderInfo] = &[ANTHROPIC];

impl Settings {
    /// Checks settings from the window; the error names the field.
    pub fn validate(&self) -> IpcResult<()> {
        if !PROVIDERS.iter().any(|p| p.id == self.provider) {
            let known: Vec<&str> = PROVIDERS.iter().map(|p| p.id).collect();
            return Err(IpcError::invalid(format!(
                "unknown provider `{}`; the known providers are: {}",
                self.provider,
                known.join(", ")
            )));
        }
        let model = self.model.trim();
        if model.is_empty() || model.len() > 200 {
            return Err(IpcError::invalid(
                "the model name must be 1 to 200 characters",
            ));
        }
        if !(1..=MAX_TURNS_LIMIT).contains(&self.max_turns) {
            return Err(IpcError::invalid(format!(
                "the turn limit must be between 1 and {MAX_TURNS_LIMIT}"
            )));
        }
        let ScreenshotSize { width, height } = self.screenshot_size;
        if width.min(height) < MIN_SIDE
            || width.max(height) > MAX_LONG_EDGE
            || width * height > MAX_PIXELS
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
        assert!(bad(|s| s.model = " ".into()).contains("model"));
        assert!(bad(|s| s.max_turns = 0).contains("turn limit"));
        assert!(bad(|s| s.screenshot_size.width = 1920).contains("1920x800"));
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
