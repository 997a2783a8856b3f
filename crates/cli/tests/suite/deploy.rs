//! The container image's entry point (`deploy/entrypoint.sh`), run here the way the image
//! runs it but in a bubblewrap sandbox (no container engine on this machine): its own `/tmp`
//! (so its display `:99` is private), PID and network namespaces. It must bring up the
//! display and `deskhand serve` behind the token, and refuse to start without a token.

use std::path::Path;
use std::process::Command;

const TOKEN: &str = "entrypoint-test-token";

/// Runs `script` in the sandbox with the freshly built `deskhand` on PATH.
fn in_sandbox(script: &str) -> std::process::Output {
    let entry = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/entrypoint.sh");
    Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--tmpfs",
            "/tmp",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ])
        .args(["--unshare-pid", "--unshare-net", "--die-with-parent"])
        .args([
            "--ro-bind",
            env!("CARGO_BIN_EXE_deskhand"),
            "/tmp/bin/deskhand",
        ])
        .arg("--ro-bind")
        .arg(&entry)
        .arg("/tmp/bin/deskhand-entrypoint")
        .args([
            "--setenv",
            "HOME",
            "/tmp/home",
            "--setenv",
            "PATH",
            "/tmp/bin:/usr/bin:/bin",
        ])
        .args(["--unsetenv", "DISPLAY", "--unsetenv", "XDG_RUNTIME_DIR"])
        .args([
            "--unsetenv",
            "DESKHAND_DATA_DIR",
            "--unsetenv",
            "DESKHAND_CONFIG_DIR",
        ])
        .args(["sh", "-c", script])
        .output()
        .expect("bwrap runs")
}

#[test]
fn the_entry_point_serves_behind_its_token_on_its_own_display() {
    let script = format!(
        r#"mkdir -p /tmp/home
export DESKHAND_API_TOKEN={TOKEN} DESKHAND_LISTEN=127.0.0.1:8765
deskhand-entrypoint 2>/tmp/entry.log &
entry=$!
for i in $(seq 300); do curl -s -o /dev/null http://127.0.0.1:8765/v1/tasks && break; sleep 0.05; done
echo with=$(curl -s -o /dev/null -w '%{{http_code}}' -H 'Authorization: Bearer {TOKEN}' http://127.0.0.1:8765/v1/tasks)
echo without=$(curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:8765/v1/tasks)
xdpyinfo -display :99 | grep dimensions
pgrep -c openbox | sed 's/^/wm=/'
kill -TERM $entry; wait $entry; echo exit=$?
pgrep -c Xvfb | sed 's/^/xvfb_after=/'
cat /tmp/entry.log >&2"#
    );
    let out = in_sandbox(&script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("with=200"), "{stdout}\n{stderr}");
    assert!(stdout.contains("without=401"), "{stdout}\n{stderr}");
    assert!(stdout.contains("1280x800 pixels"), "{stdout}\n{stderr}");
    assert!(stdout.contains("wm=1"), "{stdout}\n{stderr}");
    assert!(stdout.contains("exit=0"), "{stdout}\n{stderr}");
    assert!(stdout.contains("xvfb_after=0"), "{stdout}\n{stderr}");
}

#[test]
fn the_entry_point_refuses_to_start_without_a_token() {
    let out = in_sandbox("unset DESKHAND_API_TOKEN; deskhand-entrypoint; echo exit=$?");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("exit=64"), "{stdout}");
    assert!(stderr.contains("DESKHAND_API_TOKEN is not set"), "{stderr}");
}
