//! Tasks from every front end: the window lists them (with what each waits for) and follows
//! one live, including those a `deskhand ask` or `deskhand serve` runs; and the schedules
//! `deskhand serve` runs.

use deskhand_engine::ids::TaskId;
use deskhand_engine::schedules::Schedule;
use deskhand_engine::tasks::{TaskInfo, TaskUpdate, WindowUpdate};
use tauri::State;
use tauri::ipc::Channel;

use crate::error::IpcResult;
use crate::state::AppState;

/// Finished tasks listed at most besides the live ones.
const FINISHED_LISTED: usize = 20;

/// Running and waiting tasks of every process, and the newest finished ones, newest first.
#[tauri::command]
pub async fn list_tasks(state: State<'_, AppState>) -> IpcResult<Vec<TaskInfo>> {
    Ok(state.engine()?.tasks(FINISHED_LISTED)?)
}

/// The schedules `deskhand serve` runs, by name, as the history holds them (the window
/// shows them; `deskhand schedule` and the local API change them).
#[tauri::command]
pub async fn list_schedules(state: State<'_, AppState>) -> IpcResult<Vec<Schedule>> {
    Ok(state
        .engine()?
        .store()
        .schedules()?
        .into_iter()
        .map(|row| row.schedule)
        .collect())
}

/// Follows a task: its events so far, then the rest live, to `on_event` (a task another
/// process runs is followed through the store). Resolves at once with the task.
#[tauri::command]
pub async fn watch_task(
    state: State<'_, AppState>,
    task_id: String,
    on_event: Channel<WindowUpdate>,
) -> IpcResult<TaskInfo> {
    let engine = state.engine()?;
    let task_id = TaskId::from(task_id);
    let task = engine.task(&task_id)?;
    let mut watch = engine.watch(&task_id, 0)?;
    tauri::async_runtime::spawn(async move {
        while let Some(update) = watch.next().await {
            let sent = match update {
                TaskUpdate::Event { event, .. } => WindowUpdate::Event(Box::new(event)),
                TaskUpdate::Notice(message) => WindowUpdate::Notice { message },
                // The events end with the run's `done`; the stream's end follows.
                TaskUpdate::Ended(_) => continue,
            };
            // The window stopped watching: stop following.
            if on_event.send(sent).is_err() {
                break;
            }
        }
    });
    Ok(task)
}
