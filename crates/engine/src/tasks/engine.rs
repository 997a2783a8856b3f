//! The task engine: submit, list, watch, answer, cancel. Tasks run on the tokio runtime of
//! the process that hosts the engine (the CLI for `ask`, the window, or `deskhand serve`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::TaskError;
use super::approvals::PendingApprovals;
use super::lock::SessionLock;
use super::prepare::{self, Resolved, RunSettings};
use crate::agent::{
    AgentEvent, Answerer, ApprovalGate, ApprovalPolicy, Decision, RunWindow, SessionRules,
};
use crate::desktop::AgentDesktop;
use crate::images::ImageRef;
use crate::llm::{ContentBlock, ImageSource};
use crate::store::{Recorder, Store};
use deskhand_protocol::ids::{SessionId, TaskId, ToolUseId};
use deskhand_protocol::task::{Origin, TaskInfo, TaskState};
use deskhand_protocol::update::TaskUpdate;

/// What a front end asks to run.
pub struct TaskSpec {
    /// A stored session to continue (its id or the first characters of it), on its saved
    /// check and desktop where `settings` leave them; `None` starts a new one.
    pub session: Option<String>,
    pub input: Vec<ContentBlock>,
    pub settings: RunSettings,
    pub origin: Origin,
    /// The front end's window on the person's screen (the app's); `None` for the others.
    pub window: Option<Arc<dyn RunWindow>>,
}

/// Updates a watcher may fall behind by before it is dropped; it then catches up from the
/// store, so a slow watcher costs memory only up to this.
const WATCH_BUFFER: usize = 1024;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
struct Watchers {
    /// The id of the last stored event published: a new watcher replays up to it from the
    /// store and gets the rest live.
    last_id: i64,
    senders: Vec<mpsc::Sender<Arc<TaskUpdate>>>,
}

/// A task this engine runs.
struct Live {
    info: Mutex<TaskInfo>,
    cancel: CancellationToken,
    approvals: Arc<PendingApprovals>,
    gate: Mutex<Option<Arc<ApprovalGate>>>,
    watchers: Mutex<Watchers>,
    /// Stopped because nobody approved in time (a scheduled run): it ends `needs_approval`,
    /// not `cancelled`.
    unanswered: std::sync::atomic::AtomicBool,
}

/// A session's place in this engine: its queue, and its "always allow" rules.
#[derive(Default)]
struct Slot {
    turn: Arc<tokio::sync::Mutex<()>>,
    rules: SessionRules,
}

struct Inner {
    store: Store,
    live: Mutex<HashMap<TaskId, Arc<Live>>>,
    sessions: Mutex<HashMap<SessionId, Arc<Slot>>>,
    /// Tasks of this process whose end the store could not record (a full disk): their
    /// watchers must still see them end.
    unrecorded_ends: Mutex<HashMap<TaskId, TaskInfo>>,
    /// The agent desktops of sessions: the running task's, and those kept for the session's
    /// next run. Dropping one ends it; the process's end ends them all.
    desktops: Mutex<Desktops>,
}

#[derive(Default)]
struct Desktops {
    by_session: HashMap<SessionId, Arc<AgentDesktop>>,
    /// Sessions whose running task is on its desktop, and whether the desktop stays once the
    /// task ends. A change of mind mid-run changes this flag, read under the same lock as the
    /// task's end, so a choice made as the task ends is never lost.
    in_use: HashMap<SessionId, bool>,
}

