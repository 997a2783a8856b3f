//! What the page may do: the capability, links through a confirmation, and the CSP.

use serde_json::{Value, json};
use tauri::Url;

use crate::support::*;

#[test]
fn capabilities_allow_exactly_the_registered_commands() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src-tauri/capabilities/main.json"
    );
    let capability: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let mut granted: Vec<String> = capability["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert!(
        !granted.is_empty(),
        "the window's capability grants nothing"
    );
    let mut expected: Vec<String> = deskhand_app::commands::COMMANDS
        .iter()
        .map(|c| format!("allow-{}", c.replace('_', "-")))
        .collect();
    granted.sort();
    expected.sort();
    assert_eq!(granted, expected);
    // Through the real context, a granted command answers and an unknown one is refused.
    let app = window(None);
    assert!(app.call("get_settings", json!({})).is_ok());
    let refused = app.call("plugin:fs|read_file", json!({"path": "/etc/passwd"}));
    assert!(refused.is_err(), "{refused:?}");
}

#[test]
fn a_link_opens_in_the_browser_only_after_a_confirmation_showing_its_full_address() {
    let app = window(None);
    let link = "https://example.com/a/very/long/path?with=query&and=more#fragment";
    app.person.refuse(true);
    let refused = app.call("open_link", json!({"url": link})).unwrap_err();
    assert_eq!(kind(&refused), "declined", "{refused:?}");
    assert!(app.person.opened().is_empty());
    assert!(app.person.asked()[0].message.contains(link));
    app.person.refuse(false);
    app.call("open_link", json!({"url": link})).unwrap();
    assert_eq!(app.person.opened(), [Url::parse(link).unwrap()]);
    // What is not a web or mail link is refused before anything is asked.
    for bad in [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "/relative",
        "tauri://localhost/",
        &format!("https://example.com/{}", "a".repeat(5000)),
    ] {
        let error = app.call("open_link", json!({"url": bad})).unwrap_err();
        assert_eq!(kind(&error), "invalid", "{bad}: {error}");
    }
    assert_eq!(app.person.asked().len(), 2);
    assert_eq!(app.person.opened().len(), 1);
}

#[test]
fn the_csp_allows_no_form_target_base_object_or_frame() {
    let config: Value = serde_json::from_str(include_str!("../../tauri.conf.json")).unwrap();
    let csp = config["app"]["security"]["csp"].as_str().unwrap();
    for directive in [
        "form-action 'none'",
        "base-uri 'none'",
        "object-src 'none'",
        "frame-src 'none'",
    ] {
        assert!(csp.split(';').any(|d| d.trim() == directive), "{csp}");
    }
    assert_eq!(config["build"]["devUrl"], "http://127.0.0.1:1420");
    let vite = include_str!("../../ui/vite.config.ts");
    assert!(vite.contains("host: '127.0.0.1', port: 1420, strictPort: true"));
}
