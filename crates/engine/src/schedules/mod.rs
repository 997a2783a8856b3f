//! Schedules: prompts `deskhand serve` runs as tasks at the times their triggers name.
//!
//! [`plan`] says when a schedule is due (pure, on any clock); [`Scheduler`] is the daemon's
//! loop: it sleeps until the next due time (a tokio timer, woken early by a change), fires
//! what is due through a [`Launcher`] (the engine's, [`EngineLauncher`]), applies the
//! overlap policy on top of the session's one-run-at-a-time queue, and records each run's
//! end, pausing a schedule that failed too many times in a row. [`Schedules`] is the handle
//! front ends (the local API) change schedules through.

mod launch;
pub mod plan;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::store::{ScheduleRow, Store, StoreError};
use deskhand_protocol::ids::{ScheduleId, TaskId};
pub use deskhand_protocol::schedule::{
    CatchUp, MAX_APPROVAL_DEADLINE_SECS, Overlap, Schedule, ScheduleOutcome, ScheduleReport,
    ScheduleRun, ScheduleSpec, Scope, Trigger,
};
pub use launch::EngineLauncher;
use plan::Timing;

/// Why a schedule was refused or could not be changed; each is worded for the person.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("malformed cron expression `{expr}`: {reason}")]
    Cron { expr: String, reason: String },
    #[error("unknown time zone `{tz}`: {reason}")]
    TimeZone { tz: String, reason: String },
    #[error("{0}")]
    Invalid(String),
    #[error("no schedule `{0}`")]
    NotFound(String),
    /// Its run still goes and its overlap policy does not start another.
    #[error("{0}")]
    Busy(String),
    #[error("the schedule service is not running")]
    Stopped,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Task(#[from] crate::tasks::TaskError),
}

/// The time now, in Unix milliseconds: the system's, or a test's.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The wall clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        jiff::Timestamp::now().as_millisecond()
    }
}

/// What starts and stops a schedule's runs: the engine in the daemon, a fake in tests.
#[async_trait::async_trait]
pub trait Launcher: Send + Sync {
    /// Starts a run of `schedule`; its end is sent to `ended` once it ends.
    async fn start(
        &self,
        schedule: &Schedule,
        ended: mpsc::UnboundedSender<Ended>,
    ) -> Result<TaskId, ScheduleError>;
    /// Cancels a run (overlap `cancel`).
    fn cancel(&self, task: &TaskId);
    /// How a run that was open when the daemon last stopped ended, once it has.
    fn ended_before(&self, task: &TaskId) -> Option<ScheduleOutcome>;
}

/// A run's end, as its launcher reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    pub schedule: ScheduleId,
    pub task: TaskId,
    pub outcome: ScheduleOutcome,
    /// The hash of the last screenshot the run took.
    pub screenshot: Option<String>,
}

/// The longest the loop sleeps: the timer counts monotonic time, which stands still while
/// the machine sleeps, so the wall clock is looked at again at least this often (and
/// schedules changed by another process are seen).
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// The newest runs `schedule show` lists.
const REPORT_RUNS: usize = 10;

enum Message {
    Changed,
    RunNow(ScheduleId, oneshot::Sender<Result<TaskId, ScheduleError>>),
}

/// The handle front ends change schedules through; cheap to clone.
#[derive(Clone)]
pub struct Schedules {
    store: Store,
    clock: Arc<dyn Clock>,
    messages: mpsc::UnboundedSender<Message>,
}

impl Schedules {
    /// Checks and records a new schedule; a malformed cron, a bad time zone, an `--at` in
    /// the past or a deadline out of range is refused and nothing is recorded.
    pub fn add(&self, spec: ScheduleSpec) -> Result<Schedule, ScheduleError> {
        validate(&spec)?;
        let timing = Timing::new(&spec.trigger)?;
        let now = self.clock.now_ms();
        let next = timing.next_after(now, now).ok_or_else(|| {
            ScheduleError::Invalid("the schedule would never run (its time has passed)".into())
        })?;
        let id = ScheduleId::from(uuid::Uuid::new_v4().to_string());
        let row = self.store.insert_schedule(&id, &spec, now, Some(next))?;
        self.changed();
        Ok(row.schedule)
    }

    pub fn list(&self) -> Result<Vec<Schedule>, ScheduleError> {
        Ok(self
            .store
            .schedules()?
            .into_iter()
            .map(|row| row.schedule)
            .collect())
    }

