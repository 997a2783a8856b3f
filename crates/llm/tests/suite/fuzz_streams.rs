//! Fuzz targets for what a model server streams (issue 13): the SSE splitter, and the
//! Anthropic and Chat Completions stream decoders behind the real providers, fed over real
//! HTTP from a local server. The property: no panic, bounded memory, and every input ends in
//! a response or a typed error, in bounded time.
//!
//! `PROPTEST_CASES` sets the number of cases of each target (proptest's default: 256);
//! `scripts/test.sh` sets it to time-box the pass. A failing case is kept in
//! `proptest-regressions/fuzz_streams.txt` and replayed first on every run.

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deskhand_llm::anthropic::{Anthropic, AnthropicConfig};
use deskhand_llm::openai::{OpenAi, OpenAiConfig, Service};
use deskhand_llm::{
    ContentBlock, Message, ModelRequest, Provider, RetryPolicy, SseError, SseParser,
};
use deskhand_test_support::raw_http::{Answer, RawServer, sse_response};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};

/// Proptest's defaults (`PROPTEST_CASES` among them), failures kept in this crate's
/// `proptest-regressions/fuzz_streams.txt`.
fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/fuzz_streams.txt",
        ))),
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// The SSE splitter.

/// Pieces that SSE streams are made of, and some that break them.
fn sse_piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"event: message_start".to_vec()),
        Just(b": comment".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"\r".to_vec()),
        Just("é€😀".as_bytes().to_vec()),
        Just(vec![0xff, 0xfe, 0xc3]),
        Just(vec![b'x'; 40]),
        prop::collection::vec(any::<u8>(), 0..16),
    ]
}

/// The cap the splitter runs with here: small, so that the cases reach it.
const LIMIT: usize = 64;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sse_splitter(
        pieces in prop::collection::vec(sse_piece(), 0..48),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let input: Vec<u8> = pieces.concat();
        let whole = SseParser::with_limit(LIMIT).push(&input);

        // The same bytes in chunks cut anywhere give the same events or the same error.
        let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut parser = SseParser::with_limit(LIMIT);
        let mut events = Vec::new();
        let mut error = None;
        let mut start = 0;
        for end in points.into_iter().chain([input.len()]) {
            match parser.push(&input[start..end]) {
                Ok(more) => events.extend(more),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
            // Bounded memory: a line still open is never longer than the cap.
            let open_line = input[..end].iter().rev().take_while(|&&b| b != b'\n').count();
            prop_assert!(open_line <= LIMIT + 1, "{open_line} bytes held");
            start = end;
        }
        match (whole, error) {
            (Ok(all), None) => prop_assert_eq!(&all, &events),
            (Err(a), Some(b)) => prop_assert_eq!(a, b),
            (whole, chunked) => prop_assert!(false, "whole: {whole:?}, chunked: {chunked:?}"),
        }
        for event in &events {
            prop_assert!(event.data.len() <= LIMIT && event.event.len() <= LIMIT);
        }
    }
}

#[test]
fn sse_errors_name_a_broken_stream() {
    let mut parser = SseParser::with_limit(4);
    let error = parser.push(b"data: 12345\n").unwrap_err();
    assert_eq!(error, SseError::LineTooLong { limit: 4 });
    assert!(error.to_string().starts_with("broken stream"));
}

// ---------------------------------------------------------------------------------------
// The stream decoders, through the providers over HTTP.

/// One local server for all cases: it answers each request with the current case's body.
struct Rig {
    body: Arc<Mutex<Vec<u8>>>,
    _server: RawServer,
    runtime: tokio::runtime::Runtime,
    anthropic: Anthropic,
    openai: OpenAi,
}

fn rig() -> &'static Mutex<Rig> {
    static RIG: std::sync::OnceLock<Mutex<Rig>> = std::sync::OnceLock::new();
    RIG.get_or_init(|| {
        let body = Arc::new(Mutex::new(Vec::new()));
        let served = body.clone();
        let server = RawServer::always(Ipv4Addr::LOCALHOST, move || -> Answer {
            sse_response(&served.lock().unwrap())
        });
        let retry = RetryPolicy {
            max_retries: 0,
            idle_timeout: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let anthropic = Anthropic::new(AnthropicConfig {
            api_key: deskhand_llm::secrets::ApiKey::new("sk-fuzz-key-000000").unwrap(),
            base_url: server.url(),
            retry: retry.clone(),
            effort: None,
            fallbacks: Default::default(),
        })
        .unwrap();
        let openai = OpenAi::new(OpenAiConfig {
            service: Service::OpenAi,
            base_url: format!("{}/v1", server.url()),
            api_key: Some(deskhand_llm::secrets::ApiKey::new("sk-fuzz-key-000000").unwrap()),
            retry,
            effort: None,
        })
        .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Mutex::new(Rig {
            body,
            _server: server,
            runtime,
            anthropic,
            openai,
        })
    })
}

