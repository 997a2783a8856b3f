//! Plugin servers that are too big in every way (tests/fixtures/mcp_hostile.py): a tool
//! list that never ends, ten thousand tools, a 2 MB description, a 1 MB schema, a 15 MB
//! text, a 100 MB message, a PNG bomb and bytes that are no image. Each case runs in a child
//! process (crate::support::rss) with its time and peak memory bounded.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use deskhand_engine::llm::ToolResultContent;
use deskhand_engine::tools::plugins::{PluginConfig, PluginTimeouts, Plugins, ServerState};
use deskhand_engine::tools::{ToolOutput, ToolRegistry};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(25);
const MAX_RSS_MB: f64 = 300.0;

fn hostile_server(mode: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_hostile.py");
    json!({"command": "python3", "args": [script.display().to_string(), mode]})
}

fn config(mode: &str) -> PluginConfig {
    serde_json::from_value(json!({"mcpServers": {"h": hostile_server(mode)}})).unwrap()
}

/// Timeouts longer than each case's own limit, so that a case that waits for one fails.
fn timeouts() -> PluginTimeouts {
    PluginTimeouts {
        start: Duration::from_secs(60),
        call: Duration::from_secs(60),
    }
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

fn texts(output: &ToolOutput) -> Vec<String> {
    output
        .content
        .iter()
        .map(|c| match c {
            ToolResultContent::Text { text } => text.clone(),
            ToolResultContent::Image { .. } => "[image]".into(),
        })
        .collect()
}

#[test]
fn a_tool_list_that_never_ends_is_read_to_its_page_limit() {
    crate::support::rss::assert_bounded(module_path!(), "child_endless_pages", LIMIT, MAX_RSS_MB);
}

#[test]
#[ignore = "run by a_tool_list_that_never_ends_is_read_to_its_page_limit in a child process"]
fn child_endless_pages() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    block_on(async {
        let started = Instant::now();
        let plugins = Plugins::start(&config("endless"), &["h".into()], timeouts()).await;
        let server = &plugins.servers()[0];
        assert_eq!(server.state().await, ServerState::Running);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(server.tools().await.len(), 128);
        let notes = server.notes().await;
        assert!(
            notes.contains(
                &"its tool list was read up to 16 pages; the rest was not asked for".to_string()
            ),
            "{notes:?}"
        );
        let mut registry = ToolRegistry::default();
        let problems = plugins.add_tools(&mut registry).await;
        assert!(
            problems
                .iter()
                .any(|p| p
                    .starts_with("the plugin server `h`: its tool list was read up to 16 pages")),
            "{problems:?}"
        );
        plugins.shutdown().await;
    });
}

#[test]
fn ten_thousand_tools_a_long_description_and_a_huge_schema_are_bounded() {
    crate::support::rss::assert_bounded(module_path!(), "child_many_tools", LIMIT, MAX_RSS_MB);
}

#[test]
#[ignore = "run by ten_thousand_tools_a_long_description_and_a_huge_schema_are_bounded in a child process"]
fn child_many_tools() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    block_on(async {
        let plugins = Plugins::start(&config("many"), &["h".into()], timeouts()).await;
        let server = &plugins.servers()[0];
        assert_eq!(server.state().await, ServerState::Running);
        let tools = server.tools().await;
        // 128 listed, less the one whose schema is too big.
        assert_eq!(tools.len(), 127);
        assert!(tools.iter().all(|t| t.tool != "huge_schema"));
        let long = tools.iter().find(|t| t.tool == "long_description").unwrap();
        assert_eq!(
            long.description,
            "d".repeat(2_000) + " [description cut at 2000 characters]"
        );
        let notes = server.notes().await;
        assert!(
            notes
                .iter()
                .any(|n| n
                    .starts_with("its tool `huge_schema` is not offered: its input schema is ")),
            "{notes:?}"
        );
        assert!(
            notes.contains(
                &"9878 of its tools are not offered: at most 128 per server are".to_string()
            ),
            "{notes:?}"
        );
        // What goes out in every request stays small.
        let tokens = Plugins::definition_tokens(server).await;
        assert!(tokens < 10_000, "{tokens} tokens of definitions");
        plugins.shutdown().await;
    });
}