    fn row(&self, id_or_name: &str) -> Result<ScheduleRow, ScheduleError> {
        self.store
            .schedule(id_or_name)?
            .ok_or_else(|| ScheduleError::NotFound(id_or_name.into()))
    }

    /// A schedule with its newest runs and every run's outcome counted.
    pub fn report(&self, id_or_name: &str) -> Result<ScheduleReport, ScheduleError> {
        let schedule = self.row(id_or_name)?.schedule;
        let (runs, totals) = self.store.schedule_runs(&schedule.id, REPORT_RUNS)?;
        Ok(ScheduleReport {
            schedule,
            runs,
            totals,
        })
    }

    pub fn pause(&self, id_or_name: &str) -> Result<Schedule, ScheduleError> {
        let row = self.row(id_or_name)?;
        self.store
            .set_schedule_paused(&row.schedule.id, Some("paused by a person"), None)?;
        self.changed();
        Ok(self.row(row.schedule.id.as_str())?.schedule)
    }

    /// Resumes a paused schedule from now: the times missed while paused do not run.
    pub fn resume(&self, id_or_name: &str) -> Result<Schedule, ScheduleError> {
        let row = self.row(id_or_name)?;
        let timing = Timing::new(&row.schedule.spec.trigger)?;
        let now = self.clock.now_ms();
        let next = timing.next_after(now.max(row.last_due_ms.unwrap_or(now)), row.created_ms);
        self.store
            .set_schedule_paused(&row.schedule.id, None, next)?;
        // Missed times are dealt with as of now, so they never run late.
        self.store
            .record_fire(&row.schedule.id, Some(now), next, &[])?;
        self.changed();
        Ok(self.row(row.schedule.id.as_str())?.schedule)
    }

    pub fn delete(&self, id_or_name: &str) -> Result<Schedule, ScheduleError> {
        let row = self.row(id_or_name)?;
        self.store.delete_schedule(&row.schedule.id)?;
        self.changed();
        Ok(row.schedule)
    }

    /// Runs a schedule now, outside its times (as its overlap policy allows); its id.
    pub async fn run_now(&self, id_or_name: &str) -> Result<TaskId, ScheduleError> {
        let row = self.row(id_or_name)?;
        let (reply, answer) = oneshot::channel();
        self.messages
            .send(Message::RunNow(row.schedule.id, reply))
            .map_err(|_| ScheduleError::Stopped)?;
        answer.await.map_err(|_| ScheduleError::Stopped)?
    }

    fn changed(&self) {
        let _ = self.messages.send(Message::Changed);
    }
}

/// What the trigger cannot say wrong on its own.
fn validate(spec: &ScheduleSpec) -> Result<(), ScheduleError> {
    let invalid = |m: &str| Err(ScheduleError::Invalid(m.into()));
    if spec.name.trim().is_empty()
        || spec.name.len() > 100
        || spec.name.chars().any(char::is_control)
    {
        return invalid("a schedule's name is 1 to 100 characters, with no control characters");
    }
    if spec.prompt.trim().is_empty() {
        return invalid("a schedule needs a prompt");
    }
    if !(1..=MAX_APPROVAL_DEADLINE_SECS).contains(&spec.approval_deadline_secs) {
        return Err(ScheduleError::Invalid(format!(
            "the approval deadline must be between 1 second and {} days",
            MAX_APPROVAL_DEADLINE_SECS / 86_400
        )));
    }
    if spec
        .max_cost_usd
        .is_some_and(|cost| !(cost.is_finite() && cost > 0.0))
    {
        return invalid("the cost limit must be a positive number of US dollars");
    }
    Ok(())
}

/// A schedule's run in progress, and the due times waiting for it to end (overlap
/// `queue`, or a catch-up of each missed run).
struct Active {
    task: TaskId,
    queued: VecDeque<i64>,
}

/// The daemon's loop over every schedule. It owns what runs now; everything else is in the
/// store.
pub struct Scheduler {
    store: Store,
    clock: Arc<dyn Clock>,
    launcher: Arc<dyn Launcher>,
    active: HashMap<ScheduleId, Active>,
    ended_tx: mpsc::UnboundedSender<Ended>,
    ended_rx: mpsc::UnboundedReceiver<Ended>,
    messages: mpsc::UnboundedReceiver<Message>,
}

