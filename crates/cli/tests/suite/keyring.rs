//! API keys in a real Secret Service (gnome-keyring in the D-Bus session `scripts/test.sh`
//! starts): a key set through the CLI is used for a request and found nowhere else; and with
//! no Secret Service, a clear error and no plaintext fallback.

use std::path::Path;
use std::process::Command;

use crate::support::cli::{self, files_under, run, run_with_stdin};
use deskhand_standin::{StandIn, Turn};
use serde_json::Value;

/// The keyring tests need the session bus `scripts/test.sh` provides. Under the test command
/// (`DESKHAND_TEST_HOME` set) a missing bus is a failure, so CI cannot skip them silently;
/// a plain `cargo test` on a desktop without one skips them with a note.
fn secret_service_available() -> bool {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some() {
        return true;
    }
    assert!(
        std::env::var_os("DESKHAND_TEST_HOME").is_none(),
        "DESKHAND_TEST_HOME is set but there is no D-Bus session: the keyring tests must run \
         inside scripts/test.sh's dbus-run-session with gnome-keyring unlocked"
    );
    eprintln!("skipped: no D-Bus session (run scripts/test.sh for the keyring tests)");
    false
}

/// `deskhand` with keys filed under a keyring service of this test's own, so tests running
/// side by side in one keyring never see each other's keys.
fn deskhand(service: &str, data: &Path) -> Command {
    let mut command = cli::deskhand(data);
    command.env("DESKHAND_KEYRING_SERVICE", service);
    command
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[test]
fn a_key_set_through_the_cli_is_used_and_leaves_no_trace() {
    if !secret_service_available() {
        return;
    }
    let service = format!("deskhand-test-{}", uuid::Uuid::new_v4());
    let secret = format!("sk-ant-kr-{}-Q7x9", uuid::Uuid::new_v4().simple());
    let data = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([
        Turn::text("Hello with the stored key."),
        Turn::text("Env wins."),
    ]);
    let mut transcript = String::new();
    let mut keep = |stdout: &str, stderr: &str| {
        transcript.push_str(stdout);
        transcript.push_str(stderr);
    };

    let (output, stdout, stderr) = run_with_stdin(
        deskhand(&service, data.path()).args(["key", "set", "anthropic"]),
        &format!("{secret}\n"),
    );
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("…Q7x9"), "{stderr}");
    keep(&stdout, &stderr);

    let (output, stdout, stderr) = run(deskhand(&service, data.path()).args(["key", "status"]));
    assert!(output.status.success(), "{stderr}");
    let anthropic = stdout.lines().find(|l| l.starts_with("anthropic")).unwrap();
    assert_eq!(anthropic, "anthropic   keyring  …Q7x9");
    keep(&stdout, &stderr);
    let (_, stdout, stderr) =
        run(deskhand(&service, data.path()).args(["key", "status", "--json"]));
    let status: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(status["set"], true);
    assert_eq!(status["source"], "keyring");
    assert_eq!(status["last4"], "Q7x9");
    assert_eq!(status["keyring_available"], true);
    keep(&stdout, &stderr);

    // The stored key authenticates a real request.
    let (output, stdout, stderr) = run(deskhand(&service, data.path())
        .env("ANTHROPIC_BASE_URL", api.url())
        .args(["ask", "--json", "hello"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(api.accepted()[0].headers["x-api-key"], secret);
    keep(&stdout, &stderr);
    let session =
        serde_json::from_str::<Value>(stdout.lines().last().unwrap()).unwrap()["session_id"]
            .as_str()
            .unwrap()
            .to_string();

    // The environment overrides the keyring for one run.
    let (output, stdout, stderr) = run(deskhand(&service, data.path())
        .env("ANTHROPIC_BASE_URL", api.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-from-env-0000")
        .args(["ask", "--session", &session, "and again"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        api.accepted()[1].headers["x-api-key"],
        "sk-ant-from-env-0000"
    );
    keep(&stdout, &stderr);

    for format in ["json", "md"] {
        let (output, stdout, stderr) = run(deskhand(&service, data.path())
            .args(["sessions", "export", &session, "--format", format]));
        assert!(output.status.success(), "{stderr}");
        assert!(stdout.contains("hello"));
        keep(&stdout, &stderr);
    }
    let (_, stdout, stderr) =
        run(deskhand(&service, data.path()).args(["sessions", "show", &session, "--json"]));
    keep(&stdout, &stderr);

    // No trace: the data directory (database, WAL, screenshots), every output and export.
    let files = files_under(data.path());
    assert!(files.iter().any(|(name, _)| name.ends_with("history.db")));
    for fragment in [secret.as_str(), &secret[10..30]] {
        for (name, bytes) in &files {
            assert!(!contains(bytes, fragment), "the key is in {name}");
        }
        assert!(!transcript.contains(fragment), "the key was printed");
    }

    let (output, _, stderr) =
        run(deskhand(&service, data.path()).args(["key", "delete", "anthropic"]));
    assert!(output.status.success(), "{stderr}");
    let (output, _, stderr) = run(deskhand(&service, data.path())
        .env("ANTHROPIC_BASE_URL", api.url())
        .args(["ask", "hello"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains(
            "no API key: set ANTHROPIC_API_KEY or store one with `deskhand key set anthropic`"
        ),
        "{stderr}"
    );
    assert_eq!(api.accepted().len(), 2, "no request without a key");
    let (_, stdout, _) = run(deskhand(&service, data.path()).args(["key", "status"]));
    assert!(stdout.contains("anthropic   not set"), "{stdout}");
}

#[test]
fn without_a_secret_service_the_error_says_how_to_fix_it_and_nothing_is_written() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let runtime = home.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let no_bus = |command: &mut Command| {
        command
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("HOME", home.path());
    };

    let mut set = deskhand("deskhand-test-nobus", &data);
    set.args(["key", "set", "openai"]);
    no_bus(&mut set);
    let (output, _, stderr) = run_with_stdin(&mut set, "sk-openai-never-stored-1234\n");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no OS keyring is available"), "{stderr}");
    assert!(stderr.contains("gnome-keyring-daemon"), "{stderr}");
    assert!(
        stderr.contains("set OPENAI_API_KEY for each run"),
        "{stderr}"
    );
    assert!(!stderr.contains("never-stored"), "{stderr}");
    let written: Vec<_> = files_under(home.path());
    assert!(
        written
            .iter()
            .all(|(_, bytes)| !contains(bytes, "never-stored")),
        "no plaintext fallback"
    );

    let mut status = deskhand("deskhand-test-nobus", &data);
    status.args(["key", "status", "--json"]);
    no_bus(&mut status);
    let (output, stdout, _) = run(&mut status);
    assert!(output.status.success());
    let first: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["keyring_available"], false);
    assert!(
        first["keyring_error"]
            .as_str()
            .unwrap()
            .contains("keyring daemon")
    );

    let api = StandIn::spawn([Turn::text("unused")]);
    let mut ask = deskhand("deskhand-test-nobus", &data);
    ask.env("ANTHROPIC_BASE_URL", api.url()).args(["ask", "hi"]);
    no_bus(&mut ask);
    let (output, _, stderr) = run(&mut ask);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("ANTHROPIC_API_KEY is not set"), "{stderr}");
    assert!(stderr.contains("no OS keyring is available"), "{stderr}");
    assert!(api.requests().is_empty());
}
