//! The history store on real SQLite files: migrations from every earlier version, recording
//! a run's events, search, export and import, delete and prune with their screenshots, and
//! files that must be refused untouched.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use deskhand_protocol::action::ActionPlan;
use deskhand_protocol::approval::{ApprovalRequest, DecidedBy, Decision};
use deskhand_protocol::budget::Budget;
use deskhand_protocol::event::{AgentEvent, RunStatus, ToolStatus};
use deskhand_protocol::images::ImageRef;
use deskhand_protocol::message::{ContentBlock, ImageSource, Message, ToolResultContent, Usage};
use deskhand_store::migrations::{self, LATEST};
use deskhand_store::{
    DB_FILE, ExportFormat, INTERRUPTED, Recorder, SCREENSHOTS_DIR, Store, StoreError,
};
use rusqlite::Connection;
use serde_json::{Value, json};

fn image(seed: u64) -> ImageSource {
    ImageSource::Base64 {
        media_type: "image/png".into(),
        data: base64::engine::general_purpose::STANDARD
            .encode(deskhand_test_support::fake_screenshot_png(64, 48, seed)),
    }
}

/// The events of a one-tool-call run whose tool returns `screenshot`, as the loop emits them.
fn tool_run(session_id: &str, prompt: &str, screenshot: ImageSource) -> Vec<AgentEvent> {
    let input = json!({"command": "ls ~/reports"});
    let result = ContentBlock::ToolResult {
        tool_use_id: "toolu_1".into(),
        content: vec![
            ToolResultContent::Text {
                text: "q3-summary.pdf".into(),
            },
            ToolResultContent::Image {
                source: screenshot.clone(),
            },
        ],
        is_error: false,
        toolset_name: None,
    };
    let turn = Usage {
        input_tokens: 100,
        output_tokens: 20,
        ..Usage::default()
    };
    vec![
        AgentEvent::Started {
            session_id: session_id.into(),
            provider: "anthropic".into(),
            model: "claude-test".into(),
            notes: Vec::new(),
            tool_fallbacks: Vec::new(),
            price_source: None,
            warnings: Vec::new(),
        },
        AgentEvent::Message {
            message: Message::user(vec![ContentBlock::text(prompt)]),
        },
        AgentEvent::TextDelta {
            text: "Let me ".into(),
        },
        AgentEvent::TextDelta {
            text: "look.".into(),
        },
        AgentEvent::Usage {
            turn,
            total: turn,
            turn_cost_usd: Some(0.5),
            total_cost_usd: Some(0.5),
        },
        AgentEvent::Message {
            message: Message::assistant(vec![
                ContentBlock::text("Let me look."),
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "bash".into(),
                    input: input.clone(),
                    toolset_name: None,
                },
            ]),
        },
        AgentEvent::ToolCall {
            id: "toolu_1".into(),
            name: "bash".into(),
            input: input.clone(),
        },
        AgentEvent::ApprovalNeeded {
            request: ApprovalRequest {
                tool_use_id: "toolu_1".into(),
                tool: "bash".into(),
                derived_from: None,
                needs_person: false,
                input,
                plan: ActionPlan {
                    kind: "bash".into(),
                    read_only: false,
                    summary: "run ls".into(),
                    detail: Default::default(),
                    on_screen: false,
                    safety_checks: Vec::new(),
                    target: None,
                },
                batch: Vec::new(),
            },
        },
        AgentEvent::ApprovalDecided {
            id: "toolu_1".into(),
            decision: Decision::Approve,
            by: DecidedBy::Terminal,
            client: None,
        },
        AgentEvent::ToolResult {
            id: "toolu_1".into(),
            name: "bash".into(),
            is_error: false,
            status: Some(ToolStatus::Ok),
            text: "q3-summary.pdf".into(),
            images: vec![screenshot.clone()],
            duration_ms: 12,
            changed: None,
        },
        AgentEvent::Message {
            message: Message::user(vec![result]),
        },
        AgentEvent::Message {
            message: Message::assistant(vec![ContentBlock::text("Found the quarterly report.")]),
        },
        AgentEvent::Done {
            status: RunStatus::Done,
            turns: 2,
            session_id: session_id.into(),
            usage: turn,
            cost_usd: Some(0.5),
        },
    ]
}

fn record_all(recorder: &mut Recorder, events: &[AgentEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(recorder.record(e).unwrap()).unwrap())
        .collect()
}

