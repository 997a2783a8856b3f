//! The sessions commands: list, search, rename, load, export, delete, and continuing one.

use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::{Value, json};
use tauri::ipc::InvokeBody;

use crate::support::*;

#[test]
fn sessions_are_stored_listed_searched_renamed_exported_and_deleted() {
    let server = StandIn::spawn([Turn::text("Booked.")]);
    let app = window(Some(&server));
    let session = app.send(None, "Book a flight to Lisbon").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    let session = session.as_str().unwrap().to_string();

    // Recorded event by event in the store the CLI reads.
    let store = deskhand_engine::store::Store::open(app.data.path()).unwrap();
    let stored = store.session(&session.as_str().into()).unwrap();
    assert_eq!(stored.title, "Book a flight to Lisbon");
    assert_eq!(stored.message_count, 2);
    let types: Vec<Value> = store
        .events(&session.as_str().into())
        .unwrap()
        .into_iter()
        .map(|e| e["type"].clone())
        .collect();
    assert_eq!(types.first(), Some(&json!("started")));
    assert_eq!(types.last(), Some(&json!("done")));

    let listed = app.call("list_sessions", json!({})).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], session.as_str());
    assert_eq!(
        listed[0]["usage"]["output_tokens"],
        stored.usage.output_tokens
    );
    let hits = app
        .call("search_sessions", json!({"query": "Lisbon"}))
        .unwrap();
    assert_eq!(hits[0]["id"], session.as_str());
    assert!(hits[0]["snippet"].as_str().unwrap().contains("Lisbon"));
    let none = app
        .call("search_sessions", json!({"query": "Madrid"}))
        .unwrap();
    assert_eq!(none, json!([]));

    let prefix = &session[..8];
    app.call("rename_session", json!({"id": prefix, "title": "Trip"}))
        .unwrap();
    assert_eq!(
        kind(
            &app.call("rename_session", json!({"id": prefix, "title": " "}))
                .unwrap_err()
        ),
        "invalid"
    );
    let loaded = app.call("load_session", json!({"id": prefix})).unwrap();
    assert_eq!(loaded["session"]["title"], "Trip");
    assert_eq!(loaded["messages"].as_array().unwrap().len(), 2);
    assert_eq!(loaded["messages"][1]["content"][0]["text"], "Booked.");
    let replayed: Vec<&Value> = loaded["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "message")
        .collect();
    assert_eq!(replayed.len(), 2, "{loaded:#}");

    // Exports go to new files in the Downloads folder.
    let home = tempfile::tempdir().unwrap();
    // SAFETY: this test holds ENVIRONMENT.
    unsafe {
        std::env::set_var("HOME", home.path());
        std::env::remove_var("XDG_CONFIG_HOME");
    }
    let export = |format: &str| {
        let path = app
            .call("export_session", json!({"id": session, "format": format}))
            .unwrap();
        std::path::PathBuf::from(path.as_str().unwrap())
    };
    let markdown = export("markdown");
    assert_eq!(markdown, home.path().join("Downloads/Trip.md"));
    assert!(
        std::fs::read_to_string(&markdown)
            .unwrap()
            .contains("Booked.")
    );
    assert_eq!(
        export("markdown"),
        home.path().join("Downloads/Trip (2).md")
    );
    let json: Value = serde_json::from_slice(&std::fs::read(export("json")).unwrap()).unwrap();
    assert_eq!(json["format"], deskhand_engine::store::EXPORT_FORMAT);
    assert_eq!(
        kind(
            &app.call("export_session", json!({"id": session, "format": "pdf"}))
                .unwrap_err()
        ),
        "invalid"
    );

    app.call("delete_session", json!({"id": session})).unwrap();
    assert_eq!(app.call("list_sessions", json!({})).unwrap(), json!([]));
    assert_eq!(
        kind(
            &app.call("load_session", json!({"id": session}))
                .unwrap_err()
        ),
        "not_found"
    );
}

#[test]
fn a_reopened_window_continues_a_session_from_the_store_with_its_images() {
    let server = StandIn::spawn([
        Turn::text("A tiny image."),
        Turn::hang(Reply::new().text("Cut off here"), 4),
        Turn::text("Going on."),
    ]);
    let app = window(Some(&server));
    let attached: Value = app
        .call_with("attach_image", InvokeBody::Raw(PNG.to_vec()))
        .unwrap()
        .deserialize()
        .unwrap();
    let session = app
        .call(
            "send_message",
            json!({"sessionId": null, "text": "look", "attachments": [{"id": attached["id"]}], "onEvent": "__CHANNEL__:1"}),
        )
        .unwrap();
    app.wait_for("done");
    app.events.lock().unwrap().clear();
    app.send(session.as_str(), "and now?").unwrap();
    app.wait_for("text_delta");
    app.call("stop", json!({})).unwrap();
    assert_eq!(app.wait_for("done")["status"], "cancelled");

    // A new window over the same history: the image comes back from its file, the text cut
    // off by the stop is the assistant's message.
    let app = app.reopen(Some(&server));
    let loaded = app.call("load_session", json!({"id": session})).unwrap();
    let sha = attached["sha256"].as_str().unwrap();
    assert_eq!(loaded["messages"][0]["content"][1]["source"]["sha256"], sha);
    assert_eq!(app.image(&json!(sha)), PNG);
    assert_eq!(app.send(session.as_str(), "go on").unwrap(), session);
    assert_eq!(app.wait_for("done")["status"], "done");
    let last = server.accepted().last().unwrap().body.clone();
    let sent = last["messages"].as_array().unwrap();
    assert_eq!(sent.len(), 5, "{sent:#?}");
    assert_eq!(sent[0]["content"][1]["source"]["type"], "base64");
    let kept = sent[3]["content"][0]["text"].as_str().unwrap();
    assert!(
        !kept.is_empty() && "Cut off here".starts_with(kept),
        "{kept}"
    );
}
