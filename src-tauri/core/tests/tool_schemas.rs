//! The JSON Schemas the model receives for the built-in tools, compared with the snapshot in
//! `fixtures/tool_schemas.json` (taken before the inputs were typed). A change to a schema
//! must be deliberate: set `DESKHAND_BLESS_SCHEMAS=1` to rewrite the snapshot, and say why in
//! the commit.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use deskhand::store::Store;
use deskhand::tools::Tool;
use deskhand::tools::bash::BashTool;
use deskhand::tools::computer::ComputerTool;
use deskhand::tools::computer::input::RecordingInput;
use deskhand::tools::computer::screen::FakeScreen;
use deskhand::tools::computer::settle::SettlePolicy;
use deskhand::tools::computer::version::ToolVersion;
use deskhand::tools::editor::EditorTool;
use deskhand::tools::memory::MemoryTool;
use deskhand::tools::plan::PlanTool;
use serde_json::{Map, Value};

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
    let tools: Vec<(String, Arc<dyn Tool>)> = vec![
        ("computer_20250124".into(), computer(ToolVersion::V20250124)),
        ("computer_20251124".into(), computer(ToolVersion::V20251124)),
        (
            "computer_toolset_20260801".into(),
            computer(ToolVersion::Toolset20260801),
        ),
        (
            "bash".into(),
            Arc::new(BashTool::new(Duration::from_secs(1), 1024)),
        ),
        ("editor".into(), Arc::new(EditorTool::new(None))),
        (
            "memory".into(),
            Arc::new(MemoryTool::new(store.clone(), "s")),
        ),
        ("plan".into(), Arc::new(PlanTool::new(Vec::new()))),
    ];
    let mut all = Map::new();
    for (label, tool) in tools {
        all.insert(label, tool.definition().input_schema);
    }
    Value::Object(all)
}

#[test]
fn tool_schemas_match_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let now = schemas(&store);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tool_schemas.json");
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
