//! `get_settings`, `set_settings` and `list_providers`: validated, stored, and read by the next run.

use deskhand_standin::{Script, StandIn, Turn};
use serde_json::{Value, json};

use crate::support::*;

#[test]
fn settings_are_validated_stored_and_set_the_mode() {
    let app = window(None);
    let mut settings = app.call("get_settings", json!({})).unwrap();
    assert_eq!(settings["approval_mode"], "ask");
    assert_eq!(settings["provider"], "anthropic");
    assert_eq!(settings["max_cost_usd"], Value::Null);
    settings["max_turns"] = json!(0);
    let error = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(kind(&error), "invalid");
    assert!(error["message"].as_str().unwrap().contains("turn limit"));
    settings["max_turns"] = json!(12);
    settings["max_tokens"] = json!(0);
    let error = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert!(error["message"].as_str().unwrap().contains("token limit"));
    settings["max_tokens"] = json!(50_000);
    settings["max_cost_usd"] = json!(1.5);
    settings["approval_mode"] = json!("auto");
    settings["provider"] = json!("vllm");
    settings["model"] = json!("qwen2.5-vl");
    settings["base_url"] = json!("http://127.0.0.1:9/v1");
    settings["monitor"] = json!(0);
    settings["screenshot_size"] = json!({"width": 1024, "height": 768});
    let saved = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(saved, settings);
    assert_eq!(app.call("get_settings", json!({})).unwrap(), settings);
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(app._config.path().join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(on_disk["max_turns"], 12);
    assert_eq!(on_disk["provider"], "vllm");
    // The budget lives in the store, where `deskhand settings` reads and writes it.
    assert!(on_disk.get("max_cost_usd").is_none());
    let store = deskhand_engine::store::Store::open(app.data.path()).unwrap();
    let budget = store.budget().unwrap();
    assert_eq!(
        (budget.max_cost_usd, budget.max_tokens),
        (Some(1.5), Some(50_000))
    );
    store
        .set_setting(
            deskhand_engine::agent::Budget::MAX_TOKENS_SETTING,
            &Value::Null,
        )
        .unwrap();
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["max_tokens"],
        Value::Null
    );
    // A local server needs no key.
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(
        (&status["required"], &status["set"]),
        (&json!(false), &json!(false))
    );

    let providers = app.call("list_providers", json!({})).unwrap();
    let ids: Vec<&str> = providers
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    for id in ["anthropic", "openai", "azure", "openrouter", "compatible"] {
        assert!(ids.contains(&id), "{ids:?}");
    }
    assert_eq!(providers[0]["needs_key"], true);
    assert!(
        app.call("set_approval_mode", json!({"mode": "sometimes"}))
            .is_err()
    );
    assert_eq!(
        app.call("set_approval_mode", json!({"mode": "deny"})),
        Ok(Value::Null)
    );
}

#[test]
fn the_window_runs_an_openai_compatible_server_from_its_settings() {
    // A local server asks for no key.
    let server =
        StandIn::spawn(Script::new([Turn::text("Hello over Chat Completions.")]).without_keys());
    let app = window(Some(&server));
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["provider"] = json!("compatible");
    settings["model"] = json!("local-model");
    settings["base_url"] = json!(format!("{}/v1", server.url()));
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    app.send(None, "hi").unwrap();
    let done = app.wait_for("done");
    assert_eq!(done["status"], "done", "{:#?}", app.events());
    let request = &server.accepted()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body["model"], "local-model");
    let started = app.wait_for("started");
    assert_eq!(started["model"], "local-model");
}

#[test]
fn a_new_base_url_for_a_provider_with_a_key_needs_a_native_confirmation() {
    let server = StandIn::spawn([Turn::text("unused")]);
    // The key comes from ANTHROPIC_API_KEY here.
    let app = window(Some(&server));
    let mut settings = app.call("get_settings", json!({})).unwrap();
    settings["base_url"] = json!("https://collector.evil.example");
    app.person.refuse(true);
    let refused = app
        .call("set_settings", json!({"settings": settings}))
        .unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    assert_eq!(
        app.call("get_settings", json!({})).unwrap()["base_url"],
        Value::Null
    );
    let asked = app.person.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0]
            .message
            .contains("Anthropic API key will be sent to\n\nhttps://collector.evil.example"),
        "{asked:?}"
    );
    app.person.refuse(false);
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    // The same URL again, or a provider without a key, asks nothing.
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    settings["provider"] = json!("vllm");
    settings["base_url"] = json!("http://127.0.0.1:9/v1");
    app.call("set_settings", json!({"settings": settings}))
        .unwrap();
    assert_eq!(app.person.asked().len(), 2);
}
