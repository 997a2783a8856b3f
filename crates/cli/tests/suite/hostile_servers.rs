//! Model servers that misbehave on purpose (issue 13), against the real client over real
//! HTTP on 127.0.0.1: each case ends in a clear error (or a clearly handled answer) within a
//! bounded time and with the `deskhand` process's peak memory bounded, the history valid for
//! the API, and the key in no output, no stored file and no error line.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::API_KEY;
use crate::support::cli::{deskhand, files_under};
use crate::support::raw_http::*;
use deskhand_engine::agent::history;
use deskhand_engine::llm::anthropic::{Anthropic, AnthropicConfig};
use deskhand_engine::llm::openai::{OpenAi, OpenAiConfig, Service};
use deskhand_engine::llm::{ContentBlock, ErrorKind, Message, ModelRequest, Provider, RetryPolicy};
use deskhand_engine::store::Store;
use serde_json::json;

/// A second loopback address: another origin for the redirect cases.
const OTHER_HOST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

// ---------------------------------------------------------------------------------------
// Redirects, for every provider's key header.

fn one_request<'a>(messages: &'a [Message]) -> ModelRequest<'a> {
    ModelRequest {
        model: "m",
        system: "",
        messages,
        tools: &[],
        max_tokens: 16,
        cache_breakpoints: &[],
    }
}

fn no_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    }
}

fn openai_at(url: String, service: Service) -> OpenAi {
    OpenAi::new(OpenAiConfig {
        service,
        base_url: url,
        api_key: Some(deskhand_engine::secrets::ApiKey::new(API_KEY).unwrap()),
        retry: no_retries(),
        effort: None,
    })
    .unwrap()
}

#[tokio::test]
async fn a_redirect_is_an_error_naming_it_and_the_key_goes_nowhere_else() {
    let elsewhere = RawServer::always(OTHER_HOST, || sse_response(anthropic_text("hi").as_bytes()));
    let target = format!("{}/v1/stolen", elsewhere.url());
    let redirecting = {
        let target = target.clone();
        RawServer::always(Ipv4Addr::LOCALHOST, move || {
            Answer::Bytes(
                format!(
                    "HTTP/1.1 307 Temporary Redirect\r\nlocation: {target}\r\n\
                     content-length: 0\r\nconnection: close\r\n\r\n"
                )
                .into_bytes(),
            )
        })
    };
    let url = redirecting.url();
    let providers: Vec<(Box<dyn Provider>, &str)> = vec![
        (
            Box::new(
                Anthropic::new(AnthropicConfig {
                    api_key: deskhand_engine::secrets::ApiKey::new(API_KEY).unwrap(),
                    base_url: url.clone(),
                    retry: no_retries(),
                    effort: None,
                    fallbacks: Default::default(),
                })
                .unwrap(),
            ),
            "x-api-key",
        ),
        (
            Box::new(openai_at(format!("{url}/v1"), Service::OpenAi)),
            "authorization",
        ),
        (
            Box::new(openai_at(format!("{url}/v1"), Service::OpenRouter)),
            "authorization",
        ),
        (
            Box::new(openai_at(format!("{url}/v1"), Service::Compatible)),
            "authorization",
        ),
        (
            Box::new(openai_at(
                url.clone(),
                Service::Azure {
                    deployment: "d".into(),
                    api_version: "2024-10-21".into(),
                },
            )),
            "api-key",
        ),
    ];
    let messages = [Message::user(vec![ContentBlock::text("hi")])];
    for (provider, header) in providers {
        let sent_before = redirecting.requests().len();
        let error = provider
            .stream(one_request(&messages), &mut |_| {})
            .await
            .expect_err("a redirect is not an answer");
        assert_eq!(error.kind, ErrorKind::Redirected, "{error}");
        let line = error.to_string();
        assert!(
            line.contains("HTTP 307") && line.contains(&target),
            "{line}"
        );
        assert!(!line.contains(API_KEY), "{line}");
        let requests = redirecting.requests();
        assert_eq!(requests.len(), sent_before + 1, "one request, not retried");
        let head = requests.last().unwrap().head.to_ascii_lowercase();
        assert!(
            head.contains(&format!("{header}:")) && head.contains(&API_KEY.to_ascii_lowercase()),
            "the key went in {header} to the base URL: {head}"
        );
        assert_eq!(
            elsewhere.connections(),
            0,
            "{}: the redirect's target received nothing",
            provider.name()
        );
    }
}

