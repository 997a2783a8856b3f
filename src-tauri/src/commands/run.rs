//! Runs: send, approve, stop, and the approval mode. One `Channel` per run carries its events.

use std::sync::Arc;

use deskhand::agent::context::ContextPolicy;
use deskhand::agent::{
    Agent, AgentConfig, AgentEvent, ApprovalGate, ApprovalPolicy, DEFAULT_MAX_TOKENS,
    DEFAULT_SYSTEM, Decision, SecretPlaces,
};
use deskhand::llm::config::{self, Chosen, ProviderSettings};
use deskhand::llm::pricing::PriceTable;
use deskhand::llm::providers::ProviderKind;
use deskhand::llm::{ContentBlock, RetryPolicy};
use deskhand::memory;
use deskhand::paths;
use deskhand::store::Recorder;
use deskhand::tools::Tool;
use deskhand::tools::catalog::{self, MemoryAccess, ToolSettings};
use serde_json::Value;
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime, State, UserAttentionType};
use tokio_util::sync::CancellationToken;

use crate::approver::WindowApprover;
use crate::bar::main_window;
use crate::commands::confirm::{self, confirmed};
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
    let chosen = provider(&settings, &state).await?;
    if text.trim().is_empty() && attachments.is_empty() {
        return Err(IpcError::invalid("write a message or attach an image"));
    }
    let store = state.store()?.clone();
    let resumed = session_id
        .as_deref()
        .map(|id| store.resolve_id(id))
        .transpose()?;
    let model = chosen.model.clone();
    let resuming = resumed.is_some();
    let session_id = resumed.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let tools = catalog::registry(
        None,
        &ToolSettings {
            model: model.clone(),
            monitor: settings.monitor,
            screenshot_size: settings.screenshot_size,
            memory: Some(MemoryAccess {
                store: store.clone(),
                session_id: session_id.clone(),
            }),
            ..ToolSettings::default()
        },
    )
    .map_err(|e| IpcError::internal(e.to_string()))?;
    let (system, notes) = memory::for_run(&store, DEFAULT_SYSTEM, &text, true)?;
    let prices_file = paths::config_dir().join("prices.json");
    let prices =
        PriceTable::with_overrides(&prices_file).map_err(|e| IpcError::internal(e.to_string()))?;
    let price = prices.price(&model);
    let budget = store.budget()?;
    if budget.max_cost_usd.is_some() && price.is_none() {
        return Err(IpcError::invalid(format!(
            "the cost limit needs the price of `{model}`: add it to {}, or clear the limit in \
             Settings",
            prices_file.display()
        )));
    }
    let mut input = Vec::new();
    if !text.trim().is_empty() {
        input.push(ContentBlock::text(text));
    }
    let cancel = CancellationToken::new();
    let gate = Arc::new(
        ApprovalGate::new(
            state.mode(),
            Box::new(WindowApprover {
                pending: state.approvals.clone(),
            }),
        )
        .with_secret_places(SecretPlaces::for_store(&store)?),
    );
    state.begin(ActiveRun {
        session_id: session_id.clone(),
        cancel: cancel.clone(),
        gate: gate.clone(),
    })?;
    // As the CLI does: a stored session goes on from the store (images reloaded, a run cut
    // off repaired), a new one is created there.
    let opened = state.attachments.take(&attachments).and_then(|images| {
        input.extend(images);
        let opened = if resuming {
            Recorder::resume(&store, &session_id)
        } else {
            Recorder::create(&store, &session_id).map(|r| (r, Vec::new()))
        };
        Ok(opened?)
    });
    let (mut recorder, mut history) = match opened {
        Ok(opened) => opened,
        Err(error) => {
            state.finish();
            return Err(error);
        }
    };
    let images = state.images.clone();
    let agent = Agent {
        provider: chosen.provider,
        tools: Arc::new(tools.wrap_tools(|inner: Arc<dyn Tool>| {
            Arc::new(WindowTool {
                inner,
                app: app.clone(),
                images: images.clone(),
            }) as Arc<dyn Tool>
        })),
        gate,
        config: AgentConfig {
            price,
            system,
            notes,
            max_turns: settings.max_turns,
            max_tokens: DEFAULT_MAX_TOKENS,
            context: ContextPolicy {
                keep_screenshots: Some(KEEP_SCREENSHOTS),
                context_window: config::context_window(&model),
                ..ContextPolicy::default()
            },
            model,
            budget,
            stall: Default::default(),
            check: None,
        },
    };
    let id = session_id.clone();
    tauri::async_runtime::spawn(async move {
        let state = app.state::<AppState>();
        let mut not_saved = false;
        let mut sink = |event: AgentEvent| {
            match &event {
                AgentEvent::ApprovalNeeded { request } => {
                    state
                        .approvals
                        .open(&request.tool_use_id, &request.plan.kind);
                    if let Some(window) = main_window(&app) {
                        let _ = state.bar.restore(&window);
                        // Asks for attention; taking the focus would let a key meant for
                        // another program land on the card.
                        let _ = window.request_user_attention(Some(UserAttentionType::Critical));
                    }
                }
                AgentEvent::Done { .. } => {
                    if let Some(window) = main_window(&app) {
                        let _ = state.bar.restore(&window);
                    }
                }
                _ => {}
            }
            // Stored before shown, as the CLI does; what the store answers is the window's
            // form (images as references). A run whose history cannot be saved stops.
            let wire = if not_saved {
                images::to_wire(&event, &state.images)
            } else {
                match recorder.record(&event) {
                    Ok(stored) => stored,
                    Err(e) => {
                        not_saved = true;
                        cancel.cancel();
                        let _ = on_event.send(images::to_wire(
                            &AgentEvent::Error {
                                message: format!(
                                    "stopping the run: its history could not be saved ({e})"
                                ),
                            },
                            &state.images,
                        ));
                        images::to_wire(&event, &state.images)
                    }
                }
            };
            // A closed window drops the channel; the run still ends cleanly.
            let _ = on_event.send(wire);
        };
        agent
            .run(&id, &mut history, input, &mut sink, &cancel)
            .await;
        state.finish();
    });
    Ok(session_id)
}

