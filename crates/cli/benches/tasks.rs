//! Tasks and the local API, in process over a real Unix socket (the router of `deskhand
//! serve`, reqwest as the client): how long a submit takes to answer with the task's id, how
//! long after the core emits an event an SSE client has it, the same with 50 clients watching
//! one task, the server's own CPU per event with 50 clients in other processes, and the
//! resident memory of an idle `deskhand serve` process.
//!
//! Run: `cargo bench -p deskhand --bench tasks` (with `--profile dev`, the dependencies
//! optimised and the engine not, as the tests build it).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deskhand_engine::llm::config::ProviderSettings;
use deskhand_engine::llm::{
    ContentBlock, ModelRequest, ModelResponse, Provider, ProviderError, SseParser, StopReason,
    StreamEvent, Usage,
};
use deskhand_engine::store::Store;
use deskhand_engine::tasks::{Engine, RunSettings};
use futures_util::StreamExt;
use serde_json::{Value, json};
use support::median;

const SUBMITS: usize = 200;
const EVENTS: usize = 300;
const WATCHERS: usize = 50;

/// When the benchmark started: events carry their emit time as nanoseconds since then.
fn start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// A model that streams `events` text pieces `gap` apart, each saying when it was emitted.
struct Clocked {
    events: usize,
    gap: Duration,
}

#[async_trait]
impl Provider for Clocked {
    fn name(&self) -> &'static str {
        "clocked"
    }

    async fn stream(
        &self,
        _request: ModelRequest<'_>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        for _ in 0..self.events {
            tokio::time::sleep(self.gap).await;
            on_event(StreamEvent::TextDelta(format!(
                "{}|",
                start().elapsed().as_nanos()
            )));
        }
        Ok(ModelResponse {
            content: vec![ContentBlock::text("done")],
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            malformed_tool_inputs: Vec::new(),
        })
    }
}

/// The API's router over a new history in `dir`, on a Unix socket there: its engine, and a
/// client for the socket.
fn serve(dir: &std::path::Path) -> (Engine, reqwest::Client) {
    let socket = dir.join("api.sock");
    let (listener, file) = deskhand_api::bind_socket(&socket).unwrap();
    let engine = Engine::new(Store::open(dir.join("data")).unwrap());
    let router = deskhand_api::router(engine.clone(), None);
    tokio::spawn(async move {
        let _file = file;
        let stop = tokio_util::sync::CancellationToken::new();
        deskhand_api::serve(deskhand_api::Listener::Unix(listener), router, stop).await;
    });
    (engine, client(&socket))
}

fn client(socket: &std::path::Path) -> reqwest::Client {
    reqwest::Client::builder()
        .unix_socket(socket)
        .build()
        .unwrap()
}

#[tokio::main]
async fn main() {
    start();
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: set before any other thread reads the environment.
    unsafe {
        std::env::set_var("DESKHAND_CONFIG_DIR", dir.path());
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-bench");
        // Nothing listens there: submitted tasks fail after the submit answered.
        std::env::set_var("ANTHROPIC_BASE_URL", "http://127.0.0.1:9");
        std::env::remove_var("LLM_PROVIDER");
        std::env::remove_var("DESKHAND_API_TOKEN");
    }
    submit_latency().await;
    event_latency(1).await;
    event_latency(WATCHERS).await;
    server_cpu(WATCHERS).await;
    idle_rss();
}