// ---------------------------------------------------------------------------------------
// A server that accepts and never answers.

#[tokio::test]
async fn a_server_that_never_answers_times_out_after_the_idle_timeout() {
    let silent = RawServer::always(Ipv4Addr::LOCALHOST, || Answer::Silent);
    let retry = RetryPolicy {
        max_retries: 1,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(10),
        idle_timeout: Duration::from_secs(1),
    };
    let anthropic = Anthropic::new(AnthropicConfig {
        api_key: deskhand_engine::secrets::ApiKey::new(API_KEY).unwrap(),
        base_url: silent.url(),
        retry: retry.clone(),
        effort: None,
        fallbacks: Default::default(),
    })
    .unwrap();
    let openai = OpenAi::new(OpenAiConfig {
        service: Service::OpenAi,
        base_url: format!("{}/v1", silent.url()),
        api_key: Some(deskhand_engine::secrets::ApiKey::new(API_KEY).unwrap()),
        retry,
        effort: None,
    })
    .unwrap();
    let messages = [Message::user(vec![ContentBlock::text("hi")])];
    for provider in [&anthropic as &dyn Provider, &openai] {
        let started = Instant::now();
        let error = provider
            .stream(one_request(&messages), &mut |_| {})
            .await
            .expect_err("silence is not an answer");
        let took = started.elapsed();
        assert_eq!(error.kind, ErrorKind::Network, "{error}");
        assert!(error.to_string().contains("timed out"), "{error}");
        assert!(!error.to_string().contains(API_KEY));
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(6),
            "two attempts of one idle second each, took {took:?}"
        );
    }
    assert_eq!(
        RetryPolicy::default().idle_timeout,
        Duration::from_secs(120),
        "the documented idle timeout"
    );
}

// ---------------------------------------------------------------------------------------
// The CLI against hostile servers, with its peak memory measured.

/// Which wire format a case speaks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    Anthropic,
    OpenAi,
}

impl Side {
    /// `deskhand ask --json --approve deny` at `url`, keeping its data in `dir`.
    fn ask(self, url: &str, dir: &Path) -> Command {
        let mut command = deskhand(dir);
        match self {
            Side::Anthropic => {
                command
                    .env("ANTHROPIC_API_KEY", API_KEY)
                    .env("ANTHROPIC_BASE_URL", url)
                    .arg("ask");
            }
            Side::OpenAi => {
                command.env("OPENAI_API_KEY", API_KEY).args([
                    "ask",
                    "--provider",
                    "openai",
                    "--base-url",
                    &format!("{url}/v1"),
                    "--model",
                    "gpt-4.1",
                ]);
            }
        }
        command.args(["--json", "--approve", "deny", "--tools", "bash", "go"]);
        command
    }

    /// A complete text answer.
    fn text(self, text: &str) -> String {
        match self {
            Side::Anthropic => anthropic_text(text),
            Side::OpenAi => openai_text(text),
        }
    }

