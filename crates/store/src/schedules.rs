//! Schedules and their runs (`deskhand_engine::tasks::schedules`). Times are Unix
//! milliseconds here; the engine works out due times, the store keeps them. Each change a
//! fire or a run's end makes is one transaction, so a crash or a full disk leaves the
//! schedule as it was before or after, never half.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use super::{Store, StoreError, from_stored, now_ms, rfc3339, to_stored};
use deskhand_protocol::ids::{ScheduleId, TaskId};
use deskhand_protocol::schedule::{Schedule, ScheduleOutcome, ScheduleRun, ScheduleSpec};

const COLUMNS: &str = "id, spec, paused, paused_reason, last_due, next_due, failures, created_at";

/// A schedule row: the schedule with its times as milliseconds, which the engine computes
/// with.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleRow {
    pub schedule: Schedule,
    pub last_due_ms: Option<i64>,
    pub next_due_ms: Option<i64>,
    pub created_ms: i64,
}

/// A row's columns, read under the connection's lock and built after.
type Raw = (
    String,
    String,
    bool,
    Option<String>,
    Option<i64>,
    Option<i64>,
    i64,
    i64,
);

fn from_row(row: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get::<_, i64>(2)? != 0,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
    ))
}

fn build(raw: Raw) -> Result<ScheduleRow, StoreError> {
    let (id, spec, paused, paused_reason, last_due, next_due, failures, created) = raw;
    let spec: ScheduleSpec = from_stored(&spec)?;
    Ok(ScheduleRow {
        schedule: Schedule {
            id: id.into(),
            spec,
            paused,
            paused_reason,
            last_due: last_due.map(rfc3339),
            next_due: next_due.map(rfc3339),
            failures_in_a_row: u32::try_from(failures).unwrap_or(u32::MAX),
            created_at: rfc3339(created),
        },
        last_due_ms: last_due,
        next_due_ms: next_due,
        created_ms: created,
    })
}

fn get(conn: &Connection, id_or_name: &str) -> Result<Option<ScheduleRow>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM schedules WHERE id = ?1 OR name = ?1 ORDER BY id = ?1 DESC LIMIT 1"
    ))?
    .query_row([id_or_name], from_row)
    .optional()?
    .map(build)
    .transpose()
}

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<ScheduleRun> {
    let outcome: Option<String> = row.get(3)?;
    Ok(ScheduleRun {
        task_id: row.get::<_, String>(0)?.into(),
        due_at: rfc3339(row.get(1)?),
        started_at: rfc3339(row.get(2)?),
        outcome: outcome.as_deref().and_then(ScheduleOutcome::parse),
        ended_at: row.get::<_, Option<i64>>(4)?.map(rfc3339),
        screenshot: row.get(5)?,
    })
}

impl Store {
    /// Records a new schedule, first due at `next_due_ms`.
    pub fn insert_schedule(
        &self,
        id: &ScheduleId,
        spec: &ScheduleSpec,
        created_ms: i64,
        next_due_ms: Option<i64>,
    ) -> Result<ScheduleRow, StoreError> {
        let text = to_stored(&serde_json::to_value(spec)?)?;
        self.with(|conn| {
            let taken: bool = conn
                .prepare_cached("SELECT 1 FROM schedules WHERE name = ?1")?
                .exists([spec.name.as_str()])?;
            if taken {
                return Err(StoreError::ScheduleNameTaken(spec.name.clone()));
            }
            conn.prepare_cached(
                "INSERT INTO schedules (id, name, spec, last_due, next_due, created_at, updated_at)
                 VALUES (?1, ?2, ?3, NULL, ?4, ?5, ?5)",
            )?
            .execute(params![
                id.as_str(),
                spec.name,
                text,
                next_due_ms,
                created_ms
            ])?;
            get(conn, id.as_str())?.ok_or(StoreError::Sqlite(rusqlite::Error::QueryReturnedNoRows))
        })
    }

    /// A schedule by its id or its name.
    pub fn schedule(&self, id_or_name: &str) -> Result<Option<ScheduleRow>, StoreError> {
        self.with(|conn| get(conn, id_or_name))
    }

