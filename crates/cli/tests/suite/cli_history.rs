//! The history through the CLI, as processes against the stand-in server: resume with full
//! history, the `sessions` commands, SIGKILL at random moments, a read-only directory and a
//! full disk (the last two in a private mount namespace, with `unshare`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::API_KEY;
use crate::support::cli::{deskhand_at, files_under, json_lines, run};
use base64::Engine as _;
use deskhand_engine::store::DB_FILE;
use deskhand_standin::{Reply, StandIn, Turn};
use rand::Rng as _;
use rusqlite::Connection;
use serde_json::{Value, json};

/// Runs `deskhand ask --json ARGS...` to the end; returns the session id from `done`.
fn ask(api: &StandIn, data: &Path, args: &[&str]) -> String {
    let (output, stdout, stderr) = run(deskhand_at(api, data).arg("ask").arg("--json").args(args));
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    let done: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(done["type"], "done");
    done["session_id"].as_str().unwrap().to_string()
}

fn sessions(api: &StandIn, data: &Path, args: &[&str]) -> (Output, String, String) {
    run(deskhand_at(api, data).arg("sessions").args(args))
}

#[test]
fn resume_sends_the_full_history_with_images_read_back_from_disk() {
    let api = StandIn::spawn([
        Turn::text("That is a small test image."),
        Turn::text("You asked about the image."),
    ]);
    let data = tempfile::tempdir().unwrap();
    let png = crate::support::fake_screenshot_png(120, 80, 7);
    let attachment = data.path().join("shot.png");
    std::fs::write(&attachment, &png).unwrap();

    let id = ask(
        &api,
        data.path(),
        &[
            "--attach",
            attachment.to_str().unwrap(),
            "What is in this picture?",
        ],
    );
    std::fs::remove_file(&attachment).unwrap();
    let resumed = ask(
        &api,
        data.path(),
        &["--session", &id[..8], "What did I ask?"],
    );
    assert_eq!(resumed, id, "a prefix of the id is enough");

    let requests = api.accepted();
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(
        messages[0]["content"][0]["text"],
        "What is in this picture?"
    );
    let source = &messages[0]["content"][1]["source"];
    assert_eq!(source["type"], "base64");
    assert_eq!(
        source["data"],
        base64::engine::general_purpose::STANDARD.encode(&png),
        "the image comes back from the data directory"
    );
    assert_eq!(
        messages[1]["content"][0]["text"],
        "That is a small test image."
    );
    assert_eq!(messages[2]["content"][0]["text"], "What did I ask?");

    let (_, stdout, _) = sessions(&api, data.path(), &["list", "--json"]);
    let listed = json_lines(&stdout);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["title"], "What is in this picture?");
    assert_eq!(listed[0]["message_count"], 4);

    let (output, _, stderr) =
        run(deskhand_at(&api, data.path()).args(["ask", "--session", "nope", "hi"]));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("no session `nope`"), "{stderr}");
}

