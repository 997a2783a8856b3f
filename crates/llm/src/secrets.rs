//! API keys: kept in the OS keyring (Secret Service on Linux, the Keychain on macOS, the
//! Credential Manager on Windows), overridden for one run by the provider's environment
//! variable. Never written to a file: with no keyring, asking for one is an error that says
//! how to get one, not a silent plaintext fallback.

#[cfg(any(test, feature = "test-support"))]
use std::collections::HashMap;
use std::sync::LazyLock;
#[cfg(any(test, feature = "test-support"))]
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::providers::KeyVariable;

/// A provider whose key Deskhand can hold, and the environment variable that overrides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyedProvider {
    /// The id used on the command line, in settings and as the keyring entry's user name.
    pub id: &'static str,
    pub name: &'static str,
    pub env: &'static str,
}

/// The providers that take a key, from the provider table (`llm::providers`).
pub static PROVIDERS: LazyLock<Vec<KeyedProvider>> = LazyLock::new(|| {
    crate::providers::PROVIDERS
        .iter()
        .filter_map(|record| match record.key {
            KeyVariable::Required(env) => Some(KeyedProvider {
                id: record.id,
                name: record.name,
                env,
            }),
            KeyVariable::Optional(_) => None,
        })
        .collect()
});

fn keyed_ids() -> String {
    PROVIDERS
        .iter()
        .map(|p| p.id)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The provider with this id.
pub fn provider(id: &str) -> Result<&'static KeyedProvider, SecretError> {
    PROVIDERS
        .iter()
        .find(|p| p.id == id)
        .ok_or_else(|| SecretError::UnknownProvider(id.to_string()))
}

/// The keyring service name under which every key is filed (user = provider id), unless
/// `$DESKHAND_KEYRING_SERVICE` names another (tests, side-by-side installs).
pub const KEYRING_SERVICE: &str = "deskhand";

/// How long a keyring call may take before it counts as unavailable: a Secret Service that
/// waits on an unlock prompt nobody answers must not hang a run.
const KEYRING_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("unknown provider `{0}` (known: {known})", known = keyed_ids())]
    UnknownProvider(String),
    #[error(
        "no OS keyring is available ({reason}). Start a keyring daemon that provides the \
         Secret Service in your D-Bus session (for example `gnome-keyring-daemon --start \
         --components=secrets`, or KeePassXC with Secret Service enabled), or set {env} for \
         each run instead. Deskhand never stores keys in a plain file."
    )]
    Unavailable { reason: String, env: &'static str },
    #[error("the OS keyring failed: {0}")]
    Keyring(String),
    #[error("an API key cannot be empty")]
    EmptyKey,
}

/// An API key. Its `Debug` shows the last four characters only, so a key cannot reach a log
/// through a stray `{:?}`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Result<Self, SecretError> {
        let key = key.into().trim().to_string();
        if key.is_empty() {
            return Err(SecretError::EmptyKey);
        }
        Ok(Self(key))
    }

    /// The key itself, for the one place that needs it: the provider's request header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The last four characters, or nothing for a key too short to show any of safely.
    pub fn last4(&self) -> Option<String> {
        let chars: Vec<char> = self.0.chars().collect();
        (chars.len() >= 12).then(|| chars[chars.len() - 4..].iter().collect())
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.last4() {
            Some(last4) => write!(f, "ApiKey(…{last4})"),
            None => f.write_str("ApiKey(…)"),
        }
    }
}

/// Where keys are kept: the OS keyring, or memory in tests.
pub trait SecretStore: Send + Sync {
    fn get(&self, provider: &KeyedProvider) -> Result<Option<ApiKey>, SecretError>;
    fn set(&self, provider: &KeyedProvider, key: &ApiKey) -> Result<(), SecretError>;
    /// Removes the key; `false` if there was none.
    fn delete(&self, provider: &KeyedProvider) -> Result<bool, SecretError>;
}

/// The OS keyring through the `keyring` crate. Each call runs on a thread of its own: the
/// Secret Service client drives its own async runtime and deadlocks if called from a tokio
/// worker, and a keyring waiting on an unlock prompt must not block the caller forever.
#[derive(Clone, Debug)]
pub struct OsKeyring {
    service: String,
}

