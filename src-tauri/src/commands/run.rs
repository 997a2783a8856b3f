//! Runs: send, approve, stop, and the approval mode. A run is a task of the core's engine,
//! hosted in this process; one `Channel` per run carries its events.

use std::sync::Arc;

use deskhand_engine::agent::stall::{StallAnswer, StallStep};
use deskhand_engine::agent::verify::SavedCheck;
use deskhand_engine::agent::{
    AgentEvent, Answerer, ApprovalPolicy, DecidedBy, Decision, RunStatus,
};
use deskhand_engine::desktop::DesktopChoice;
use deskhand_engine::ids::ToolUseId;
use deskhand_engine::llm::config::ProviderSettings;
use deskhand_engine::llm::providers::ProviderKind;
use deskhand_engine::llm::{ContentBlock, Usage};
use deskhand_engine::tasks::{
    Origin, RunSettings, TaskInfo, TaskSpec, TaskState, TaskUpdate, WindowUpdate,
};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime, State, UserAttentionType};

use crate::bar::main_window;
use crate::commands::confirm::{self, confirmed};
use crate::config::Settings;
use crate::error::{IpcError, IpcResult};
use crate::images::AttachmentRef;
use crate::keys;
use crate::state::{ActiveRun, AppState, busy};
use crate::window_tool::AppWindow;

/// Starts a run and resolves with its session id; the run goes on in the background and
/// every event goes to `on_event`, the last being `done`. `check` and `desktop`, what the
/// person chose, are saved with the session by the engine (a stored session's own saved ones
/// apply otherwise, as for every front end).
#[tauri::command]
#[allow(clippy::too_many_arguments)]
pub async fn send_message<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    session_id: Option<String>,
    text: String,
    attachments: Vec<AttachmentRef>,
    check: Option<SavedCheck>,
    desktop: Option<DesktopChoice>,
    on_event: Channel<WindowUpdate>,
) -> IpcResult<String> {
    if state.is_busy() {
        return Err(busy());
    }
    let settings = state.settings();
    let mut run_settings = run_settings(&settings, &state).await?;
    run_settings.check = check
        .as_ref()
        .map(deskhand_engine::agent::verify::Check::saved)
        .transpose()
        .map_err(|e| IpcError::invalid(format!("the check: {e}")))?;
    if let Some(desktop) = desktop {
        run_settings.desktop = desktop.into();
    }
    if text.trim().is_empty() && attachments.is_empty() {
        return Err(IpcError::invalid("write a message or attach an image"));
    }
    let engine = state.engine()?.clone();
    state.begin(ActiveRun {
        session_id: None,
        task_id: None,
    })?;
    let submitted = async {
        let mut input = Vec::new();
        if !text.trim().is_empty() {
            input.push(ContentBlock::text(text));
        }
        input.extend(state.attachments.take(&attachments)?);
        let spec = TaskSpec {
            session: session_id,
            input,
            settings: run_settings,
            origin: Origin::Window,
            window: Some(Arc::new(AppWindow::new(app.clone()))),
        };
        let task = engine.submit(spec).await?;
        let watch = engine.watch(&task.id, 0)?;
        IpcResult::Ok((task, watch))
    }
    .await;
    let (task, mut watch) = match submitted {
        Ok(submitted) => submitted,
        Err(error) => {
            state.finish();
            return Err(error);
        }
    };
    state.started(&task.session_id, &task.id);
    tauri::async_runtime::spawn(async move {
        let state = app.state::<AppState>();
        let mut finished = false;
        let mut ended = None;
        while let Some(update) = watch.next().await {
            let event = match update {
                TaskUpdate::Event { event, .. } => event,
                // A closed window drops the channel; the task still ends cleanly.
                TaskUpdate::Notice(message) => {
                    let _ = on_event.send(WindowUpdate::Notice { message });
                    continue;
                }
                TaskUpdate::Ended(task) => {
                    ended = Some(task);
                    continue;
                }
            };
            notify_if_hidden(&app, &state, &event);
            match &event {
                AgentEvent::ApprovalNeeded { .. } => {
                    if let Some(window) = main_window(&app) {
                        let _ = state.bar.restore(&window);
                        // Asks for attention; taking the focus would let a key meant for
                        // another program land on the card.
                        let _ = window.request_user_attention(Some(UserAttentionType::Critical));
                    }
                }
                AgentEvent::StallDetected {
                    step: StallStep::Ask,
                    ..
                } => {
                    if let Some(window) = main_window(&app) {
                        let _ = state.bar.restore(&window);
                        let _ = window.request_user_attention(Some(UserAttentionType::Critical));
                    }
                }
                AgentEvent::Done { .. } => {
                    if let Some(window) = main_window(&app) {
                        let _ = state.bar.restore(&window);
                    }
                    // Before the page sees `done`: a message sent as soon as it does must
                    // not be refused `busy` (the engine queues it behind this task's end).
                    state.finish();
                    finished = true;
                }
                _ => {}
            }
            let _ = on_event.send(WindowUpdate::Event(Box::new(event)));
        }
        if !finished {
            state.finish();
            // A watch cut short by the store has no end to give: the task as stored then.
            let ended = ended.or_else(|| engine.task(&task.id).ok());
            for event in ended.map(ended_without_done).unwrap_or_default() {
                let _ = on_event.send(WindowUpdate::Event(Box::new(event)));
            }
        }
    });
    Ok(task.session_id.into())
}

