//! MCP plugin servers as real child processes: the reference `mcp-server-time` from PyPI
//! (installed by scripts/test.sh, path in $DESKHAND_MCP_TIME) end to end through the CLI,
//! and a small fixture server (tests/fixtures/mcp_fixture.py) that crashes, hangs, fails to
//! start, returns images and marks a tool read-only.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;
use async_trait::async_trait;
use deskhand_engine::agent::{
    Answer, ApprovalPolicy, ApprovalRequest, Approver, Decision, RunStatus,
};
use deskhand_engine::tools::ToolRegistry;
use deskhand_engine::tools::catalog::{self, ToolSettings};
use deskhand_engine::tools::plugins::{PluginConfig, PluginTimeouts, Plugins, ServerState};
use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp_fixture.py")
        .display()
        .to_string()
}

/// `mcp-server-time` from $DESKHAND_MCP_TIME. Without the variable (a plain `cargo test`)
/// the test is skipped with a note; with it, the server must work or the test fails.
fn time_server() -> Option<String> {
    match std::env::var("DESKHAND_MCP_TIME") {
        Ok(path) if !path.is_empty() => {
            assert!(
                Path::new(&path).is_file(),
                "DESKHAND_MCP_TIME={path} is not a file"
            );
            Some(path)
        }
        _ => {
            eprintln!("skipped: set DESKHAND_MCP_TIME to mcp-server-time (scripts/test.sh does)");
            None
        }
    }
}

fn config(servers: Value) -> PluginConfig {
    serde_json::from_value(json!({ "mcpServers": servers })).unwrap()
}

/// The fixture as `fx`, its `readOnlyHint` trusted.
fn fixture_config(log: &Path) -> PluginConfig {
    config(json!({
        "fx": {"command": "python3", "args": [fixture()], "env": {"FIXTURE_LOG": log.display().to_string()},
               "trustReadOnlyHint": true}
    }))
}

fn starts(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim_start_matches("started ").to_string())
        .collect()
}

/// Approves everything and records what it was asked.
#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Vec<String>>>);

#[async_trait]
impl Approver for Recorder {
    async fn decide(&self, request: &ApprovalRequest) -> Answer {
        self.0.lock().unwrap().push(request.tool.clone());
        request.answer(Decision::Approve)
    }
}

