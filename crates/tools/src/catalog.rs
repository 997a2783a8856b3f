//! The built-in tools by name, and which of them can work on this machine.

use std::sync::Arc;

use super::bash::BashTool;
use super::computer::ComputerTool;
use super::editor::EditorTool;
use super::memory::MemoryTool;
use super::plan::PlanTool;
use super::ui::UiTool;
use super::{RegistryError, Tool, ToolRegistry};
pub use crate::settings::{MadeTool, MemoryAccess, ToolSettings};

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
                    .insert(ComputerTool::open(settings).map_err(|e| unavailable(e.to_string()))?)
                    .clone(),
            };
            if name == "computer" {
                return Ok(Arc::new(tool));
            }
            let tree = tool.tree().unwrap_or_else(|| {
                deskhand_platform::elements::tree_of(
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
        "delegate" => match &settings.delegate {
            Some(MadeTool(tool)) => Ok(tool.clone()),
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