/// What the page is sent for a task whose events did not end with `done`: mostly one that
/// never ran, so sent none, because it could not start (a setting that cannot work, a plugin
/// it needs that did not start) or was stopped while it waited its turn. The page learns why
/// it ended, and its events end with `done` like a run's.
fn ended_without_done(info: TaskInfo) -> Vec<AgentEvent> {
    let status = match info.state {
        TaskState::Cancelled => RunStatus::Cancelled,
        _ => RunStatus::Error,
    };
    let error = (status == RunStatus::Error).then(|| AgentEvent::Error {
        kind: None,
        message: info
            .error
            .unwrap_or_else(|| "the task ended without saying why".into()),
    });
    let done = AgentEvent::Done {
        status,
        turns: 0,
        session_id: info.session_id,
        usage: Usage::default(),
        cost_usd: None,
    };
    error.into_iter().chain([done]).collect()
}

/// While the window is hidden (in the tray), a task that waits for approval or has finished
/// is announced by a desktop notification.
fn notify_if_hidden<R: Runtime>(app: &AppHandle<R>, state: &AppState, event: &AgentEvent) {
    let hidden = main_window(app).is_none_or(|window| !window.is_visible().unwrap_or(true));
    if let (true, Some((title, body))) = (hidden, notification(event)) {
        state.desktop.notify(title, &body);
    }
}

/// The notification an event deserves, if any: its title and body.
fn notification(event: &AgentEvent) -> Option<(&'static str, String)> {
    match event {
        AgentEvent::ApprovalNeeded { request } => Some((
            "Deskhand is waiting for approval",
            request.plan.summary.chars().take(200).collect(),
        )),
        AgentEvent::StallDetected {
            step: StallStep::Ask,
            message,
            ..
        } => Some((
            "Deskhand seems stuck and asks what to do",
            message.chars().take(200).collect(),
        )),
        AgentEvent::Done { status, .. } => Some((
            "Deskhand has finished",
            format!("The task ended: {}", status.name()),
        )),
        _ => None,
    }
}

/// The run as the window's settings make it; everything else (plugins, the summary
/// threshold, `DESKHAND_BASH_TIMEOUT`, the screenshot count) is the core's default, the same
/// as for the CLI. The key is looked up here so that a missing one is named for the window.
async fn run_settings(settings: &Settings, state: &AppState) -> IpcResult<RunSettings> {
    let kind = ProviderKind::parse(&settings.provider)
        .ok_or_else(|| IpcError::invalid(format!("unknown provider `{}`", settings.provider)))?;
    let keyring = state.keyring.clone();
    // A keyring call is a blocking D-Bus round trip (up to its timeout if locked).
    let key = tauri::async_runtime::spawn_blocking(move || keys::for_run(&keyring, kind))
        .await
        .map_err(|e| IpcError::internal(e.to_string()))??;
    Ok(RunSettings {
        provider: ProviderSettings {
            provider: Some(kind.id().into()),
            model: Some(settings.model.clone()),
            base_url: settings.base_url.clone(),
            effort: settings.effort.clone(),
        },
        api_key: key,
        approval: state.mode(),
        max_turns: settings.max_turns,
        monitor: settings.monitor,
        screenshot_size: settings.screenshot_size,
        ..RunSettings::default()
    })
}