impl Default for OsKeyring {
    fn default() -> Self {
        let service = std::env::var("DESKHAND_KEYRING_SERVICE")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| KEYRING_SERVICE.into());
        Self { service }
    }
}

impl OsKeyring {
    fn call<T: Send + 'static>(
        &self,
        provider: &KeyedProvider,
        operation: impl FnOnce(&keyring::Entry) -> keyring::Result<T> + Send + 'static,
    ) -> Result<T, SecretError> {
        let env = provider.env;
        let user = provider.id;
        let service = self.service.clone();
        let (done, result) = mpsc::channel();
        std::thread::Builder::new()
            .name("deskhand-keyring".into())
            .spawn(move || {
                let outcome = keyring::Entry::new(&service, user).and_then(|e| operation(&e));
                let _ = done.send(outcome);
            })
            .map_err(|e| SecretError::Keyring(format!("cannot start the keyring thread: {e}")))?;
        match result.recv_timeout(KEYRING_TIMEOUT) {
            Ok(outcome) => outcome.map_err(|e| keyring_error(e, env)),
            Err(_) => Err(SecretError::Unavailable {
                reason: format!(
                    "the keyring did not answer within {} s (is it locked?)",
                    KEYRING_TIMEOUT.as_secs()
                ),
                env,
            }),
        }
    }
}

fn keyring_error(error: keyring::Error, env: &'static str) -> SecretError {
    match error {
        keyring::Error::PlatformFailure(e) | keyring::Error::NoStorageAccess(e) => {
            SecretError::Unavailable {
                reason: e.to_string(),
                env,
            }
        }
        // The other kinds describe entries, never their secrets.
        other => SecretError::Keyring(other.to_string()),
    }
}

impl SecretStore for OsKeyring {
    fn get(&self, provider: &KeyedProvider) -> Result<Option<ApiKey>, SecretError> {
        let stored = self.call(provider, |entry| match entry.get_password() {
            Ok(key) => Ok(Some(key)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(e),
        })?;
        Ok(stored.and_then(|key| ApiKey::new(key).ok()))
    }

    fn set(&self, provider: &KeyedProvider, key: &ApiKey) -> Result<(), SecretError> {
        let key = key.expose().to_string();
        self.call(provider, move |entry| entry.set_password(&key))
    }

    fn delete(&self, provider: &KeyedProvider) -> Result<bool, SecretError> {
        self.call(provider, |entry| match entry.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(e),
        })
    }
}

/// Keys in memory, for tests of everything around the keyring.
#[cfg(any(test, feature = "test-support"))]
#[derive(Debug, Default)]
pub struct MemoryStore {
    keys: Mutex<HashMap<&'static str, ApiKey>>,
    /// When set, every call fails as a machine without a keyring does.
    pub unavailable: Option<String>,
}

#[cfg(any(test, feature = "test-support"))]
impl MemoryStore {
    fn check(&self, provider: &KeyedProvider) -> Result<(), SecretError> {
        match &self.unavailable {
            Some(reason) => Err(SecretError::Unavailable {
                reason: reason.clone(),
                env: provider.env,
            }),
            None => Ok(()),
        }
    }
}

#[cfg(any(test, feature = "test-support"))]
impl SecretStore for MemoryStore {
    fn get(&self, provider: &KeyedProvider) -> Result<Option<ApiKey>, SecretError> {
        self.check(provider)?;
        Ok(self
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(provider.id)
            .cloned())
    }

    fn set(&self, provider: &KeyedProvider, key: &ApiKey) -> Result<(), SecretError> {
        self.check(provider)?;
        self.keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(provider.id, key.clone());
        Ok(())
    }