fn names_of(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        // A toolset (the default model's computer) is named by its type.
        .map(|t| {
            t["name"]
                .as_str()
                .or(t["type"].as_str())
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn the_reference_time_server_is_listed_called_and_answers_the_model() {
    let Some(time) = time_server() else { return };
    let home = tempfile::tempdir().unwrap();
    let mcp = json!({"mcpServers": {
        "time": {"command": time, "args": ["--local-timezone", "UTC"]},
        "off": {"command": "python3", "args": [fixture()], "enabled": false}
    }});
    std::fs::write(home.path().join("mcp.json"), mcp.to_string()).unwrap();

    let listed = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .args(["plugins", "list"])
        .env("DESKHAND_CONFIG_DIR", home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(
        listed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "time ({time} --local-timezone UTC): running, 2 tool(s), about "
        )),
        "{stdout}"
    );
    assert!(stdout.contains("  time__get_current_time"), "{stdout}");
    assert!(stdout.contains("  time__convert_time"), "{stdout}");
    assert!(
        stdout.contains(&format!("off (python3 {}): disabled", fixture())),
        "{stdout}"
    );

    let api = StandIn::spawn([
        Turn::tool_uses([
            (
                "time__convert_time",
                json!({"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"}),
            ),
            (
                "time__get_current_time",
                json!({"timezone": "Europe/Paris"}),
            ),
            (
                "time__get_current_time",
                json!({"timezone": "Mars/Olympus_Mons"}),
            ),
        ]),
        Turn::text("It is 21:30 in Tokyo."),
    ]);
    let output = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .args([
            "ask",
            "--json",
            "--tools",
            "time",
            "--approve",
            "auto",
            "what time is it in Tokyo?",
        ])
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url())
        .env("DESKHAND_CONFIG_DIR", home.path())
        .env("DESKHAND_DATA_DIR", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");

    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    let mut offered = names_of(&requests[0].body);
    offered.sort();
    assert_eq!(offered, ["time__convert_time", "time__get_current_time"]);
    let convert = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "time__convert_time")
        .unwrap()
        .clone();
    assert!(convert["input_schema"]["properties"]["target_timezone"].is_object());
    assert!(
        convert["description"]
            .as_str()
            .unwrap()
            .contains("plugin server `time`")
    );

    let results = last_tool_results(&requests[1].body);
    assert_eq!(results.len(), 3);
    let converted: Value = serde_json::from_str(&result_text(&results[0])).unwrap();
    assert_eq!(converted["target"]["timezone"], "Asia/Tokyo");
    assert!(
        converted["target"]["datetime"]
            .as_str()
            .unwrap()
            .contains("T21:30:00+09:00"),
        "{converted}"
    );
    let now: Value = serde_json::from_str(&result_text(&results[1])).unwrap();
    assert_eq!(now["timezone"], "Europe/Paris");
    assert_eq!(results[2]["is_error"], true);
    assert!(
        result_text(&results[2]).contains("Mars/Olympus_Mons"),
        "{}",
        result_text(&results[2])
    );
}

#[tokio::test]
async fn a_plugin_that_crashes_mid_call_fails_that_call_only_and_is_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts");
    let plugins = Plugins::start(
        &fixture_config(&log),
        &["fx".into()],
        PluginTimeouts::default(),
    )
    .await;
    let mut tools =
        catalog::registry(Some(&["bash".to_string()]), &ToolSettings::default()).unwrap();
    assert!(plugins.add_tools(&mut tools).await.is_empty());
    let first_pid = starts(&log)[0].clone();

    let api = StandIn::spawn([
        Turn::tool_uses([
            ("fx__crash", json!({})),
            ("bash", json!({"command": "echo bash is fine"})),
            ("fx__echo", json!({"text": "back again"})),
        ]),
        Turn::text("Recovered."),
    ]);
    let agent = agent(
        &api.url(),
        tools,
        ApprovalPolicy::Auto,
        Box::new(Recorder::default()),
        10,
    );
    let mut history = Vec::new();
    let (outcome, _) = run_prompt(&agent, &mut history, "go").await;
    assert_eq!(outcome.status, RunStatus::Done);

    let requests = api.requests();
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    let results = last_tool_results(&requests[1].body);
    assert_eq!(results[0]["is_error"], true);
    let crashed = result_text(&results[0]);
    assert!(
        crashed.contains("the plugin server `fx` stopped during a call to `crash`"),
        "{crashed}"
    );
    assert!(
        crashed.contains("fixture: about to crash"),
        "its stderr is quoted: {crashed}"
    );
    assert!(crashed.contains("restarted on the next call"), "{crashed}");
    assert_eq!(result_text(&results[1]), "bash is fine\n");
    assert!(results[2].get("is_error").is_none());
    assert_eq!(result_text(&results[2]), "echo: back again");

    let pids = starts(&log);
    assert_eq!(pids.len(), 2, "restarted once: {pids:?}");
    assert!(wait_until_gone(&first_pid).await);
    assert_eq!(plugins.servers()[0].state().await, ServerState::Running);
    plugins.shutdown().await;
    assert!(wait_until_gone(&pids[1]).await, "shutdown stops the server");
}

#[tokio::test]
async fn a_plugin_that_hangs_is_stopped_after_its_timeout_and_can_be_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts");
    let timeouts = PluginTimeouts {
        start: Duration::from_secs(30),
        call: Duration::from_secs(1),
    };
    let plugins = Plugins::start(&fixture_config(&log), &["fx".into()], timeouts).await;
    let mut tools = ToolRegistry::default();
    assert!(plugins.add_tools(&mut tools).await.is_empty());
    let server = &plugins.servers()[0];
    let hung_pid = starts(&log)[0].clone();

    let hang = tools.resolve("fx__hang", &json!({})).unwrap();
    let ctx = deskhand_engine::tools::ToolContext::new(CancellationToken::new());
    let output = hang.run(&json!({}), &ctx).await;
    assert!(output.is_error);
    let shown = format!("{:?}", output.content);
    assert!(
        shown.contains("did not answer `hang` within 1 s and was stopped"),
        "{shown}"
    );
    assert!(
        wait_until_gone(&hung_pid).await,
        "the hung server was killed"
    );
    assert!(matches!(server.state().await, ServerState::Failed { .. }));

    assert_eq!(server.restart().await, ServerState::Running);
    assert_eq!(starts(&log).len(), 2);
    let echo = tools.resolve("fx__echo", &json!({"text": "hi"})).unwrap();
    let output = echo.run(&json!({"text": "hi"}), &ctx).await;
    assert!(!output.is_error);
    plugins.shutdown().await;
}

