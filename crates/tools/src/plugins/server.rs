//! One MCP server: started as a child process speaking MCP over stdio, asked for its tools,
//! called with timeouts, and restarted after it crashed or hung.

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, PaginatedRequestParams};
use rmcp::service::{ClientCacheConfig, RunningService};
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::{RoleClient, ServiceError, ServiceExt as _};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, ChildStderr};
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::config::ServerConfig;
use super::content::tool_output;
use super::limits::{self, OversizeWatch};
use crate::{ToolError, ToolOutput, capped::CappedOutput};

/// Bytes of a server's stderr kept for error messages.
const STDERR_KEPT: usize = 2_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PluginTimeouts {
    /// For the handshake and the tool list.
    pub start: Duration,
    /// For one tool call.
    pub call: Duration,
}

impl Default for PluginTimeouts {
    fn default() -> Self {
        Self {
            start: Duration::from_secs(30),
            call: Duration::from_secs(120),
        }
    }
}

/// A server's state as people see it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    Disabled,
    Running,
    /// It failed to start, crashed or hung; the next call to one of its tools restarts it.
    Failed {
        error: String,
    },
}

/// One tool of a server, under the name the model sees.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PluginToolInfo {
    /// `server__tool`, within the API's tool-name limits.
    pub name: String,
    /// The server's own name for it.
    pub tool: String,
    pub description: String,
    /// The server's `readOnlyHint`, where `mcp.json` trusts it (`trustReadOnlyHint`) and the
    /// tool does not also declare `destructiveHint: true`: such calls need no approval.
    pub read_only: bool,
    #[serde(skip)]
    pub input_schema: Value,
}

pub struct PluginServer {
    name: String,
    config: ServerConfig,
    timeouts: PluginTimeouts,
    state: Mutex<State>,
    /// How many times it was started.
    starts: AtomicU64,
}

enum State {
    Disabled,
    Running(Box<Connection>),
    Failed(String),
}

struct Connection {
    service: RunningService<RoleClient, ()>,
    tools: Vec<PluginToolInfo>,
    /// What was left out of its tool list, and why (limits it went over).
    notes: Vec<String>,
    /// Counts the messages it sent that were over the size limit (and so dropped).
    oversized: watch::Receiver<u64>,
    /// The server process; killed if still running when dropped.
    _child: Child,
    /// Which start this is, so that a late failure report cannot stop a newer connection.
    generation: u64,
    stderr: ServerStderr,
    /// Dropped last: kills whatever of the server is left.
    _group: ProcessGroup,
}