    fn delete(&self, provider: &KeyedProvider) -> Result<bool, SecretError> {
        self.check(provider)?;
        Ok(self
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(provider.id)
            .is_some())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    Keyring,
    Environment,
}

/// The key a run should use: the environment variable when set (for this run only), else
/// the keyring's. `Ok(None)` when neither has one.
pub fn lookup(
    store: &dyn SecretStore,
    provider: &KeyedProvider,
) -> Result<Option<(ApiKey, KeySource)>, SecretError> {
    if let Some(key) = from_env(provider) {
        return Ok(Some((key, KeySource::Environment)));
    }
    Ok(store.get(provider)?.map(|key| (key, KeySource::Keyring)))
}

/// The key stored for the provider `id`, as `llm::config::choose` asks for it: what the CLI
/// and the window both hand it.
pub fn stored_key(store: &dyn SecretStore, id: &str) -> Result<Option<String>, String> {
    let provider = provider(id).map_err(|e| e.to_string())?;
    store
        .get(provider)
        .map(|key| key.map(|k| k.expose().to_string()))
        .map_err(|e| e.to_string())
}

fn from_env(provider: &KeyedProvider) -> Option<ApiKey> {
    deskhand_host::key_guard::env_var(provider.env).and_then(|k| ApiKey::new(k).ok())
}

/// What the CLI's `key status` and the window's first-run prompt show: whether there is a
/// key and where from, never more of it than its last four characters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct KeyStatus {
    pub provider: String,
    pub set: bool,
    /// The key's last four characters, never more of it.
    pub last4: Option<String>,
    /// Where the key comes from: an environment variable overrides the keyring.
    pub source: Option<KeySource>,
    pub keyring_available: bool,
    /// Why the keyring cannot be used, and how to fix it (the first-run prompt shows it).
    pub keyring_error: Option<String>,
}

pub fn key_status(store: &dyn SecretStore, provider: &KeyedProvider) -> KeyStatus {
    let (stored, keyring_error) = match store.get(provider) {
        Ok(key) => (key, None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (key, source) = match (from_env(provider), stored) {
        (Some(key), _) => (Some(key), Some(KeySource::Environment)),
        (None, Some(key)) => (Some(key), Some(KeySource::Keyring)),
        (None, None) => (None, None),
    };
    KeyStatus {
        provider: provider.id.into(),
        set: key.is_some(),
        last4: key.as_ref().and_then(ApiKey::last4),
        source,
        keyring_available: keyring_error.is_none(),
        keyring_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_status_show_the_last_four_characters_only() {
        let key = ApiKey::new("  sk-ant-api03-secretpart-WXYZ\n").unwrap();
        assert_eq!(key.expose(), "sk-ant-api03-secretpart-WXYZ");
        assert_eq!(format!("{key:?}"), "ApiKey(…WXYZ)");
        assert_eq!(format!("{:?}", ApiKey::new("short").unwrap()), "ApiKey(…)");
        assert!(matches!(ApiKey::new(" \n"), Err(SecretError::EmptyKey)));

        // OpenRouter's variable is not set in the test environment.
        let openrouter = provider("openrouter").unwrap();
        let store = MemoryStore::default();
        let status = key_status(&store, openrouter);
        assert!(!status.set && status.keyring_available && status.source.is_none());
        store.set(openrouter, &key).unwrap();
        let status = key_status(&store, openrouter);
        assert_eq!(status.last4.as_deref(), Some("WXYZ"));
        assert_eq!(status.source, Some(KeySource::Keyring));
        let shown = serde_json::to_string(&status).unwrap();
        assert!(!shown.contains("secretpart"), "{shown}");
        assert!(store.delete(openrouter).unwrap());
        assert!(!store.delete(openrouter).unwrap());
    }

    #[test]
    fn no_keyring_is_reported_with_the_way_out() {
        let store = MemoryStore {
            unavailable: Some("no D-Bus session".into()),
            ..MemoryStore::default()
        };
        let openrouter = provider("openrouter").unwrap();
        let status = key_status(&store, openrouter);
        assert!(!status.keyring_available);
        let message = status.keyring_error.unwrap();
        assert!(message.contains("OPENROUTER_API_KEY"), "{message}");
        assert!(message.contains("gnome-keyring-daemon"), "{message}");
        assert!(matches!(
            provider("acme"),
            Err(SecretError::UnknownProvider(_))
        ));
    }
}
