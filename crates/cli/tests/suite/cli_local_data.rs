//! Issue 14 through the CLI against the stand-in: the history is private whatever the
//! umask; prompts that would break a session are refused before anything is stored or
//! sent; files to attach or import are checked before they are read; a deeply nested tool
//! input cannot lose a session; errors say each cause once.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::cli::{deskhand_at, files_under, json_lines, run, run_with_stdin};
use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The command with the usual umask of 0022, whatever the test runner's is.
fn with_umask_0022(command: &mut Command) -> &mut Command {
    // SAFETY: umask(2) is async-signal-safe and only sets the child's file mode mask.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        })
    }
}

fn ask_json(api: &StandIn, data: &Path, args: &[&str]) -> Vec<Value> {
    let (output, stdout, stderr) = run(with_umask_0022(&mut deskhand_at(api, data))
        .args(["ask", "--json"])
        .args(args));
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    json_lines(&stdout)
}

#[test]
fn history_screenshots_and_exports_are_private_under_umask_0022() {
    let api = StandIn::spawn([Turn::text("Seen.")]);
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), PermissionsExt::from_mode(0o755)).unwrap();
    let data = home.path().join("share/deskhand");
    let png = crate::support::fake_screenshot_png(40, 30, 3);
    let attachment = home.path().join("shot.png");
    std::fs::write(&attachment, &png).unwrap();
    let events = ask_json(
        &api,
        &data,
        &["--attach", attachment.to_str().unwrap(), "What is this?"],
    );
    let id = events.last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    assert_eq!(mode(&data), 0o700, "the data directory");
    for (path, _) in files_under(&data) {
        assert_eq!(mode(Path::new(&path)), 0o600, "{path}");
    }
    let names: Vec<String> = files_under(&data).into_iter().map(|(p, _)| p).collect();
    assert!(names.iter().any(|p| p.ends_with(".png")), "{names:?}");
    // The WAL and shared-memory files exist while the history is open.
    let open = deskhand_engine::store::Store::open(&data).unwrap();
    open.sessions().unwrap();
    for companion in ["history.db-wal", "history.db-shm"] {
        assert_eq!(mode(&data.join(companion)), 0o600, "{companion}");
    }
    drop(open);
    let shots = data.join("screenshots");
    assert_eq!(mode(&shots), 0o700);
    for entry in std::fs::read_dir(&shots).unwrap() {
        assert_eq!(mode(&entry.unwrap().path()), 0o700);
    }

    let export = home.path().join("out.json");
    let (output, _, stderr) = run(with_umask_0022(&mut deskhand_at(&api, &data)).args([
        "sessions",
        "export",
        &id,
        "-o",
        export.to_str().unwrap(),
    ]));
    assert!(output.status.success(), "{stderr}");
    assert_eq!(mode(&export), 0o600, "an export");

    // A directory left open by an older version is tightened, and that is said once.
    std::fs::set_permissions(&data, PermissionsExt::from_mode(0o755)).unwrap();
    let list = |expect_notice: bool| {
        let (output, _, stderr) =
            run(with_umask_0022(&mut deskhand_at(&api, &data)).args(["sessions", "list"]));
        assert!(output.status.success(), "{stderr}");
        assert_eq!(
            stderr.contains("was open to other users (mode 755); it is now private"),
            expect_notice,
            "{stderr}"
        );
    };
    list(true);
    assert_eq!(mode(&data), 0o700);
    list(false);
}

#[test]
fn blank_prompts_are_refused_before_anything_is_stored_or_sent() {
    let api = StandIn::spawn([Turn::text("Hello."), Turn::text("Again.")]);
    let data = tempfile::tempdir().unwrap();
    for prompt in ["", "  ", "\n\t"] {
        let (output, _, stderr) = run(deskhand_at(&api, data.path()).args(["ask", prompt]));
        assert_eq!(output.status.code(), Some(2), "{prompt:?}: {stderr}");
        assert!(stderr.contains("the prompt is empty"), "{stderr}");
    }
    assert!(api.requests().is_empty(), "nothing was sent");
    let (_, listed, _) = run(deskhand_at(&api, data.path()).args(["sessions", "list"]));
    assert_eq!(listed, "", "nothing was stored");

    let events = ask_json(&api, data.path(), &["Hi"]);
    let id = events.last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (output, _, stderr) =
        run(deskhand_at(&api, data.path()).args(["ask", "--session", &id, "   "]));
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    ask_json(&api, data.path(), &["--session", &id, "Still there?"]);
    assert_eq!(
        api.accepted().len(),
        2,
        "the session goes on: {:?}",
        api.requests()
    );

    let (output, _, stderr) =
        run(deskhand_at(&api, data.path()).args(["ask", "--session", "", "Hi"]));
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("matches several"), "{stderr}");
}