/// The history a run's `message` events build.
fn history_of(events: &[AgentEvent]) -> Vec<Message> {
    let mut history = Vec::new();
    for event in events {
        if let AgentEvent::Message { message } = event {
            history.push(message.clone());
        }
    }
    history
}

fn screenshot_files(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let Ok(shards) = std::fs::read_dir(dir.join(SCREENSHOTS_DIR)) else {
        return files;
    };
    for shard in shards {
        for file in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            files.push(file.unwrap().file_name().to_string_lossy().into_owned());
        }
    }
    files.sort();
    files
}

#[test]
fn a_recorded_run_reads_back_whole_with_images_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut recorder = Recorder::create(&store, &"s1".into()).unwrap();
    let events = tool_run("s1", "Find the Q3 report\nin my home", image(1));
    let stored = record_all(&mut recorder, &events);

    let summary = store.session(&"s1".into()).unwrap();
    assert_eq!(summary.title, "Find the Q3 report");
    assert_eq!(summary.message_count, 4);
    assert_eq!(
        (summary.provider.as_str(), summary.model.as_str()),
        ("anthropic", "claude-test")
    );
    assert_eq!(summary.usage.input_tokens, 100);
    assert_eq!(summary.cost_usd, Some(0.5));

    // Messages keep refs, never pixels; the history comes back byte for byte.
    let messages = store.messages(&"s1".into()).unwrap();
    let ImageSource::Base64 { data, .. } = image(1) else {
        unreachable!("a test image has its bytes")
    };
    assert!(!Value::Array(messages.clone()).to_string().contains(&data));
    assert_eq!(
        messages[2]["content"][0]["content"][1]["source"]["type"],
        "ref"
    );
    assert_eq!(stored[10]["message"]["content"], messages[2]["content"]);
    assert_eq!(store.history(&"s1".into()).unwrap(), history_of(&events));

    // Text deltas are dropped once the message they built is stored.
    let types: Vec<String> = store
        .events(&"s1".into())
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert!(!types.contains(&"text_delta".to_string()), "{types:?}");
    assert_eq!(types.first().map(String::as_str), Some("started"));
    assert_eq!(types.last().map(String::as_str), Some("done"));
    assert_eq!(types.len(), events.len() - 2);

    let actions = store.actions(&"s1".into()).unwrap();
    assert_eq!(actions.len(), 1);
    let action = &actions[0];
    assert_eq!(action.tool, "bash");
    assert_eq!(action.input["command"], "ls ~/reports");
    assert_eq!(action.decision.as_deref(), Some("approve"));
    assert_eq!(action.decided_by.as_deref(), Some("terminal"));
    assert_eq!(action.result.as_deref(), Some("q3-summary.pdf"));
    assert_eq!(action.is_error, Some(false));
    assert_eq!(action.duration_ms, Some(12));
    assert_eq!(action.images.len(), 1);
    assert!(action.finished_at.is_some());

    // The same screenshot in a second session is one file.
    let mut second = Recorder::create(&store, &"s2".into()).unwrap();
    record_all(&mut second, &tool_run("s2", "again", image(1)));
    assert_eq!(screenshot_files(dir.path()).len(), 1);
    let sha = ImageRef::of(&image(1)).sha256;
    let (media_type, bytes) = store.image(&sha).unwrap();
    assert_eq!(media_type, "image/png");
    assert_eq!(bytes, deskhand_test_support::fake_screenshot_png(64, 48, 1));
    assert!(matches!(
        store.image("../../etc/passwd"),
        Err(StoreError::NotFound(_))
    ));

    // A second process sees everything the first committed.
    drop(recorder);
    drop(second);
    let reopened = Store::open(dir.path()).unwrap();
    assert_eq!(reopened.sessions().unwrap().len(), 2);
    assert!(matches!(
        Recorder::create(&reopened, &"s1".into()),
        Err(StoreError::AlreadyExists(_))
    ));
}

/// A tool result's screenshot is in the store once its event is recorded, before the message
/// that carries it: a front end shown the event reads it back by its hash at once.
#[test]
fn a_tool_results_images_are_kept_as_it_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut recorder = Recorder::create(&store, &"s1".into()).unwrap();
    let events = tool_run("s1", "Look", image(7));
    let at = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolResult { .. }))
        .unwrap();
    let wire = record_all(&mut recorder, &events[..=at]);
    let shown = &wire[at]["images"][0];
    let sha = ImageRef::of(&image(7)).sha256;
    assert_eq!(shown["sha256"], sha.as_str(), "{shown}");
    assert_eq!(
        shown.as_object().unwrap().len(),
        3,
        "the wire has the ref alone: {shown}"
    );
    let (media_type, bytes) = store.image(&sha).unwrap();
    let ImageSource::Base64 { data, .. } = image(7) else {
        unreachable!("a test image has its bytes")
    };
    assert_eq!(media_type, "image/png");
    assert_eq!(
        base64::engine::general_purpose::STANDARD.encode(bytes),
        data
    );
}