/// Cheap to clone; clones share the tasks.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    /// An engine over `store`. Tasks a process left unfinished when it died are marked
    /// `interrupted` and their sessions repaired, so they can be continued.
    pub fn new(store: Store) -> Self {
        let engine = Self {
            inner: Arc::new(Inner {
                store,
                live: Mutex::default(),
                sessions: Mutex::default(),
                unrecorded_ends: Mutex::default(),
                desktops: Mutex::default(),
            }),
        };
        if let Err(e) = engine.recover() {
            eprintln!("deskhand: cannot check for interrupted tasks: {e}");
        }
        engine
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    fn recover(&self) -> Result<(), TaskError> {
        let store = &self.inner.store;
        let own = std::process::id();
        for task in store.tasks(0)? {
            if task.state.is_final() || (task.pid != own && process_alive(task.pid)) {
                continue;
            }
            // Only a session nobody runs: a live process holds the lock of its running task.
            let Ok(_lock) = SessionLock::try_acquire(store.dir(), task.session_id.as_str()) else {
                continue;
            };
            if store.resolve_id(task.session_id.as_str()).is_ok() {
                Recorder::resume(store, &task.session_id)?;
            }
            store.set_task_state(
                &task.id,
                TaskState::Interrupted,
                None,
                Some("the process running this task ended before it did; its session was repaired and can be continued"),
            )?;
        }
        Ok(())
    }

    /// Starts a task and returns it at once (`running`, or `queued` behind its session's
    /// current task in this process). A session another process runs is refused as busy.
    /// Settings that cannot work (no key, an unknown tool, …) are refused here. A stored
    /// session's saved check and desktop apply unless the task chose its own; what it chose
    /// is saved with the session once the task is accepted.
    pub async fn submit(&self, spec: TaskSpec) -> Result<TaskInfo, TaskError> {
        let store = self.inner.store.clone();
        let session_id = match &spec.session {
            Some(id) => Some(store.resolve_id(id)?),
            None => None,
        };
        let mut settings = spec.settings;
        let chosen = prepare::session_rules(&mut settings, &store, session_id.as_ref())?;
        let is_new = session_id.is_none();
        let session_id =
            session_id.unwrap_or_else(|| SessionId::from(uuid::Uuid::new_v4().to_string()));
        let resolved = {
            let store = store.clone();
            // The keyring is a blocking D-Bus round trip.
            tokio::task::spawn_blocking(move || prepare::resolve(settings, &store))
                .await
                .map_err(|e| TaskError::Invalid(e.to_string()))??
        };
        let slot = lock(&self.inner.sessions)
            .entry(session_id.clone())
            .or_default()
            .clone();
        let ready = match slot.turn.clone().try_lock_owned() {
            Ok(turn) => Some((
                SessionLock::try_acquire(store.dir(), session_id.as_str())?,
                turn,
            )),
            Err(_) => None,
        };
        chosen.save(&store, &session_id)?;
        let prompt = spec
            .input
            .iter()
            .find_map(|block| match block {
                ContentBlock::Text { text, .. } => Some(crate::store::title_from(text)),
                _ => None,
            })
            .unwrap_or_default();
        let info = TaskInfo {
            id: TaskId::from(uuid::Uuid::new_v4().to_string()),
            session_id: session_id.clone(),
            state: if ready.is_some() {
                TaskState::Running
            } else {
                TaskState::Queued
            },
            origin: spec.origin,
            prompt,
            pid: std::process::id(),
            waiting_for: None,
            error: None,
            created_at: String::new(),
            updated_at: String::new(),
        };
        store.insert_task(&info)?;
        let info = store.task(&info.id)?.unwrap_or(info);
        let live = Arc::new(Live {
            info: Mutex::new(info.clone()),
            cancel: CancellationToken::new(),
            approvals: Arc::default(),
            gate: Mutex::default(),
            watchers: Mutex::default(),
            unanswered: std::sync::atomic::AtomicBool::new(false),
        });
        lock(&self.inner.live).insert(info.id.clone(), live.clone());
        let run = Run {
            engine: self.clone(),
            live,
            slot,
            session_id,
            is_new,
            input: spec.input,
            window: spec.window,
        };
        tokio::spawn(run.go(resolved, ready));
        Ok(info)
    }

    /// A task as stored, or as it ended here when the store could not record its end.
    pub fn task(&self, id: &TaskId) -> Result<TaskInfo, TaskError> {
        let stored = self
            .inner
            .store
            .task(id)?
            .ok_or_else(|| TaskError::NotFound(id.clone()))?;
        if stored.state.is_final() {
            return Ok(stored);
        }
        Ok(lock(&self.inner.unrecorded_ends)
            .get(id)
            .cloned()
            .unwrap_or(stored))
    }

    /// Live tasks and the newest `limit` finished ones, newest first, from every process.
    pub fn tasks(&self, limit: usize) -> Result<Vec<TaskInfo>, TaskError> {
        Ok(self.inner.store.tasks(limit)?)
    }

    fn live(&self, id: &TaskId) -> Result<Arc<Live>, TaskError> {
        if let Some(live) = lock(&self.inner.live).get(id) {
            return Ok(live.clone());
        }
        let task = self.task(id)?;
        if task.state.is_final() {
            return Err(TaskError::Finished {
                id: id.clone(),
                state: task.state.name(),
            });
        }
        Err(TaskError::Elsewhere {
            id: id.clone(),
            pid: task.pid,
        })
    }

    /// Follows a task: its stored events after event `after` (0: from the start), then the
    /// rest live, and the end when the task ends.
    pub fn watch(&self, id: &TaskId, after: i64) -> Result<Watch, TaskError> {
        self.task(id)?;
        let live = lock(&self.inner.live).get(id).cloned();
        let (receiver, upto) = match live {
            Some(live) => {
                let (sender, receiver) = mpsc::channel(WATCH_BUFFER);
                let mut watchers = lock(&live.watchers);
                watchers.senders.push(sender);
                (Some(receiver), Some(watchers.last_id))
            }
            None => (None, None),
        };
        let mut watch = Watch {
            engine: self.clone(),
            task: id.clone(),
            last_id: after,
            replay: Vec::new().into_iter(),
            replay_upto: upto,
            replay_done: false,
            receiver,
            ended: false,
        };
        watch.next_page()?;
        Ok(watch)
    }

    /// Answers the action the task waits for: `tool_use_id` names it (`None`: whichever
    /// waits now); `answerer` says who did, for the history. Refused when nothing with that
    /// id waits.
    pub fn answer(
        &self,
        id: &TaskId,
        tool_use_id: Option<&ToolUseId>,
        decision: Decision,
        answerer: Answerer,
    ) -> Result<ToolUseId, TaskError> {
        let live = self.live(id)?;
        let call = match tool_use_id {
            Some(call) => call.clone(),
            None => lock(&live.info)
                .waiting_for
                .as_ref()
                .map(|request| request.tool_use_id.clone())
                .ok_or_else(|| TaskError::NothingPending(id.clone()))?,
        };
        live.approvals.answer(&call, decision, answerer)?;
        Ok(call)
    }

    /// The action a task this engine runs waits for, if any.
    /// The person's answer to the task's stall question (go on, go on with a hint, stop).
    pub fn answer_stall(
        &self,
        id: &TaskId,
        answer: crate::agent::stall::StallAnswer,
    ) -> Result<(), TaskError> {
        if self.live(id)?.approvals.answer_stall(answer) {
            Ok(())
        } else {
            Err(TaskError::NoStallQuestion(id.clone()))
        }
    }

    pub fn waiting_for(
        &self,
        id: &TaskId,
    ) -> Result<Option<crate::agent::ApprovalRequest>, TaskError> {
        Ok(lock(&self.live(id)?.info).waiting_for.clone())
    }

    /// Cancels a task: a queued one ends before it starts, a running one as a stop does
    /// (open calls answered "cancelled by the user", the session left valid).
    pub fn cancel(&self, id: &TaskId) -> Result<(), TaskError> {
        self.live(id)?.cancel.cancel();
        Ok(())
    }

    /// Stops a task whose approval nobody gave in time: it ends `needs_approval` (a
    /// scheduled run past its deadline), its session left valid as a stop leaves it.
    pub fn end_unanswered(&self, id: &TaskId) -> Result<(), TaskError> {
        let live = self.live(id)?;
        live.unanswered
            .store(true, std::sync::atomic::Ordering::SeqCst);
        live.cancel.cancel();
        Ok(())
    }

    /// Switches a running task's approval mode; its next action sees it.
    pub fn set_policy(&self, id: &TaskId, policy: ApprovalPolicy) -> Result<(), TaskError> {
        if let Some(gate) = lock(&self.live(id)?.gate).as_ref() {
            gate.set_policy(policy);
        }
        Ok(())
    }

    /// The approval mode a task this engine runs is under now (it can change mid-run);
    /// `None` for another task, or before its run has begun.
    pub fn policy(&self, id: &TaskId) -> Option<ApprovalPolicy> {
        let live = lock(&self.inner.live).get(id).cloned()?;
        let gate = lock(&live.gate).clone()?;
        Some(gate.policy())
    }

    /// The display (`:N`) of the session's agent desktop, while its task runs there or after
    /// a run that kept it.
    pub fn desktop_display(&self, session_id: &SessionId) -> Option<String> {
        lock(&self.inner.desktops)
            .by_session
            .get(session_id)
            .map(|desktop| desktop.display_name())
    }

    /// Whether the session's agent desktop stays for its next run. One no longer kept ends
    /// now, or with the task that is on it.
    pub fn keep_desktop(&self, session_id: &SessionId, keep: bool) {
        let mut desktops = lock(&self.inner.desktops);
        if let Some(kept) = desktops.in_use.get_mut(session_id) {
            *kept = keep;
        } else if !keep {
            desktops.by_session.remove(session_id);
        }
    }

    /// The tasks this engine is running now.
    pub fn running(&self) -> Vec<TaskInfo> {
        lock(&self.inner.live)
            .values()
            .map(|live| lock(&live.info).clone())
            .collect()
    }
}

