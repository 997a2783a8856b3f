//! Sessions that never break: whatever a history holds (blank prompts, calls a kill left
//! unanswered, results answering nothing, imports), after the repair on load it passes the
//! rules the Messages API applies, the stand-in's own (`deskhand_standin::check_history`).
//! Case counts come from `PROPTEST_CASES`.

use deskhand_protocol::event::AgentEvent;
use deskhand_protocol::history::{self, EmptyPrompt};
use deskhand_protocol::ids::SessionId;
use deskhand_protocol::message::{ContentBlock, ImageSource, Message, Role, ToolResultContent};
use deskhand_store::{ExportFormat, INTERRUPTED, Recorder, Store};
use proptest::prelude::*;
use serde_json::{Value, json};

/// The history as the next run would send it: the repaired one and a new prompt.
fn check_resumable(history: &[Message]) -> Result<(), String> {
    let mut next = history.to_vec();
    history::push_user(&mut next, vec![ContentBlock::text("go on")]);
    deskhand_standin::check_history(&serde_json::to_value(&next).unwrap())
        .map_err(|e| format!("{e}\n{}", serde_json::to_string_pretty(&next).unwrap()))
}

fn image() -> ImageSource {
    ImageSource::Base64 {
        media_type: "image/png".into(),
        data: deskhand_test_support::PNG_1X1.into(),
    }
}

const TEXTS: &[&str] = &["", " ", "\n\t ", "hello", "  spaced  "];

/// One block of a generated history; ids are numbered so that results can answer calls
/// that exist, calls that do not, or calls twice.
#[derive(Clone, Debug)]
enum Block {
    Text(usize),
    Image,
    Call,
    Result { call: u8, blank: bool },
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        (0..TEXTS.len()).prop_map(Block::Text),
        Just(Block::Image),
        Just(Block::Call),
        (any::<u8>(), any::<bool>()).prop_map(|(call, blank)| Block::Result { call, blank }),
    ]
}

/// Messages of any roles and blocks; each block goes where the API would at least allow
/// its type (calls from the assistant, results from the user), as a stored history holds.
fn build(messages: &[(bool, Vec<Block>)]) -> Vec<Message> {
    let mut calls = 0usize;
    messages
        .iter()
        .map(|(assistant, blocks)| {
            let content = blocks
                .iter()
                .filter_map(|block| match block {
                    Block::Text(i) => Some(ContentBlock::text(TEXTS[*i])),
                    Block::Image if !assistant => Some(ContentBlock::Image { source: image() }),
                    Block::Call if *assistant => {
                        calls += 1;
                        Some(ContentBlock::ToolUse {
                            id: format!("toolu_{calls}").into(),
                            name: "bash".into(),
                            input: json!({"command": "ls"}),
                            toolset_name: None,
                        })
                    }
                    Block::Result { call, blank } if !assistant => {
                        let text = if *blank { " " } else { "done" };
                        Some(ContentBlock::ToolResult {
                            tool_use_id: format!("toolu_{}", (*call as usize) % (calls + 2)).into(),
                            content: vec![ToolResultContent::Text { text: text.into() }],
                            is_error: false,
                            toolset_name: None,
                        })
                    }
                    _ => None,
                })
                .collect();
            if *assistant {
                Message::assistant(content)
            } else {
                Message::user(content)
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(deskhand_test_support::proptest_cases(512))]

    #[test]
    fn any_history_is_valid_for_the_api_after_repair(
        messages in prop::collection::vec((any::<bool>(), prop::collection::vec(block(), 0..5)), 0..8)
    ) {
        let mut history = build(&messages);
        history::repair(&mut history, INTERRUPTED);
        prop_assert!(check_resumable(&history).is_ok(), "{}", check_resumable(&history).unwrap_err());
        let repaired = history.clone();
        prop_assert_eq!(history::repair(&mut history, INTERRUPTED), 0, "a repaired history needs none");
        prop_assert_eq!(history, repaired);
    }
}

/// One step of a session's life, as the store sees it.
#[derive(Clone, Debug)]
enum Edit {
    /// The person sends a prompt (blank ones must be refused before anything is stored).
    Prompt(usize),
    /// The model answers: some text (maybe blank) and this many tool calls.
    Reply(usize, u8),
    /// Results for the first `n` open calls, as the loop stores them.
    Results(u8),
    /// The process dies here: the session is resumed from the store.
    Kill,
    /// The session is exported, deleted and imported back.
    Import,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0..TEXTS.len()).prop_map(Edit::Prompt),
        ((0..TEXTS.len()), 0u8..3).prop_map(|(t, n)| Edit::Reply(t, n)),
        (0u8..3).prop_map(Edit::Results),
        Just(Edit::Kill),
        Just(Edit::Import),
    ]
}