    /// One response calling `name` once per input; each input arrives in `pieces` pieces.
    fn tool_calls(self, calls: &[(String, Vec<String>)]) -> String {
        match self {
            Side::Anthropic => {
                let mut out = message_start();
                for (index, (name, pieces)) in calls.iter().enumerate() {
                    out += &anthropic_tool_use(
                        index,
                        &format!("toolu_{index}"),
                        name,
                        pieces.iter().map(String::as_str),
                    );
                }
                out + &message_end("tool_use")
            }
            Side::OpenAi => {
                let mut out = String::new();
                for (index, (name, pieces)) in calls.iter().enumerate() {
                    out += &openai_chunk(
                        &json!({"tool_calls": [{"index": index, "id": format!("call_{index}"),
                            "type": "function", "function": {"name": name, "arguments": ""}}]}),
                        None,
                    );
                    for piece in pieces {
                        out += &openai_chunk(
                            &json!({"tool_calls": [{"index": index,
                                "function": {"arguments": piece}}]}),
                            None,
                        );
                    }
                }
                out + &openai_chunk(&json!({}), Some("tool_calls")) + "data: [DONE]\n\n"
            }
        }
    }
}

/// How a `deskhand` process ended.
struct Ended {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    /// The process's peak resident memory, from the kernel's accounting of the child.
    peak_rss_mb: f64,
    took: Duration,
}

/// Runs `command` as the child of a small Python process that reports the child's peak
/// resident memory (`wait4`). Measured from this test process, a child's peak would start
/// at this process's own size, which `exec` carries over to a child's accounting; a child of
/// a fresh process starts from that process's few MB.
const MEASURE: &str = r#"
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"#;