impl PluginServer {
    /// A server not yet started (or disabled, if its config says so).
    pub fn new(name: &str, config: ServerConfig, timeouts: PluginTimeouts) -> Self {
        let state = if config.is_enabled() {
            State::Failed("not started yet".into())
        } else {
            State::Disabled
        };
        Self {
            name: name.to_string(),
            config,
            timeouts,
            state: Mutex::new(state),
            starts: AtomicU64::new(0),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub async fn state(&self) -> ServerState {
        match &*self.state.lock().await {
            State::Disabled => ServerState::Disabled,
            State::Running(_) => ServerState::Running,
            State::Failed(error) => ServerState::Failed {
                error: error.clone(),
            },
        }
    }

    /// The tools it offers while it runs.
    pub async fn tools(&self) -> Vec<PluginToolInfo> {
        match &*self.state.lock().await {
            State::Running(connection) => connection.tools.clone(),
            _ => Vec::new(),
        }
    }

    /// What of its tool list was left out because it went over a limit, one line each.
    pub async fn notes(&self) -> Vec<String> {
        match &*self.state.lock().await {
            State::Running(connection) => connection.notes.clone(),
            _ => Vec::new(),
        }
    }

    /// Starts it, or stops and starts it again. Disabled servers stay off.
    pub async fn restart(&self) -> ServerState {
        {
            let mut state = self.state.lock().await;
            if !matches!(*state, State::Disabled) {
                *state = State::Failed("restarting".into()); // drops (kills) the old one first
                *state = match self.connect().await {
                    Ok(connection) => State::Running(Box::new(connection)),
                    Err(error) => State::Failed(error.to_string()),
                };
            }
        }
        self.state().await
    }

    /// Stops it politely (end of input, a short wait), then for sure.
    pub async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        if let State::Running(connection) =
            std::mem::replace(&mut *state, State::Failed("stopped".into()))
        {
            let Connection {
                service, _group, ..
            } = *connection;
            let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        }
    }

    /// Calls one of its tools. A server that is down is started first; one that crashes or
    /// hangs during the call is stopped, and the error says so.
    pub async fn call(
        &self,
        tool: &str,
        arguments: &Value,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let (peer, generation, mut oversized) = {
            let mut state = self.state.lock().await;
            if let State::Failed(_) = &*state {
                *state = match self.connect().await {
                    Ok(connection) => State::Running(Box::new(connection)),
                    Err(error) => State::Failed(error.to_string()),
                };
            }
            match &*state {
                State::Running(connection) => (
                    connection.service.peer().clone(),
                    connection.generation,
                    connection.oversized.clone(),
                ),
                State::Failed(error) => {
                    return ToolError::Unavailable(format!(
                        "the plugin server `{}` is not running: {error}",
                        self.name
                    ))
                    .into();
                }
                State::Disabled => {
                    return ToolError::Unavailable(format!(
                        "the plugin server `{}` is disabled",
                        self.name
                    ))
                    .into();
                }
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(arguments) = arguments.as_object() {
            params = params.with_arguments(arguments.clone());
        }
        oversized.mark_unchanged();
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.timeouts.call, peer.call_tool(params)) => answer,
            () = cancel.cancelled() => return ToolError::Cancelled.into(),
            () = limits::oversized(&mut oversized) => {
                let why = self
                    .fail(
                        generation,
                        format!("sent a message over {} (its answer to `{tool}`, most likely), which was dropped, and was stopped", limits::message_limit()),
                    )
                    .await;
                return ToolOutput::error(format!(
                    "the plugin server `{}` {why}. It is restarted on the next call to one of its tools.",
                    self.name
                ));
            }
        };
        match answer {
            Ok(Ok(result)) => tool_output(&result),
            Ok(Err(ServiceError::McpError(error))) => ToolOutput::error(format!(
                "the plugin server `{}` refused `{tool}`: {}",
                self.name, error.message
            )),
            Ok(Err(error)) => {
                let why = self
                    .fail(
                        generation,
                        format!("stopped during a call to `{tool}` ({error})"),
                    )
                    .await;
                ToolOutput::error(format!(
                    "the plugin server `{}` {why}. It is restarted on the next call to one of its tools.",
                    self.name
                ))
            }
            Err(_) => {
                let why = self
                    .fail(
                        generation,
                        format!(
                            "did not answer `{tool}` within {} s and was stopped",
                            self.timeouts.call.as_secs_f64()
                        ),
                    )
                    .await;
                ToolOutput::error(format!(
                    "the plugin server `{}` {why}. It is restarted on the next call to one of its tools.",
                    self.name
                ))
            }
        }
    }

    /// Stops the connection of `generation` (if it is still the current one) and records why,
    /// with the end of its stderr.
    async fn fail(&self, generation: u64, what: String) -> String {
        let mut state = self.state.lock().await;
        if !matches!(&*state, State::Running(c) if c.generation == generation) {
            return what;
        }
        let why = match std::mem::replace(&mut *state, State::Failed(what.clone())) {
            State::Running(connection) => format!("{what}{}", connection.stop().await),
            _ => what,
        };
        *state = State::Failed(why.clone());
        why
    }

    async fn connect(&self) -> Result<Connection, StartError> {
        let generation = self.starts.fetch_add(1, Ordering::Relaxed);
        let Some(program) = &self.config.command else {
            return Err(StartError::NoCommand);
        };
        let mut command = tokio::process::Command::new(program);
        command
            .args(&self.config.args)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        deskhand_host::root_powers::drop_root_powers(&mut command);
        deskhand_host::processes::keep(&mut command);
        deskhand_host::program_env::apply(&mut command);
        command.envs(&self.config.env);
        let mut child = command.spawn().map_err(|source| StartError::Spawn {
            command: self.config.command_line(),
            source,
        })?;
        let group = ProcessGroup(child.id().unwrap_or(0));
        let stderr = ServerStderr::drain(child.stderr.take());
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(StartError::NoPipes);
        };
        // Messages over the limit are dropped by the transport; the watch tells the call
        // that waits for one, at once rather than at its timeout.
        let (stdout, mut oversized) = OversizeWatch::new(stdout, DEFAULT_MAX_LINE_LENGTH);
        let transport = AsyncRwTransport::new_client(stdout, stdin)
            .with_max_line_length(DEFAULT_MAX_LINE_LENGTH);
        let limit = self.timeouts.start.as_secs_f64();

        let served = tokio::select! {
            served = tokio::time::timeout(self.timeouts.start, ().serve(transport)) => served,
            () = limits::oversized(&mut oversized) => {
                drop(group);
                let stderr = stderr.after_exit().await;
                return Err(StartError::TooBig { what: "its answer to the MCP handshake", stderr });
            }
        };
        let service = match served {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                drop(group);
                let stderr = stderr.after_exit().await;
                return Err(StartError::Handshake {
                    error: Box::new(error),
                    stderr,
                });
            }
            Err(_) => {
                drop(group);
                let stderr = stderr.after_exit().await;
                return Err(StartError::HandshakeTimeout { limit, stderr });
            }
        };
        // Responses are not cached: a server could otherwise fill the cache with pages.
        service
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let listed = tokio::select! {
            listed = tokio::time::timeout(self.timeouts.start, list_tools(&service)) => listed,
            () = limits::oversized(&mut oversized) => {
                drop(group);
                let stderr = stderr.after_exit().await;
                return Err(StartError::TooBig { what: "its tool list", stderr });
            }
        };
        let (tools, mut notes) = match listed {
            Ok(Ok(listed)) => listed,
            Ok(Err(error)) => {
                drop(group);
                let stderr = stderr.after_exit().await;
                return Err(StartError::List { error, stderr });
            }
            Err(_) => {
                drop(group);
                let stderr = stderr.after_exit().await;
                return Err(StartError::ListTimeout { limit, stderr });
            }
        };
        let tools = tools
            .into_iter()
            .filter_map(|tool| {
                let input_schema = Value::Object((*tool.input_schema).clone());
                if let Err(note) = limits::check_schema(&tool.name, &input_schema) {
                    notes.push(note.to_string());
                    return None;
                }
                let description = tool
                    .description
                    .as_deref()
                    .or(tool.title.as_deref())
                    .unwrap_or_default();
                Some(PluginToolInfo {
                    name: namespaced(&self.name, &tool.name),
                    tool: tool.name.to_string(),
                    description: limits::description(description),
                    read_only: self.config.trust_read_only_hint
                        && tool.annotations.as_ref().is_some_and(|a| {
                            a.read_only_hint == Some(true) && a.destructive_hint != Some(true)
                        }),
                    input_schema,
                })
            })
            .collect();
        Ok(Connection {
            service,
            tools,
            notes,
            oversized,
            _child: child,
            generation,
            stderr,
            _group: group,
        })
    }
}