#[test]
fn resume_repairs_a_run_cut_off_mid_turn() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut recorder = Recorder::create(&store, &"cut".into()).unwrap();
    let events = tool_run("cut", "tidy up", image(2));
    // The process died after the tool call was shown, before its result was stored.
    record_all(&mut recorder, &events[..7]);
    drop(recorder);

    let (mut recorder, history) = Recorder::resume(&store, &"cut".into()).unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(
        history[2],
        Message::user(vec![ContentBlock::tool_error("toolu_1", INTERRUPTED)])
    );
    // The repair is stored: the next resume has nothing to repair.
    assert_eq!(store.history(&"cut".into()).unwrap(), history);
    let action = &store.actions(&"cut".into()).unwrap()[0];
    assert_eq!(action.is_error, Some(true));
    assert_eq!(action.result.as_deref(), Some(INTERRUPTED));
    let events = store.events(&"cut".into()).unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_result" && e["id"] == "toolu_1")
    );

    // A new prompt merges into the repaired user message, as the loop does.
    recorder
        .record(&AgentEvent::Message {
            message: Message::user(vec![
                ContentBlock::tool_error("toolu_1", INTERRUPTED),
                ContentBlock::text("go on"),
            ]),
        })
        .unwrap();
    assert_eq!(store.history(&"cut".into()).unwrap().len(), 3);

    // Text streamed before a crash becomes the assistant's message on resume.
    recorder
        .record(&AgentEvent::TextDelta {
            text: "Half an ans".into(),
        })
        .unwrap();
    drop(recorder);
    let (_, history) = Recorder::resume(&store, &"cut".into()).unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(
        history[3],
        Message::assistant(vec![ContentBlock::text("Half an ans")])
    );
    let (_, again) = Recorder::resume(&store, &"cut".into()).unwrap();
    assert_eq!(again, history, "a repaired session needs no more repair");
    assert!(matches!(
        Recorder::resume(&store, &"nope".into()),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn search_finds_text_commands_and_results() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut a = Recorder::create(&store, &"a".into()).unwrap();
    record_all(
        &mut a,
        &tool_run("a", "Find the quarterly numbers", image(3)),
    );
    let mut b = Recorder::create(&store, &"b".into()).unwrap();
    record_all(&mut b, &tool_run("b", "Water the plants", image(4)));

    let ids = |query: &str| -> Vec<String> {
        store
            .search(query)
            .unwrap()
            .into_iter()
            .map(|h| h.session.id.to_string())
            .collect()
    };
    assert_eq!(ids("quarterly numbers"), ["a"]);
    assert_eq!(ids("plants"), ["b"]);
    assert_eq!(ids("q3 summary").len(), 2, "tool results are indexed");
    assert_eq!(
        ids("reports"),
        ["b", "a"],
        "tool inputs are indexed; the newest match first"
    );
    assert_eq!(
        ids("quarterly numb"),
        ["a"],
        "the last word matches as a prefix"
    );
    assert!(
        ids("\"unbalanced OR (").is_empty(),
        "operators are taken literally"
    );
    assert!(ids("   ").is_empty());
    let hit = &store.search("plants").unwrap()[0];
    assert!(hit.snippet.contains("plants"), "{}", hit.snippet);
    assert_eq!(hit.session.title, "Water the plants");
}

#[test]
fn export_json_imports_back_and_markdown_reads_well() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut recorder = Recorder::create(&store, &"x".into()).unwrap();
    let events = tool_run("x", "Export me", image(5));
    record_all(&mut recorder, &events);
    drop(recorder);
    let before = store.load_session(&"x".into()).unwrap();
    let actions = store.actions(&"x".into()).unwrap();

    let json = store.export(&"x".into(), ExportFormat::Json).unwrap();
    let markdown = store.export(&"x".into(), ExportFormat::Markdown).unwrap();
    assert!(markdown.starts_with("# Export me\n"), "{markdown}");
    assert!(markdown.contains("**Action** `bash`"), "{markdown}");
    assert!(markdown.contains("q3-summary.pdf"), "{markdown}");

    // Into another data directory, and back into this one after a delete.
    let elsewhere = tempfile::tempdir().unwrap();
    let other = Store::open(elsewhere.path()).unwrap();
    assert_eq!(other.import(&json).unwrap(), "x");
    assert_eq!(other.load_session(&"x".into()).unwrap(), before);
    assert_eq!(other.history(&"x".into()).unwrap(), history_of(&events));
    assert_eq!(other.actions(&"x".into()).unwrap(), actions);
    assert_eq!(other.search("export").unwrap().len(), 1);

    store.delete(&"x".into()).unwrap();
    assert!(screenshot_files(dir.path()).is_empty());
    assert_eq!(store.import(&json).unwrap(), "x");
    assert_eq!(store.load_session(&"x".into()).unwrap(), before);
    assert_eq!(store.history(&"x".into()).unwrap(), history_of(&events));
    assert!(matches!(
        store.import(&json),
        Err(StoreError::AlreadyExists(_))
    ));

    let mut tampered: Value = serde_json::from_str(&json).unwrap();
    let images = tampered["images"].as_object_mut().unwrap();
    let first = images.values_mut().next().unwrap();
    first["data"] = json!("aGVsbG8=");
    store.delete(&"x".into()).unwrap();
    let error = store.import(&tampered.to_string()).unwrap_err();
    assert!(matches!(error, StoreError::BadExport(_)), "{error}");
    assert!(matches!(
        store.import("{\"format\": 1}"),
        Err(StoreError::BadExport(_))
    ));
    assert!(
        store.sessions().unwrap().is_empty(),
        "a refused import leaves nothing behind"
    );
}