/// Runs the command to its end, failing the test if it takes longer than `limit`.
fn run_bounded(command: &Command, limit: Duration) -> Ended {
    use std::io::Read as _;
    use std::os::unix::process::CommandExt as _;
    let rss_file = tempfile::NamedTempFile::new().unwrap();
    let mut measured = Command::new("python3");
    measured
        .args(["-c", MEASURE])
        .arg(rss_file.path())
        .arg(command.get_program())
        .args(command.get_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => measured.env(name, value),
            None => measured.env_remove(name),
        };
    }
    let started = Instant::now();
    let mut child = measured.spawn().expect("python3 and deskhand start");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut text = Vec::new();
        out.read_to_end(&mut text).unwrap();
        text
    });
    let stderr = std::thread::spawn(move || {
        let mut text = Vec::new();
        err.read_to_end(&mut text).unwrap();
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            // SAFETY: kill(2) on the process group this test started.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            panic!("deskhand ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let peak_kb: f64 = std::fs::read_to_string(rss_file.path())
        .unwrap()
        .trim()
        .parse()
        .expect("the peak memory was measured");
    Ended {
        status,
        stdout: String::from_utf8_lossy(&stdout.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
        peak_rss_mb: peak_kb / 1024.0,
        took,
    }
}

/// The checks every case shares: the key in no output and no stored file, and every stored
/// session's history valid for the API (each `tool_use` answered).
fn check_common(ended: &Ended, dir: &Path) -> Vec<Message> {
    assert!(!ended.stdout.contains(API_KEY), "the key is on stdout");
    assert!(!ended.stderr.contains(API_KEY), "the key is on stderr");
    for (path, bytes) in files_under(dir) {
        assert!(
            !bytes
                .windows(API_KEY.len())
                .any(|window| window == API_KEY.as_bytes()),
            "the key is in {path}"
        );
    }
    let store = Store::open(dir).unwrap();
    let sessions = store.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    let stored = store.history(&sessions[0].id).unwrap();
    let mut repaired = stored.clone();
    assert_eq!(
        history::repair(&mut repaired, "check"),
        0,
        "the stored history is valid as it is"
    );
    stored
}

/// One case: the server's answers, the CLI run, the shared checks, and what the case expects
/// of stderr (an error line) or of the run (its exit code).
struct Case {
    name: &'static str,
    side: Side,
    exit_code: i32,
    /// Must appear in stderr (the CLI's error line) or stdout (events).
    expect: String,
    time_limit: Duration,
    rss_limit_mb: f64,
}

fn run_case(case: &Case, server: &RawServer) -> (Ended, Vec<Message>) {
    let dir = tempfile::tempdir().unwrap();
    let ended = run_bounded(&case.side.ask(&server.url(), dir.path()), case.time_limit);
    eprintln!(
        "{} ({:?}): exit {:?}, {:.2} s, peak RSS {:.0} MB",
        case.name,
        case.side,
        ended.status.code(),
        ended.took.as_secs_f64(),
        ended.peak_rss_mb
    );
    assert_eq!(
        ended.status.code(),
        Some(case.exit_code),
        "{}: stderr: {}",
        case.name,
        tail(&ended.stderr)
    );
    assert!(
        ended.stderr.contains(&case.expect) || ended.stdout.contains(&case.expect),
        "{}: expected `{}` in: {}",
        case.name,
        case.expect,
        tail(&ended.stderr)
    );
    assert!(
        ended.peak_rss_mb < case.rss_limit_mb,
        "{}: peak RSS {:.0} MB over {} MB",
        case.name,
        ended.peak_rss_mb,
        case.rss_limit_mb
    );
    let history = check_common(&ended, dir.path());
    (ended, history)
}

fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(2000);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    &text[start..]
}

const BOTH: [Side; 2] = [Side::Anthropic, Side::OpenAi];
const ERROR: i32 = 1;
const DONE: i32 = 0;

#[test]
fn a_redirect_to_another_origin_ends_the_run_with_one_clear_error() {
    for side in BOTH {
        let elsewhere =
            RawServer::always(OTHER_HOST, move || sse_response(side.text("x").as_bytes()));
        let target = format!("{}/v1/elsewhere", elsewhere.url());
        let location = target.clone();
        let server = RawServer::always(Ipv4Addr::LOCALHOST, move || {
            Answer::Bytes(
                format!(
                    "HTTP/1.1 308 Permanent Redirect\r\nlocation: {location}\r\n\
                     content-length: 0\r\nconnection: close\r\n\r\n"
                )
                .into_bytes(),
            )
        });
        let case = Case {
            name: "redirect",
            side,
            exit_code: ERROR,
            expect: format!("redirects to {target}"),
            time_limit: Duration::from_secs(30),
            rss_limit_mb: 100.0,
        };
        run_case(&case, &server);
        assert_eq!(server.requests().len(), 1);
        assert_eq!(elsewhere.connections(), 0);
    }
}

#[test]
fn one_endless_line_is_a_broken_stream_not_unbounded_memory() {
    for side in BOTH {
        let server = RawServer::always(Ipv4Addr::LOCALHOST, || {
            let line = vec![b'x'; 1024 * 1024];
            Answer::Stream {
                head: sse_head(),
                body: Box::new(std::iter::once(b"data: ".to_vec()).chain(std::iter::repeat(line))),
            }
        });
        let case = Case {
            name: "endless line",
            side,
            exit_code: ERROR,
            expect: "broken stream: a line is longer than 33554432 bytes".into(),
            time_limit: Duration::from_secs(90),
            rss_limit_mb: 250.0,
        };
        run_case(&case, &server);
        assert_eq!(
            server.requests().len(),
            4,
            "retried three times, as a cut stream is"
        );
    }
}

#[test]
fn ten_thousand_tool_calls_in_one_response_are_each_answered() {
    for side in BOTH {
        let server = RawServer::spawn(Ipv4Addr::LOCALHOST, move |number, _| {
            if number == 0 {
                let calls: Vec<(String, Vec<String>)> = (0..10_000)
                    .map(|_| {
                        (
                            "bash".to_string(),
                            vec![r#"{"command": "true"}"#.to_string()],
                        )
                    })
                    .collect();
                sse_response(side.tool_calls(&calls).as_bytes())
            } else {
                sse_response(side.text("Stopped.").as_bytes())
            }
        });
        let case = Case {
            name: "10,000 tool calls",
            side,
            exit_code: DONE,
            expect: "\"status\":\"done\"".into(),
            time_limit: Duration::from_secs(240),
            rss_limit_mb: 300.0,
        };
        let (_, history) = run_case(&case, &server);
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let results = history
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| matches!(b, ContentBlock::ToolResult { is_error: true, .. }))
            .count();
        assert_eq!(
            results, 10_000,
            "each call denied by the policy, each answered"
        );
    }
}

#[test]
fn a_50_mb_tool_input_is_received_and_answered_within_bounded_memory() {
    for side in BOTH {
        let text = "a".repeat(50 * 1024 * 1024);
        let input =
            json!({"command": "create", "path": "/nonexistent/x", "file_text": text}).to_string();
        drop(text);
        let pieces: Vec<String> = input
            .as_bytes()
            .chunks(1024 * 1024)
            .map(|piece| String::from_utf8(piece.to_vec()).unwrap())
            .collect();
        let first = side.tool_calls(&[("str_replace_based_edit_tool".into(), pieces)]);
        let server = RawServer::spawn(Ipv4Addr::LOCALHOST, move |number, request| {
            if number == 0 {
                sse_response(first.as_bytes())
            } else {
                assert!(request.body.len() > 50 * 1024 * 1024, "the input went back");
                sse_response(side.text("Done.").as_bytes())
            }
        });
        let case = Case {
            name: "50 MB tool input",
            side,
            exit_code: DONE,
            expect: "\"status\":\"done\"".into(),
            time_limit: Duration::from_secs(120),
            rss_limit_mb: 1000.0,
        };
        let (ended, _) = run_case(&case, &server);
        assert!(
            ended.stdout.contains("not offered") || ended.stdout.contains("unknown tool"),
            "the call to a tool not offered is answered with an error: {}",
            tail(&ended.stdout)
        );
    }
}

#[test]
fn deeply_nested_json_is_a_clear_error_not_a_stack_overflow() {
    let deep = "[".repeat(200_000);
    for side in BOTH {
        let body = match side {
            Side::Anthropic => format!("{}event: message_delta\ndata: {deep}\n\n", message_start()),
            Side::OpenAi => format!("data: {deep}\n\n"),
        };
        let server = RawServer::always(Ipv4Addr::LOCALHOST, move || sse_response(body.as_bytes()));
        let case = Case {
            name: "nested JSON",
            side,
            exit_code: ERROR,
            expect: "recursion limit exceeded".into(),
            time_limit: Duration::from_secs(30),
            rss_limit_mb: 100.0,
        };
        run_case(&case, &server);
    }
    // Nested inside a tool's input: the call is answered with the parse error.
    let nested_input = side_input_nested(&deep);
    let server = RawServer::spawn(Ipv4Addr::LOCALHOST, move |number, _| {
        if number == 0 {
            sse_response(nested_input.as_bytes())
        } else {
            sse_response(anthropic_text("Done.").as_bytes())
        }
    });
    let case = Case {
        name: "nested tool input",
        side: Side::Anthropic,
        exit_code: DONE,
        // Refused by its depth before it is parsed (`json_depth`), as a tool error.
        expect: "a tool input may nest at most".into(),
        time_limit: Duration::from_secs(30),
        rss_limit_mb: 100.0,
    };
    run_case(&case, &server);
}

fn side_input_nested(deep: &str) -> String {
    Side::Anthropic.tool_calls(&[("bash".into(), vec![format!("{{\"command\": {deep}")])])
}

#[test]
fn invalid_utf8_in_deltas_is_replaced_as_the_sse_standard_says() {
    for side in BOTH {
        let mut body = side.text("before XX after").into_bytes();
        let at = body.windows(2).position(|w| w == b"XX").unwrap();
        body[at] = 0xff;
        body[at + 1] = 0xfe;
        let server = RawServer::always(Ipv4Addr::LOCALHOST, move || sse_response(&body));
        let case = Case {
            name: "invalid UTF-8",
            side,
            exit_code: DONE,
            expect: "before \u{fffd}\u{fffd} after".into(),
            time_limit: Duration::from_secs(30),
            rss_limit_mb: 100.0,
        };
        run_case(&case, &server);
    }
}

#[test]
fn a_delta_for_a_block_that_never_started_is_a_protocol_error() {
    let body = message_start()
        + &anthropic_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 3,
                "delta": {"type": "text_delta", "text": "orphan"}}),
        )
        + &message_end("end_turn");
    let server = RawServer::always(Ipv4Addr::LOCALHOST, move || sse_response(body.as_bytes()));
    let case = Case {
        name: "delta without its block",
        side: Side::Anthropic,
        exit_code: ERROR,
        expect: "delta for unknown content block 3".into(),
        time_limit: Duration::from_secs(30),
        rss_limit_mb: 100.0,
    };
    run_case(&case, &server);
    // Chat Completions: arguments for a call that never got its id and name.
    let body = openai_chunk(
        &json!({"tool_calls": [{"index": 2, "function": {"arguments": "{}"}}]}),
        None,
    ) + &openai_chunk(&json!({}), Some("tool_calls"))
        + "data: [DONE]\n\n";
    let server = RawServer::always(Ipv4Addr::LOCALHOST, move || sse_response(body.as_bytes()));
    let case = Case {
        name: "arguments without their call",
        side: Side::OpenAi,
        exit_code: ERROR,
        expect: "a tool call without a name".into(),
        time_limit: Duration::from_secs(30),
        rss_limit_mb: 100.0,
    };
    run_case(&case, &server);
}