/// The configured provider, chosen by the core as for the CLI, with its key from the
/// environment or the keyring.
async fn provider(settings: &Settings, state: &AppState) -> IpcResult<Chosen> {
    let kind = ProviderKind::parse(&settings.provider)
        .ok_or_else(|| IpcError::invalid(format!("unknown provider `{}`", settings.provider)))?;
    let keyring = state.keyring.clone();
    // A keyring call is a blocking D-Bus round trip (up to its timeout if locked).
    let key = tauri::async_runtime::spawn_blocking(move || keys::for_run(&keyring, kind))
        .await
        .map_err(|e| IpcError::internal(e.to_string()))??;
    config::choose(
        &ProviderSettings {
            provider: Some(kind.id().into()),
            model: Some(settings.model.clone()),
            base_url: settings.base_url.clone(),
        },
        &config::process_env,
        &|_| Ok(key.as_ref().map(|k| k.expose().to_string())),
        RetryPolicy::default(),
    )
    .map_err(|e| IpcError::invalid(format!("{e}; change it in Settings")))
}

/// Answers the pending approval of `tool_use_id`, and only that one: `not_found` for any id
/// that is not waiting. "Always allow" for bash needs the person's native confirmation.
#[tauri::command]
pub async fn approve(
    state: State<'_, AppState>,
    tool_use_id: String,
    decision: Decision,
) -> IpcResult<()> {
    let kind = state.approvals.kind(&tool_use_id).ok_or_else(|| {
        IpcError::not_found(format!("no action `{tool_use_id}` is waiting for approval"))
    })?;
    if decision == Decision::ApproveKind && kind == "bash" {
        confirmed(&state, confirm::allow_all_commands()).await?;
    }
    state.approvals.answer(&tool_use_id, decision)
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
