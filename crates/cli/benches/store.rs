//! The history store at scale: a synthetic history of 10,000 sessions and 1,000,000 messages
//! (written in one transaction), then the medians of what the window and the CLI do with it:
//! list every session, open a 2,000-message session, search, append one event, and the agent
//! loop's per-step time with and without recording every event. Then 100,000 notes beside
//! it: choosing the notes for a run's prompt, and the `memory` tool's search (notes and the
//! history).
//!
//! Run: `cargo bench -p deskhand --bench store`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use deskhand_engine::agent::AgentEvent;
use deskhand_engine::llm::{ContentBlock, Message};
use deskhand_engine::memory;
use deskhand_engine::store::{DB_FILE, Recorder, Store};
use deskhand_engine::tools::memory::MemoryTool;
use deskhand_engine::tools::{Tool, ToolContext};
use rand::{Rng, SeedableRng};
use rusqlite::{Connection, params};
use serde_json::json;
use support::{InstantProvider, agent, median};
use tokio_util::sync::CancellationToken;

const SESSIONS: usize = 10_000;
const MESSAGES: usize = 1_000_000;
const BIG_SESSION: usize = 2_000;
const RUNS: usize = 30;
const LOOP_STEPS: usize = 200;
const NOTES: usize = 100_000;

/// A vocabulary where a few words are common and most are rare, as in real text.
fn vocabulary() -> Vec<String> {
    let syllables = [
        "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "fe", "gu", "hi", "ja",
    ];
    let mut words = vec![
        "open", "the", "file", "click", "button", "window", "terminal", "report", "save", "menu",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    for a in syllables {
        for b in syllables {
            for c in syllables {
                words.push(format!("{a}{b}{c}"));
            }
        }
    }
    words
}

fn sentence(rng: &mut impl Rng, words: &[String]) -> String {
    let n = rng.random_range(8..16);
    (0..n)
        .map(|_| {
            // Squaring skews the pick towards the start of the list: a Zipf-like spread.
            let x: f64 = rng.random();
            words[((x * x * x) * words.len() as f64) as usize].as_str()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes the synthetic history straight into the schema, in one transaction.
fn generate(conn: &mut Connection) {
    let words = vocabulary();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let tx = conn.transaction().unwrap();
    {
        let mut session = tx
            .prepare(
                "INSERT INTO sessions (id, title, created_at, updated_at, provider, model,
                     message_count, input_tokens, output_tokens)
                 VALUES (?1, ?2, ?3, ?4, 'anthropic', 'claude-sonnet-4-5', ?5, ?6, ?7)",
            )
            .unwrap();
        let mut message = tx
            .prepare(
                "INSERT INTO messages (session_id, seq, role, content, text, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .unwrap();
        let base = 1_760_000_000_000i64;
        let rest = (MESSAGES - BIG_SESSION) / (SESSIONS - 1);
        let mut extra = (MESSAGES - BIG_SESSION) % (SESSIONS - 1);
        for s in 0..SESSIONS {
            let id = format!("s{s:05}");
            let count = if s == 0 {
                BIG_SESSION
            } else if extra > 0 {
                extra -= 1;
                rest + 1
            } else {
                rest
            };
            let time = base + s as i64 * 60_000;
            let title = sentence(&mut rng, &words);
            session
                .execute(params![id, title, time, time, count as i64, 5000, 800])
                .unwrap();
            for seq in 0..count {
                let mut text = sentence(&mut rng, &words);
                if rng.random_range(0..10_000) == 0 {
                    text.push_str(" quokka");
                }
                let (role, content) = if seq % 2 == 0 {
                    let mut blocks = Vec::new();
                    if seq > 0 {
                        blocks.push(json!({"type": "tool_result", "tool_use_id": format!("toolu_{s}_{}", seq - 1),
                            "content": [{"type": "text", "text": "done"}]}));
                    }
                    blocks.push(json!({"type": "text", "text": text}));
                    ("user", blocks)
                } else {
                    (
                        "assistant",
                        vec![
                            json!({"type": "text", "text": text}),
                            json!({"type": "tool_use", "id": format!("toolu_{s}_{seq}"), "name": "bash",
                                "input": {"command": "ls -la"}}),
                        ],
                    )
                };
                message
                    .execute(params![
                        id,
                        seq as i64,
                        role,
                        json!(content).to_string(),
                        text,
                        time
                    ])
                    .unwrap();
            }
        }
    }
    tx.commit().unwrap();
}

/// Writes `NOTES` notes, newer ones later, through the schema's FTS triggers.
fn generate_notes(conn: &mut Connection) {
    let words = vocabulary();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let tx = conn.transaction().unwrap();
    {
        let mut note = tx
            .prepare(
                "INSERT INTO notes (text, session_id, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?3)",
            )
            .unwrap();
        let base = 1_760_000_000_000i64;
        for n in 0..NOTES {
            let mut text = sentence(&mut rng, &words);
            if n % 5_000 == 0 {
                text.push_str(" invoices are kept in ~/Documents/Acme");
            }
            let session = format!("s{:05}", n % SESSIONS);
            note.execute(params![text, session, base + n as i64 * 1_000])
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

fn timed<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..RUNS {
        let start = Instant::now();
        let value = f();
        times.push(start.elapsed());
        last = Some(value);
    }
    (median(times), last.unwrap())
}

fn ms(duration: Duration) -> String {
    format!("{:>8.3} ms", duration.as_secs_f64() * 1e3)
}

/// Per-step times of a loop run, with every event recorded or not.
fn loop_steps(runtime: &tokio::runtime::Runtime, recorder: Option<&mut Recorder>) -> Vec<Duration> {
    let agent = agent(Arc::new(InstantProvider::new(LOOP_STEPS)));
    let mut history = Vec::new();
    let mut last = Instant::now();
    let mut steps = Vec::new();
    let mut recorder = recorder;
    let mut sink = |event: AgentEvent| {
        if let Some(recorder) = recorder.as_deref_mut() {
            recorder.record(&event).unwrap();
        }
        if let AgentEvent::ToolCall { .. } = event {
            let now = Instant::now();
            steps.push(now - last);
            last = now;
        }
    };
    runtime.block_on(agent.run(
        &"bench-loop".into(),
        &mut history,
        vec![ContentBlock::text("go")],
        &mut sink,
        &CancellationToken::new(),
    ));
    steps.remove(0);
    steps
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let started = Instant::now();
    generate(&mut Connection::open(dir.path().join(DB_FILE)).unwrap());
    let size = std::fs::metadata(dir.path().join(DB_FILE)).unwrap().len()
        + std::fs::metadata(dir.path().join(format!("{DB_FILE}-wal")))
            .map(|m| m.len())
            .unwrap_or(0);
    println!(
        "store: {SESSIONS} sessions, {MESSAGES} messages generated in {:.1} s ({} MB on disk)",
        started.elapsed().as_secs_f64(),
        size / 1_000_000
    );

    let (list, sessions) = timed(|| store.sessions().unwrap());
    assert_eq!(sessions.len(), SESSIONS);
    println!(
        "  list {SESSIONS} sessions:              median {}",
        ms(list)
    );

    let (open, history) = timed(|| store.history(&"s00000".into()).unwrap());
    assert_eq!(history.len(), BIG_SESSION);
    println!(
        "  open a {BIG_SESSION}-message session (history): median {}",
        ms(open)
    );
    let (load, loaded) = timed(|| store.load_session(&"s00000".into()).unwrap());
    assert_eq!(loaded.messages.len(), BIG_SESSION);
    println!("  load it for the window:            median {}", ms(load));
    let (resume, _) = timed(|| Recorder::resume(&store, &"s00000".into()).unwrap());
    println!("  resume it (load + repair check):   median {}", ms(resume));

    for query in ["quokka", "terminal report", "open"] {
        let (search, hits) = timed(|| store.search(query).unwrap());
        println!(
            "  search {:<18}          median {}  ({} sessions)",
            format!("{query:?}:"),
            ms(search),
            hits.len()
        );
    }

    let started = Instant::now();
    generate_notes(&mut Connection::open(dir.path().join(DB_FILE)).unwrap());
    println!(
        "notes: {NOTES} notes generated in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for prompt in [
        "send the Acme invoices to the accountant",
        "open the terminal and save the report in the menu",
        "kalomi rusati vozeka",
    ] {
        let (choose, notes) = timed(|| {
            store
                .notes_for_prompt(prompt, memory::DEFAULT_PROMPT_TOKENS)
                .unwrap()
        });
        println!(
            "  choose the notes for {:<52} median {}  ({} notes)",
            format!("{prompt:?}:"),
            ms(choose),
            notes.len()
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tool = MemoryTool::new(store.clone(), "s00001");
    let ctx = ToolContext::new(CancellationToken::new());
    for query in ["invoices Acme", "quokka", "terminal report", "open"] {
        let input = json!({"action": "search", "query": query});
        let (search, output) = timed(|| runtime.block_on(tool.run(&input, &ctx)));
        assert!(!output.is_error);
        println!(
            "  memory search {:<18}  (notes + history) median {}",
            format!("{query:?}:"),
            ms(search)
        );
    }

    let mut recorder = Recorder::create(&store, &"bench-append".into()).unwrap();
    let mut delta_times = Vec::new();
    let mut message_times = Vec::new();
    for n in 0..1000 {
        let start = Instant::now();
        recorder
            .record(&AgentEvent::TextDelta {
                text: format!("piece {n} "),
            })
            .unwrap();
        delta_times.push(start.elapsed());
        let start = Instant::now();
        recorder
            .record(&AgentEvent::Message {
                message: if n % 2 == 0 {
                    Message::user(vec![ContentBlock::text(format!("prompt {n}"))])
                } else {
                    Message::assistant(vec![ContentBlock::text(format!("answer {n}"))])
                },
            })
            .unwrap();
        message_times.push(start.elapsed());
    }
    println!(
        "  append one event (text_delta):     median {}",
        ms(median(delta_times))
    );
    println!(
        "  append one event (message):        median {}",
        ms(median(message_times))
    );

    let bare = median(loop_steps(&runtime, None));
    let mut recorder = Recorder::create(&store, &"bench-loop".into()).unwrap();
    let recorded = median(loop_steps(&runtime, Some(&mut recorder)));
    println!(
        "  agent loop, {LOOP_STEPS}-step tool session (in-process provider, 7 events a step):"
    );
    println!(
        "    without recording:               median {}/step",
        ms(bare)
    );
    println!(
        "    recording every event:           median {}/step  (+{} a step, {:.1}x)",
        ms(recorded),
        ms(recorded.saturating_sub(bare)).trim(),
        recorded.as_secs_f64() / bare.as_secs_f64()
    );
}