/// Streams `body` through `pick`'s provider: a response or a typed error, within 10 s.
fn decode(body: Vec<u8>, pick: fn(&Rig) -> &dyn Provider) -> Result<Vec<ContentBlock>, String> {
    let rig = rig()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let size = body.len();
    *rig.body.lock().unwrap() = body;
    let messages = [Message::user(vec![ContentBlock::text("go")])];
    let request = ModelRequest {
        model: "m",
        system: "",
        messages: &messages,
        tools: &[],
        max_tokens: 16,
        cache_breakpoints: &[],
    };
    let result = rig.runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(10),
            pick(&rig).stream(request, &mut |_| {}),
        )
        .await
        .expect("every stream ends within 10 s")
    });
    match result {
        Ok(response) => {
            // Bounded memory: the response is no larger than what was sent, give or take
            // the JSON around it.
            let kept = serde_json::to_string(&response.content).unwrap().len();
            assert!(kept <= 2 * size + 1024, "{kept} bytes kept of {size} sent");
            Ok(response.content)
        }
        Err(error) => {
            assert!(
                !error.message.is_empty() || error.status.is_some(),
                "{error:?}"
            );
            Err(error.to_string())
        }
    }
}

/// Strings a model (or a hostile server) may put in a field.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("{\"command\": \"ls\"}".to_string()),
        Just("{\"a\":".to_string()),
        Just("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[".repeat(4)),
        Just("é\u{0}\u{fffd}".to_string()),
        "[a-z ]{0,12}",
        any::<String>(),
    ]
}

fn small_index() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..4).prop_map(Value::from),
        Just(json!(-1)),
        Just(json!(u64::MAX)),
        Just(json!("0")),
        Just(Value::Null),
    ]
}

/// One Anthropic event, well-formed or not.
fn anthropic_event() -> impl Strategy<Value = String> {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    prop_oneof![
        Just(event(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})
        )),
        (small_index(), prop_oneof![Just("text"), Just("tool_use"), Just("thinking"), Just("server_tool_use"), Just("")], text())
            .prop_map(move |(index, kind, name)| event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": kind, "id": "toolu_1", "name": name, "text": "", "input": {}}})
            )),
        (small_index(), prop_oneof![Just("text_delta"), Just("input_json_delta"), Just("thinking_delta"), Just("signature_delta"), Just("citations_delta")], text())
            .prop_map(move |(index, kind, piece)| event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": kind, "text": piece, "partial_json": piece, "thinking": piece, "signature": piece}})
            )),
        small_index().prop_map(move |index| event("content_block_stop", json!({"type": "content_block_stop", "index": index}))),
        prop_oneof![Just(json!("end_turn")), Just(json!("tool_use")), Just(json!("max_tokens")), Just(json!("weird")), Just(json!(7))]
            .prop_map(move |reason| event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 9}})
            )),
        Just(event("message_stop", json!({"type": "message_stop"}))),
        Just(event("ping", json!({"type": "ping"}))),
        Just(event("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))),
        text().prop_map(move |raw| format!("event: content_block_delta\ndata: {raw}\n\n")),
        text().prop_map(|raw| format!("{raw}\n")),
    ]
}

/// One Chat Completions chunk, well-formed or not.
fn openai_chunk() -> impl Strategy<Value = String> {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    prop_oneof![
        text().prop_map(move |piece| chunk(json!({"content": piece}), Value::Null)),
        (small_index(), prop_oneof![Just(json!("call_1")), Just(json!("call_2")), Just(Value::Null)], prop_oneof![Just(json!("bash")), Just(json!("")), Just(Value::Null)], text())
            .prop_map(move |(index, id, name, arguments)| chunk(
                json!({"tool_calls": [{"index": index, "id": id, "function": {"name": name, "arguments": arguments}}]}),
                Value::Null
            )),
        small_index().prop_map(move |index| chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": {"command": "ls"}}}]}),
            Value::Null
        )),
        prop_oneof![Just(json!("stop")), Just(json!("tool_calls")), Just(json!("length")), Just(json!("error")), Just(json!(3))]
            .prop_map(move |reason| chunk(json!({}), reason)),
        Just("data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 5, \"completion_tokens\": 2, \"prompt_tokens_details\": {\"cached_tokens\": 9}}}\n\n".to_string()),
        Just("data: {\"error\": {\"message\": \"boom\", \"code\": 500}}\n\n".to_string()),
        Just("data: [DONE]\n\n".to_string()),
        text().prop_map(|raw| format!("data: {raw}\n\n")),
        text().prop_map(|raw| format!("{raw}\n")),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn anthropic_stream_decoder(events in prop::collection::vec(anthropic_event(), 0..24)) {
        let _ = decode(events.concat().into_bytes(), |rig| &rig.anthropic);
    }

    #[test]
    fn openai_stream_decoder(chunks in prop::collection::vec(openai_chunk(), 0..24)) {
        let _ = decode(chunks.concat().into_bytes(), |rig| &rig.openai);
    }
}

/// The decoders' happy paths, so that the targets above are known to reach them.
#[test]
fn well_formed_streams_decode() {
    let text = deskhand_test_support::raw_http::anthropic_text("hello");
    assert_eq!(
        decode(text.into_bytes(), |rig| &rig.anthropic).unwrap(),
        vec![ContentBlock::text("hello")]
    );
    let text = deskhand_test_support::raw_http::openai_text("hello");
    assert_eq!(
        decode(text.into_bytes(), |rig| &rig.openai).unwrap(),
        vec![ContentBlock::text("hello")]
    );
}