#[tokio::test]
async fn servers_that_fail_to_start_fail_alone_with_a_clear_reason() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts");
    let config = config(json!({
        "fx": {"command": "python3", "args": [fixture()], "env": {"FIXTURE_LOG": log.display().to_string()}},
        "missing": {"command": "/nonexistent/mcp-server"},
        "dies": {"command": "python3", "args": [fixture(), "--exit-at-start"]},
        "remote": {"url": "https://example.com/mcp"}
    }));
    let names: Vec<String> = config.servers.keys().cloned().collect();
    let plugins = Plugins::start(&config, &names, PluginTimeouts::default()).await;
    let mut tools = ToolRegistry::default();
    let problems = plugins.add_tools(&mut tools).await;

    assert_eq!(problems.len(), 3, "{problems:?}");
    let about = |name: &str| {
        problems
            .iter()
            .find(|p| p.contains(&format!("`{name}`")))
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        about("missing")
            .contains("could not start `/nonexistent/mcp-server`: No such file or directory"),
        "{problems:?}"
    );
    assert!(
        about("dies").contains("the MCP handshake failed"),
        "{problems:?}"
    );
    assert!(
        about("dies").contains("its stderr: fixture: refusing to start: no such config"),
        "{problems:?}"
    );
    assert!(
        about("remote").contains("only servers started as a program"),
        "{problems:?}"
    );
    let mut offered = tools.names();
    offered.sort();
    assert_eq!(
        offered,
        [
            "fx__crash",
            "fx__echo",
            "fx__fail",
            "fx__hang",
            "fx__picture"
        ]
    );
    plugins.shutdown().await;
}

#[tokio::test]
async fn read_only_tools_skip_approval_and_images_and_errors_reach_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts");
    let plugins = Plugins::start(
        &fixture_config(&log),
        &["fx".into()],
        PluginTimeouts::default(),
    )
    .await;
    let mut tools = ToolRegistry::default();
    assert!(plugins.add_tools(&mut tools).await.is_empty());
    let api = StandIn::spawn([
        Turn::tool_uses([
            ("fx__echo", json!({"text": "no approval needed"})),
            ("fx__picture", json!({})),
            ("fx__fail", json!({})),
        ]),
        Turn::text("Done."),
    ]);
    let recorder = Recorder::default();
    let agent = agent(
        &api.url(),
        tools,
        ApprovalPolicy::Ask,
        Box::new(recorder.clone()),
        10,
    );
    let mut history = Vec::new();
    let (outcome, _) = run_prompt(&agent, &mut history, "go").await;
    assert_eq!(outcome.status, RunStatus::Done);
    assert_eq!(*recorder.0.lock().unwrap(), ["fx__picture", "fx__fail"]);

    let requests = api.requests();
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    let results = last_tool_results(&requests[1].body);
    assert_eq!(result_text(&results[0]), "echo: no approval needed");
    let picture = results[1]["content"].as_array().unwrap();
    assert_eq!(
        deskhand_engine::agent::spotlight::unmarked(picture[0]["text"].as_str().unwrap()),
        "a 4x3 picture"
    );
    assert_eq!(picture[1]["type"], "image");
    assert_eq!(picture[1]["source"]["media_type"], "image/png");
    assert_eq!(results[2]["is_error"], true);
    assert_eq!(result_text(&results[2]), "the widget is broken");
    plugins.shutdown().await;
}

/// A server's `readOnlyHint` is its own word: it counts only where `mcp.json` trusts the
/// server, and never for a tool that also declares `destructiveHint: true`. Under
/// `--approve deny` (read-only) only the trusted, non-destructive `echo` runs.
#[tokio::test]
async fn a_read_only_hint_counts_only_when_trusted_and_never_with_a_destructive_hint() {
    for (trusted, destructive, runs) in [
        (false, false, false),
        (true, true, false),
        (false, true, false),
        (true, false, true),
    ] {
        let mut env = serde_json::Map::new();
        if destructive {
            env.insert("FIXTURE_DESTRUCTIVE_ECHO".into(), json!("1"));
        }
        let plugins = Plugins::start(
            &config(json!({
                "fx": {"command": "python3", "args": [fixture()], "env": env,
                       "trustReadOnlyHint": trusted}
            })),
            &["fx".into()],
            PluginTimeouts::default(),
        )
        .await;
        let mut tools = ToolRegistry::default();
        assert!(plugins.add_tools(&mut tools).await.is_empty());
        let api = StandIn::spawn([
            Turn::tool_use("fx__echo", json!({"text": "hi"})),
            Turn::text("Done."),
        ]);
        let recorder = Recorder::default();
        let agent = agent(
            &api.url(),
            tools,
            ApprovalPolicy::ReadOnly,
            Box::new(recorder.clone()),
            10,
        );
        let mut history = Vec::new();
        let (outcome, _) = run_prompt(&agent, &mut history, "go").await;
        assert_eq!(outcome.status, RunStatus::Done);
        assert!(recorder.0.lock().unwrap().is_empty());
        let result = &last_tool_results(&api.requests()[1].body)[0];
        let case = format!("trusted {trusted}, destructive {destructive}: {result}");
        if runs {
            assert_eq!(result_text(result), "echo: hi", "{case}");
        } else {
            assert_eq!(result["is_error"], true, "{case}");
            assert!(result_text(result).starts_with("not allowed"), "{case}");
        }
        plugins.shutdown().await;
    }
}

