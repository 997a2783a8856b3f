//! A session's plan as last stored: the newest `plan_updated` event's steps, so a resumed
//! session, or one a crash cut short, goes on with the plan it had.

use rusqlite::OptionalExtension;

use super::{Store, StoreError};
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::plan::PlanStep;

impl Store {
    /// The session's current plan; empty if it never had one.
    pub fn plan(&self, session_id: &SessionId) -> Result<Vec<PlanStep>, StoreError> {
        self.with(|conn| {
            let body: Option<String> = conn
                .prepare_cached(
                    "SELECT body FROM events WHERE session_id = ?1 AND type = 'plan_updated'
                     ORDER BY id DESC LIMIT 1",
                )?
                .query_row([session_id.as_str()], |r| r.get(0))
                .optional()?;
            let Some(body) = body else {
                return Ok(Vec::new());
            };
            let mut event: serde_json::Value = serde_json::from_str(&body)?;
            Ok(serde_json::from_value(event["steps"].take())?)
        })
    }
}
