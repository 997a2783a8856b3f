//! The built-in tools by name, and which of them can work on this machine.

use std::sync::Arc;
use std::time::Duration;

use super::bash::{self, BashTool};
use super::computer::ComputerTool;
use super::computer::scaling::Size;
use super::delegate::DelegateTool;
use super::editor::EditorTool;
use super::launch::Launch;
use super::memory::MemoryTool;
use super::plan::PlanTool;
use super::ui::UiTool;
use super::{RegistryError, Tool, ToolRegistry};
use crate::store::Store;

/// Settings the built-in tools read when they are made.
#[derive(Clone, Debug)]
pub struct ToolSettings {
    /// The model, since some tools take a different version per model.
    pub model: String,
    /// The monitor the computer tool sees and acts on (default: the primary one).
    pub monitor: Option<usize>,
    /// The largest screenshot the model sees, keeping the monitor's aspect ratio (default:
    /// the reference sizes by aspect ratio).
    pub screenshot_size: Option<Size>,
    /// How long one bash command may run before it is killed.
    pub bash_timeout: Duration,
    /// Bytes kept of each of a bash command's stdout and stderr.
    pub bash_output_limit: usize,
    /// The most characters an editor `view` returns (the tool's `max_characters`).
    pub editor_max_characters: Option<usize>,
    /// The history and the run's session, which the `memory` and `plan` tools work on;
    /// without them those two are not offered.
    pub memory: Option<MemoryAccess>,
    /// The X display the computer tool works on (an agent desktop's `:N`); `None`: this
    /// process's display.
    pub display: Option<String>,
    /// The accessibility bus of that display's desktop (an agent desktop's), whose tree the
    /// element map and approvals read; `None` with an agent desktop: it has none, and no
    /// tree is read (`elements::tree_of`); without one: the person's.
    pub accessibility_bus: Option<String>,
    /// How the programs the tools start are launched (the desktop's environment, the
    /// sandbox).
    pub launch: Launch,
    /// Whether the agent's programs are sandboxed: the editor, which works in this process
    /// and would reach past the sandbox, is then not offered.
    pub sandboxed: bool,
    /// What the `delegate` tool needs; `None`: the run does not delegate.
    pub delegation: Option<super::delegate::Delegation>,
    /// Set-of-marks: the computer tool's screenshots carry numbered marks on the interactive
    /// elements (`crate::elements::marks`).
    pub set_of_marks: bool,
}

/// What the `memory` and `plan` tools need: the store, the session the run is in (new, or
/// resumed with its stored plan), and the run's provider keys, which no note may hold in any
/// form.
#[derive(Clone)]
pub struct MemoryAccess {
    pub store: Store,
    pub session_id: String,
    pub run_keys: Vec<String>,
}

impl std::fmt::Debug for MemoryAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryAccess")
            .field("store", &self.store.dir())
            .field("session_id", &self.session_id)
            .field("run_keys", &self.run_keys.len())
            .finish()
    }
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            model: String::new(),
            monitor: None,
            screenshot_size: None,
            bash_timeout: bash::DEFAULT_TIMEOUT,
            bash_output_limit: bash::DEFAULT_OUTPUT_LIMIT,
            editor_max_characters: None,
            memory: None,
            display: None,
            accessibility_bus: None,
            launch: Launch::default(),
            sandboxed: false,
            delegation: None,
            set_of_marks: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("unknown tool `{0}`; the built-in tools are: {names}", names = BUILTIN.join(", "))]
    Unknown(String),
    #[error("the `{tool}` tool cannot work here: {reason}")]
    Unavailable { tool: String, reason: String },
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// Every built-in tool name, in the order they are offered.
pub const BUILTIN: &[&str] = &[
    "computer", "ui", "bash", "editor", "memory", "plan", "delegate",
];

/// Makes one built-in tool, or says why it cannot work on this machine. `computer` is the
/// run's one computer tool, opened on first need: the `ui` tool acts through it and shares
/// its refs.
fn make(
    name: &str,
    settings: &ToolSettings,
    computer: &mut Option<ComputerTool>,
) -> Result<Arc<dyn Tool>, CatalogError> {
    let unavailable = |reason: String| CatalogError::Unavailable {
        tool: name.to_string(),
        reason,
    };
    match name {
        "computer" | "ui" => {
            let tool = match computer {
                Some(tool) => tool.clone(),
                None => computer
                    .insert(ComputerTool::open(settings).map_err(unavailable)?)
                    .clone(),
            };
            if name == "computer" {
                return Ok(Arc::new(tool));
            }
            let tree = tool.tree().unwrap_or_else(|| {
                crate::elements::tree_of(
                    settings.display.is_some(),
                    settings.accessibility_bus.as_deref(),
                )
            });
            Ok(Arc::new(UiTool::new(tool, tree)))
        }
        "bash" => Ok(Arc::new(
            BashTool::new(settings.bash_timeout, settings.bash_output_limit)
                .with_launch(settings.launch.clone()),
        )),
        "editor" if settings.sandboxed => Err(unavailable(
            "it works outside the sandbox; in a sandbox files are edited through bash".into(),
        )),
        "editor" => Ok(Arc::new(EditorTool::new(settings.editor_max_characters))),
        "memory" | "plan" => {
            let access = settings.memory.as_ref().ok_or_else(|| {
                unavailable("it needs the history, which this run does not have".into())
            })?;
            if name == "memory" {
                return Ok(Arc::new(
                    MemoryTool::new(access.store.clone(), access.session_id.clone())
                        .with_run_keys(access.run_keys.clone()),
                ));
            }
            let stored = access
                .store
                .plan(&access.session_id)
                .map_err(|e| unavailable(e.to_string()))?;
            Ok(Arc::new(PlanTool::new(stored)))
        }
        "delegate" => match &settings.delegation {
            Some(delegation) => Ok(Arc::new(DelegateTool::new(delegation.clone()))),
            None => Err(unavailable(
                "this run does not delegate (a delegated task cannot delegate again)".into(),
            )),
        },
        _ => Err(CatalogError::Unknown(name.to_string())),
    }
}

/// The registry for a run. With `requested`, exactly those tools, each of which must work;
/// without, every built-in tool that works here.
pub fn registry(
    requested: Option<&[String]>,
    settings: &ToolSettings,
) -> Result<ToolRegistry, CatalogError> {
    let mut registry = ToolRegistry::default();
    let mut computer = None;
    match requested {
        Some(names) => {
            for name in names {
                registry.register(make(name, settings, &mut computer)?)?;
            }
        }
        None => {
            for name in BUILTIN {
                match make(name, settings, &mut computer) {
                    Ok(tool) => registry.register(tool)?,
                    Err(CatalogError::Unavailable { .. }) => {}
                    Err(other) => return Err(other),
                }
            }
        }
    }
    Ok(registry)
}
