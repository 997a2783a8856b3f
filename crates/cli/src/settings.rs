//! `deskhand settings`: the stored settings every run reads (the run budget, the person's own
//! secret places), the same ones the window's settings change.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use deskhand_engine::agent::stall::StallPolicy;
use deskhand_engine::agent::{Budget, SecretPlaces};
use deskhand_engine::delegate::{self, RemoteTarget};
use deskhand_engine::elements::marks;
use deskhand_engine::memory;
use deskhand_engine::program_env;
use serde_json::Value;

#[derive(Args)]
pub struct SettingsArgs {
    #[command(subcommand)]
    command: Option<SettingsCommand>,
    /// Where history and settings are kept (default: the OS data directory).
    #[arg(long, env = "DESKHAND_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum SettingsCommand {
    /// Sets one: `max-cost` in US dollars, `max-tokens` a count, `secret-paths` a list of
    /// absolute paths separated by `:` (`~/` for the home directory).
    Set { name: Setting, value: String },
    /// Clears one, so runs have no such limit unless they ask for one.
    Unset { name: Setting },
}

#[derive(Clone, Copy, ValueEnum)]
enum Setting {
    /// Stop each run cleanly once it has cost this many US dollars.
    MaxCost,
    /// Stop each run cleanly once it has used this many tokens.
    MaxTokens,
    /// More places whose reading always asks (and is refused in read-only mode), beside the
    /// built-in ones (`~/.ssh`, `.env` files, …).
    SecretPaths,
    /// The stall breaker steps in after the same action on the same screen this many times.
    StallRepeats,
    /// … after this many actions in a row that change nothing on the screen.
    StallNoOps,
    /// … after a cycle between two or three screens goes round this many times.
    StallCycles,
    /// `on` (the default) or `off`: whether each run's system prompt holds the notes most
    /// relevant to its prompt (`ask --no-memory` leaves them out of one run).
    Memory,
    /// `on` or `off` (the default): whether the computer tool's screenshots carry numbered
    /// marks on the interactive elements (`ask --set-of-marks` turns it on for one run).
    SetOfMarks,
    /// Remote `deskhand serve`s the `delegate` tool may hand tasks to, for every front end:
    /// `NAME=URL` entries separated by `,` (each token from DESKHAND_DELEGATE_TOKEN_<NAME>).
    DelegateTargets,
    /// More environment variables the agent's programs (its shell, plugin servers, checks)
    /// get beside PATH, HOME, the locale, TERM, the display and XDG_* (but
    /// XDG_RUNTIME_DIR): names separated by `,`. A secret (a name with TOKEN, SECRET,
    /// PASSWORD, PASSWD, KEY or AUTH, or a URL with a password) is never passed on.
    PassEnv,
}

impl Setting {
    const ALL: [Setting; 10] = [
        Setting::MaxCost,
        Setting::MaxTokens,
        Setting::SecretPaths,
        Setting::StallRepeats,
        Setting::StallNoOps,
        Setting::StallCycles,
        Setting::Memory,
        Setting::SetOfMarks,
        Setting::DelegateTargets,
        Setting::PassEnv,
    ];

    fn key(self) -> &'static str {
        match self {
            Self::MaxCost => Budget::MAX_COST_SETTING,
            Self::MaxTokens => Budget::MAX_TOKENS_SETTING,
            Self::SecretPaths => SecretPlaces::SETTING,
            Self::Memory => memory::IN_PROMPT_SETTING,
            Self::SetOfMarks => marks::SETTING,
            Self::DelegateTargets => delegate::TARGETS_SETTING,
            Self::PassEnv => program_env::PASS_SETTING,
            Self::StallRepeats => StallPolicy::REPEATS_SETTING,
            Self::StallNoOps => StallPolicy::NO_OPS_SETTING,
            Self::StallCycles => StallPolicy::CYCLES_SETTING,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::MaxCost => "max-cost",
            Self::MaxTokens => "max-tokens",
            Self::SecretPaths => "secret-paths",
            Self::Memory => "memory",
            Self::SetOfMarks => "set-of-marks",
            Self::DelegateTargets => "delegate-targets",
            Self::PassEnv => "pass-env",
            Self::StallRepeats => "stall-repeats",
            Self::StallNoOps => "stall-no-ops",
            Self::StallCycles => "stall-cycles",
        }
    }

    fn parse(self, text: &str) -> Result<Value> {
        Ok(match self {
            Self::MaxCost => match text.parse::<f64>() {
                Ok(usd) if usd > 0.0 && usd.is_finite() => Value::from(usd),
                _ => bail!("max-cost is a positive number of US dollars, not `{text}`"),
            },
            Self::MaxTokens => match text.parse::<u64>() {
                Ok(tokens) if tokens > 0 => Value::from(tokens),
                _ => bail!("max-tokens is a positive whole number, not `{text}`"),
            },
            Self::Memory | Self::SetOfMarks => match text {
                "on" => Value::Bool(true),
                "off" => Value::Bool(false),
                _ => bail!("{} is `on` or `off`, not `{text}`", self.name()),
            },
            Self::SecretPaths => {
                let paths: Vec<&str> = text.split(':').filter(|p| !p.is_empty()).collect();
                if let Some(relative) = paths
                    .iter()
                    .find(|p| !(p.starts_with('/') || p.starts_with("~/")))
                {
                    bail!(
                        "secret-paths are absolute paths (or start with ~/), separated by `:`; \
                         `{relative}` is not"
                    );
                }
                Value::from(paths)
            }
            Self::DelegateTargets => {
                let mut targets = serde_json::Map::new();
                for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                    let target = RemoteTarget::parse(entry).map_err(anyhow::Error::msg)?;
                    targets.insert(target.name, Value::from(target.url));
                }
                Value::Object(targets)
            }
            Self::PassEnv => {
                let names: Vec<&str> = text.split(',').map(str::trim).collect();
                let names: Vec<&str> = names.into_iter().filter(|n| !n.is_empty()).collect();
                if let Some(wrong) = names.iter().find(|n| {
                    !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        || n.starts_with(|c: char| c.is_ascii_digit())
                }) {
                    bail!("pass-env takes variable names separated by `,`; `{wrong}` is not one");
                }
                if let Some(secret) = names
                    .iter()
                    .find(|n| program_env::is_secret_name(std::ffi::OsStr::new(n)))
                {
                    bail!(
                        "`{secret}` looks like a secret: the agent's programs never get one, \
                         listed or not"
                    );
                }
                Value::from(names)
            }
            Self::StallRepeats | Self::StallNoOps | Self::StallCycles => {
                match text.parse::<u32>() {
                    Ok(n) if n >= 2 => Value::from(n),
                    _ => bail!(
                        "{} is a whole number of 2 or more, not `{text}`",
                        self.name()
                    ),
                }
            }
        })
    }
}

pub fn run(args: SettingsArgs) -> Result<()> {
    let store = crate::open_store(args.data_dir)?;
    match args.command {
        None => {
            for setting in Setting::ALL {
                let value = store.setting(setting.key())?.unwrap_or(Value::Null);
                let shown = if value.is_null() {
                    "(none)".to_string()
                } else {
                    value.to_string()
                };
                println!("{} = {shown}", setting.name());
            }
        }
        Some(SettingsCommand::Set { name, value }) => {
            store.set_setting(name.key(), &name.parse(&value)?)?;
        }
        Some(SettingsCommand::Unset { name }) => store.set_setting(name.key(), &Value::Null)?,
    }
    Ok(())
}
