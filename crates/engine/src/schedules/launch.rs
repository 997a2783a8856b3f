//! A schedule's run as a task of the engine, followed while nobody watches: actions in its
//! scope are approved for it, any other waits for a person (`deskhand tasks approve`, the
//! API, or the desktop notification's buttons) until the schedule's deadline, after which
//! the run ends `needs_approval`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{Ended, Launcher, ScheduleError};
use crate::agent::verify::{Check, DEFAULT_CHECK_TIMEOUT, VerifyOutcome};
use crate::agent::{AgentEvent, Answerer, ApprovalRequest, DecidedBy, Decision};
use crate::llm::{ContentBlock, ImageSource};
use crate::tasks::{DesktopSettings, Engine, Origin, RunSettings, TaskSpec, TaskState, TaskUpdate};
use deskhand_protocol::ids::TaskId;
use deskhand_protocol::schedule::{Schedule, ScheduleOutcome};

/// Starts schedules' runs on an engine.
pub struct EngineLauncher {
    engine: Engine,
}

impl EngineLauncher {
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

#[async_trait::async_trait]
impl Launcher for EngineLauncher {
    async fn start(
        &self,
        schedule: &Schedule,
        ended: mpsc::UnboundedSender<Ended>,
    ) -> Result<TaskId, ScheduleError> {
        let spec = &schedule.spec;
        let check = spec
            .check
            .as_deref()
            .map(|command| Check::new(command, DEFAULT_CHECK_TIMEOUT))
            .transpose()
            .map_err(|e| ScheduleError::Invalid(e.to_string()))?;
        let task = self
            .engine
            .submit(TaskSpec {
                session: spec.session.as_ref().map(ToString::to_string),
                input: vec![ContentBlock::text(&spec.prompt)],
                settings: RunSettings {
                    max_cost_usd: spec.max_cost_usd,
                    check,
                    desktop: DesktopSettings {
                        agent: spec.agent_desktop.then_some(true),
                        ..DesktopSettings::default()
                    },
                    ..RunSettings::default()
                },
                origin: Origin::Schedule,
                window: None,
            })
            .await?;
        let follow = Follow {
            engine: self.engine.clone(),
            schedule: Arc::new(schedule.clone()),
            task: task.id.clone(),
        };
        tokio::spawn(follow.run(ended));
        Ok(task.id)
    }

    fn cancel(&self, task: &TaskId) {
        let _ = self.engine.cancel(task);
    }

    fn ended_before(&self, task: &TaskId) -> Option<ScheduleOutcome> {
        let info = self.engine.task(task).ok()?;
        info.state
            .is_final()
            .then(|| outcome(info.state, VerifyOutcome::Unverified))
    }
}

/// How a run ended, for its schedule.
fn outcome(state: TaskState, verified: VerifyOutcome) -> ScheduleOutcome {
    match (state, verified) {
        (TaskState::Done, VerifyOutcome::Verified) => ScheduleOutcome::Verified,
        (TaskState::Done, VerifyOutcome::Unverified) => ScheduleOutcome::Unverified,
        (TaskState::Stalled, _) => ScheduleOutcome::Stalled,
        (TaskState::NeedsApproval, _) => ScheduleOutcome::NeedsApproval,
        _ => ScheduleOutcome::Failed,
    }
}

/// One run followed to its end.
struct Follow {
    engine: Engine,
    schedule: Arc<Schedule>,
    task: TaskId,
}

impl Follow {
    async fn run(self, ended: mpsc::UnboundedSender<Ended>) {
        let mut verified = VerifyOutcome::Unverified;
        let mut state = TaskState::Error;
        let mut screenshot = None;
        if let Ok(mut watch) = self.engine.watch(&self.task, 0) {
            while let Some(update) = watch.next().await {
                match update {
                    TaskUpdate::Event {
                        event: AgentEvent::ApprovalNeeded { request },
                        ..
                    } => self.on_approval(request),
                    TaskUpdate::Event {
                        event: AgentEvent::Verification(checked),
                        ..
                    } => verified = checked.outcome,
                    TaskUpdate::Event {
                        event: AgentEvent::ToolResult { images, .. },
                        ..
                    } => {
                        // Stored events hold their images as refs.
                        if let Some(ImageSource::Ref(image)) = images.last() {
                            screenshot = Some(image.sha256.clone());
                        }
                    }
                    TaskUpdate::Ended(info) => state = info.state,
                    TaskUpdate::Event { .. } | TaskUpdate::Notice(_) => {}
                }
            }
        }
        let outcome = outcome(state, verified);
        notify(
            &format!("Schedule {}: {}", self.schedule.spec.name, outcome.name()),
            &format!("task {}", self.task),
        );
        let _ = ended.send(Ended {
            schedule: self.schedule.id.clone(),
            task: self.task.clone(),
            outcome,
            screenshot,
        });
    }

