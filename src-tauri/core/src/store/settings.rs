//! Settings of the window and the CLI: JSON values by key, beside the history they shape.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{Store, StoreError};

impl Store {
    pub fn setting(&self, key: &str) -> Result<Option<Value>, StoreError> {
        self.with(|conn| {
            let text: Option<String> = conn
                .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
                    r.get(0)
                })
                .optional()?;
            Ok(text.map(|t| serde_json::from_str(&t)).transpose()?)
        })
    }

    pub fn set_setting(&self, key: &str, value: &Value) -> Result<(), StoreError> {
        self.with(|conn| {
            conn.execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value.to_string()],
            )?;
            Ok(())
        })
    }
}