#[test]
fn delete_and_prune_remove_screenshots_nothing_else_uses() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let shared = image(10);
    for (id, own) in [("old", 11), ("new", 12)] {
        let mut recorder = Recorder::create(&store, &id.into()).unwrap();
        record_all(&mut recorder, &tool_run(id, "shots", shared.clone()));
        record_all(&mut recorder, &tool_run(id, "more shots", image(own)));
    }
    let file = |seed| format!("{}.png", ImageRef::of(&image(seed)).sha256);
    assert_eq!(screenshot_files(dir.path()).len(), 3);

    store.delete(&"old".into()).unwrap();
    assert_eq!(screenshot_files(dir.path()), {
        let mut v = vec![file(10), file(12)];
        v.sort();
        v
    });
    assert!(matches!(
        store.delete(&"old".into()),
        Err(StoreError::NotFound(_))
    ));

    assert!(store.prune(Duration::from_secs(86_400)).unwrap().is_empty());
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(store.prune(Duration::ZERO).unwrap(), ["new"]);
    assert!(screenshot_files(dir.path()).is_empty());
    assert!(store.sessions().unwrap().is_empty());
    let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
    let rows: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM events)
                  + (SELECT count(*) FROM actions) + (SELECT count(*) FROM screenshots)
                  + (SELECT count(*) FROM messages_fts)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 0, "nothing of a deleted session is left");
}

#[test]
fn sessions_list_newest_first_rename_and_resolve_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for id in ["abc-1", "abd-2", "xyz-3"] {
        let mut recorder = Recorder::create(&store, &id.into()).unwrap();
        record_all(&mut recorder, &tool_run(id, id, image(20)));
        std::thread::sleep(Duration::from_millis(3));
    }
    let ids: Vec<String> = store
        .sessions()
        .unwrap()
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    assert_eq!(ids, ["xyz-3", "abd-2", "abc-1"]);
    store.rename(&"abc-1".into(), "  Renamed  ").unwrap();
    assert_eq!(store.session(&"abc-1".into()).unwrap().title, "Renamed");
    assert_eq!(
        store.sessions().unwrap()[0].id,
        "abc-1",
        "a rename counts as an update"
    );
    assert_eq!(store.resolve_id("xy").unwrap(), "xyz-3");
    // Issue 14: an empty id is refused as such, not as a prefix of every session.
    assert!(matches!(store.resolve_id(""), Err(StoreError::EmptyId)));
    assert!(matches!(
        store.resolve_id("ab"),
        Err(StoreError::Ambiguous { .. })
    ));
    assert!(matches!(
        store.resolve_id("%"),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.rename(&"none".into(), "t"),
        Err(StoreError::NotFound(_))
    ));

    store.set_setting("approval_mode", &json!("auto")).unwrap();
    store.set_setting("approval_mode", &json!("ask")).unwrap();
    assert_eq!(store.setting("approval_mode").unwrap(), Some(json!("ask")));
    assert_eq!(store.setting("missing").unwrap(), None);

    // The budget is the two settings `deskhand settings` writes; None clears one.
    assert_eq!(store.budget().unwrap(), Budget::default());
    let budget = Budget {
        max_cost_usd: Some(0.5),
        max_tokens: Some(20_000),
    };
    store.set_budget(&budget).unwrap();
    assert_eq!(store.budget().unwrap(), budget);
    assert_eq!(
        store.setting(Budget::MAX_COST_SETTING).unwrap(),
        Some(json!(0.5))
    );
    store
        .set_budget(&Budget {
            max_tokens: None,
            ..budget
        })
        .unwrap();
    assert_eq!(
        store.setting(Budget::MAX_TOKENS_SETTING).unwrap(),
        Some(Value::Null)
    );
    assert_eq!(store.budget().unwrap().max_tokens, None);
}