/// Whether a process with this id exists (a signal 0 is only checked, never sent).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 performs the permission and existence checks only.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// How often a watcher looks in the store for events of a task another process runs.
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);
/// How much stored JSON a watcher replays at a time: a replay holds one page in memory,
/// however many events the task stored.
const REPLAY_PAGE_BYTES: usize = 256 * 1024;

/// A watcher's view of a task: replayed events, then live ones, then `Ended`; `None` after
/// that. A task another process runs (a `deskhand ask` beside the window) is followed
/// through the store.
pub struct Watch {
    engine: Engine,
    task: TaskId,
    last_id: i64,
    /// The page of stored events being replayed.
    replay: std::vec::IntoIter<TaskUpdate>,
    /// The last stored event to replay (the last one published when the watch began);
    /// `None`: every stored one.
    replay_upto: Option<i64>,
    /// Whether the store has no more events to replay.
    replay_done: bool,
    receiver: Option<mpsc::Receiver<Arc<TaskUpdate>>>,
    /// Whether `Ended` was delivered: nothing follows it.
    ended: bool,
}

impl Watch {
    pub fn task_id(&self) -> &TaskId {
        &self.task
    }

    /// Reads the next page of stored events after the last one seen. An event this version
    /// cannot read (a newer one stored it) is a notice in its place, never a silent gap;
    /// the page's end counts as seen either way.
    fn next_page(&mut self) -> Result<(), TaskError> {
        let page = self.engine.inner.store.task_events(
            &self.task,
            self.last_id,
            self.replay_upto,
            REPLAY_PAGE_BYTES,
        )?;
        self.replay_done = page.is_empty();
        if let Some(&(last, _)) = page.last() {
            self.last_id = self.last_id.max(last);
        }
        self.replay = page
            .into_iter()
            .map(|(id, stored)| match serde_json::from_value(stored) {
                Ok(event) => TaskUpdate::Event {
                    id: Some(id),
                    event,
                },
                Err(e) => TaskUpdate::Notice(format!("stored event {id} cannot be read: {e}")),
            })
            .collect::<Vec<_>>()
            .into_iter();
        Ok(())
    }