#[test]
fn hostile_results_are_cut_checked_or_refused_with_a_clear_message() {
    crate::support::rss::assert_bounded(module_path!(), "child_hostile_results", LIMIT, MAX_RSS_MB);
}

#[test]
#[ignore = "run by hostile_results_are_cut_checked_or_refused_with_a_clear_message in a child process"]
fn child_hostile_results() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    block_on(async {
        let plugins = Plugins::start(&config("calls"), &["h".into()], timeouts()).await;
        let server = &plugins.servers()[0];
        assert_eq!(server.state().await, ServerState::Running);
        let cancel = CancellationToken::new();
        let no_arguments = json!({});
        let call = |tool: &'static str| server.call(tool, &no_arguments, &cancel);

        let big = call("big_text").await;
        assert!(!big.is_error);
        let [text] = texts(&big).try_into().unwrap();
        assert!(text.len() < 21_000, "{} bytes", text.len());
        assert!(text.starts_with("start xxx") && text.ends_with("xxx end"));
        assert!(
            text.contains(" bytes (0 lines) cut from the middle ...]"),
            "{}",
            &text[9_900..10_200]
        );

        for (tool, why) in [
            (
                "bomb",
                "the image is 20000x20000 pixels; the API takes at most 8000 on each side",
            ),
            (
                "not_image",
                "the image is not a PNG, JPEG, GIF or WebP image",
            ),
            ("bad_base64", "its data is not valid base64"),
        ] {
            let out = call(tool).await;
            let shown = texts(&out);
            assert_eq!(shown.len(), 1, "{tool}: {shown:?}");
            assert!(
                shown[0].starts_with("[an image (`image/png`) was not passed on: ")
                    && shown[0].contains(why),
                "{tool}: {shown:?}"
            );
        }

        let parts = texts(&call("many_parts").await);
        assert_eq!(parts.len(), 21);
        assert_eq!(
            parts[20],
            "[... 980 more parts of this result not shown: at most 20 are passed on]"
        );

        // A 100 MB message is over the transport's limit: the call says so at once.
        let started = Instant::now();
        let huge = call("huge").await;
        assert!(huge.is_error);
        let [error] = texts(&huge).try_into().unwrap();
        assert!(
            error.starts_with("the plugin server `h` sent a message over 16 MiB (16777216 bytes)"),
            "{error}"
        );
        assert!(error.contains("restarted on the next call"), "{error}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );

        // And the next call starts it again.
        let small = call("small").await;
        assert_eq!(texts(&small), ["small and fine"]);
        plugins.shutdown().await;
    });
}

/// `deskhand plugins list` shows what a server's definitions cost and what was left out.
#[test]
fn plugins_list_shows_the_definitions_size_and_what_was_left_out() {
    let home = tempfile::tempdir().unwrap();
    let mcp = json!({"mcpServers": {"h": hostile_server("many")}});
    std::fs::write(home.path().join("mcp.json"), mcp.to_string()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .args(["plugins", "list", "--json"])
        .env("DESKHAND_CONFIG_DIR", home.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let tokens = listed["definition_tokens"].as_u64().unwrap();
    assert!((1_000..10_000).contains(&tokens), "{tokens}");
    assert_eq!(listed["notes"].as_array().unwrap().len(), 2, "{listed}");

    let output = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .args(["plugins", "list"])
        .env("DESKHAND_CONFIG_DIR", home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "h (python3 ".to_string(),
        format!(": running, 127 tool(s), about {tokens} tokens of definitions in every request\n"),
        "\n  note: 9878 of its tools are not offered: at most 128 per server are\n".to_string(),
        "\n  note: its tool `huge_schema` is not offered: its input schema is ".to_string(),
    ] {
        assert!(stdout.contains(&expected), "{expected:?} in {stdout}");
    }
}
