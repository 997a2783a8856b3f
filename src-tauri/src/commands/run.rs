//! Runs: send, approve, stop, and the approval mode. One `Channel` per run carries its events.

use std::sync::Arc;

use deskhand::agent::context::ContextPolicy;
use deskhand::agent::{
    Agent, AgentConfig, AgentEvent, ApprovalGate, ApprovalPolicy, DEFAULT_MAX_TOKENS,
    DEFAULT_SYSTEM, Decision,
};
use deskhand::llm::anthropic::{self, Anthropic, AnthropicConfig};
use deskhand::llm::pricing::PriceTable;
use deskhand::llm::{ContentBlock, Provider, RetryPolicy};
use deskhand::paths;
use deskhand::tools::Tool;
use deskhand::tools::catalog::{self, ToolSettings};
use serde_json::Value;
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime, State};
use tokio_util::sync::CancellationToken;

use crate::approver::WindowApprover;
use crate::bar::main_window;
use crate::config::Settings;
use crate::error::{IpcError, IpcResult};
use crate::images::{self, AttachmentRef};
use crate::keys;
use crate::state::{ActiveRun, AppState, busy};
use crate::window_tool::WindowTool;

/// Screenshots sent to the model at most; the CLI's default too.
const KEEP_SCREENSHOTS: usize = 3;

/// Starts a run and resolves with its session id; the run goes on in the background and
/// every event goes to `on_event`, the last being `done`.
#[tauri::command]
pub async fn send_message<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    session_id: Option<String>,
    text: String,
    attachments: Vec<AttachmentRef>,
    on_event: Channel<Value>,
) -> IpcResult<String> {
    if state.is_busy() {
        return Err(busy());
    }
    let settings = state.settings();
    let provider = provider(&settings)?;
    let (session_id, history) = match session_id {
        Some(id) => {
            let history = state.history(&id)?;
            (id, history)
        }
        None => (uuid::Uuid::new_v4().to_string(), Vec::new()),
    };
    if text.trim().is_empty() && attachments.is_empty() {
        return Err(IpcError::invalid("write a message or attach an image"));
    }
    let tools = catalog::registry(
        None,
        &ToolSettings {
            model: settings.model.clone(),
            ..ToolSettings::default()
        },
    )
    .map_err(|e| IpcError::internal(e.to_string()))?;
    let prices = PriceTable::with_overrides(&paths::config_dir().join("prices.json"))
        .map_err(|e| IpcError::internal(e.to_string()))?;
    let mut input = Vec::new();
    if !text.trim().is_empty() {
        input.push(ContentBlock::text(text));
    }
    let cancel = CancellationToken::new();
    let gate = Arc::new(ApprovalGate::new(
        state.mode(),
        Box::new(WindowApprover {
            pending: state.approvals.clone(),
        }),
    ));
    state.begin(ActiveRun {
        cancel: cancel.clone(),
        gate: gate.clone(),
    })?;
    match state.attachments.take(&attachments) {
        Ok(images) => input.extend(images),
        Err(error) => {
            state.finish(&session_id, history);
            return Err(error);
        }
    }
    let images = state.images.clone();
    let agent = Agent {
        provider,
        tools: Arc::new(tools.wrap_tools(|inner: Arc<dyn Tool>| {
            Arc::new(WindowTool {
                inner,
                app: app.clone(),
                images: images.clone(),
            }) as Arc<dyn Tool>
        })),
        gate,
        config: AgentConfig {
            price: prices.price(&settings.model),
            model: settings.model,
            system: DEFAULT_SYSTEM.into(),
            max_turns: settings.max_turns,
            max_tokens: DEFAULT_MAX_TOKENS,
            context: ContextPolicy {
                keep_screenshots: Some(KEEP_SCREENSHOTS),
                ..ContextPolicy::default()
            },
            budget: Default::default(),
        },
    };
    let id = session_id.clone();
    tauri::async_runtime::spawn(async move {
        let state = app.state::<AppState>();
        let mut history = history;
        let mut sink = |event: AgentEvent| {
            match &event {
                AgentEvent::ApprovalNeeded { request } => {
                    state.approvals.open(&request.tool_use_id);
                    if let Some(window) = main_window(&app) {
                        let _ = state.bar.restore(&window);
                    }
                }
                AgentEvent::Done { .. } => {
                    if let Some(window) = main_window(&app) {
                        let _ = state.bar.restore(&window);
                    }
                }
                _ => {}
            }
            // A closed window drops the channel; the run still ends cleanly.
            let _ = on_event.send(images::to_wire(&event, &state.images));
        };
        agent
            .run(&id, &mut history, input, &mut sink, &cancel)
            .await;
        state.finish(&id, history);
    });
    Ok(session_id)
}

/// The model's client for the configured provider, with its key.
fn provider(settings: &Settings) -> IpcResult<Arc<dyn Provider>> {
    let api_key = keys::api_key(&settings.provider)?;
    let base_url = std::env::var("ANTHROPIC_BASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string());
    let client = Anthropic::new(AnthropicConfig {
        api_key,
        base_url,
        retry: RetryPolicy::default(),
    })
    .map_err(|e| IpcError::internal(e.to_string()))?;
    Ok(Arc::new(client))
}

/// Answers the pending approval of `tool_use_id`.
#[tauri::command]
pub async fn approve(
    state: State<'_, AppState>,
    tool_use_id: String,
    decision: Decision,
) -> IpcResult<()> {
    state.approvals.answer(&tool_use_id, decision)
}

/// Stops the run: the core answers open calls and ends with `done` (cancelled).
#[tauri::command]
pub async fn stop(state: State<'_, AppState>) -> IpcResult<()> {
    state.stop();
    Ok(())
}

#[tauri::command]
pub async fn set_approval_mode(state: State<'_, AppState>, mode: ApprovalPolicy) -> IpcResult<()> {
    state.set_mode(mode);
    Ok(())
}
