//! A stand-in for Anthropic's Messages API (`POST /v1/messages`), for tests.
//!
//! [`StandIn::spawn`] starts a real HTTP server on `127.0.0.1` (any free port) that answers
//! each request with the next turn of a [`Script`]: scripted assistant messages as real SSE
//! in the API's wire format (or as a complete JSON message when the request does not set
//! `"stream": true`), or injected faults (HTTP errors, a cut connection, an `error` event,
//! a stream that goes silent). It records every request and rejects, like the real API,
//! requests with missing headers, a malformed body, unpaired `tool_use` / `tool_result`
//! blocks, bad images or a computer tool without its beta header. A rejected request is
//! recorded but consumes no turn; once the script is exhausted every request gets
//! 500 `api_error` "stand-in script exhausted". Every response carries a
//! `request-id: req_standin_N` header, and `GET /_standin/requests` returns the record.
//!
//! ```no_run
//! use deskhand_standin::{Reply, StandIn, Turn};
//! use serde_json::json;
//!
//! let api = StandIn::spawn([
//!     Turn::tool_use("computer", json!({"action": "screenshot"})),
//!     Turn::rate_limited(1),
//!     Reply::new().text("Done.").delay_ms(5).into(),
//! ]);
//! // point the client at api.url() (no trailing slash, no /v1), run it, then:
//! assert_eq!(api.accepted().len(), 3);
//! ```
//!
//! # Script files
//!
//! The binary (`deskhand-standin --script FILE.json [--port N]`) serves a script read from
//! JSON. Every field the list below marks optional may be left out.
//!
//! ```json
//! {
//!   "validate_images": false,
//!   "turns": [
//!     {"kind": "reply",
//!      "content": [
//!        {"type": "thinking", "thinking": "Let me look.", "signature": "sig"},
//!        {"type": "text", "text": "Taking a screenshot."},
//!        {"type": "tool_use", "name": "computer", "input": {"action": "screenshot"}}
//!      ]},
//!     {"kind": "reply", "content": [{"type": "tool_use", "id": "toolu_bad", "name": "bash",
//!                                    "raw_input_json": "{\"command\": "}]},
//!     {"kind": "status", "status": 429, "error_type": "rate_limit_error", "retry_after": 1},
//!     {"kind": "drop_mid_stream", "after_events": 4,
//!      "reply": {"content": [{"type": "text", "text": "cut short"}]}},
//!     {"kind": "error_event", "after_events": 1, "error_type": "overloaded_error",
//!      "message": "Overloaded"},
//!     {"kind": "reply", "content": [{"type": "text", "text": "Done."}],
//!      "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 2},
//!      "chunk_delay_ms": 5, "hang_after_events": 3, "unknown_events": true}
//!   ]
//! }
//! ```
//!
//! - `reply`: `content` (blocks `text`, `tool_use`, `thinking`), and optional
//!   `stop_reason` (default `tool_use` if a block is a tool use, else `end_turn`), `usage`
//!   (default: request bytes / 4 in, reply text and JSON bytes / 4 out, at least 1 each),
//!   `chunk_delay_ms` (pause between events), `hang_after_events` (stop after that many
//!   events and hold the connection until the client leaves), `unknown_events` (interleave
//!   `event: deskhand_future_event` and extra `ping`s). A `tool_use` block's `id` defaults
//!   to `toolu_standin_N`, its `input` to `{}`; `raw_input_json` is streamed verbatim instead
//!   of the input.
//! - `status`: that HTTP status with `{"type":"error","error":{"type","message"}}`;
//!   `message` defaults to the API's usual wording, `retry_after` sets `retry-after`.
//! - `drop_mid_stream`: 200, the first `after_events` events of `reply`, then the
//!   connection is cut (no `message_stop`, no end of the chunked body).
//! - `error_event`: 200, the first `after_events` events (default 1, at least
//!   `message_start`, never `message_stop`) of `reply` (default empty), then an `error`
//!   event, then the stream ends. Without `"stream": true` it is an HTTP error instead.
//!
//! Event counts (`after_events`, `hang_after_events`) count every SSE event, `ping`s and
//! unknown events included: `message_start` is event 1 and `ping` event 2.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod cache;
mod openai;
mod responses;
mod rules;
mod script;
mod server;
mod sse;
mod validate;

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;

use axum::serve::ListenerExt as _;
use tokio::sync::oneshot;

pub use cache::PromptCache;
pub use script::{Reply, ReplyBlock, Rule, Script, Turn, Usage};
pub use server::Recorded;
pub use validate::check_history;

use server::Shared;

/// A running stand-in server; dropping it shuts the server down and closes its connections.
pub struct StandIn {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl StandIn {
    /// Binds `127.0.0.1:0` and serves on a background thread with its own tokio runtime,
    /// so it works from both sync `#[test]`s and async tests.
    pub fn spawn(script: impl Into<Script>) -> StandIn {
        Self::bind(script, 0).expect("binding the stand-in to 127.0.0.1")
    }

    /// Like [`StandIn::spawn`] on a chosen port (0 = any).
    pub fn bind(script: impl Into<Script>, port: u16) -> io::Result<StandIn> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(script.into()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (shutdown, stopped) = oneshot::channel::<()>();
        let app = server::router(shared.clone());
        let thread = std::thread::Builder::new()
            .name(format!("standin-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("registering the listener with tokio")
                        // Events are small writes: do not let Nagle batch them.
                        .tap_io(|tcp| {
                            let _ = tcp.set_nodelay(true);
                        });
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime drops every connection task, hung streams included.
                drop(runtime);
            })?;
        Ok(StandIn {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// Base URL such as `http://127.0.0.1:43125` (no trailing slash, no `/v1`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every `POST /v1/messages` received, in order, rejected ones included.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests()
    }

    /// Only the requests that passed validation (each consumed a turn, or met an
    /// exhausted script).
    pub fn accepted(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.rejected.is_none())
            .collect()
    }

    /// Turns not served yet; 0 at the end of a test that used the whole script.
    pub fn remaining_turns(&self) -> usize {
        self.shared.remaining_turns()
    }

    /// How many hanging responses (`hang_after_events`) saw their client go away: proof
    /// that a cancelled client really dropped the connection.
    pub fn abandoned_streams(&self) -> usize {
        self.shared.hangups()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for StandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandIn").field("url", &self.url()).finish()
    }
}