/// Builds a history as the Deskhand that wrote schema `version` left it.
fn history_at_version(dir: &Path, version: i64) {
    let mut conn = Connection::open(dir.join(DB_FILE)).unwrap();
    migrations::migrate_to(&mut conn, version).unwrap();
    let user_version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(user_version, version);
    if version >= 1 {
        conn.execute_batch(
            r#"INSERT INTO sessions (id, title, created_at, updated_at, message_count)
                   VALUES ('old', 'From before', 1700000000000, 1700000000000, 1);
               INSERT INTO messages (session_id, seq, role, content, text, created_at)
                   VALUES ('old', 0, 'user', '[{"type":"text","text":"remember the zebra"}]',
                           'remember the zebra', 1700000000000);
               INSERT INTO events (session_id, type, body, at)
                   VALUES ('old', 'started', '{"type":"started"}', 1700000000000);"#,
        )
        .unwrap();
    }
}

#[test]
fn migrations_apply_from_empty_and_from_every_earlier_version() {
    for version in 0..=LATEST {
        let dir = tempfile::tempdir().unwrap();
        history_at_version(dir.path(), version);
        let store = Store::open(dir.path()).unwrap_or_else(|e| panic!("from v{version}: {e}"));
        let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        let user_version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(user_version, LATEST, "from v{version}");
        if version >= 1 {
            let history = store.history(&"old".into()).unwrap();
            assert_eq!(
                history,
                vec![Message::user(vec![ContentBlock::text(
                    "remember the zebra"
                )])]
            );
            assert_eq!(
                store.search("zebra").unwrap().len(),
                1,
                "from v{version}: indexed"
            );
            let mut recorder = Recorder::resume(&store, &"old".into()).unwrap().0;
            recorder
                .record(&AgentEvent::Message {
                    message: Message::assistant(vec![ContentBlock::text("noted")]),
                })
                .unwrap();
            assert_eq!(store.session(&"old".into()).unwrap().message_count, 2);
        } else {
            assert!(store.sessions().unwrap().is_empty());
        }
    }
}

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn foreign_damaged_and_newer_files_are_refused_untouched() {
    // Not SQLite at all.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    std::fs::write(&path, "my shopping list\n").unwrap();
    let error = Store::open(dir.path()).err().unwrap();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error}");
    assert!(error.to_string().contains("left untouched"), "{error}");
    assert_eq!(file_bytes(&path), b"my shopping list\n");

    // Another program's SQLite database.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup');")
        .unwrap();
    let before = file_bytes(&path);
    let error = Store::open(dir.path()).err().unwrap();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error}");
    assert_eq!(file_bytes(&path), before);

    // A history from a newer Deskhand.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    let store = Store::open(dir.path()).unwrap();
    record_all(
        &mut Recorder::create(&store, &"s".into()).unwrap(),
        &tool_run("s", "hi", image(30)),
    );
    drop(store);
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", LATEST + 1)
        .unwrap();
    let before = file_bytes(&path);
    let error = Store::open(dir.path()).err().unwrap();
    assert!(
        matches!(error, StoreError::TooNew { found, supported, .. } if found == LATEST + 1 && supported == LATEST),
        "{error}"
    );
    assert!(error.to_string().contains("newer Deskhand"), "{error}");
    assert_eq!(file_bytes(&path), before);

    // Damage inside the file: found when read, named as damage, never "repaired" away.
    for offset in [100usize, 4096 + 100] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DB_FILE);
        let store = Store::open(dir.path()).unwrap();
        for n in 0..20 {
            let id = format!("s{n}");
            record_all(
                &mut Recorder::create(&store, &id.as_str().into()).unwrap(),
                &tool_run(&id, "hi", image(31)),
            );
        }
        drop(store);
        let mut bytes = file_bytes(&path);
        let end = (offset + 3000).min(bytes.len());
        bytes[offset..end].fill(0xA5);
        std::fs::write(&path, &bytes).unwrap();
        let error = match Store::open(dir.path()) {
            Err(e) => e,
            Ok(store) => match store.sessions().and_then(|_| store.search("hi")) {
                Err(e) => e,
                Ok(_) => store
                    .history(&"s3".into())
                    .expect_err("a damaged file is noticed"),
            },
        };
        assert!(
            matches!(error, StoreError::Corrupt { .. }),
            "offset {offset}: {error}"
        );
        assert!(error.to_string().contains("damaged"), "{error}");
        assert_eq!(
            file_bytes(&path),
            bytes,
            "offset {offset}: the damaged file is not rewritten"
        );
    }
}

