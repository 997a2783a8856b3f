//! A model server that misbehaves on purpose: plain HTTP/1.1 over a TCP socket, written byte
//! by byte so that a test can send exactly what a broken or hostile server would (an endless
//! line, a redirect, a compressed body, silence) and see everything the client sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// One request as received.
#[derive(Clone, Debug)]
pub struct RawRequest {
    /// The request line and headers, as sent.
    pub head: String,
    pub body: Vec<u8>,
}

impl RawRequest {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// What the server does with a request.
pub enum Answer {
    /// Writes these bytes (status line, headers and body) and closes the connection.
    Bytes(Vec<u8>),
    /// Writes the head, then each chunk of the body as it comes, until the iterator ends or
    /// the client leaves.
    Stream {
        head: String,
        body: Box<dyn Iterator<Item = Vec<u8>> + Send>,
    },
    /// Never answers; holds the connection until the client leaves.
    Silent,
}

type Responder = dyn Fn(usize, &RawRequest) -> Answer + Send + Sync;

pub struct RawServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<RawRequest>>>,
    connections: Arc<Mutex<usize>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RawServer {
    /// Serves on `ip` (any free port); `respond` gets each request's number (from 0).
    pub fn spawn(
        ip: Ipv4Addr,
        respond: impl Fn(usize, &RawRequest) -> Answer + Send + Sync + 'static,
    ) -> RawServer {
        let listener = TcpListener::bind((ip, 0)).expect("binding the raw server");
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let respond: Arc<Responder> = Arc::new(respond);
        let thread = {
            let (requests, connections, stop) =
                (requests.clone(), connections.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    *connections.lock().unwrap() += 1;
                    let (requests, respond, stop) =
                        (requests.clone(), respond.clone(), stop.clone());
                    std::thread::spawn(move || serve(stream, &requests, &*respond, &stop));
                }
            })
        };
        RawServer {
            addr,
            requests,
            connections,
            stop,
            thread: Some(thread),
        }
    }

    /// Serves the same answer to every request.
    pub fn always(ip: Ipv4Addr, answer: impl Fn() -> Answer + Send + Sync + 'static) -> RawServer {
        Self::spawn(ip, move |_, _| answer())
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<RawRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// Connections accepted, whether or not a request came on them.
    pub fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request and answers it; every answer ends with the connection.
fn serve(
    stream: TcpStream,
    requests: &Mutex<Vec<RawRequest>>,
    respond: &Responder,
    stop: &AtomicBool,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let number = {
        let mut requests = requests.lock().unwrap();
        requests.push(request.clone());
        requests.len() - 1
    };
    match respond(number, &request) {
        Answer::Bytes(bytes) => {
            let _ = writer.write_all(&bytes);
        }
        Answer::Stream { head, body } => {
            if writer.write_all(head.as_bytes()).is_err() {
                return;
            }
            for chunk in body {
                if stop.load(Ordering::SeqCst) || writer.write_all(&chunk).is_err() {
                    return;
                }
            }
        }
        Answer::Silent => {
            let _ = writer.set_read_timeout(Some(Duration::from_millis(100)));
            let mut byte = [0u8; 1];
            while !stop.load(Ordering::SeqCst) {
                match writer.read(&mut byte) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => return,
                }
            }
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<RawRequest> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(RawRequest { head, body })
}

/// The head of a 200 event stream whose end is the end of the connection.
pub fn sse_head() -> String {
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".into()
}

/// A whole 200 event-stream response with this body.
pub fn sse_response(body: &[u8]) -> Answer {
    let mut bytes = sse_head().into_bytes();
    bytes.extend_from_slice(body);
    Answer::Bytes(bytes)
}

/// An Anthropic event, as the API writes it.
pub fn anthropic_event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

pub fn message_start() -> String {
    anthropic_event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_raw", "type": "message",
            "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )
}

/// `message_delta` with the stop reason, then `message_stop`.
pub fn message_end(stop_reason: &str) -> String {
    anthropic_event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 5}}),
    ) + &anthropic_event("message_stop", &json!({"type": "message_stop"}))
}

/// A complete Anthropic reply of one text block.
pub fn anthropic_text(text: &str) -> String {
    message_start()
        + &anthropic_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        )
        + &anthropic_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
        )
        + &anthropic_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        )
        + &message_end("end_turn")
}

/// The events of one `tool_use` block at `index` whose input arrives in `pieces`.
pub fn anthropic_tool_use<'a>(
    index: usize,
    id: &str,
    name: &str,
    pieces: impl IntoIterator<Item = &'a str>,
) -> String {
    let mut out = anthropic_event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    );
    for piece in pieces {
        out += &anthropic_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    out + &anthropic_event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

/// A Chat Completions chunk with this delta.
pub fn openai_chunk(delta: &Value, finish_reason: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-raw", "object": "chat.completion.chunk", "model": "gpt-4.1",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
    )
}

/// A complete Chat Completions stream of one text answer.
pub fn openai_text(text: &str) -> String {
    openai_chunk(&json!({"role": "assistant", "content": text}), None)
        + &openai_chunk(&json!({}), Some("stop"))
        + "data: [DONE]\n\n"
}