/// Answers the pending approval of `tool_use_id`, and only that one: `not_found` for any id
/// that is not waiting. "Always allow" for bash needs the person's native confirmation.
#[tauri::command]
pub async fn approve(
    state: State<'_, AppState>,
    tool_use_id: String,
    decision: Decision,
) -> IpcResult<()> {
    let tool_use_id = ToolUseId::from(tool_use_id);
    let not_waiting =
        || IpcError::not_found(format!("no action `{tool_use_id}` is waiting for approval"));
    let engine = state.engine()?;
    let task = state.running_task().ok_or_else(not_waiting)?;
    let request = engine
        .waiting_for(&task)?
        .filter(|request| request.tool_use_id == tool_use_id)
        .ok_or_else(not_waiting)?;
    if decision == Decision::ApproveKind && request.plan.kind == "bash" {
        confirmed(&state, confirm::allow_all_commands()).await?;
    }
    let window = Answerer::new(DecidedBy::Window);
    engine.answer(&task, Some(&tool_use_id), decision, window)?;
    Ok(())
}

/// Answers the running task's stall question: go on, go on with a hint, or stop.
/// `not_found` when nothing is asking.
#[tauri::command]
pub async fn answer_stall(state: State<'_, AppState>, answer: StallAnswer) -> IpcResult<()> {
    match &answer {
        StallAnswer::NoOne => return Err(IpcError::invalid("answer continue, hint or stop")),
        StallAnswer::Hint { text } if text.trim().is_empty() || text.len() > 2_000 => {
            return Err(IpcError::invalid("a hint is 1 to 2,000 bytes of text"));
        }
        _ => {}
    }
    let engine = state.engine()?;
    let task = state
        .running_task()
        .ok_or_else(|| IpcError::not_found("no run is asking whether to go on"))?;
    Ok(engine.answer_stall(&task, answer)?)
}

/// Stops the run: the core answers open calls and ends with `done` (cancelled).
#[tauri::command]
pub async fn stop(state: State<'_, AppState>) -> IpcResult<()> {
    state.stop();
    Ok(())
}

/// Switches the mode; Auto needs the person's native confirmation.
#[tauri::command]
pub async fn set_approval_mode(state: State<'_, AppState>, mode: ApprovalPolicy) -> IpcResult<()> {
    if mode == ApprovalPolicy::Auto && state.mode() != ApprovalPolicy::Auto {
        confirmed(&state, confirm::auto_mode()).await?;
    }
    state.set_mode(mode);
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn event(wire: Value) -> AgentEvent {
        serde_json::from_value(wire).unwrap()
    }

    fn asking(summary: String) -> AgentEvent {
        event(
            json!({"type": "approval_needed", "request": {"tool_use_id": "t1",
            "tool": "bash", "input": {}, "kind": "bash", "read_only": false,
            "summary": summary}}),
        )
    }

    fn stall(step: &str, message: &str) -> AgentEvent {
        event(
            json!({"type": "stall_detected", "pattern": "same_action", "steps": ["t1"],
            "step": step, "message": message}),
        )
    }

    #[test]
    fn approvals_and_ends_are_announced_and_nothing_else() {
        let asked = asking("bash: ls".into());
        assert_eq!(
            notification(&asked),
            Some(("Deskhand is waiting for approval", "bash: ls".into()))
        );
        let stuck = stall("ask", "clicked Save 3 times");
        assert_eq!(notification(&stuck).unwrap().1, "clicked Save 3 times");
        let noted = stall("note", "x");
        assert_eq!(notification(&noted), None);
        let done = event(json!({"type": "done", "status": "cancelled", "turns": 0,
            "session_id": "s1", "usage": {}, "cost_usd": null}));
        assert_eq!(notification(&done).unwrap().1, "The task ended: cancelled");
        let long = asking("x".repeat(500));
        assert_eq!(notification(&long).unwrap().1.len(), 200);
        assert_eq!(
            notification(&AgentEvent::TextDelta { text: "hi".into() }),
            None
        );
    }
}
