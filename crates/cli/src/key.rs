//! `deskhand key`: API keys in the OS keyring.

use std::io::{IsTerminal, Read};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use deskhand_engine::secrets::{self, ApiKey, KeySource, OsKeyring, SecretStore};

#[derive(Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Store a provider's key: typed without echo on a terminal, else read from stdin.
    Set {
        /// anthropic, openai, azure or openrouter
        provider: String,
    },
    /// Which providers have a key, where from, and its last four characters.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Remove a provider's key from the keyring.
    Delete { provider: String },
}

pub fn run(args: KeyArgs) -> Result<()> {
    let keyring = OsKeyring::default();
    match args.command {
        KeyCommand::Set { provider } => {
            let provider = secrets::provider(&provider)?;
            let key = read_key(provider.name)?;
            keyring.set(provider, &key)?;
            let last4 = key.last4().map(|l| format!(" (…{l})")).unwrap_or_default();
            eprintln!("stored the {} key{last4} in the OS keyring", provider.name);
            if deskhand_engine::key_guard::env_var(provider.env).is_some_and(|v| !v.is_empty()) {
                eprintln!(
                    "note: {} is set, and overrides the stored key while it is",
                    provider.env
                );
            }
        }
        KeyCommand::Status { json } => {
            let mut keyring_error = None;
            for provider in secrets::PROVIDERS.iter() {
                let status = secrets::key_status(&keyring, provider);
                if json {
                    println!("{}", serde_json::to_string(&status)?);
                    continue;
                }
                let shown = match (status.source, &status.last4) {
                    (None, _) => "not set".to_string(),
                    (Some(source), last4) => format!(
                        "{}{}",
                        match source {
                            KeySource::Keyring => "keyring",
                            KeySource::Environment => provider.env,
                        },
                        last4
                            .as_ref()
                            .map(|l| format!("  …{l}"))
                            .unwrap_or_default()
                    ),
                };
                println!("{:<11} {shown}", provider.id);
                keyring_error = keyring_error.or(status.keyring_error);
            }
            if let Some(error) = keyring_error {
                eprintln!("deskhand: {error}");
            }
        }
        KeyCommand::Delete { provider } => {
            let provider = secrets::provider(&provider)?;
            if keyring.delete(provider)? {
                eprintln!("deleted the {} key from the OS keyring", provider.name);
            } else {
                eprintln!("no {} key was stored", provider.name);
            }
        }
    }
    Ok(())
}

fn read_key(name: &str) -> Result<ApiKey> {
    let text = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("{name} API key (input hidden): "))
            .context("cannot read the key from the terminal")?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the key from stdin")?;
        text
    };
    Ok(ApiKey::new(text)?)
}
