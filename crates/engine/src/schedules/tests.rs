//! The scheduler on a fake clock with a fake launcher, over a real store: catch-up, overlap,
//! a clock that jumps, a restart, and pausing after failures.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use super::*;
use deskhand_protocol::schedule::{CatchUp, Scope, Trigger};

const MIN: i64 = 60_000;
/// 2026-01-05T09:00:00Z.
const START: i64 = 1_767_603_600_000;

struct FakeClock(AtomicI64);

impl FakeClock {
    fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
struct FakeLauncher {
    /// Names this launcher's tasks apart from an earlier process's.
    prefix: &'static str,
    started: Mutex<Vec<TaskId>>,
    cancelled: Mutex<Vec<TaskId>>,
}

#[async_trait::async_trait]
impl Launcher for FakeLauncher {
    async fn start(
        &self,
        _schedule: &Schedule,
        _ended: mpsc::UnboundedSender<Ended>,
    ) -> Result<TaskId, ScheduleError> {
        let mut started = self.started.lock().unwrap();
        let id = TaskId::from(format!("{}task-{}", self.prefix, started.len() + 1));
        started.push(id.clone());
        Ok(id)
    }

    fn cancel(&self, task: &TaskId) {
        self.cancelled.lock().unwrap().push(task.clone());
    }

    fn ended_before(&self, _task: &TaskId) -> Option<ScheduleOutcome> {
        Some(ScheduleOutcome::Failed)
    }
}

struct Rig {
    _dir: tempfile::TempDir,
    store: Store,
    clock: Arc<FakeClock>,
    launcher: Arc<FakeLauncher>,
    scheduler: Scheduler,
    schedules: Schedules,
}

impl Rig {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        Self::over(dir, store, "")
    }

    fn over(dir: tempfile::TempDir, store: Store, prefix: &'static str) -> Self {
        let clock = Arc::new(FakeClock(AtomicI64::new(START)));
        let launcher = Arc::new(FakeLauncher {
            prefix,
            ..FakeLauncher::default()
        });
        let (scheduler, schedules) = Scheduler::new(store.clone(), clock.clone(), launcher.clone());
        Self {
            _dir: dir,
            store,
            clock,
            launcher,
            scheduler,
            schedules,
        }
    }

    /// The same store after a restart (the clock where it was).
    fn restart(self) -> Self {
        let now = self.clock.now_ms();
        let rig = Self::over(self._dir, self.store, "restarted-");
        rig.clock.set(now);
        rig
    }

    fn started(&self) -> usize {
        self.launcher.started.lock().unwrap().len()
    }

    async fn at(&mut self, ms: i64) -> Option<i64> {
        self.clock.set(ms);
        self.scheduler.tick().await
    }

    async fn end(&mut self, n: usize, outcome: ScheduleOutcome) {
        let id = self.schedules.list().unwrap()[0].id.clone();
        self.scheduler
            .on_end(Ended {
                schedule: id,
                task: TaskId::from(format!("task-{n}")),
                outcome,
                screenshot: Some(format!("shot-{n}")),
            })
            .await;
    }
}

fn every_minute(catch_up: CatchUp, overlap: Overlap) -> ScheduleSpec {
    ScheduleSpec {
        name: "tidy".into(),
        trigger: Trigger::Every { seconds: 60 },
        prompt: "tidy the downloads folder".into(),
        session: None,
        agent_desktop: false,
        check: None,
        scope: Scope::default(),
        max_cost_usd: None,
        catch_up,
        overlap,
        approval_deadline_secs: 60,
        pause_after_failures: 3,
    }
}

#[tokio::test]
async fn a_schedule_fires_at_its_time_and_says_when_next() {
    let mut rig = Rig::new();
    let made = rig
        .schedules
        .add(every_minute(CatchUp::Once, Overlap::Skip))
        .unwrap();
    assert_eq!(made.next_due.as_deref(), Some("2026-01-05T09:01:00Z"));
    assert_eq!(rig.at(START + MIN - 1).await, Some(START + MIN));
    assert_eq!(rig.started(), 0);
    assert_eq!(rig.at(START + MIN).await, Some(START + 2 * MIN));
    assert_eq!(rig.started(), 1);
    let report = rig.schedules.report("tidy").unwrap();
    assert_eq!(report.runs.len(), 1);
    assert_eq!(report.runs[0].due_at, "2026-01-05T09:01:00Z");
    assert_eq!(
        report.schedule.last_due.as_deref(),
        Some("2026-01-05T09:01:00Z")
    );
}

#[tokio::test]
async fn after_downtime_catch_up_once_runs_one() {
    let mut rig = Rig::new();
    rig.schedules
        .add(every_minute(CatchUp::Once, Overlap::Queue))
        .unwrap();
    rig.at(START + 30 * MIN + 10).await;
    assert_eq!(rig.started(), 1);
    assert_eq!(rig.at(START + 30 * MIN + 20).await, Some(START + 31 * MIN));
    assert_eq!(rig.started(), 1);
}