    pub async fn next(&mut self) -> Option<TaskUpdate> {
        if self.ended {
            return None;
        }
        loop {
            if let Some(update) = self.replay.next() {
                return Some(update);
            }
            if !self.replay_done {
                self.next_page().ok()?;
                continue;
            }
            let Some(receiver) = self.receiver.as_mut() else {
                // Not this engine's task: follow the store until the task has ended. Read
                // before looking for more, so that an ended task has stored all it will.
                let task = self.engine.task(&self.task).ok()?;
                let more = self.engine.watch(&self.task, self.last_id).ok()?;
                let got_more = more.replay.len() > 0 || more.receiver.is_some();
                *self = more;
                if !got_more {
                    if task.state.is_final() {
                        self.ended = true;
                        return Some(TaskUpdate::Ended(task));
                    }
                    tokio::time::sleep(POLL_INTERVAL).await;
                }
                continue;
            };
            match receiver.recv().await {
                Some(update) => {
                    if let TaskUpdate::Event { id: Some(id), .. } = *update
                        && id <= self.last_id
                    {
                        continue;
                    }
                    return Some(self.seen((*update).clone()));
                }
                // The task ended, or this watcher fell behind and was dropped: catch up from
                // the store (and live again if the task still runs).
                None => match self.engine.watch(&self.task, self.last_id) {
                    Ok(again) => *self = again,
                    Err(_) => return None,
                },
            }
        }
    }