impl Scheduler {
    /// A scheduler over the store's schedules, and the handle that changes them.
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        launcher: Arc<dyn Launcher>,
    ) -> (Self, Schedules) {
        let (messages_tx, messages) = mpsc::unbounded_channel();
        let (ended_tx, ended_rx) = mpsc::unbounded_channel();
        let handle = Schedules {
            store: store.clone(),
            clock: clock.clone(),
            messages: messages_tx,
        };
        let scheduler = Self {
            store,
            clock,
            launcher,
            active: HashMap::new(),
            ended_tx,
            ended_rx,
            messages,
        };
        (scheduler, handle)
    }

    /// Runs until `stop`: fires what is due, sleeps until the next due time or a change.
    pub async fn run(mut self, stop: CancellationToken) {
        self.recover();
        loop {
            let next = self.tick().await;
            let wait = next
                .map(|due| {
                    Duration::from_millis(due.saturating_sub(self.clock.now_ms()).max(0) as u64)
                })
                .unwrap_or(MAX_SLEEP)
                .min(MAX_SLEEP);
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = stop.cancelled() => return,
                Some(ended) = self.ended_rx.recv() => self.on_end(ended).await,
                Some(message) = self.messages.recv() => match message {
                    Message::Changed => {}
                    Message::RunNow(id, reply) => {
                        let _ = reply.send(self.run_now(&id).await);
                    }
                },
            }
        }
    }

    /// Runs left open by a daemon that stopped: recorded as they ended, so their schedules'
    /// counts are right.
    fn recover(&mut self) {
        let open = match self.store.open_schedule_runs() {
            Ok(open) => open,
            Err(e) => return eprintln!("deskhand: cannot read the schedules' open runs: {e}"),
        };
        for (schedule, run) in open {
            if let Some(outcome) = self.launcher.ended_before(&run.task_id) {
                self.record_end(&Ended {
                    schedule,
                    task: run.task_id,
                    outcome,
                    screenshot: None,
                });
            }
        }
    }

    /// Fires every schedule that is due now; returns the next due time of any.
    pub async fn tick(&mut self) -> Option<i64> {
        let rows = match self.store.schedules() {
            Ok(rows) => rows,
            Err(e) => {
                eprintln!("deskhand: cannot read the schedules: {e}");
                return None;
            }
        };
        let mut next: Option<i64> = None;
        for row in rows {
            if row.schedule.paused {
                continue;
            }
            let timing = match Timing::new(&row.schedule.spec.trigger) {
                Ok(timing) => timing,
                Err(e) => {
                    eprintln!("deskhand: schedule `{}`: {e}", row.schedule.spec.name);
                    continue;
                }
            };
            let now = self.clock.now_ms();
            let due = plan::due(
                &timing,
                row.schedule.spec.catch_up,
                row.last_due_ms,
                row.created_ms,
                now,
            );
            let next_due = match due {
                Some(due) => {
                    self.fire(&row.schedule, &due.fires, due.last_due, due.next_due)
                        .await;
                    due.next_due
                }
                None => {
                    timing.next_after(row.last_due_ms.unwrap_or(row.created_ms), row.created_ms)
                }
            };
            if let Some(due) = next_due {
                next = Some(next.map_or(due, |n| n.min(due)));
            }
        }
        next
    }

    /// Starts the runs for `fires` as the overlap policy says, and records them with the
    /// due times dealt with in one write.
    async fn fire(
        &mut self,
        schedule: &Schedule,
        fires: &[i64],
        last_due: i64,
        next_due: Option<i64>,
    ) {
        let mut started = Vec::new();
        for (i, &due) in fires.iter().enumerate() {
            let running = self.active.get(&schedule.id).map(|a| a.task.clone());
            match (running, schedule.spec.overlap) {
                (None, _) => {}
                // A catch-up of each missed run waits its turn whatever the policy.
                (Some(_), _) if i > 0 => {
                    self.queue(&schedule.id, due);
                    continue;
                }
                (Some(_), Overlap::Skip) => continue,
                (Some(_), Overlap::Queue) => {
                    self.queue(&schedule.id, due);
                    continue;
                }
                (Some(task), Overlap::Cancel) => {
                    self.launcher.cancel(&task);
                    if let Some(active) = self.active.remove(&schedule.id) {
                        // What waited behind the cancelled run waits behind the new one.
                        for due in active.queued {
                            self.queue(&schedule.id, due);
                        }
                    }
                }
            }
            match self.start(schedule).await {
                Some(task) => started.push((task, due)),
                None => break,
            }
        }
        if let Err(e) = self
            .store
            .record_fire(&schedule.id, Some(last_due), next_due, &started)
        {
            eprintln!(
                "deskhand: schedule `{}`: cannot record its run: {e}",
                schedule.spec.name
            );
        }
    }

    fn queue(&mut self, id: &ScheduleId, due: i64) {
        if let Some(active) = self.active.get_mut(id) {
            active.queued.push_back(due);
        }
    }

    async fn start(&mut self, schedule: &Schedule) -> Option<TaskId> {
        match self.launcher.start(schedule, self.ended_tx.clone()).await {
            Ok(task) => {
                let queued = self
                    .active
                    .remove(&schedule.id)
                    .map(|a| a.queued)
                    .unwrap_or_default();
                self.active.insert(
                    schedule.id.clone(),
                    Active {
                        task: task.clone(),
                        queued,
                    },
                );
                Some(task)
            }
            Err(e) => {
                eprintln!(
                    "deskhand: schedule `{}`: cannot start its run: {e}",
                    schedule.spec.name
                );
                None
            }
        }
    }

    async fn run_now(&mut self, id: &ScheduleId) -> Result<TaskId, ScheduleError> {
        let row = self
            .store
            .schedule(id.as_str())?
            .ok_or_else(|| ScheduleError::NotFound(id.to_string()))?;
        let schedule = row.schedule;
        if let Some(active) = self.active.get(id) {
            match schedule.spec.overlap {
                Overlap::Cancel => self.launcher.cancel(&active.task.clone()),
                _ => {
                    return Err(ScheduleError::Busy(format!(
                        "schedule `{}` is running (task {}); its overlap policy does not start \
                         another",
                        schedule.spec.name, active.task
                    )));
                }
            }
        }
        let task = self
            .launcher
            .start(&schedule, self.ended_tx.clone())
            .await?;
        self.store.record_fire(
            id,
            None,
            row.next_due_ms,
            &[(task.clone(), self.clock.now_ms())],
        )?;
        let queued = self.active.remove(id).map(|a| a.queued).unwrap_or_default();
        self.active.insert(
            id.clone(),
            Active {
                task: task.clone(),
                queued,
            },
        );
        Ok(task)
    }

    /// A run ended: record it, and start what waited for it.
    pub async fn on_end(&mut self, ended: Ended) {
        let paused = self.record_end(&ended);
        let Some(active) = self.active.get_mut(&ended.schedule) else {
            return;
        };
        if active.task != ended.task {
            return; // a run cancelled for a newer one
        }
        let next = active.queued.pop_front();
        let queued = std::mem::take(&mut active.queued);
        self.active.remove(&ended.schedule);
        let Some(due) = next.filter(|_| !paused) else {
            return;
        };
        let Ok(Some(row)) = self.store.schedule(ended.schedule.as_str()) else {
            return;
        };
        if let Some(task) = self.start(&row.schedule).await {
            if let Some(active) = self.active.get_mut(&ended.schedule) {
                active.queued = queued;
            }
            if let Err(e) =
                self.store
                    .record_fire(&ended.schedule, None, row.next_due_ms, &[(task, due)])
            {
                eprintln!(
                    "deskhand: schedule `{}`: cannot record its run: {e}",
                    row.schedule.spec.name
                );
            }
        }
    }

    /// Records a run's end; whether its schedule is paused now.
    fn record_end(&self, ended: &Ended) -> bool {
        let row = match self.store.schedule(ended.schedule.as_str()) {
            Ok(Some(row)) => row,
            _ => return true,
        };
        let limit = row.schedule.spec.pause_after_failures;
        let reason = format!(
            "paused itself after {limit} failed runs in a row (the last one {}: task {})",
            ended.outcome.name(),
            ended.task
        );
        match self.store.end_schedule_run(
            &ended.task,
            ended.outcome,
            ended.screenshot.as_deref(),
            limit,
            &reason,
        ) {
            Ok(Some(now)) => {
                if now.schedule.paused && !row.schedule.paused {
                    eprintln!("deskhand: schedule `{}` {reason}", now.schedule.spec.name);
                    launch::notify(
                        &format!("Schedule {} paused", now.schedule.spec.name),
                        &reason,
                    );
                }
                now.schedule.paused
            }
            Ok(None) => row.schedule.paused,
            Err(e) => {
                // The run stays open in the store; the next start records it (`recover`).
                eprintln!(
                    "deskhand: schedule `{}`: cannot record its run's end: {e}",
                    row.schedule.spec.name
                );
                row.schedule.paused
            }
        }
    }
}

#[cfg(test)]
mod tests;
