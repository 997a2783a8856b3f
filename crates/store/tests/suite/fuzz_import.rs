//! A fuzz pass over the export importer (`Store::import`): real exports mutated at random
//! with hostile values (paths as ids, escape sequences, images that are not what they claim,
//! blank text, orphan results, duplicate ids, unknown blocks, deep nesting), and bytes that
//! are not JSON at all. The property: no panic, each import takes bounded time, and every
//! input is either refused with a typed `StoreError` or imported as a session that loads,
//! resumes and passes the API's rules (`deskhand_standin::check_history`).
//!
//! `PROPTEST_CASES` sets the number of cases of each property.

use std::time::{Duration, Instant};

use base64::Engine as _;
use deskhand_protocol::event::AgentEvent;
use deskhand_protocol::history;
use deskhand_protocol::message::{ContentBlock, ImageSource, Message, ToolResultContent};
use deskhand_store::{ExportFormat, Recorder, Store};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A real export: a prompt with an attachment, a tool call answered with a screenshot.
fn seed_export() -> Value {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut recorder = Recorder::create(&store, &"seed".into()).unwrap();
    let png = |seed| ImageSource::Base64 {
        media_type: "image/png".into(),
        data: base64::engine::general_purpose::STANDARD
            .encode(deskhand_test_support::fake_screenshot_png(16, 12, seed)),
    };
    let messages = [
        Message::user(vec![
            ContentBlock::text("look at this"),
            ContentBlock::Image { source: png(1) },
        ]),
        Message::assistant(vec![
            ContentBlock::text("taking a screenshot"),
            ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "computer".into(),
                input: json!({"action": "screenshot"}),
                toolset_name: None,
            },
        ]),
        Message::user(vec![ContentBlock::ToolResult {
            tool_use_id: "toolu_1".into(),
            content: vec![ToolResultContent::Image { source: png(2) }],
            is_error: false,
            toolset_name: None,
        }]),
        Message::assistant(vec![ContentBlock::text("done")]),
    ];
    for message in messages {
        recorder.record(&AgentEvent::Message { message }).unwrap();
    }
    serde_json::from_str(&store.export(&"seed".into(), ExportFormat::Json).unwrap()).unwrap()
}

fn deep(levels: usize) -> Value {
    (0..levels).fold(json!(1), |inner, _| json!([inner]))
}

/// Values a hostile or careless export could hold anywhere.
fn hostile() -> Vec<Value> {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    vec![
        json!(""),
        json!("   "),
        json!("../../x"),
        json!("\u{1b}]0;owned\u{7}\u{1b}[31mred"),
        json!("not base64!!"),
        json!(b64(b"<html>not an image</html>")),
        json!("text/html"),
        json!("image/jpeg"),
        json!(deskhand_test_support::PNG_1X1),
        json!(null),
        json!(-1),
        json!(1e308),
        json!(true),
        json!({}),
        json!([]),
        json!({"type": "unknown"}),
        json!({"type": "text", "text": " "}),
        json!({"type": "text", "text": ""}),
        json!({"type": "tool_result", "tool_use_id": "zz", "content": []}),
        json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}),
        json!({"type": "tool_use", "id": "t9", "name": "bash", "input": "x"}),
        json!({"type": "image", "source": {"type": "base64", "media_type": "text/html", "data": deskhand_test_support::PNG_1X1}}),
        json!({"type": "image", "source": {"type": "ref", "sha256": "00", "media_type": "image/png"}}),
        json!({"role": "assistant", "content": []}),
        json!({"role": "user", "content": [{"type": "text", "text": "\n"}]}),
        deep(70),
        deep(140),
    ]
}

/// Every JSON pointer inside `value`, to pick a place to mutate.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let path = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                out.push(path.clone());
                pointers(child, path, out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                let path = format!("{at}/{index}");
                out.push(path.clone());
                pointers(child, path, out);
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Mutation {
    Replace { place: usize, with: usize },
    Remove { place: usize },
    Duplicate { place: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), any::<usize>()).prop_map(|(place, with)| Mutation::Replace { place, with }),
        1 => any::<usize>().prop_map(|place| Mutation::Remove { place }),
        1 => any::<usize>().prop_map(|place| Mutation::Duplicate { place }),
    ]
}