#[test]
fn ask_dash_reads_a_long_prompt_from_stdin() {
    let api = StandIn::spawn([Turn::text("Read it.")]);
    let data = tempfile::tempdir().unwrap();
    let prompt = format!("Summarise this:\n{}", "lorem ipsum ".repeat(200_000));
    let (output, _, stderr) = run_with_stdin(
        deskhand_at(&api, data.path()).args(["ask", "--json", "-"]),
        &prompt,
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let sent = &api.accepted()[0].body["messages"][0]["content"][0]["text"];
    assert_eq!(sent.as_str().unwrap(), prompt);

    let (output, _, stderr) =
        run_with_stdin(deskhand_at(&api, data.path()).args(["ask", "-"]), " \n ");
    assert_eq!(output.status.code(), Some(2), "{stderr}");
}

#[test]
fn attachments_and_imports_refuse_fifos_devices_and_giants_at_once() {
    let api = StandIn::spawn(Vec::<Turn>::new());
    let data = tempfile::tempdir().unwrap();
    let fifo = data.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let giant = data.path().join("giant.png");
    std::fs::File::create(&giant)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let dir = data.path().join("adir");
    std::fs::create_dir(&dir).unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["ask", "--attach", fifo.to_str().unwrap(), "x"],
            "is a named pipe (FIFO), not a regular file",
        ),
        (
            &["ask", "--attach", "/dev/urandom", "x"],
            "is a character device, not a regular file",
        ),
        (
            &["ask", "--attach", giant.to_str().unwrap(), "x"],
            "is 1073741824 bytes; the limit is",
        ),
        (
            &["ask", "--attach", dir.to_str().unwrap(), "x"],
            "is a directory, not a file",
        ),
        (
            &["sessions", "import", fifo.to_str().unwrap()],
            "is a named pipe (FIFO), not a regular file",
        ),
        (
            &["sessions", "import", giant.to_str().unwrap()],
            "is 1073741824 bytes; the limit is",
        ),
    ];
    for (args, expected) in cases {
        let started = Instant::now();
        let (output, _, stderr) = run(deskhand_at(&api, data.path()).args(args));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{args:?} took long"
        );
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.contains("it is now private"))
            .collect();
        assert_eq!(lines.len(), 1, "one line: {stderr}");
    }
    assert!(api.requests().is_empty());
}

#[test]
fn error_causes_are_said_once() {
    let api = StandIn::spawn(Vec::<Turn>::new());
    let data = tempfile::tempdir().unwrap();
    let missing = data.path().join("missing.png");
    let broken = data.path().join("broken.json");
    std::fs::write(&broken, "{not json").unwrap();
    let cases: [&[&str]; 4] = [
        &["ask", "--attach", data.path().to_str().unwrap(), "x"],
        &["ask", "--attach", missing.to_str().unwrap(), "x"],
        &["sessions", "import", missing.to_str().unwrap()],
        &["sessions", "import", broken.to_str().unwrap()],
    ];
    for args in cases {
        let (output, _, stderr) = run(deskhand_at(&api, data.path()).args(args));
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        let line = stderr
            .lines()
            .find(|l| !l.contains("it is now private"))
            .unwrap();
        for part in line.split(": ").skip(1) {
            assert_eq!(line.matches(part).count(), 1, "`{part}` said twice: {line}");
        }
    }
}

#[test]
fn a_deeply_nested_tool_input_is_refused_and_the_session_stays_usable() {
    let deep = (0..126).fold(json!(1), |inner, _| json!([inner]));
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({ "command": "echo hi", "extra": deep })),
        Turn::text("Understood."),
        Turn::text("Still here."),
    ]);
    let data = tempfile::tempdir().unwrap();
    let events = ask_json(
        &api,
        data.path(),
        &["--tools", "bash", "--approve", "auto", "go"],
    );
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result["status"], "error",
        "the --json contract: how the call ended"
    );
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .contains("input is nested 127 levels deep; a tool input may nest at most 64"),
        "{result}"
    );
    let id = events.last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    for args in [
        vec!["sessions", "show", &id],
        vec!["sessions", "export", &id],
    ] {
        let (output, _, stderr) = run(deskhand_at(&api, data.path()).args(&args));
        assert!(output.status.success(), "{args:?}: {stderr}");
    }
    ask_json(&api, data.path(), &["--session", &id, "and now?"]);
}