/// Why a server did not start. `stderr` is the end of what it wrote there ("; its stderr:
/// ..."), or nothing.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("it has no `command`: only servers started as a program (stdio) are supported")]
    NoCommand,
    #[error("could not start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("its standard input and output could not be connected")]
    NoPipes,
    #[error(
        "{what} sent a message over {}, which was dropped{stderr}",
        limits::message_limit()
    )]
    TooBig { what: &'static str, stderr: String },
    #[error("the MCP handshake failed ({error}){stderr}")]
    Handshake {
        error: Box<rmcp::service::ClientInitializeError>,
        stderr: String,
    },
    #[error("it did not complete the MCP handshake within {limit} s{stderr}")]
    HandshakeTimeout { limit: f64, stderr: String },
    #[error("listing its tools failed ({error}){stderr}")]
    List { error: ServiceError, stderr: String },
    #[error("it did not list its tools within {limit} s{stderr}")]
    ListTimeout { limit: f64, stderr: String },
}

/// The server's tools, page by page, within [`limits::MAX_PAGES`] pages and
/// [`limits::MAX_TOOLS`] tools (a server that always has another page stops there), with a
/// note of what was left out.
async fn list_tools(
    service: &RunningService<RoleClient, ()>,
) -> Result<(Vec<rmcp::model::Tool>, Vec<String>), ServiceError> {
    let mut tools = Vec::new();
    let mut left_out = 0;
    let mut cursor = None;
    let mut notes = Vec::new();
    for page in 1.. {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let listed = service.peer().list_tools(Some(params)).await?;
        for tool in listed.tools {
            if tools.len() < limits::MAX_TOOLS {
                tools.push(tool);
            } else {
                left_out += 1;
            }
        }
        cursor = listed.next_cursor;
        if cursor.is_none() {
            break;
        }
        if page == limits::MAX_PAGES {
            notes.push(format!(
                "its tool list was read up to {} pages; the rest was not asked for",
                limits::MAX_PAGES
            ));
            break;
        }
    }
    if left_out > 0 {
        notes.push(format!(
            "{left_out} of its tools are not offered: at most {} per server are",
            limits::MAX_TOOLS
        ));
    }
    Ok((tools, notes))
}