fn apply(export: &mut Value, mutation: &Mutation, values: &[Value]) {
    let mut places = Vec::new();
    pointers(export, String::new(), &mut places);
    let pick = |n: usize| places[n % places.len()].clone();
    match *mutation {
        Mutation::Replace { place, with } => {
            if let Some(slot) = export.pointer_mut(&pick(place)) {
                *slot = values[with % values.len()].clone();
            }
        }
        Mutation::Remove { place } | Mutation::Duplicate { place } => {
            let path = pick(place);
            let (parent, key) = path.rsplit_once('/').unwrap();
            let key = key.replace("~1", "/").replace("~0", "~");
            let duplicate = matches!(mutation, Mutation::Duplicate { .. });
            match export.pointer_mut(parent) {
                Some(Value::Object(map)) if !duplicate => {
                    map.remove(&key);
                }
                Some(Value::Array(items)) => {
                    if let Ok(index) = key.parse::<usize>()
                        && index < items.len()
                    {
                        if duplicate {
                            let copy = items[index].clone();
                            items.insert(index, copy);
                        } else {
                            items.remove(index);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// The property: a typed refusal, or a session that can be continued.
fn import_checked(text: &str) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let started = Instant::now();
    let result = store.import(text);
    prop_assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded in time"
    );
    let Ok(id) = result else {
        return Ok(()); // a StoreError: typed by construction
    };
    prop_assert!(
        id.as_str()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "id {id:?}"
    );
    store.load_session(&id).unwrap();
    store.export(&id, ExportFormat::Json).unwrap();
    let (_, mut resumed) = Recorder::resume(&store, &id).unwrap();
    history::push_user(&mut resumed, vec![ContentBlock::text("go on")]);
    let sent = serde_json::to_value(&resumed).unwrap();
    if let Err(problem) = deskhand_standin::check_history(&sent) {
        return Err(TestCaseError::fail(format!(
            "imported, yet the API would refuse it: {problem}\n{text}"
        )));
    }
    // Nothing outside the data directory's own layout.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        prop_assert!(
            name.starts_with("history.db") || name == "screenshots",
            "unexpected {name}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(deskhand_test_support::proptest_cases(64))]

    #[test]
    fn mutated_exports_are_imported_valid_or_refused(
        mutations in prop::collection::vec(mutation(), 1..4)
    ) {
        let mut export = seed_export();
        let values = hostile();
        for mutation in &mutations {
            apply(&mut export, mutation, &values);
        }
        import_checked(&export.to_string())?;
    }

    #[test]
    fn any_text_is_imported_valid_or_refused(text in ".{0,200}") {
        import_checked(&text)?;
    }
}

/// The export the issue's findings describe, each refused or mended.
#[test]
fn the_issue_s_hostile_imports_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let seed = seed_export();
    let refused = |change: &dyn Fn(&mut Value)| {
        let mut export = seed.clone();
        change(&mut export);
        let error = store.import(&export.to_string()).unwrap_err();
        assert!(
            matches!(error, deskhand_store::StoreError::BadExport(_)),
            "{error}"
        );
        error.to_string()
    };
    let error = refused(&|e| e["session"]["id"] = json!("../../x"));
    assert!(error.contains("not a Deskhand id"), "{error}");
    let error = refused(&|e| e["session"]["id"] = json!("a\u{1b}[2Jb"));
    assert!(
        !error.contains('\u{1b}'),
        "no escape reaches the terminal: {error}"
    );
    let error = refused(&|e| {
        let image = e["images"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .next()
            .unwrap();
        image["media_type"] = json!("text/html");
    });
    assert!(error.contains("labelled \"text/html\""), "{error}");
    let error = refused(&|e| {
        e["messages"][0]["content"][1] = json!({"type": "image", "source": {
            "type": "base64", "media_type": "image/png",
            "data": base64::engine::general_purpose::STANDARD.encode(b"<html>")}});
    });
    assert!(error.contains("not a PNG, JPEG, GIF or WebP"), "{error}");
    let error = refused(&|e| {
        e["messages"][0]["content"][1] = json!({"type": "video"});
    });
    assert!(error.contains("message 0"), "{error}");
    let error = refused(&|e| {
        e["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "text", "text": "again"}));
        let call = e["messages"][1]["content"][1].clone();
        e["messages"]
            .as_array_mut()
            .unwrap()
            .extend([json!({"role": "assistant", "content": [call]})]);
    });
    assert!(error.contains("used twice"), "{error}");
    assert!(store.sessions().unwrap().is_empty(), "nothing was kept");
}