#[test]
fn a_stream_closed_before_message_stop_is_a_cut_stream() {
    for side in BOTH {
        let body = match side {
            Side::Anthropic => {
                let full = anthropic_text("cut here");
                full[..full.find("event: message_stop").unwrap()].to_string()
            }
            Side::OpenAi => {
                openai_chunk(&json!({"role": "assistant", "content": "cut here"}), None)
            }
        };
        let server = RawServer::always(Ipv4Addr::LOCALHOST, move || sse_response(body.as_bytes()));
        let case = Case {
            name: "no message_stop",
            side,
            exit_code: ERROR,
            expect: "the stream ended before the response was complete".into(),
            time_limit: Duration::from_secs(30),
            rss_limit_mb: 100.0,
        };
        run_case(&case, &server);
    }
}

#[test]
fn http_200_with_an_html_body_is_a_clear_error() {
    for side in BOTH {
        let server = RawServer::always(Ipv4Addr::LOCALHOST, || {
            Answer::Bytes(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\nconnection: close\r\n\r\n\
                  <html><body>Please log in to the captive portal</body></html>"
                    .to_vec(),
            )
        });
        let case = Case {
            name: "HTML body",
            side,
            exit_code: ERROR,
            expect: "the answer is text/html; charset=utf-8, not an event stream: <html><body>Please log in".into(),
            time_limit: Duration::from_secs(30),
            rss_limit_mb: 100.0,
        };
        run_case(&case, &server);
    }
}