    fn seen(&mut self, update: TaskUpdate) -> TaskUpdate {
        if let TaskUpdate::Event { id: Some(id), .. } = update {
            self.last_id = self.last_id.max(id);
        }
        update
    }
}

/// One task on its way.
struct Run {
    engine: Engine,
    live: Arc<Live>,
    slot: Arc<Slot>,
    session_id: SessionId,
    is_new: bool,
    input: Vec<ContentBlock>,
    window: Option<Arc<dyn RunWindow>>,
}

/// The file lock first: it is dropped (released) before the queue lets the next task in.
type Turn = (SessionLock, tokio::sync::OwnedMutexGuard<()>);

impl Run {
    fn store(&self) -> &Store {
        &self.engine.inner.store
    }

    fn set_state(&self, state: TaskState, waiting_for: Option<&crate::agent::ApprovalRequest>) {
        let id = {
            let mut info = lock(&self.live.info);
            info.state = state;
            info.waiting_for = waiting_for.cloned();
            info.id.clone()
        };
        if let Err(e) = self.store().set_task_state(&id, state, waiting_for, None) {
            self.publish(TaskUpdate::Notice(format!(
                "cannot record the task's state: {e}"
            )));
        }
    }

    fn publish(&self, update: TaskUpdate) {
        let mut watchers = lock(&self.live.watchers);
        if let TaskUpdate::Event { id: Some(id), .. } = update {
            watchers.last_id = id;
        }
        let update = Arc::new(update);
        // A watcher that fell behind (or left) is dropped; it catches up from the store.
        watchers
            .senders
            .retain(|sender| sender.try_send(update.clone()).is_ok());
    }

    /// Ends the task in `state`, with why it failed if it never ran.
    fn finish(&self, state: TaskState, error: Option<String>) {
        let state = match state {
            TaskState::Cancelled
                if self
                    .live
                    .unanswered
                    .load(std::sync::atomic::Ordering::SeqCst) =>
            {
                TaskState::NeedsApproval
            }
            state => state,
        };
        let id = {
            let mut info = lock(&self.live.info);
            info.state = state;
            info.waiting_for = None;
            info.error.clone_from(&error);
            info.id.clone()
        };
        if let Err(e) = self
            .store()
            .set_task_state(&id, state, None, error.as_deref())
        {
            self.publish(TaskUpdate::Notice(format!(
                "cannot record the task's end: {e}"
            )));
            let ended = lock(&self.live.info).clone();
            lock(&self.engine.inner.unrecorded_ends).insert(id.clone(), ended);
        }
        self.live.approvals.clear();
        lock(&self.engine.inner.live).remove(&id);
        // Dropping the senders ends every watcher after what it was sent.
        lock(&self.live.watchers).senders.clear();
    }

