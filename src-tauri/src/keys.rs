//! API keys as the window sees them: whether one is set, where from, and its last four
//! characters. Keys live in the core's `SecretStore` (the OS keyring the CLI's `deskhand key`
//! uses too); the key itself goes from there to the provider and nowhere else.

use deskhand_engine::llm::providers::ProviderKind;
use deskhand_engine::secrets::{self, ApiKey, KeyStatus, OsKeyring, SecretError, SecretStore};
use serde::Serialize;

use crate::error::{ErrorKind, IpcError, IpcResult};

/// A provider's key status, and whether it needs a key at all (local servers do not).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct KeyInfo {
    #[serde(flatten)]
    pub status: KeyStatus,
    pub required: bool,
}

fn kind(provider: &str) -> IpcResult<ProviderKind> {
    ProviderKind::parse(provider)
        .ok_or_else(|| IpcError::invalid(format!("unknown provider `{provider}`")))
}

fn keyring_error(error: SecretError) -> IpcError {
    match error {
        SecretError::Unavailable { .. } => {
            IpcError::new(ErrorKind::KeyringUnavailable, error.to_string())
        }
        SecretError::EmptyKey | SecretError::UnknownProvider(_) => {
            IpcError::invalid(error.to_string())
        }
        SecretError::Keyring(_) => IpcError::internal(error.to_string()),
    }
}

pub fn status(keyring: &OsKeyring, provider: &str) -> IpcResult<KeyInfo> {
    let kind = kind(provider)?;
    Ok(match secrets::provider(kind.id()) {
        Ok(keyed) => KeyInfo {
            status: secrets::key_status(keyring, keyed),
            required: true,
        },
        Err(_) => KeyInfo {
            status: KeyStatus {
                provider: kind.id().into(),
                set: false,
                last4: None,
                source: None,
                keyring_available: true,
                keyring_error: None,
            },
            required: false,
        },
    })
}

/// Stores the key in the keyring; `keyring_unavailable` says how to get one.
pub fn store(keyring: &OsKeyring, provider: &str, key: String) -> IpcResult<KeyInfo> {
    let kind = kind(provider)?;
    let keyed = secrets::provider(kind.id())
        .map_err(|_| IpcError::invalid(format!("{} needs no API key", kind.name())))?;
    let key = ApiKey::new(key).map_err(keyring_error)?;
    keyring.set(keyed, &key).map_err(keyring_error)?;
    status(keyring, provider)
}

/// The key a run of `kind` uses (its variable, else the keyring's); `None` for a provider
/// without keys. `no_key` says where to add one.
pub fn for_run(keyring: &OsKeyring, kind: ProviderKind) -> IpcResult<Option<ApiKey>> {
    let Ok(keyed) = secrets::provider(kind.id()) else {
        return Ok(None);
    };
    match secrets::lookup(keyring, keyed).map_err(keyring_error)? {
        Some((key, _)) => Ok(Some(key)),
        None => Err(IpcError::new(
            ErrorKind::NoKey,
            format!(
                "no API key for {}: add one in Settings (it is kept in the OS keyring), or \
                 set {} before starting Deskhand",
                keyed.name, keyed.env
            ),
        )),
    }
}