impl Connection {
    /// Kills the server and returns the end of what it wrote to stderr.
    async fn stop(self) -> String {
        let Connection {
            service,
            stderr,
            _group,
            ..
        } = self;
        drop(_group);
        drop(service);
        stderr.after_exit().await
    }
}

/// `server__tool` with characters the API does not allow in tool names replaced by `_`,
/// and names over 64 characters shortened with a hash that keeps them apart.
pub fn namespaced(server: &str, tool: &str) -> String {
    let full = format!("{server}__{tool}");
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= 64 {
        return clean;
    }
    let hash = Sha256::digest(full.as_bytes());
    let suffix: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{}_{suffix}", &clean[..55])
}

/// The server's keeper (see `deskhand_host::processes`): when this is dropped, it ends the server
/// and everything it started, so that a server that hangs or is replaced never lingers.
struct ProcessGroup(u32);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        deskhand_host::processes::end(self.0);
    }
}

/// What the server writes to stderr, kept (start and end) for error messages.
struct ServerStderr {
    kept: Arc<StdMutex<CappedOutput>>,
    task: Option<JoinHandle<()>>,
}

impl ServerStderr {
    fn drain(stderr: Option<ChildStderr>) -> Self {
        let kept = Arc::new(StdMutex::new(CappedOutput::new(STDERR_KEPT)));
        let task = stderr.map(|mut stderr| {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    kept.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(&buffer[..n]);
                }
            })
        });
        Self { kept, task }
    }

    /// Once the server is gone: "; its stderr: ..." or nothing.
    async fn after_exit(mut self) -> String {
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        let text = self.kept.lock().unwrap_or_else(|e| e.into_inner()).text();
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!("; its stderr: {text}")
        }
    }
}

impl Drop for ServerStderr {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_api() {
        assert_eq!(
            namespaced("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(namespaced("my.server", "read file"), "my_server__read_file");
        let long = namespaced("a-very-long-server-name-indeed", &"t".repeat(60));
        assert_eq!(long.len(), 64);
        assert_ne!(
            long,
            namespaced("a-very-long-server-name-indeed", &"t".repeat(61))
        );
        assert!(
            long.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
}