async fn submit_latency() {
    let dir = tempfile::tempdir().unwrap();
    let (_engine, client) = serve(dir.path());
    let mut times = Vec::new();
    for i in 0..SUBMITS {
        let begun = Instant::now();
        let response = client
            .post("http://deskhand/v1/tasks")
            .json(&json!({"prompt": format!("task {i}"), "max_turns": 1}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
        let task: Value = response.json().await.unwrap();
        times.push(begun.elapsed());
        assert!(task["id"].is_string());
    }
    println!(
        "submit over the Unix socket, answered with the task's id: median {:.2} ms ({SUBMITS} submits)",
        median(times).as_secs_f64() * 1e3
    );
}

/// `watchers` SSE clients on one task whose model streams EVENTS pieces 3 ms apart: the
/// median, over events, of the time from the core emitting a piece until every client has
/// it, and the process's CPU time per event (server and clients together).
async fn event_latency(watchers: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = serve(dir.path());
    let socket = dir.path().join("api.sock");
    let task = clocked_task(&engine).await;
    let cpu_before = cpu_time();
    let clients = (0..watchers).map(|_| {
        let client = client(&socket);
        let id = task.id.clone();
        tokio::spawn(async move {
            let response = client
                .get(format!("http://deskhand/v1/tasks/{id}/events"))
                .send()
                .await
                .unwrap();
            let mut stream = response.bytes_stream();
            let mut parser = SseParser::default();
            let mut seen = Vec::new();
            while let Some(chunk) = stream.next().await {
                let now = start().elapsed().as_nanos();
                for event in parser.push(&chunk.unwrap()).unwrap() {
                    if event.event != "text_delta" {
                        continue;
                    }
                    let data: Value = serde_json::from_str(&event.data).unwrap();
                    let emitted: u128 = data["text"]
                        .as_str()
                        .unwrap()
                        .trim_end_matches('|')
                        .parse()
                        .unwrap();
                    seen.push((emitted, now));
                }
            }
            seen
        })
    });
    let mut all: Vec<Vec<(u128, u128)>> = Vec::new();
    for client in clients.collect::<Vec<_>>() {
        all.push(client.await.unwrap());
    }
    let cpu = cpu_time() - cpu_before;
    // Per event: the latest client's arrival. The first events may have been replayed to a
    // client that connected late; skip them.
    let mut latencies = Vec::new();
    for (index, (emitted, _)) in all[0].iter().enumerate().skip(20) {
        let last = all
            .iter()
            .filter_map(|seen| {
                seen.get(index)
                    .filter(|(e, _)| e == emitted)
                    .map(|(_, at)| *at)
            })
            .max()
            .unwrap();
        latencies.push(Duration::from_nanos((last - emitted) as u64));
    }
    println!(
        "{watchers} SSE watcher(s): an event reaches every one {:.3} ms (median of {} events) after the core emits it; CPU {:.3} ms per event (server and clients)",
        median(latencies.clone()).as_secs_f64() * 1e3,
        latencies.len(),
        cpu.as_secs_f64() * 1e3 / EVENTS as f64
    );
}

/// A task on `engine` whose model streams EVENTS pieces 3 ms apart.
async fn clocked_task(engine: &Engine) -> deskhand_engine::tasks::TaskInfo {
    engine
        .submit(deskhand_engine::tasks::TaskSpec {
            session: None,
            input: vec![ContentBlock::text("stream")],
            settings: RunSettings {
                provider: ProviderSettings {
                    model: Some("clocked".into()),
                    ..ProviderSettings::default()
                },
                made_provider: Some(Arc::new(Clocked {
                    events: EVENTS,
                    gap: Duration::from_millis(3),
                })),
                tools: Some(Vec::new()),
                ..RunSettings::default()
            },
            origin: deskhand_engine::tasks::Origin::Api,
            window: None,
        })
        .await
        .unwrap()
}

/// The server's own CPU per event with `watchers` SSE clients in other processes (curl), so
/// that none of the clients' work is counted: this process's CPU time over the stream,
/// divided by the events.
async fn server_cpu(watchers: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = serve(dir.path());
    let socket = dir.path().join("api.sock");
    let task = clocked_task(&engine).await;
    let cpu_before = cpu_time();
    let clients: Vec<_> = (0..watchers)
        .map(|i| {
            let out = dir.path().join(format!("client-{i}.txt"));
            let child = tokio::process::Command::new("curl")
                .args(["-sN", "--max-time", "60", "--unix-socket"])
                .arg(&socket)
                .arg(format!("http://deskhand/v1/tasks/{}/events", task.id))
                .arg("-o")
                .arg(&out)
                .spawn()
                .expect("curl runs");
            (child, out)
        })
        .collect();
    for (mut child, out) in clients {
        assert!(child.wait().await.unwrap().success());
        let text = std::fs::read_to_string(out).unwrap();
        assert_eq!(
            text.matches("event: text_delta").count(),
            EVENTS,
            "every client got every event"
        );
    }
    let cpu = cpu_time() - cpu_before;
    println!(
        "{watchers} SSE watchers in other processes (curl): CPU of the server alone {:.3} ms per event ({EVENTS} events)",
        cpu.as_secs_f64() * 1e3 / EVENTS as f64
    );
}

/// User and system CPU time of this process.
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// `deskhand serve` (this build's binary) idle for 2 s: its VmRSS.
fn idle_rss() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .arg("serve")
        .env("DESKHAND_DATA_DIR", dir.path())
        .env("DESKHAND_SOCKET", dir.path().join("api.sock"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .to_string();
    let _ = child.kill();
    let _ = child.wait();
    println!(
        "idle `deskhand serve` ({}): VmRSS {rss}",
        env!("CARGO_BIN_EXE_deskhand")
    );
}