#[test]
fn sessions_commands_search_rename_export_import_delete_and_prune() {
    let api = StandIn::spawn([
        Turn::text("Tomatoes need sun."),
        Turn::text("Invoice 42 is written."),
    ]);
    let data = tempfile::tempdir().unwrap();
    let png = data.path().join("plot.png");
    std::fs::write(&png, crate::support::fake_screenshot_png(40, 30, 1)).unwrap();
    let garden = ask(
        &api,
        data.path(),
        &["--attach", png.to_str().unwrap(), "Plan the garden"],
    );
    let invoice = ask(&api, data.path(), &["Write the invoice for ACME"]);

    let (_, stdout, _) = sessions(&api, data.path(), &["search", "invoice", "--json"]);
    let hits = json_lines(&stdout);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["id"], invoice.as_str());
    let snippet = hits[0]["snippet"].as_str().unwrap().to_lowercase();
    assert!(snippet.contains("invoice"), "{snippet}");
    let (_, stdout, _) = sessions(&api, data.path(), &["search", "tomatoes"]);
    assert!(
        stdout.contains(&garden) && !stdout.contains(&invoice),
        "{stdout}"
    );

    let (output, _, _) = sessions(&api, data.path(), &["rename", &invoice, "ACME invoices"]);
    assert!(output.status.success());
    let (_, stdout, _) = sessions(&api, data.path(), &["list"]);
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with(&invoice) && first.ends_with("ACME invoices"),
        "{stdout}"
    );

    let (_, markdown, _) = sessions(&api, data.path(), &["export", &invoice, "--format", "md"]);
    assert!(markdown.starts_with("# ACME invoices\n"), "{markdown}");
    assert!(markdown.contains("Invoice 42 is written."), "{markdown}");

    // JSON export, delete, import: the same session back.
    let (_, shown_before, _) = sessions(&api, data.path(), &["show", &garden, "--json"]);
    let file = data.path().join("garden.json");
    let (output, _, stderr) = sessions(
        &api,
        data.path(),
        &["export", &garden, "-o", file.to_str().unwrap()],
    );
    assert!(output.status.success(), "{stderr}");
    let (output, _, _) = sessions(&api, data.path(), &["delete", &garden]);
    assert!(output.status.success());
    assert!(
        !data
            .path()
            .join("screenshots")
            .read_dir()
            .unwrap()
            .any(|_| true)
    );
    let (output, _, stderr) = sessions(&api, data.path(), &["show", &garden]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("no session"), "{stderr}");
    let (output, stdout, stderr) = sessions(&api, data.path(), &["import", file.to_str().unwrap()]);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), garden);
    let (_, shown_after, _) = sessions(&api, data.path(), &["show", &garden, "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&shown_after).unwrap(),
        serde_json::from_str::<Value>(&shown_before).unwrap()
    );
    let (output, _, stderr) = sessions(&api, data.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("already exists"), "{stderr}");

    let (output, _, stderr) = sessions(&api, data.path(), &["prune", "--older-than", "1"]);
    assert!(output.status.success());
    assert!(stderr.contains("deleted 0 session(s)"), "{stderr}");
    std::thread::sleep(Duration::from_millis(5));
    let (_, _, stderr) = sessions(&api, data.path(), &["prune", "--older-than", "0"]);
    assert!(stderr.contains("deleted 2 session(s)"), "{stderr}");
    let (_, stdout, _) = sessions(&api, data.path(), &["list"]);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        !data
            .path()
            .join("screenshots")
            .read_dir()
            .unwrap()
            .any(|_| true)
    );
}

/// A scripted session of tool steps, streamed in small delayed pieces so that a kill can land
/// anywhere: mid-stream, mid-tool, between events.
fn tool_session(round: usize) -> Vec<Turn> {
    let mut turns: Vec<Turn> = (0..4)
        .map(|step| {
            Reply::new()
                .text(format!(
                    "Round {round}, step {step}: looking at the files now."
                ))
                .tool_use(
                    "bash",
                    json!({"command": format!("sleep 0.0{}; echo step {step}", step * 2)}),
                )
                .delay_ms(4)
                .into()
        })
        .collect();
    turns.push(Reply::new().text("All steps are done.").delay_ms(4).into());
    turns
}

/// The session a killed run was writing: the newest one, if it got as far as creating it.
fn newest_session(conn: &Connection) -> Option<String> {
    conn.query_row(
        "SELECT id FROM sessions ORDER BY created_at DESC, rowid DESC LIMIT 1",
        [],
        |r| r.get(0),
    )
    .ok()
}

