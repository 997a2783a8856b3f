//! The schemas the model receives for the built-in tools, compared with the snapshot beside
//! this file (`tool_schemas.json`, taken before the inputs were typed). A change to a schema
//! must be deliberate: set `DESKHAND_BLESS_SCHEMAS=1` to rewrite the snapshot, and say why in
//! the commit. Here, in the engine, where every tool (the delegate too) is known.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::delegate::{DelegateTool, Delegation};
use crate::store::Store;
use crate::tasks::{Engine, RunSettings};
use crate::tools::Tool;
use crate::tools::bash::BashTool;
use crate::tools::computer::ComputerTool;
use crate::tools::computer::input::RecordingInput;
use crate::tools::computer::screen::FakeScreen;
use crate::tools::computer::settle::SettlePolicy;
use crate::tools::computer::version::ToolVersion;
use crate::tools::editor::EditorTool;
use crate::tools::memory::MemoryTool;
use crate::tools::plan::PlanTool;

fn computer(version: ToolVersion) -> Arc<dyn Tool> {
    Arc::new(
        ComputerTool::new(
            Arc::new(FakeScreen::single(1920, 1080)),
            Box::new(RecordingInput::default()),
            None,
            None,
            version,
            SettlePolicy::default(),
        )
        .unwrap(),
    )
}

/// Every built-in tool's schema by name; the computer tool once per version.
fn schemas(store: &Store) -> Value {
    let tools: Vec<(&str, Arc<dyn Tool>)> = vec![
        ("computer_20250124", computer(ToolVersion::V20250124)),
        ("computer_20251124", computer(ToolVersion::V20251124)),
        (
            "computer_toolset_20260801",
            computer(ToolVersion::Toolset20260801),
        ),
        (
            "bash",
            Arc::new(BashTool::new(Duration::from_secs(1), 1024)),
        ),
        ("editor", Arc::new(EditorTool::new(None))),
        ("memory", Arc::new(MemoryTool::new(store.clone(), "s"))),
        ("plan", Arc::new(PlanTool::new(Vec::new()))),
        (
            "delegate",
            Arc::new(DelegateTool::new(Delegation {
                engine: Engine::new(store.clone()),
                session_id: "s".into(),
                settings: RunSettings::default(),
                lineage: crate::tasks::Lineage::default(),
                remotes: Vec::new(),
                approvals: Arc::default(),
            })),
        ),
    ];
    let mut all = Map::new();
    for (label, tool) in tools {
        all.insert(label.into(), tool.definition().input_schema);
    }
    Value::Object(all)
}

#[test]
fn tool_schemas_match_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let now = schemas(&store);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/tool_schemas.json");
    if std::env::var_os("DESKHAND_BLESS_SCHEMAS").is_some() {
        let text = serde_json::to_string_pretty(&now).unwrap() + "\n";
        std::fs::write(&path, text).unwrap();
    }
    let snapshot: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        now,
        snapshot,
        "the schemas changed; now:\n{}",
        serde_json::to_string_pretty(&now).unwrap()
    );
}
