//! `set_api_key` and `key_status`: keys in the real keyring, and only there.

use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

use crate::support::*;

#[test]
fn no_key_is_refused_before_anything_is_sent() {
    if !secret_service_available() {
        return;
    }
    let app = window(None);
    let error = app.send(None, "hi").unwrap_err();
    assert_eq!(kind(&error), "no_key", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("ANTHROPIC_API_KEY") && message.contains("Settings"));
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(status["set"], false);
    assert_eq!(status["required"], true);
    assert_eq!(status["keyring_available"], true);
    assert_eq!(status["last4"], Value::Null);
    assert_eq!(app.call("list_sessions", json!({})).unwrap(), json!([]));
}

#[test]
fn the_key_status_shows_the_last_four_characters_only() {
    let server = StandIn::spawn(Vec::<Turn>::new());
    let app = window(Some(&server));
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(status["set"], true);
    assert_eq!(status["last4"], "wxyz");
    assert_eq!(status["source"], "environment");
    assert!(!status.to_string().contains(KEY));
}

#[test]
fn a_key_set_in_the_window_goes_to_the_keyring_and_only_to_the_provider() {
    if !secret_service_available() {
        return;
    }
    const STORED: &str = "sk-ant-window-stored-secret-QRST";
    let server = StandIn::spawn([Turn::text("Keyed.")]);
    let app = window(Some(&server));
    // SAFETY: the window holds ENVIRONMENT.
    unsafe { std::env::remove_var("ANTHROPIC_API_KEY") };
    assert_eq!(app.call("key_status", json!({})).unwrap()["set"], false);
    assert_eq!(
        kind(
            &app.call("set_api_key", json!({"provider": "anthropic", "key": "  "}))
                .unwrap_err()
        ),
        "invalid"
    );
    assert_eq!(
        kind(
            &app.call("set_api_key", json!({"provider": "ollama", "key": STORED}))
                .unwrap_err()
        ),
        "invalid"
    );
    let status = app
        .call(
            "set_api_key",
            json!({"provider": "anthropic", "key": STORED}),
        )
        .unwrap();
    assert_eq!(
        (&status["set"], &status["last4"], &status["source"]),
        (&json!(true), &json!("QRST"), &json!("keyring"))
    );
    assert!(!status.to_string().contains(STORED));
    let status = app.call("key_status", json!({})).unwrap();
    assert_eq!(status["source"], "keyring");
    assert!(!status.to_string().contains(STORED));
    // The CLI's store sees the same key.
    let keyring = deskhand_engine::secrets::OsKeyring::default();
    let anthropic = deskhand_engine::secrets::provider("anthropic").unwrap();
    use deskhand_engine::secrets::SecretStore as _;
    assert_eq!(keyring.get(anthropic).unwrap().unwrap().expose(), STORED);

    app.send(None, "hello").unwrap();
    assert_eq!(app.wait_for("done")["status"], "done");
    assert_eq!(server.accepted()[0].headers["x-api-key"], STORED);
    let events = serde_json::to_string(&app.events()).unwrap();
    assert!(!events.contains(STORED));
    assert!(files_contain(app.data.path(), STORED).is_empty());
    assert!(files_contain(app._config.path(), STORED).is_empty());
    keyring.delete(anthropic).unwrap();
}

#[test]
fn without_a_keyring_the_window_says_how_to_get_one() {
    let app = window(None);
    let previous = std::env::var_os("DBUS_SESSION_BUS_ADDRESS");
    // SAFETY: the window holds ENVIRONMENT. A bus that is not there: no Secret Service.
    unsafe {
        std::env::set_var(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/deskhand-no-bus",
        )
    };
    let status = app.call("key_status", json!({}));
    let stored = app.call(
        "set_api_key",
        json!({"provider": "anthropic", "key": "sk-ant-nowhere-to-go-ABCD"}),
    );
    let sent = app.send(None, "hi");
    // SAFETY: as above.
    unsafe {
        match previous {
            Some(address) => std::env::set_var("DBUS_SESSION_BUS_ADDRESS", address),
            None => std::env::remove_var("DBUS_SESSION_BUS_ADDRESS"),
        }
    }
    let status = status.unwrap();
    assert_eq!(status["keyring_available"], false);
    let why = status["keyring_error"].as_str().unwrap();
    assert!(
        why.contains("gnome-keyring-daemon") && why.contains("ANTHROPIC_API_KEY"),
        "{why}"
    );
    let error = stored.unwrap_err();
    assert_eq!(kind(&error), "keyring_unavailable");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY")
    );
    assert!(!error.to_string().contains("nowhere-to-go"));
    assert_eq!(kind(&sent.unwrap_err()), "keyring_unavailable");
    assert!(files_contain(app._config.path(), "nowhere-to-go").is_empty());
}