#[test]
fn plugins_list_shows_each_server_its_state_and_tools() {
    let home = tempfile::tempdir().unwrap();
    let mcp = json!({"mcpServers": {
        "fx": {"command": "python3", "args": [fixture()], "trustReadOnlyHint": true},
        "broken": {"command": "/nonexistent/mcp-server", "args": ["--x"]},
        "off": {"command": "python3", "args": [fixture()], "enabled": false}
    }});
    std::fs::write(home.path().join("mcp.json"), mcp.to_string()).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_deskhand"))
            .args(args)
            .env("DESKHAND_CONFIG_DIR", home.path())
            .output()
            .unwrap()
    };
    let output = run(&["plugins", "list", "--json"]);
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["server"], "fx");
    assert_eq!(lines[1]["status"], json!({"state": "running"}));
    assert_eq!(lines[1]["tools"][0]["name"], "fx__echo");
    assert_eq!(lines[1]["tools"][0]["read_only"], true);
    assert_eq!(lines[1]["notes"], json!([]));
    assert_eq!(lines[0]["status"]["state"], "failed");
    assert_eq!(lines[0]["definition_tokens"], 0);
    // Five small tools: their names, descriptions and schemas, at four bytes a token.
    let tokens = lines[1]["definition_tokens"].as_u64().unwrap();
    assert!((50..500).contains(&tokens), "{tokens}");

    let output = run(&["plugins", "list"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let fixture = fixture();
    assert_eq!(
        stdout,
        format!(
            "broken (/nonexistent/mcp-server --x): failed: could not start `/nonexistent/mcp-server --x`: No such file or directory (os error 2)\n\
             fx (python3 {fixture}): running, 5 tool(s), about {tokens} tokens of definitions in every request\n\
             \x20 fx__echo [read-only]  Echoes `text`.\n\
             \x20 fx__picture  Returns a red picture.\n\
             \x20 fx__fail  Always fails.\n\
             \x20 fx__crash  Crashes the server.\n\
             \x20 fx__hang  Never answers.\n\
             off (python3 {fixture}): disabled\n"
        )
    );

    std::fs::write(home.path().join("mcp.json"), "{\"mcpServers\": [}").unwrap();
    let output = run(&["plugins", "list"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let path: PathBuf = home.path().join("mcp.json");
    assert!(
        stderr.contains(&format!("cannot read the plugin config {}", path.display())),
        "{stderr}"
    );
}

#[test]
fn ask_goes_on_without_a_broken_server_unless_it_was_named() {
    let home = tempfile::tempdir().unwrap();
    let mcp = json!({"mcpServers": {
        "fx": {"command": "python3", "args": [fixture()]},
        "broken": {"command": "python3", "args": [fixture(), "--exit-at-start"]}
    }});
    std::fs::write(home.path().join("mcp.json"), mcp.to_string()).unwrap();
    let api = StandIn::spawn([
        Turn::tool_use("fx__echo", json!({"text": "still works"})),
        Turn::text("Done."),
    ]);
    let ask = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_deskhand"))
            .arg("ask")
            .args(extra)
            .args(["--approve", "auto", "go"])
            .env("ANTHROPIC_API_KEY", API_KEY)
            .env("ANTHROPIC_BASE_URL", api.url())
            .env("DESKHAND_CONFIG_DIR", home.path())
            .env("DESKHAND_DATA_DIR", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };

    let output = ask(&[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the plugin server `broken` failed to start: the MCP handshake failed"),
        "{stderr}"
    );
    assert!(stderr.contains("going on without it"), "{stderr}");
    let requests = api.requests();
    let offered = names_of(&requests[0].body);
    assert!(offered.contains(&"bash".to_string()) && offered.contains(&"fx__echo".to_string()));
    assert!(
        !offered.iter().any(|n| n.starts_with("broken__")),
        "{offered:?}"
    );
    assert_eq!(
        result_text(&last_tool_results(&requests[1].body)[0]),
        "echo: still works"
    );

    let output = ask(&["--tools", "bash,broken"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the plugin server `broken` failed to start"),
        "{stderr}"
    );
    assert_eq!(api.requests().len(), 2, "no request is sent");
}

/// The same from the CLI: `deskhand ask --approve deny` (read-only) does not run a tool that
/// declares both `readOnlyHint` and `destructiveHint`, even from a trusted server, nor one
/// whose server is not trusted; it runs the trusted, non-destructive one.
#[test]
fn approve_deny_runs_only_trusted_read_only_tools_that_are_not_destructive() {
    let home = tempfile::tempdir().unwrap();
    let mcp = json!({"mcpServers": {
        "both": {"command": "python3", "args": [fixture()], "trustReadOnlyHint": true,
                 "env": {"FIXTURE_DESTRUCTIVE_ECHO": "1"}},
        "untrusted": {"command": "python3", "args": [fixture()]},
        "trusted": {"command": "python3", "args": [fixture()], "trustReadOnlyHint": true}
    }});
    std::fs::write(home.path().join("mcp.json"), mcp.to_string()).unwrap();
    let api = StandIn::spawn([
        Turn::tool_uses([
            ("both__echo", json!({"text": "one"})),
            ("untrusted__echo", json!({"text": "two"})),
            ("trusted__echo", json!({"text": "three"})),
        ]),
        Turn::text("Done."),
    ]);
    let output = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .args([
            "ask",
            "--tools",
            "both,untrusted,trusted",
            "--approve",
            "deny",
            "go",
        ])
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url())
        .env("DESKHAND_CONFIG_DIR", home.path())
        .env("DESKHAND_DATA_DIR", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results = last_tool_results(&api.requests()[1].body);
    for refused in &results[..2] {
        assert_eq!(refused["is_error"], true, "{refused}");
        assert_eq!(
            result_text(refused),
            "not allowed: the approval policy allows read-only actions only"
        );
    }
    assert_eq!(result_text(&results[2]), "echo: three");
}

/// A plugin that claims to be read-only (and is trusted to say so) still asks, and in
/// read-only mode is refused, when its arguments name a secret place: `~/.ssh`, another
/// user's home, `/etc/shadow`.
#[test]
fn a_read_only_plugin_call_that_names_a_secret_place_asks_whatever_its_hints_say() {
    let home = tempfile::tempdir().unwrap();
    let mcp = json!({"mcpServers": {
        "trusted": {"command": "python3", "args": [fixture()], "trustReadOnlyHint": true}
    }});
    std::fs::write(home.path().join("mcp.json"), mcp.to_string()).unwrap();
    let calls = || {
        Turn::tool_uses([
            ("trusted__echo", json!({"text": "~/.ssh/id_ed25519"})),
            (
                "trusted__echo",
                json!({"text": "cat /home/somebody-else/.aws/credentials"}),
            ),
            ("trusted__echo", json!({"text": "file:///etc/shadow"})),
            ("trusted__echo", json!({"text": "/tmp/report.txt"})),
        ])
    };
    for approve in ["deny", "auto"] {
        let api = StandIn::spawn([calls(), Turn::text("Done.")]);
        let output = Command::new(env!("CARGO_BIN_EXE_deskhand"))
            .args(["ask", "--tools", "trusted", "--approve", approve, "go"])
            .env("ANTHROPIC_API_KEY", API_KEY)
            .env("ANTHROPIC_BASE_URL", api.url())
            .env("DESKHAND_CONFIG_DIR", home.path())
            .env("DESKHAND_DATA_DIR", home.path())
            .env("HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        let results = last_tool_results(&api.requests()[1].body);
        for (refused, place) in results[..3].iter().zip([
            "~/.ssh",
            "another user's home (/home/somebody-else)",
            "/etc/shadow",
        ]) {
            assert_eq!(refused["is_error"], true, "{approve}: {refused}");
            let text = result_text(refused);
            // Read-only mode refuses it; auto mode asks, and with no terminal nobody can
            // say yes.
            let expected = match approve {
                "deny" => format!(
                    "not allowed: it reads {place}, a secret place, which the read-only mode \
                     never allows"
                ),
                _ => "the user denied this action: no terminal to ask for approval (stdin is \
                      not a TTY); run with --approve auto to allow actions"
                    .into(),
            };
            assert_eq!(text, expected, "{approve}");
        }
        assert_eq!(
            result_text(&results[3]),
            "echo: /tmp/report.txt",
            "{approve}"
        );
    }
}