    /// An action in the scope is approved for the run, unless only a person may answer it
    /// (`needs_person`: derived from untrusted content, a secret place, a safety check…);
    /// any other waits for a person until the deadline, then ends the run `needs_approval`.
    fn on_approval(&self, request: ApprovalRequest) {
        let spec = &self.schedule.spec;
        if spec.scope.tools.contains(&request.tool) && !request.needs_person {
            let _ = self.engine.answer(
                &self.task,
                Some(&request.tool_use_id),
                Decision::Approve,
                Answerer::new(DecidedBy::Policy),
            );
            return;
        }
        let engine = self.engine.clone();
        let task = self.task.clone();
        let deadline = Duration::from_secs(spec.approval_deadline_secs);
        let asking = ask_on_the_desktop(&engine, &task, &spec.name, &request);
        tokio::spawn(async move {
            tokio::time::sleep(deadline).await;
            // The notification's question ends with the deadline.
            if let Some(asking) = asking {
                asking.abort();
            }
            let still_waiting = engine
                .waiting_for(&task)
                .ok()
                .flatten()
                .is_some_and(|waiting| waiting.tool_use_id == request.tool_use_id);
            if still_waiting {
                let _ = engine.end_unanswered(&task);
            }
        });
    }
}

/// Whether a desktop's notification service may be reachable.
fn desktop_reachable() -> bool {
    std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some()
}

/// Shows a desktop notification, when a desktop is reachable (`notify-send`); nothing
/// otherwise.
pub(super) fn notify(summary: &str, body: &str) {
    if !desktop_reachable() {
        return;
    }
    let _ = tokio::process::Command::new("notify-send")
        .args(["--app-name=Deskhand", "--", summary, body])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn();
}

/// Asks on the desktop with Approve and Deny buttons (`notify-send --action --wait`); the
/// answer goes to the task like any other. No desktop: the run waits for the CLI or the API.
/// Returns the wait for the answer, which aborting ends (the notification with it).
fn ask_on_the_desktop(
    engine: &Engine,
    task: &TaskId,
    name: &str,
    request: &ApprovalRequest,
) -> Option<tokio::task::JoinHandle<()>> {
    if !desktop_reachable() {
        return None;
    }
    let child = tokio::process::Command::new("notify-send")
        .args([
            "--app-name=Deskhand",
            "--wait",
            "--action=approve=Approve",
            "--action=deny=Deny",
            "--",
            &format!("Schedule {name} asks"),
            &crate::visible::line(&request.plan.summary),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let Ok(child) = child else {
        return None;
    };
    let engine = engine.clone();
    let task = task.clone();
    let call = request.tool_use_id.clone();
    Some(tokio::spawn(async move {
        let Ok(output) = child.wait_with_output().await else {
            return;
        };
        let decision = match String::from_utf8_lossy(&output.stdout).trim() {
            "approve" => Decision::Approve,
            "deny" => Decision::Deny { reason: None },
            _ => return,
        };
        let _ = engine.answer(&task, Some(&call), decision, Answerer::new(DecidedBy::User));
    }))
}
