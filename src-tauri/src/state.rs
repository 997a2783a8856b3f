//! What the shell holds between commands: settings, the history store, the running run,
//! pending approvals and attachments.

use std::sync::{Arc, Mutex, MutexGuard};

use deskhand_engine::agent::ApprovalPolicy;
use deskhand_engine::desktop::live::LiveView;
use deskhand_engine::desktop::takeover::TakeOver;
use deskhand_engine::ids::{SessionId, TaskId};
use deskhand_engine::secrets::OsKeyring;
use deskhand_engine::store::Store;
use deskhand_engine::tasks::Engine;
use deskhand_engine::tools::computer::capture::RealScreen;
use deskhand_engine::tools::computer::screen::{self, Screen};
use tauri::{Monitor, Runtime, WebviewWindow};

use crate::bar::Bar;
use crate::config::{Settings, SettingsFile};
use crate::desktop::{Desktop, NativeDesktop};
use crate::error::{IpcError, IpcResult};
use crate::images::Attachments;

/// The window's run in progress (a task of the engine): what `stop` cancels, `approve`
/// answers and `set_approval_mode` switches. `task_id` is `None` while it is submitted.
pub struct ActiveRun {
    pub session_id: Option<SessionId>,
    pub task_id: Option<TaskId>,
}

pub struct AppState {
    settings_file: SettingsFile,
    settings: Mutex<Settings>,
    /// The window's approval mode: the settings' default until switched.
    mode: Mutex<ApprovalPolicy>,
    active: Mutex<Option<ActiveRun>>,
    pub attachments: Attachments,
    /// The sessions, shared with the CLI; why it could not be opened, if it could not (the
    /// window still starts, and says so where history is needed).
    store: Result<Store, String>,
    /// The task engine over that store: the window's runs are its tasks, in this process,
    /// so they go on while the window is hidden in the tray.
    engine: Option<Engine>,
    /// Where API keys are: the OS keyring, as for the CLI.
    pub keyring: OsKeyring,
    pub bar: Bar,
    /// Native confirmations and the system browser.
    pub desktop: Arc<dyn Desktop>,
    /// The side panel's live view of an agent desktop, if it shows one.
    live_view: Mutex<Option<LiveView>>,
    /// The input connection to the agent desktop the person took over last.
    pub takeover: Arc<Mutex<Option<TakeOver>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl AppState {
    /// State over the settings in `config_dir` and the history in `data_dir`. Settings that
    /// cannot be read are reported on stderr and replaced by the defaults; the file is kept
    /// until settings are saved.
    pub fn new(config_dir: &std::path::Path, data_dir: &std::path::Path) -> Self {
        let settings_file = SettingsFile::new(config_dir);
        let settings = settings_file.load().unwrap_or_else(|problem| {
            eprintln!("deskhand-app: {problem}; using the default settings");
            Settings::default()
        });
        let store = Store::open(data_dir).map_err(|e| {
            eprintln!("deskhand-app: {e}");
            e.to_string()
        });
        if let Some(notice) = store.as_ref().ok().and_then(Store::privacy_notice) {
            eprintln!("deskhand-app: {notice}");
        }
        Self {
            settings_file,
            mode: Mutex::new(settings.approval_mode),
            settings: Mutex::new(settings),
            active: Mutex::default(),
            attachments: Attachments::default(),
            engine: store.as_ref().ok().map(|store| Engine::new(store.clone())),
            store,
            keyring: OsKeyring::default(),
            bar: Bar::default(),
            desktop: Arc::new(NativeDesktop),
            live_view: Mutex::default(),
            takeover: Arc::default(),
        }
    }

    /// The same state over another desktop (the command tests answer confirmations).
    pub fn with_desktop(self, desktop: Arc<dyn Desktop>) -> Self {
        Self { desktop, ..self }
    }

    pub fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    pub fn save_settings(&self, settings: Settings) -> IpcResult<Settings> {
        settings.validate()?;
        self.settings_file.save(&settings)?;
        *lock(&self.settings) = settings.clone();
        self.set_mode(settings.approval_mode);
        Ok(settings)
    }

    pub fn mode(&self) -> ApprovalPolicy {
        *lock(&self.mode)
    }

    /// Switches the window's mode, and the running task's: its next action sees it.
    pub fn set_mode(&self, mode: ApprovalPolicy) {
        *lock(&self.mode) = mode;
        if let (Some(task), Some(engine)) = (self.running_task(), &self.engine) {
            let _ = engine.set_policy(&task, mode);
        }
    }

    /// Replaces the live view (`None`: none); the one replaced stops.
    pub fn show_live_view(&self, view: Option<LiveView>) {
        let old = std::mem::replace(&mut *lock(&self.live_view), view);
        drop(old);
    }

    /// The session the running run writes to.
    pub fn running_session(&self) -> Option<SessionId> {
        lock(&self.active)
            .as_ref()
            .and_then(|run| run.session_id.clone())
    }

    /// The window's running task.
    pub fn running_task(&self) -> Option<TaskId> {
        lock(&self.active)
            .as_ref()
            .and_then(|run| run.task_id.clone())
    }

    /// The task engine, or why there is none (no history store).
    pub fn engine(&self) -> IpcResult<&Engine> {
        self.store()?;
        self.engine
            .as_ref()
            .ok_or_else(|| IpcError::internal("the task engine is unavailable"))
    }

    pub fn is_busy(&self) -> bool {
        lock(&self.active).is_some()
    }

    /// Registers the run about to start, unless one is going.
    pub fn begin(&self, run: ActiveRun) -> IpcResult<()> {
        let mut active = lock(&self.active);
        if active.is_some() {
            return Err(busy());
        }
        *active = Some(run);
        Ok(())
    }

    /// The history store, or why there is none.
    pub fn store(&self) -> IpcResult<&Store> {
        self.store
            .as_ref()
            .map_err(|e| IpcError::internal(format!("the session history is unavailable: {e}")))
    }

    /// The run ended (its history is in the store): open questions are dropped.
    pub fn finish(&self) {
        *lock(&self.active) = None;
    }

    /// The submitted run is the engine's task `task_id`, on `session_id`.
    pub fn started(&self, session_id: &SessionId, task_id: &TaskId) {
        if let Some(run) = lock(&self.active).as_mut() {
            run.session_id = Some(session_id.clone());
            run.task_id = Some(task_id.clone());
        }
    }

    /// Cancels the running run, if any. Returns at once; the run ends with `done`.
    pub fn stop(&self) {
        if let (Some(task), Some(engine)) = (self.running_task(), &self.engine) {
            let _ = engine.cancel(&task);
        }
    }

    /// The monitor the agent captures (the configured one, else the primary one) as the
    /// window system knows it, matched by position.
    pub fn captured_monitor<R: Runtime>(&self, window: &WebviewWindow<R>) -> Option<Monitor> {
        let monitors = window.available_monitors().ok()?;
        let captured = RealScreen::open()
            .and_then(|s| s.monitors())
            .and_then(|all| screen::choose(all, self.settings().monitor))
            .ok();
        captured
            .and_then(|c| {
                monitors
                    .iter()
                    .find(|m| (m.position().x, m.position().y) == (c.geometry.x, c.geometry.y))
                    .cloned()
            })
            .or_else(|| window.primary_monitor().ok().flatten())
            .or_else(|| monitors.into_iter().next())
    }
}

pub fn busy() -> IpcError {
    IpcError::new(
        crate::error::ErrorKind::Busy,
        "a run is going; stop it or wait until it ends",
    )
}