#[tokio::test]
async fn after_downtime_catch_up_skip_runs_none() {
    let mut rig = Rig::new();
    let mut spec = every_minute(CatchUp::Skip, Overlap::Queue);
    spec.trigger = Trigger::Every { seconds: 600 };
    rig.schedules.add(spec).unwrap();
    rig.at(START + 35 * MIN).await;
    assert_eq!(rig.started(), 0, "the 09:30 run is more than a minute late");
    let schedule = &rig.schedules.list().unwrap()[0];
    assert_eq!(schedule.last_due.as_deref(), Some("2026-01-05T09:30:00Z"));
    rig.at(START + 40 * MIN + 100).await;
    assert_eq!(rig.started(), 1, "the next one on time runs");
}

#[tokio::test]
async fn after_downtime_catch_up_each_queues_the_newest_n() {
    let mut rig = Rig::new();
    rig.schedules
        .add(every_minute(CatchUp::Each(3), Overlap::Skip))
        .unwrap();
    rig.at(START + 30 * MIN + 10).await;
    assert_eq!(rig.started(), 1, "one at a time");
    rig.end(1, ScheduleOutcome::Verified).await;
    assert_eq!(rig.started(), 2);
    rig.end(2, ScheduleOutcome::Verified).await;
    assert_eq!(rig.started(), 3);
    rig.end(3, ScheduleOutcome::Verified).await;
    assert_eq!(rig.started(), 3, "three, no more");
    let report = rig.schedules.report("tidy").unwrap();
    let mut due: Vec<_> = report.runs.iter().map(|r| r.due_at.clone()).collect();
    due.sort();
    assert_eq!(
        due,
        [
            "2026-01-05T09:28:00Z",
            "2026-01-05T09:29:00Z",
            "2026-01-05T09:30:00Z"
        ]
    );
    assert_eq!(report.totals.get("verified"), Some(&3));
    let mut shots: Vec<_> = report
        .runs
        .iter()
        .map(|r| r.screenshot.clone().unwrap())
        .collect();
    shots.sort();
    assert_eq!(
        shots,
        ["shot-1", "shot-2", "shot-3"],
        "each run keeps its last screenshot"
    );
}

#[tokio::test]
async fn overlap_skip_queue_and_cancel() {
    let mut skip = Rig::new();
    skip.schedules
        .add(every_minute(CatchUp::Once, Overlap::Skip))
        .unwrap();
    skip.at(START + MIN).await;
    skip.at(START + 2 * MIN).await;
    assert_eq!(
        skip.started(),
        1,
        "the second is skipped while the first runs"
    );
    skip.end(1, ScheduleOutcome::Unverified).await;
    assert_eq!(skip.started(), 1);
    skip.at(START + 3 * MIN).await;
    assert_eq!(skip.started(), 2);

    let mut queue = Rig::new();
    queue
        .schedules
        .add(every_minute(CatchUp::Once, Overlap::Queue))
        .unwrap();
    queue.at(START + MIN).await;
    queue.at(START + 2 * MIN).await;
    assert_eq!(queue.started(), 1, "the second waits");
    queue.end(1, ScheduleOutcome::Unverified).await;
    assert_eq!(queue.started(), 2, "and starts when the first ends");

    let mut cancel = Rig::new();
    cancel
        .schedules
        .add(every_minute(CatchUp::Once, Overlap::Cancel))
        .unwrap();
    cancel.at(START + MIN).await;
    cancel.at(START + 2 * MIN).await;
    assert_eq!(cancel.started(), 2);
    assert_eq!(
        *cancel.launcher.cancelled.lock().unwrap(),
        [TaskId::from("task-1")]
    );
    // The cancelled run's end is recorded, and starts nothing.
    cancel.end(1, ScheduleOutcome::Failed).await;
    assert_eq!(cancel.started(), 2);
}

#[tokio::test]
async fn a_clock_set_back_then_forward_runs_each_time_once() {
    let mut rig = Rig::new();
    rig.schedules
        .add(every_minute(CatchUp::Each(100), Overlap::Queue))
        .unwrap();
    rig.at(START + 5 * MIN).await;
    for n in 1..=5 {
        rig.end(n, ScheduleOutcome::Unverified).await;
    }
    assert_eq!(rig.started(), 5);
    rig.at(START - 60 * MIN).await;
    rig.at(START + 2 * MIN).await;
    rig.at(START + 5 * MIN).await;
    assert_eq!(rig.started(), 5, "nothing ran again");
    rig.at(START + 6 * MIN).await;
    assert_eq!(rig.started(), 6);
}

#[tokio::test]
async fn a_restart_after_a_kill_runs_one_catch_up_and_records_the_cut_run() {
    let mut rig = Rig::new();
    rig.schedules
        .add(every_minute(CatchUp::Once, Overlap::Skip))
        .unwrap();
    rig.at(START + MIN).await;
    assert_eq!(rig.started(), 1);
    // Killed while task-1 ran; back ten minutes later.
    let mut rig = rig.restart();
    rig.scheduler.recover();
    rig.at(START + 11 * MIN + 5).await;
    assert_eq!(rig.started(), 1, "one catch-up run");
    let report = rig.schedules.report("tidy").unwrap();
    assert_eq!(report.runs.len(), 2);
    assert_eq!(report.totals.get("failed"), Some(&1), "{:?}", report.totals);
    assert_eq!(
        report.schedule.last_due.as_deref(),
        Some("2026-01-05T09:11:00Z")
    );
}

