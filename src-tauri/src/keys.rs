//! API keys as the window sees them: whether one is set, and its last four characters. The
//! key itself goes from here to the provider and nowhere else.

use serde::Serialize;

use crate::error::{ErrorKind, IpcError, IpcResult};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    Keyring,
    Environment,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyStatus {
    pub provider: String,
    /// The environment variable the key can come from, for the window to name.
    pub env: String,
    pub set: bool,
    pub last4: Option<String>,
    pub source: Option<KeySource>,
    pub keyring_available: bool,
    pub keyring_error: Option<String>,
}

/// The environment variable that holds a provider's key: the core's name for it (Azure's is
/// `AZURE_OPENAI_API_KEY`), else `<PROVIDER>_API_KEY`.
fn variable(provider: &str) -> String {
    deskhand::secrets::provider(provider).map_or_else(
        |_| format!("{}_API_KEY", provider.to_ascii_uppercase()),
        |p| p.env.to_string(),
    )
}

const NO_KEYRING: &str = "this build cannot store keys in the OS keyring yet";

fn from_environment(provider: &str) -> Option<String> {
    std::env::var(variable(provider))
        .ok()
        .filter(|k| !k.trim().is_empty())
}

/// The provider's key, or `no_key` saying how to add one.
pub fn api_key(provider: &str) -> IpcResult<String> {
    from_environment(provider).ok_or_else(|| {
        IpcError::new(
            ErrorKind::NoKey,
            format!(
                "no API key for {provider}: set {} before starting Deskhand ({NO_KEYRING})",
                variable(provider)
            ),
        )
    })
}

pub fn status(provider: &str) -> KeyStatus {
    let key = from_environment(provider);
    KeyStatus {
        provider: provider.to_string(),
        env: variable(provider),
        set: key.is_some(),
        last4: key.as_deref().map(last4),
        source: key.map(|_| KeySource::Environment),
        keyring_available: false,
        keyring_error: Some(format!("{NO_KEYRING}; set {} instead", variable(provider))),
    }
}

pub fn store(provider: &str, _key: &str) -> IpcResult<KeyStatus> {
    Err(IpcError::new(
        ErrorKind::KeyringUnavailable,
        format!("{NO_KEYRING}; set {} instead", variable(provider)),
    ))
}

/// The last four characters, all a window ever shows of a key.
pub fn last4(key: &str) -> String {
    let chars: Vec<char> = key.trim().chars().collect();
    chars[chars.len().saturating_sub(4)..].iter().collect()
}