    async fn go(mut self, resolved: Resolved, ready: Option<Turn>) {
        let input = std::mem::take(&mut self.input);
        let _turn = match ready {
            Some(turn) => turn,
            None => {
                let waited = tokio::select! {
                    turn = self.slot.turn.clone().lock_owned() => Some(turn),
                    () = self.live.cancel.cancelled() => None,
                };
                let Some(turn) = waited else {
                    return self.finish(TaskState::Cancelled, None);
                };
                match SessionLock::try_acquire(self.store().dir(), self.session_id.as_str()) {
                    Ok(file) => {
                        self.set_state(TaskState::Running, None);
                        (file, turn)
                    }
                    Err(e) => return self.finish(TaskState::Error, Some(e.to_string())),
                }
            }
        };
        let prompt = input
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let kept = self.take_desktop(resolved.keeps_desktop());
        let task_id = lock(&self.live.info).id.clone();
        let prepared = prepare::prepare(
            resolved,
            &self.engine,
            &self.session_id,
            &task_id,
            &prompt,
            self.live.approvals.clone(),
            self.slot.rules.clone(),
            self.window.clone(),
            kept.clone(),
        )
        .await;
        let prepared = match prepared {
            Ok(prepared) => prepared,
            Err(e) => {
                // A run that never started leaves the session's kept desktop as it found it.
                if let Some(kept) = kept {
                    lock(&self.engine.inner.desktops)
                        .by_session
                        .insert(self.session_id.clone(), kept);
                }
                self.leave_desktop();
                return self.finish(TaskState::Error, Some(e.to_string()));
            }
        };
        if let Some(desktop) = &prepared.desktop {
            self.publish(TaskUpdate::Notice(format!(
                "the agent works on its own desktop, display {}",
                desktop.display_name()
            )));
            lock(&self.engine.inner.desktops)
                .by_session
                .insert(self.session_id.clone(), desktop.clone());
        }
        for problem in &prepared.problems {
            self.publish(TaskUpdate::Notice(format!(
                "{problem}; going on without it"
            )));
        }
        *lock(&self.live.gate) = Some(prepared.agent.gate.clone());
        let opened = if self.is_new {
            Recorder::create(self.store(), &self.session_id).map(|r| (r, Vec::new()))
        } else {
            Recorder::resume(self.store(), &self.session_id)
        };
        let (recorder, mut history) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                prepared.plugins.shutdown().await;
                self.leave_desktop();
                return self.finish(TaskState::Error, Some(e.to_string()));
            }
        };
        let mut recorder = recorder.for_task(&task_id);
        let mut input = input;
        if !self.is_new {
            // A crash may have cut off an action that did run: look before going on.
            let look =
                crate::agent::resume::look_before_resuming(&history, &prepared.agent.tools).await;
            input.splice(0..0, look);
        }
        let cancel = self.live.cancel.clone();
        let mut not_saved: Option<String> = None;
        let outcome = prepared
            .agent
            .run(
                &self.session_id,
                &mut history,
                input,
                &mut |event| self.on_event(event, &mut recorder, &mut not_saved, &cancel),
                &cancel,
            )
            .await;
        prepared.plugins.shutdown().await;
        self.leave_desktop();
        match not_saved {
            Some(e) => self.finish(
                TaskState::Error,
                Some(format!("the run's history could not be saved: {e}")),
            ),
            None => self.finish(outcome.status.into(), None),
        }
    }

    /// Before the run: the desktop the session kept, if any, now in use by this task, which
    /// keeps it at its end if `keep` (unless told otherwise meanwhile).
    fn take_desktop(&self, keep: bool) -> Option<Arc<AgentDesktop>> {
        let mut desktops = lock(&self.engine.inner.desktops);
        desktops.in_use.insert(self.session_id.clone(), keep);
        desktops.by_session.remove(&self.session_id)
    }

    /// After the run: its agent desktop stays for the session's next run, or ends (once the
    /// run lets go of it too).
    fn leave_desktop(&self) {
        let mut desktops = lock(&self.engine.inner.desktops);
        if desktops.in_use.remove(&self.session_id) != Some(true) {
            desktops.by_session.remove(&self.session_id);
        }
    }

    /// Stored before shown: every watcher gets an event only once it is committed.
    fn on_event(
        &self,
        mut event: AgentEvent,
        recorder: &mut Recorder,
        not_saved: &mut Option<String>,
        cancel: &CancellationToken,
    ) {
        match &event {
            AgentEvent::ApprovalNeeded { request } => {
                self.live.approvals.open(&request.tool_use_id);
                self.set_state(TaskState::WaitingForApproval, Some(request));
            }
            AgentEvent::ApprovalDecided { .. } => self.set_state(TaskState::Running, None),
            AgentEvent::StallDetected {
                step: crate::agent::stall::StallStep::Ask,
                ..
            } => self.live.approvals.open_stall(),
            _ => {}
        }
        if not_saved.is_none() {
            match recorder.record(&event) {
                Ok(stored) => {
                    return self.publish(TaskUpdate::Event {
                        id: recorder.last_event_id(),
                        event: stored,
                    });
                }
                Err(e) => {
                    self.publish(TaskUpdate::Notice(format!("stopping the run: {e}")));
                    *not_saved = Some(e.to_string());
                    cancel.cancel();
                }
            }
        }
        // Unstored: shown all the same, but never a whole message (it carries image data),
        // and a tool result's images as refs, as stored ones are.
        match &mut event {
            AgentEvent::Message { .. } => return,
            AgentEvent::ToolResult { images, .. } => {
                for image in images {
                    *image = ImageSource::Ref(ImageRef::of(image));
                }
            }
            _ => {}
        }
        self.publish(TaskUpdate::Event { id: None, event });
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;
    use crate::agent::RunStatus;
    use crate::llm::{Message, Usage};

    /// A finished task's watch hands over its stored events typed, with their ids and a
    /// message's image as a ref; an event this version cannot read (a newer one stored it)
    /// as a notice in its place; then the task's end, and nothing after it.
    #[tokio::test]
    async fn a_watch_hands_over_typed_events_and_the_tasks_end() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let task = TaskInfo {
            id: "t1".into(),
            session_id: "s1".into(),
            state: TaskState::Done,
            origin: Origin::Cli,
            prompt: "look".into(),
            pid: std::process::id(),
            waiting_for: None,
            error: None,
            created_at: String::new(),
            updated_at: String::new(),
        };
        store.insert_task(&task).unwrap();
        let mut recorder = Recorder::create(&store, &"s1".into())
            .unwrap()
            .for_task(&"t1".into());
        let shot = ContentBlock::Image {
            source: ImageSource::Base64 {
                media_type: "image/png".into(),
                data: base64::engine::general_purpose::STANDARD.encode(b"a screenshot"),
            },
        };
        let message = AgentEvent::Message {
            message: Message::user(vec![ContentBlock::text("look"), shot]),
        };
        let stored_message = recorder.record(&message).unwrap();
        let message_id = recorder.last_event_id().unwrap();
        rusqlite::Connection::open(store.db_path())
            .unwrap()
            .execute(
                "INSERT INTO events (session_id, type, body, at, task_id) \
                 VALUES ('s1', 'from_the_future', '{\"type\":\"from_the_future\"}', 0, 't1')",
                [],
            )
            .unwrap();
        let done = AgentEvent::Done {
            status: RunStatus::Done,
            turns: 1,
            session_id: "s1".into(),
            usage: Usage::default(),
            cost_usd: None,
        };
        recorder.record(&done).unwrap();
        let done_id = recorder.last_event_id().unwrap();

        let engine = Engine::new(store);
        let mut watch = engine.watch(&"t1".into(), 0).unwrap();
        let Some(TaskUpdate::Event {
            id: Some(id),
            event: AgentEvent::Message { message: read },
        }) = watch.next().await
        else {
            panic!("the message first");
        };
        assert_eq!(id, message_id);
        assert_eq!(
            AgentEvent::Message {
                message: read.clone()
            },
            stored_message
        );
        assert!(read.content[1].has_refs(), "{read:?}");
        let Some(TaskUpdate::Notice(notice)) = watch.next().await else {
            panic!("a notice for the unreadable event");
        };
        assert!(notice.contains("cannot be read"), "{notice}");
        assert_eq!(
            watch.next().await,
            Some(TaskUpdate::Event {
                id: Some(done_id),
                event: done
            })
        );
        let Some(TaskUpdate::Ended(ended)) = watch.next().await else {
            panic!("the task's end last");
        };
        assert_eq!(ended.state, TaskState::Done);
        assert_eq!(watch.next().await, None);
    }
}