fn record(recorder: &mut Recorder, history: &mut Vec<Message>, message: Message) {
    if message.role == Role::User {
        history::push_user(history, message.content);
    } else {
        history.push(message);
    }
    recorder
        .record(&AgentEvent::Message {
            message: history.last().unwrap().clone(),
        })
        .unwrap();
}

proptest! {
    #![proptest_config(deskhand_test_support::proptest_cases(48))]

    #[test]
    fn edits_kills_and_imports_always_leave_a_resumable_session(
        edits in prop::collection::vec(edit(), 1..14)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let id = &SessionId::from("s");
        let mut recorder = Recorder::create(&store, id).unwrap();
        let mut history: Vec<Message> = Vec::new();
        let mut open_calls: Vec<String> = Vec::new();
        let mut calls = 0;
        for edit in edits {
            match edit {
                Edit::Prompt(t) => match history::prompt_content(TEXTS[t], Vec::new()) {
                    Ok(content) => record(&mut recorder, &mut history, Message::user(content)),
                    Err(EmptyPrompt) => prop_assert!(TEXTS[t].trim().is_empty()),
                },
                Edit::Reply(t, n) => {
                    let mut content = vec![ContentBlock::text(TEXTS[t])];
                    for _ in 0..n {
                        calls += 1;
                        let call = format!("toolu_{calls}");
                        open_calls.push(call.clone());
                        content.push(ContentBlock::ToolUse {
                            id: call.into(),
                            name: "bash".into(),
                            input: json!({"command": "true"}), toolset_name: None,
                        });
                    }
                    record(&mut recorder, &mut history, Message::assistant(content));
                }
                Edit::Results(n) => {
                    let answered: Vec<String> =
                        open_calls.drain(..open_calls.len().min(n as usize)).collect();
                    let content = answered
                        .into_iter()
                        .map(|call| ContentBlock::ToolResult {
                            tool_use_id: call.into(),
                            content: vec![ToolResultContent::Text { text: "ok".into() }],
                            is_error: false, toolset_name: None,
                        })
                        .collect();
                    record(&mut recorder, &mut history, Message::user(content));
                }
                Edit::Kill | Edit::Import => {
                    drop(recorder);
                    if matches!(edit, Edit::Import) {
                        let json = store.export(id, ExportFormat::Json).unwrap();
                        store.delete(id).unwrap();
                        store.import(&json).unwrap();
                    }
                    let (resumed, repaired) = Recorder::resume(&store, id).unwrap();
                    prop_assert!(
                        check_resumable(&repaired).is_ok(),
                        "{}",
                        check_resumable(&repaired).unwrap_err()
                    );
                    prop_assert_eq!(
                        store.history(id).unwrap(),
                        repaired.clone(),
                        "the repair is stored"
                    );
                    recorder = resumed;
                    history = repaired;
                    open_calls.clear();
                }
            }
        }
    }
}

/// The sessions the issue found broken for good load again: a blank prompt stored by an
/// older Deskhand, with later prompts merged into it, and a message emptied by the repair.
#[test]
fn a_session_broken_by_a_blank_prompt_loads_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut recorder = Recorder::create(&store, &"broken".into()).unwrap();
    let mut history = Vec::new();
    record(
        &mut recorder,
        &mut history,
        Message::user(vec![ContentBlock::text("  ")]),
    );
    record(
        &mut recorder,
        &mut history,
        Message::user(vec![ContentBlock::text("")]),
    );
    let stored: Vec<Value> = store.messages(&"broken".into()).unwrap();
    assert_eq!(stored.len(), 1);
    assert!(check_resumable(&store.history(&"broken".into()).unwrap()).is_err());
    drop(recorder);
    let (_, repaired) = Recorder::resume(&store, &"broken".into()).unwrap();
    assert!(repaired.is_empty(), "{repaired:?}");
    assert!(store.messages(&"broken".into()).unwrap().is_empty());
    check_resumable(&repaired).unwrap();

    // A result answering nothing was the whole of its message.
    let mut history = vec![
        Message::user(vec![ContentBlock::text("go")]),
        Message::assistant(vec![ContentBlock::text("done")]),
        Message::user(vec![ContentBlock::ToolResult {
            tool_use_id: "toolu_gone".into(),
            content: vec![],
            is_error: false,
            toolset_name: None,
        }]),
        Message::assistant(vec![ContentBlock::text("more")]),
    ];
    history::repair(&mut history, INTERRUPTED);
    check_resumable(&history).unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[1].text(), "done\nmore");
}
