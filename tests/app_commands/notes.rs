//! The notes commands, and the plan a run shows.

use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

use crate::support::*;

#[test]
fn notes_are_managed_from_the_window_and_its_runs_get_them_and_show_the_plan() {
    let server = StandIn::spawn([
        Turn::tool_use(
            "plan",
            json!({"action": "set", "steps": [{"id": "1", "title": "Open the invoices"}]}),
        ),
        Turn::text("Opened."),
    ]);
    let app = window(Some(&server));
    let note = app
        .call(
            "add_note",
            json!({"text": "the invoices are in ~/Documents/Acme"}),
        )
        .unwrap();
    let id = note["id"].as_i64().unwrap();
    assert_eq!(note["session_id"], Value::Null);
    // Bad notes and secrets are refused with the reason; nothing is stored.
    let empty = app.call("add_note", json!({"text": " "})).unwrap_err();
    assert_eq!(kind(&empty), "invalid");
    let secret = app
        .call("add_note", json!({"text": format!("my key: {KEY}")}))
        .unwrap_err();
    assert_eq!(kind(&secret), "invalid");
    assert!(secret["message"].as_str().unwrap().starts_with("refused"));
    let edited = app
        .call(
            "edit_note",
            json!({"id": id, "text": "the invoices are in ~/Documents/Acme/2026"}),
        )
        .unwrap();
    assert_eq!(edited["text"], "the invoices are in ~/Documents/Acme/2026");
    let found = app
        .call("search_notes", json!({"query": "invoic"}))
        .unwrap();
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!(app.call("list_notes", json!({})).unwrap()[0]["id"], id);
    assert_eq!(app.call("get_memory_in_prompt", json!({})).unwrap(), true);

    // A run from the window: the note is in its system prompt, `started` names it, and the
    // plan reaches the window.
    app.send(None, "open my invoices").unwrap();
    let started = app.wait_for("started");
    assert_eq!(started["notes"][0]["id"], id);
    let plan = app.wait_for("plan_updated");
    assert_eq!(plan["steps"][0]["title"], "Open the invoices");
    assert_eq!(plan["changes"][0]["kind"], "added");
    assert_eq!(app.wait_for("done")["status"], "done");
    let system = server.accepted()[0].body["system"].to_string();
    assert!(system.contains("Acme/2026"), "{system}");

    app.call("set_memory_in_prompt", json!({"enabled": false}))
        .unwrap();
    assert_eq!(app.call("get_memory_in_prompt", json!({})).unwrap(), false);
    app.call("delete_note", json!({"id": id})).unwrap();
    assert_eq!(app.call("list_notes", json!({})).unwrap(), json!([]));
    let gone = app.call("delete_note", json!({"id": id})).unwrap_err();
    assert_eq!(kind(&gone), "not_found");
}