    /// Every schedule, by name.
    pub fn schedules(&self) -> Result<Vec<ScheduleRow>, StoreError> {
        self.with(|conn| {
            let mut statement =
                conn.prepare_cached(&format!("SELECT {COLUMNS} FROM schedules ORDER BY name"))?;
            let raws = statement
                .query_map([], from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            raws.into_iter().map(build).collect()
        })
    }

    /// Pauses (with why) or resumes a schedule; resuming forgets the failures in a row and
    /// takes `next_due_ms` as its next time.
    pub fn set_schedule_paused(
        &self,
        id: &ScheduleId,
        reason: Option<&str>,
        next_due_ms: Option<i64>,
    ) -> Result<(), StoreError> {
        self.with(|conn| {
            conn.prepare_cached(
                "UPDATE schedules SET paused = ?2, paused_reason = ?3, next_due = ?4,
                 failures = CASE WHEN ?2 THEN failures ELSE 0 END, updated_at = ?5 WHERE id = ?1",
            )?
            .execute(params![
                id.as_str(),
                reason.is_some(),
                reason,
                next_due_ms,
                now_ms()
            ])?;
            Ok(())
        })
    }

    /// Deletes a schedule and its runs' records (the runs' tasks and sessions stay).
    pub fn delete_schedule(&self, id: &ScheduleId) -> Result<bool, StoreError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            tx.execute(
                "DELETE FROM schedule_runs WHERE schedule_id = ?1",
                [id.as_str()],
            )?;
            let deleted = tx.execute("DELETE FROM schedules WHERE id = ?1", [id.as_str()])?;
            tx.commit()?;
            Ok(deleted > 0)
        })
    }

    /// Records that due times up to `last_due_ms` were dealt with (fired or skipped), the
    /// runs that started for them, and the next due time: one transaction. `last_due_ms`
    /// `None` keeps the stored one (a `run-now`).
    pub fn record_fire(
        &self,
        id: &ScheduleId,
        last_due_ms: Option<i64>,
        next_due_ms: Option<i64>,
        runs: &[(TaskId, i64)],
    ) -> Result<(), StoreError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let now = now_ms();
            tx.prepare_cached(
                "UPDATE schedules SET last_due = COALESCE(?2, last_due), next_due = ?3,
                 updated_at = ?4 WHERE id = ?1",
            )?
            .execute(params![id.as_str(), last_due_ms, next_due_ms, now])?;
            for (task, due) in runs {
                tx.prepare_cached(
                    "INSERT INTO schedule_runs (task_id, schedule_id, due_at, started_at)
                     VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![task.as_str(), id.as_str(), due, now])?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    /// Records how a run ended (with its last screenshot's hash) and counts it: a failure adds one to the failures in a row,
    /// anything else starts them again; at `pause_after` (0: never) in a row the schedule
    /// pauses itself with `reason`. One transaction. Returns the schedule as it is now, and
    /// `None` for a run already recorded or of a deleted schedule.
    pub fn end_schedule_run(
        &self,
        task: &TaskId,
        outcome: ScheduleOutcome,
        screenshot: Option<&str>,
        pause_after: u32,
        reason: &str,
    ) -> Result<Option<ScheduleRow>, StoreError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let Some(schedule) = schedule_of_open_run(&tx, task)? else {
                return Ok(None);
            };
            let now = now_ms();
            tx.prepare_cached(
                "UPDATE schedule_runs SET outcome = ?2, ended_at = ?3, screenshot = ?4
                 WHERE task_id = ?1",
            )?
            .execute(params![task.as_str(), outcome.name(), now, screenshot])?;
            tx.prepare_cached(
                "UPDATE schedules SET failures = CASE WHEN ?2 THEN failures + 1 ELSE 0 END,
                 updated_at = ?3 WHERE id = ?1",
            )?
            .execute(params![schedule, outcome.is_failure(), now])?;
            if pause_after > 0 {
                tx.prepare_cached(
                    "UPDATE schedules SET paused = 1, paused_reason = ?3, next_due = NULL
                     WHERE id = ?1 AND failures >= ?2 AND paused = 0",
                )?
                .execute(params![schedule, pause_after, reason])?;
            }
            let row = get(&tx, &schedule)?;
            tx.commit()?;
            Ok(row)
        })
    }

    /// The runs still open (no outcome recorded), of every schedule.
    pub fn open_schedule_runs(&self) -> Result<Vec<(ScheduleId, ScheduleRun)>, StoreError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT task_id, due_at, started_at, outcome, ended_at, screenshot, schedule_id
                 FROM schedule_runs WHERE outcome IS NULL ORDER BY started_at",
            )?;
            let rows = statement.query_map([], |row| {
                Ok((row.get::<_, String>(6)?.into(), run_from_row(row)?))
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// A schedule's newest `limit` runs, newest first, and every run counted by outcome.
    pub fn schedule_runs(
        &self,
        id: &ScheduleId,
        limit: usize,
    ) -> Result<(Vec<ScheduleRun>, BTreeMap<String, u64>), StoreError> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT task_id, due_at, started_at, outcome, ended_at, screenshot
                 FROM schedule_runs WHERE schedule_id = ?1 ORDER BY started_at DESC, rowid DESC LIMIT ?2",
            )?;
            let runs = statement
                .query_map(params![id.as_str(), limit as i64], run_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            let mut statement = conn.prepare_cached(
                "SELECT COALESCE(outcome, 'running'), COUNT(*) FROM schedule_runs
                 WHERE schedule_id = ?1 GROUP BY 1",
            )?;
            let totals = statement
                .query_map([id.as_str()], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)? as u64))
                })?
                .collect::<Result<_, _>>()?;
            Ok((runs, totals))
        })
    }
}

fn schedule_of_open_run(tx: &Transaction<'_>, task: &TaskId) -> Result<Option<String>, StoreError> {
    Ok(tx
        .prepare_cached(
            "SELECT schedule_id FROM schedule_runs WHERE task_id = ?1 AND outcome IS NULL",
        )?
        .query_row([task.as_str()], |row| row.get(0))
        .optional()?)
}
