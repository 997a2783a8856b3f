//! Settings of the window and the CLI: JSON values by key, beside the history they shape.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{Store, StoreError};
use deskhand_protocol::budget::Budget;
use deskhand_protocol::check::SavedCheck;
use deskhand_protocol::desktop::DesktopChoice;
use deskhand_protocol::ids::SessionId;

/// Where a session's saved check is kept: one setting per session.
pub(super) fn check_key(session_id: &str) -> String {
    format!("session_check.{session_id}")
}

/// Where a session's desktop choice is kept: one setting per session.
pub(super) fn desktop_key(session_id: &str) -> String {
    format!("session_desktop.{session_id}")
}

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

    /// The budget every run gets unless it asks for its own (`deskhand settings`, the
    /// window's settings); no limit where none is stored.
    pub fn budget(&self) -> Result<Budget, StoreError> {
        let stored = |key| {
            self.setting(key)
                .map(|value| value.filter(|value| !value.is_null()))
        };
        Ok(Budget {
            max_cost_usd: stored(Budget::MAX_COST_SETTING)?.and_then(|v| v.as_f64()),
            max_tokens: stored(Budget::MAX_TOKENS_SETTING)?.and_then(|v| v.as_u64()),
        })
    }

    /// Stores the budget; a `None` clears that limit.
    pub fn set_budget(&self, budget: &Budget) -> Result<(), StoreError> {
        self.set_setting(
            Budget::MAX_COST_SETTING,
            &budget.max_cost_usd.map_or(Value::Null, Value::from),
        )?;
        self.set_setting(
            Budget::MAX_TOKENS_SETTING,
            &budget.max_tokens.map_or(Value::Null, Value::from),
        )
    }

    /// The check saved with a session (the window's settings for that session), if any.
    pub fn session_check(&self, session_id: &SessionId) -> Result<Option<SavedCheck>, StoreError> {
        Ok(self
            .setting(&check_key(session_id.as_str()))?
            .and_then(|value| serde_json::from_value(value).ok()))
    }

    /// Saves a session's check; `None` removes it.
    pub fn set_session_check(
        &self,
        session_id: &SessionId,
        check: Option<&SavedCheck>,
    ) -> Result<(), StoreError> {
        let key = check_key(session_id.as_str());
        match check {
            Some(check) => self.set_setting(&key, &serde_json::to_value(check)?),
            None => self.with(|conn| {
                conn.execute("DELETE FROM settings WHERE key = ?1", [&key])?;
                Ok(())
            }),
        }
    }

    /// Where the session's runs work (the window's per-session setting); the person's
    /// screen when nothing was saved.
    pub fn session_desktop(&self, session_id: &SessionId) -> Result<DesktopChoice, StoreError> {
        Ok(self
            .setting(&desktop_key(session_id.as_str()))?
            .and_then(|value| serde_json::from_value(value).ok())
            .unwrap_or_default())
    }

    pub fn set_session_desktop(
        &self,
        session_id: &SessionId,
        choice: &DesktopChoice,
    ) -> Result<(), StoreError> {
        self.set_setting(
            &desktop_key(session_id.as_str()),
            &serde_json::to_value(choice)?,
        )
    }
}
