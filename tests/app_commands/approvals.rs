//! `approve` and `set_approval_mode`: the person's answers, and the native confirmations.

use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

use crate::support::*;

#[test]
fn approving_an_unknown_action_is_not_found() {
    let app = window(None);
    let error = app
        .call(
            "approve",
            json!({"toolUseId": "toolu_x", "decision": {"decision": "approve"}}),
        )
        .unwrap_err();
    assert_eq!(kind(&error), "not_found");
}

#[test]
fn the_window_approves_denies_and_switches_the_mode_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let touch = |name: &str| json!({"command": format!("touch {}/{name}", dir.path().display())});
    let server = StandIn::spawn([
        Turn::tool_use("bash", touch("approved")),
        Turn::tool_use("bash", touch("denied")),
        Turn::tool_use("bash", touch("approved-then-auto")),
        Turn::tool_use("bash", touch("by-policy")),
        Turn::text("All done."),
    ]);
    let app = window(Some(&server));
    app.send(None, "make files").unwrap();
    let asked = |nth: usize| {
        let request = approvals_asked(&app, nth + 1)[nth].clone();
        assert_eq!(
            (&request["tool"], &request["kind"]),
            (&json!("bash"), &json!("bash"))
        );
        request["tool_use_id"].clone()
    };
    let answer = |id: Value, decision: Value| {
        app.call("approve", json!({"toolUseId": id, "decision": decision}))
            .unwrap();
    };
    answer(asked(0), json!({"decision": "approve"}));
    answer(
        asked(1),
        json!({"decision": "deny", "reason": "not that one"}),
    );
    // Switched while the third waits: the fourth sees the new mode and is not asked.
    let third = asked(2);
    app.call("set_approval_mode", json!({"mode": "auto"}))
        .unwrap();
    answer(third, json!({"decision": "approve"}));
    assert_eq!(app.wait_for("done")["status"], "done");

    let exists = |name: &str| dir.path().join(name).exists();
    assert!(exists("approved") && exists("approved-then-auto") && exists("by-policy"));
    assert!(!exists("denied"), "a denied action ran");
    let decided: Vec<(Value, Value)> = app
        .events()
        .into_iter()
        .filter(|e| e["type"] == "approval_decided")
        .map(|e| (e["decision"].clone(), e["by"].clone()))
        .collect();
    assert_eq!(
        decided,
        [
            (json!("approve"), json!("window")),
            (json!("deny"), json!("window")),
            (json!("approve"), json!("window")),
            (json!("approve"), json!("policy")),
        ]
    );
    let denial = server.accepted()[2].body["messages"].to_string();
    assert!(
        denial.contains("the user denied this action: not that one"),
        "{denial}"
    );
}

#[test]
fn stop_while_waiting_for_approval_answers_the_call() {
    let server = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "true"})),
        Turn::text("Resumed."),
    ]);
    let app = window(Some(&server));
    let session = app.send(None, "run it").unwrap();
    let asked = app.wait_for("approval_needed");
    app.call("stop", json!({})).unwrap();
    assert_eq!(app.wait_for("done")["status"], "cancelled");
    let result = app.wait_for("tool_result");
    assert_eq!(result["text"], "cancelled by the user");
    assert_eq!(
        result["status"], "cancelled",
        "the window reads the status, not the text"
    );
    let late = app.call(
        "approve",
        json!({"toolUseId": asked["request"]["tool_use_id"], "decision": {"decision": "approve"}}),
    );
    assert_eq!(kind(&late.unwrap_err()), "not_found");
    app.events.lock().unwrap().clear();
    app.send(session.as_str(), "go on").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
}

#[test]
fn a_decision_names_its_call_and_one_for_another_call_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let touch = |name: &str| json!({"command": format!("touch {}/{name}", dir.path().display())});
    // Two calls in one response: the harmless one first.
    let server = StandIn::spawn([
        Turn::tool_uses([("bash", touch("listed")), ("bash", touch("piped-to-sh"))]),
        Turn::text("Done."),
    ]);
    let app = window(Some(&server));
    app.send(None, "tidy up").unwrap();
    let first = approvals_asked(&app, 1)[0]["tool_use_id"].clone();
    let second_id = {
        let calls: Vec<Value> = app
            .events()
            .into_iter()
            .filter(|e| e["type"] == "tool_call")
            .map(|e| e["id"].clone())
            .collect();
        calls.into_iter().find(|id| *id != first)
    };
    // A decision for the second call while the first is the one shown: refused, whether
    // the id is known from the response (when the core announced it) or made up.
    for id in second_id.into_iter().chain([json!("toolu_made_up")]) {
        let refused = app
            .call(
                "approve",
                json!({"toolUseId": id, "decision": {"decision": "approve"}}),
            )
            .unwrap_err();
        assert_eq!(kind(&refused), "not_found", "{refused}");
    }
    app.call(
        "approve",
        json!({"toolUseId": first, "decision": {"decision": "approve"}}),
    )
    .unwrap();
    let second = approvals_asked(&app, 2)[1]["tool_use_id"].clone();
    assert_ne!(second, first);
    app.call(
        "approve",
        json!({"toolUseId": second, "decision": {"decision": "deny", "reason": null}}),
    )
    .unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert!(dir.path().join("listed").exists());
    assert!(!dir.path().join("piped-to-sh").exists());
}

#[test]
fn always_allowing_bash_needs_a_native_confirmation() {
    let server = StandIn::spawn([
        Turn::tool_use("bash", json!({"command": "true"})),
        Turn::text("Done."),
    ]);
    let app = window(Some(&server));
    app.send(None, "run it").unwrap();
    let id = approvals_asked(&app, 1)[0]["tool_use_id"].clone();
    app.person.refuse(true);
    let refused = app
        .call(
            "approve",
            json!({"toolUseId": id, "decision": {"decision": "approve_kind"}}),
        )
        .unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    let asked = app.person.asked();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].message.contains("any bash command"), "{asked:?}");
    // The call still waits, and a plain approval needs no confirmation.
    app.call(
        "approve",
        json!({"toolUseId": id, "decision": {"decision": "approve"}}),
    )
    .unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert_eq!(app.person.asked().len(), 1);
}

#[test]
fn switching_to_auto_needs_a_native_confirmation() {
    let app = window(None);
    app.person.refuse(true);
    let refused = app
        .call("set_approval_mode", json!({"mode": "auto"}))
        .unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["approval_mode"] = json!("auto");
    let refused = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["approval_mode"],
        "ask"
    );
    assert_eq!(app.person.asked().len(), 2);
    assert!(app.person.asked()[0].title.contains("Auto"));
    // Other modes need no question; a yes switches.
    app.call("set_approval_mode", json!({"mode": "deny"}))
        .unwrap();
    assert_eq!(app.person.asked().len(), 2);
    app.person.refuse(false);
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["approval_mode"],
        "auto"
    );
}
