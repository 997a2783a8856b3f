//! `deskhand settings`: the stored settings every run reads (the run budget, the person's own
//! secret places), the same ones the window's settings change.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use deskhand::agent::{Budget, SecretPlaces};
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
}

impl Setting {
    const ALL: [Setting; 3] = [Setting::MaxCost, Setting::MaxTokens, Setting::SecretPaths];

    fn key(self) -> &'static str {
        match self {
            Self::MaxCost => Budget::MAX_COST_SETTING,
            Self::MaxTokens => Budget::MAX_TOKENS_SETTING,
            Self::SecretPaths => SecretPlaces::SETTING,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::MaxCost => "max-cost",
            Self::MaxTokens => "max-tokens",
            Self::SecretPaths => "secret-paths",
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
