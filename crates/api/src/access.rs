//! The bearer token of the API's TCP listener: made at the first start that needs it and
//! kept in the OS keyring (`SecretStore`), never in a file. `DESKHAND_API_TOKEN` overrides
//! it, as a provider's variable overrides its key.

use deskhand_engine::secrets::{self, ApiKey, KeyedProvider, SecretError, SecretStore};

/// The token's entry beside the providers' keys.
pub const API_TOKEN: KeyedProvider = KeyedProvider {
    id: "api-token",
    name: "Deskhand's local API",
    env: "DESKHAND_API_TOKEN",
};

/// The token: from the environment, else the keyring, else a new random one stored there.
pub fn api_token(store: &dyn SecretStore) -> Result<ApiKey, SecretError> {
    if let Some((token, _)) = secrets::lookup(store, &API_TOKEN)? {
        return Ok(token);
    }
    let bytes: [u8; 32] = rand::random();
    let token = ApiKey::new(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())?;
    store.set(&API_TOKEN, &token)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskhand_engine::secrets::MemoryStore;

    #[test]
    fn the_token_is_made_once_and_kept_in_the_store() {
        let store = MemoryStore::default();
        let first = api_token(&store).unwrap();
        assert_eq!(first.expose().len(), 64);
        assert_eq!(api_token(&store).unwrap().expose(), first.expose());
        assert_eq!(
            store.get(&API_TOKEN).unwrap().unwrap().expose(),
            first.expose()
        );
    }
}
