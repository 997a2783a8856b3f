//! What the built-in tools read when they are made: one `ToolSettings` per run.

use std::sync::Arc;
use std::time::Duration;

use deskhand_platform::launch::Launch;
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::scaling::Size;
use deskhand_store::Store;

use crate::Tool;
use crate::bash;

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
    /// The run's `delegate` tool, made by the engine that runs the delegated tasks; `None`:
    /// the run does not delegate.
    pub delegate: Option<MadeTool>,
    /// Set-of-marks: the computer tool's screenshots carry numbered marks on the interactive
    /// elements (`crate::elements::marks`).
    pub set_of_marks: bool,
}

/// A tool made above this crate (the engine's `delegate`), offered by name like the others.
#[derive(Clone)]
pub struct MadeTool(pub Arc<dyn Tool>);

impl std::fmt::Debug for MadeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MadeTool")
            .field(&self.0.definition().name)
            .finish()
    }
}

/// What the `memory` and `plan` tools need: the store, the session the run is in (new, or
/// resumed with its stored plan), and the run's provider keys, which no note may hold in any
/// form.
#[derive(Clone)]
pub struct MemoryAccess {
    pub store: Store,
    pub session_id: SessionId,
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
            delegate: None,
            set_of_marks: false,
        }
    }
}