#[test]
fn sigkill_at_random_moments_never_loses_what_was_shown_and_resumes_validly() {
    const KILLS: usize = 30;
    let data = tempfile::tempdir().unwrap();
    let mut rng = rand::rng();
    let mut counted = 0;
    let mut seen_sessions = Vec::new();
    for round in 0..KILLS * 2 {
        if counted == KILLS {
            break;
        }
        let api = StandIn::spawn(tool_session(round));
        let mut child = deskhand_at(&api, data.path())
            .args(["ask", "--json", "--approve", "auto", "--tools", "bash"])
            .arg(format!("Round {round}: tidy the folder"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let (line_seen, next_line) = std::sync::mpsc::channel::<()>();
        let reader = {
            let lines = lines.clone();
            let stdout = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(line);
                    let _ = line_seen.send(());
                }
            })
        };
        // Half the kills after a random time, half right after a random printed line.
        if rng.random_bool(0.5) {
            std::thread::sleep(Duration::from_millis(rng.random_range(20..900)));
        } else {
            let wanted = rng.random_range(1..40);
            while lines.lock().unwrap().len() < wanted {
                if next_line.recv_timeout(Duration::from_secs(10)).is_err() {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // The bash tool's children may hold the pipe a moment longer; what was read counts.
        for _ in 0..100 {
            if reader.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let printed: Vec<Value> = lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();

        let conn = Connection::open(data.path().join(DB_FILE)).expect("the database opens");
        let integrity: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(integrity, "ok", "round {round}");
        let Some(id) = newest_session(&conn).filter(|id| !seen_sessions.contains(id)) else {
            assert!(
                printed.is_empty(),
                "round {round}: printed without a session"
            );
            continue; // killed before the session existed: nothing to check or resume
        };
        seen_sessions.push(id.clone());
        counted += 1;

        // Every event shown was stored first: in order, and the streamed text with it.
        let mut statement = conn
            .prepare("SELECT body FROM events WHERE session_id = ?1 ORDER BY id")
            .unwrap();
        let stored: Vec<Value> = statement
            .query_map([&id], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|b| serde_json::from_str(&b.unwrap()).unwrap())
            .collect();
        let mut remaining = stored.iter().filter(|e| e["type"] != "text_delta");
        for event in printed.iter().filter(|e| e["type"] != "text_delta") {
            assert!(
                remaining.any(|s| s == event),
                "round {round}: printed but not stored: {event}"
            );
        }
        let printed_text: String = printed
            .iter()
            .filter(|e| e["type"] == "text_delta")
            .map(|e| e["text"].as_str().unwrap())
            .collect();
        let stored_text: String = stored
            .iter()
            .map(|e| match e["type"].as_str() {
                Some("text_delta") => e["text"].as_str().unwrap().to_string(),
                Some("message") if e["message"]["role"] == "assistant" => e["message"]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect(),
                _ => String::new(),
            })
            .collect();
        assert!(
            stored_text.starts_with(&printed_text),
            "round {round}: shown text {printed_text:?} is not stored: {stored_text:?}"
        );
        drop(statement);
        drop(conn);

        // The validating stand-in accepts the resumed session's next request.
        let next = StandIn::spawn([Turn::text("Picking up where we stopped.")]);
        let (output, _, stderr) = run(deskhand_at(&next, data.path()).args([
            "ask",
            "--json",
            "--approve",
            "auto",
            "--tools",
            "bash",
            "--session",
            &id,
            "continue",
        ]));
        assert_eq!(output.status.code(), Some(0), "round {round}: {stderr}");
        assert_eq!(
            next.accepted().len(),
            1,
            "round {round}: {:?}",
            next.requests()
        );
        assert_eq!(
            next.requests().len(),
            1,
            "round {round}: nothing was rejected"
        );
    }
    assert_eq!(
        counted, KILLS,
        "enough kills landed after the session existed"
    );
}

/// Runs `script` with `sh` as root of a private user and mount namespace, so it may mount a
/// small or read-only file system that vanishes with it.
fn in_namespace(api: &StandIn, script: &str, envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", script])
        .env("DESKHAND", env!("CARGO_BIN_EXE_deskhand"))
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url())
        .env_remove("ANTHROPIC_MODEL")
        .env_remove("LLM_PROVIDER")
        .env_remove("DESKHAND_DATA_DIR");
    for (name, value) in envs {
        command.env(name, value);
    }
    let output = command.output().expect("unshare (util-linux) runs");
    assert!(
        output.status.success(),
        "the namespace script failed (unshare needs user namespaces): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn a_read_only_data_directory_is_refused_and_left_as_it_was() {
    let api = StandIn::spawn([Turn::text("Stored once.")]);
    let data = tempfile::tempdir().unwrap();
    let id = ask(&api, data.path(), &["remember this"]);
    let before = files_under(data.path());
    let out = tempfile::tempdir().unwrap();

    in_namespace(
        &api,
        r#"set -e
        mount --bind "$DATA" "$DATA"
        mount -o remount,bind,ro "$DATA"
        "$DESKHAND" ask --data-dir "$DATA" "more" >/dev/null 2>"$OUT/ask.err" || echo $? >"$OUT/ask.status"
        "$DESKHAND" sessions --data-dir "$DATA" list >/dev/null 2>"$OUT/list.err" || echo $? >"$OUT/list.status"
        "#,
        &[("DATA", data.path()), ("OUT", out.path())],
    );
    for command in ["ask", "list"] {
        let status = std::fs::read_to_string(out.path().join(format!("{command}.status")));
        assert_eq!(status.unwrap().trim(), "1", "{command} fails");
        let stderr = std::fs::read_to_string(out.path().join(format!("{command}.err"))).unwrap();
        assert!(stderr.contains("is read-only"), "{command}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert_eq!(files_under(data.path()), before, "nothing changed");
    let (_, stdout, _) = sessions(&api, data.path(), &["list"]);
    assert!(stdout.contains(&id));
}

#[test]
fn a_full_disk_stops_the_run_with_a_clear_error_and_keeps_what_was_saved() {
    // The stand-in streams 2 MB of text; the disk has room for a fraction of it.
    let long_text = "All work and no play makes a full disk. ".repeat(50_000);
    let api = StandIn::spawn([
        Turn::text("Saved before the disk filled."),
        Reply::new().text(long_text).into(),
        Turn::text("Resumed after space was freed."),
    ]);
    let data = tempfile::tempdir().unwrap();
    let id = ask(&api, data.path(), &["first, while there is room"]);
    let out = tempfile::tempdir().unwrap();
    let mount = tempfile::tempdir().unwrap();

    in_namespace(
        &api,
        r#"set -e
        mount -t tmpfs -o size=2m tmpfs "$MNT"
        cp -a "$DATA/." "$MNT/"
        # Fill the disk, then give back 256 KiB: room to open, not to finish.
        dd if=/dev/zero of="$MNT/filler" bs=64k 2>/dev/null || true
        truncate -s -256K "$MNT/filler"
        "$DESKHAND" ask --json --data-dir "$MNT" "write a lot" >"$OUT/ask.out" 2>"$OUT/ask.err" || echo $? >"$OUT/ask.status"
        # Nothing left at all: even opening is refused clearly.
        dd if=/dev/zero of="$MNT/filler2" bs=4k 2>/dev/null || true
        "$DESKHAND" ask --data-dir "$MNT" --session "$ID" "again" >/dev/null 2>"$OUT/full.err" || echo $? >"$OUT/full.status"
        rm -f "$MNT/filler" "$MNT/filler2"
        "$DESKHAND" ask --json --data-dir "$MNT" --session "$ID" "after freeing space" >"$OUT/resume.out" 2>"$OUT/resume.err"
        cp -a "$MNT/." "$OUT/data/"
        "#,
        &[
            ("DATA", data.path()),
            ("OUT", out.path()),
            ("MNT", mount.path()),
            ("ID", Path::new(&id)),
        ],
    );
    let read = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap_or_default();
    assert_eq!(read("ask.status").trim(), "1", "{}", read("ask.err"));
    assert!(read("ask.err").contains("is full"), "{}", read("ask.err"));
    assert!(
        read("ask.err").contains("free some space"),
        "{}",
        read("ask.err")
    );
    let shown = json_lines(&read("ask.out"));
    assert_eq!(shown[0]["type"], "started", "the disk filled mid-run");
    assert!(shown.iter().any(|e| e["type"] == "text_delta"));
    assert_eq!(read("full.status").trim(), "1", "{}", read("full.err"));
    assert!(read("full.err").contains("is full"), "{}", read("full.err"));

    // After freeing space the first session resumes whole, and the file is sound.
    let resumed = json_lines(&read("resume.out"));
    assert_eq!(
        resumed.last().unwrap()["status"],
        "done",
        "{}",
        read("resume.err")
    );
    let conn = Connection::open(out.path().join("data").join(DB_FILE)).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let texts: Vec<String> = conn
        .prepare("SELECT text FROM messages WHERE session_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([&id], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        texts,
        [
            "first, while there is room",
            "Saved before the disk filled.",
            "after freeing space",
            "Resumed after space was freed."
        ]
    );
    let request = &api.accepted()[2].body;
    assert_eq!(
        request["messages"][1]["content"][0]["text"],
        "Saved before the disk filled."
    );
}