#[tokio::test]
async fn failures_in_a_row_pause_the_schedule_and_say_why() {
    let mut rig = Rig::new();
    rig.schedules
        .add(every_minute(CatchUp::Once, Overlap::Skip))
        .unwrap();
    for n in 1..=3 {
        rig.at(START + n as i64 * MIN).await;
        let outcome = if n == 1 {
            ScheduleOutcome::Stalled
        } else {
            ScheduleOutcome::Failed
        };
        rig.end(n, outcome).await;
    }
    let schedule = rig.schedules.list().unwrap().remove(0);
    assert!(schedule.paused);
    assert!(
        schedule
            .paused_reason
            .as_deref()
            .unwrap()
            .contains("3 failed runs in a row"),
        "{schedule:?}"
    );
    assert_eq!(rig.at(START + 10 * MIN).await, None);
    assert_eq!(rig.started(), 3);
    // Resumed, it counts again from now.
    let resumed = rig.schedules.resume("tidy").unwrap();
    assert!(!resumed.paused);
    assert_eq!(resumed.failures_in_a_row, 0);
    rig.at(START + 10 * MIN + 30_000).await;
    assert_eq!(rig.started(), 3, "the missed ones do not run");
    rig.at(START + 11 * MIN).await;
    assert_eq!(rig.started(), 4);
}

#[tokio::test]
async fn a_success_between_failures_starts_the_count_again() {
    let mut rig = Rig::new();
    rig.schedules
        .add(every_minute(CatchUp::Once, Overlap::Skip))
        .unwrap();
    let outcomes = [
        ScheduleOutcome::Failed,
        ScheduleOutcome::Failed,
        ScheduleOutcome::NeedsApproval,
        ScheduleOutcome::Failed,
        ScheduleOutcome::Failed,
    ];
    for (i, outcome) in outcomes.into_iter().enumerate() {
        rig.at(START + (i as i64 + 1) * MIN).await;
        rig.end(i + 1, outcome).await;
    }
    let schedule = rig.schedules.list().unwrap().remove(0);
    assert!(!schedule.paused);
    assert_eq!(schedule.failures_in_a_row, 2);
}

#[tokio::test]
async fn bad_schedules_are_refused_and_nothing_is_recorded() {
    let rig = Rig::new();
    let refuse = |change: &dyn Fn(&mut ScheduleSpec)| {
        let mut spec = every_minute(CatchUp::Once, Overlap::Skip);
        change(&mut spec);
        rig.schedules.add(spec).unwrap_err().to_string()
    };
    let message = refuse(&|s| {
        s.trigger = Trigger::Cron {
            expr: "0 25 * * *".into(),
            tz: "UTC".into(),
        }
    });
    assert!(
        message.starts_with("malformed cron expression `0 25 * * *`"),
        "{message}"
    );
    let message = refuse(&|s| s.approval_deadline_secs = 0);
    assert!(message.contains("approval deadline"), "{message}");
    let message = refuse(&|s| s.approval_deadline_secs = MAX_APPROVAL_DEADLINE_SECS + 1);
    assert!(message.contains("approval deadline"), "{message}");
    let message = refuse(&|s| {
        s.trigger = Trigger::At {
            at: "2020-01-01T00:00:00Z".into(),
        }
    });
    assert!(message.contains("never run"), "{message}");
    assert!(rig.schedules.list().unwrap().is_empty());
    rig.schedules
        .add(every_minute(CatchUp::Once, Overlap::Skip))
        .unwrap();
    let message = rig
        .schedules
        .add(every_minute(CatchUp::Once, Overlap::Skip))
        .unwrap_err()
        .to_string();
    assert!(message.contains("exists already"), "{message}");
}

#[tokio::test]
async fn pause_delete_and_run_now() {
    let mut rig = Rig::new();
    rig.schedules
        .add(every_minute(CatchUp::Once, Overlap::Skip))
        .unwrap();
    let paused = rig.schedules.pause("tidy").unwrap();
    assert!(paused.paused);
    assert_eq!(paused.next_due, None);
    assert_eq!(rig.at(START + 5 * MIN).await, None);
    assert_eq!(rig.started(), 0);
    let id = rig.schedules.list().unwrap()[0].id.clone();
    let task = rig.scheduler.run_now(&id).await.unwrap();
    assert_eq!(task, "task-1");
    let refused = rig.scheduler.run_now(&id).await.unwrap_err().to_string();
    assert!(refused.contains("is running"), "{refused}");
    rig.schedules.delete("tidy").unwrap();
    assert!(rig.schedules.report("tidy").is_err());
}