/// 512 MB of zeros, gzip-compressed (about 500 kB).
fn gzip_bomb() -> Vec<u8> {
    use std::io::Write as _;
    let mut gzip = Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip runs");
    let mut input = gzip.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..512 {
            input.write_all(&zeros).unwrap();
        }
    });
    let output = gzip.wait_with_output().unwrap();
    feeder.join().unwrap();
    output.stdout
}

#[test]
fn a_gzip_body_is_refused_unread_since_compression_is_never_asked_for() {
    let bomb = gzip_bomb();
    for side in BOTH {
        let bomb = bomb.clone();
        let server = RawServer::always(Ipv4Addr::LOCALHOST, move || {
            let mut bytes = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                bomb.len()
            )
            .into_bytes();
            bytes.extend_from_slice(&bomb);
            Answer::Bytes(bytes)
        });
        let case = Case {
            name: "gzip bomb",
            side,
            exit_code: ERROR,
            expect: "the response is compressed (gzip), which this client does not accept".into(),
            time_limit: Duration::from_secs(30),
            rss_limit_mb: 100.0,
        };
        run_case(&case, &server);
        let head = server.requests()[0].head.to_ascii_lowercase();
        assert!(
            !head.contains("accept-encoding"),
            "the client asks for no compression: {head}"
        );
    }
}