/// Two writers that both resumed a session: the second to write a message finds rows it did
/// not make and fails, instead of overwriting the first one's message.
#[test]
fn a_second_writer_of_a_session_fails_instead_of_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut first = Recorder::create(&store, &"s1".into()).unwrap();
    first
        .record(&AgentEvent::Message {
            message: Message::user(vec![ContentBlock::text("one")]),
        })
        .unwrap();
    first
        .record(&AgentEvent::Message {
            message: Message::assistant(vec![ContentBlock::text("reply one")]),
        })
        .unwrap();
    let (mut a, _) = Recorder::resume(&store, &"s1".into()).unwrap();
    let (mut b, _) = Recorder::resume(&store, &"s1".into()).unwrap();
    a.record(&AgentEvent::Message {
        message: Message::user(vec![ContentBlock::text("from a")]),
    })
    .unwrap();
    let error = b
        .record(&AgentEvent::Message {
            message: Message::user(vec![ContentBlock::text("from b")]),
        })
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Conflict {
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{error}"
    );
    let texts: Vec<String> = store
        .history(&"s1".into())
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["one", "reply one", "from a"]);
}

/// A schedule's run whose end cannot be written in full (the second write fails, as on a
/// full disk) leaves the schedule as it was: the run still open, its failures uncounted;
/// recorded again, it counts once.
#[test]
fn a_run_end_that_fails_halfway_changes_nothing() {
    use deskhand_protocol::ids::{ScheduleId, TaskId};
    use deskhand_protocol::schedule::{ScheduleOutcome, ScheduleSpec, Trigger};

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let spec: ScheduleSpec = serde_json::from_value(json!({
        "name": "tidy",
        "trigger": Trigger::Every { seconds: 60 },
        "prompt": "tidy",
        "pause_after_failures": 1,
    }))
    .unwrap();
    let id = ScheduleId::from("s1");
    store.insert_schedule(&id, &spec, 0, Some(60_000)).unwrap();
    let task = TaskId::from("t1");
    store
        .record_fire(&id, Some(60_000), Some(120_000), &[(task.clone(), 60_000)])
        .unwrap();

    let other = Connection::open(dir.path().join(DB_FILE)).unwrap();
    other
        .execute_batch(
            "CREATE TRIGGER full BEFORE UPDATE ON schedules BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END;",
        )
        .unwrap();
    let failed = store.end_schedule_run(&task, ScheduleOutcome::Failed, Some("ab12"), 1, "paused");
    assert!(failed.is_err());
    let row = store.schedule("tidy").unwrap().unwrap();
    assert_eq!(row.schedule.failures_in_a_row, 0);
    assert!(!row.schedule.paused);
    assert_eq!(
        store.open_schedule_runs().unwrap().len(),
        1,
        "the run is still open"
    );

    other.execute_batch("DROP TRIGGER full;").unwrap();
    let row = store
        .end_schedule_run(&task, ScheduleOutcome::Failed, Some("ab12"), 1, "paused")
        .unwrap()
        .unwrap();
    assert_eq!(row.schedule.failures_in_a_row, 1);
    assert!(row.schedule.paused);
    assert_eq!(row.schedule.paused_reason.as_deref(), Some("paused"));
    assert!(store.open_schedule_runs().unwrap().is_empty());
    let (runs, _) = store.schedule_runs(&id, 10).unwrap();
    assert_eq!(runs[0].screenshot.as_deref(), Some("ab12"));
    assert_eq!(
        store
            .end_schedule_run(&task, ScheduleOutcome::Failed, None, 1, "paused")
            .unwrap(),
        None,
        "an end is recorded once"
    );
}