/// The figures of docs/benchmarks.md, "Hostile servers": a 100 MB tool input
/// streamed in deltas of 1 MB and of 16 MB, how long the server takes to send it, how long
/// `deskhand` takes until its next request (receiving, parsing, answering and storing the
/// call), and its peak memory; medians of three runs.
/// `cargo test -p deskhand --test all hostile_servers:: -- --ignored --nocapture measure`
#[test]
#[ignore = "a measurement, not a check"]
fn measure_a_100_mb_tool_input() {
    use std::sync::{Arc, Mutex};
    for delta_mb in [1, 16] {
        let text = "a".repeat(100 * 1024 * 1024);
        let input =
            json!({"command": "create", "path": "/nonexistent/x", "file_text": text}).to_string();
        drop(text);
        let pieces: Vec<String> = input
            .as_bytes()
            .chunks(delta_mb * 1024 * 1024)
            .map(|piece| String::from_utf8(piece.to_vec()).unwrap())
            .collect();
        let first =
            Arc::new(Side::Anthropic.tool_calls(&[("str_replace_based_edit_tool".into(), pieces)]));
        let mut runs = Vec::new();
        for _ in 0..3 {
            let sent: Arc<Mutex<Option<Instant>>> = Arc::default();
            let asked: Arc<Mutex<Option<Instant>>> = Arc::default();
            let (first, sent_at, asked_at) = (first.clone(), sent.clone(), asked.clone());
            let server = RawServer::spawn(Ipv4Addr::LOCALHOST, move |number, _| {
                if number == 0 {
                    let body: Vec<Vec<u8>> = first
                        .as_bytes()
                        .chunks(64 * 1024)
                        .map(<[u8]>::to_vec)
                        .collect();
                    let sent_at = sent_at.clone();
                    Answer::Stream {
                        head: sse_head(),
                        body: Box::new(body.into_iter().chain(std::iter::from_fn(move || {
                            *sent_at.lock().unwrap() = Some(Instant::now());
                            None
                        }))),
                    }
                } else {
                    *asked_at.lock().unwrap() = Some(Instant::now());
                    sse_response(anthropic_text("Done.").as_bytes())
                }
            });
            let dir = tempfile::tempdir().unwrap();
            let started = Instant::now();
            let ended = run_bounded(
                &Side::Anthropic.ask(&server.url(), dir.path()),
                Duration::from_secs(600),
            );
            assert_eq!(ended.status.code(), Some(0), "{}", tail(&ended.stderr));
            let sent = sent.lock().unwrap().unwrap() - started;
            let asked = asked.lock().unwrap().unwrap() - started;
            let db = std::fs::metadata(dir.path().join("history.db")).map_or(0, |m| m.len());
            runs.push((sent, asked, ended.took, ended.peak_rss_mb, db));
        }
        let median = |mut values: Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values[1]
        };
        eprintln!(
            "100 MB tool input in {delta_mb} MB deltas: sent in {:.1} s, next request at {:.1} s, \
             run {:.1} s, peak RSS {:.0} MB, history.db {:.0} MB",
            median(runs.iter().map(|r| r.0.as_secs_f64()).collect()),
            median(runs.iter().map(|r| r.1.as_secs_f64()).collect()),
            median(runs.iter().map(|r| r.2.as_secs_f64()).collect()),
            median(runs.iter().map(|r| r.3).collect()),
            median(runs.iter().map(|r| r.4 as f64 / 1048576.0).collect()),
        );
    }
}
