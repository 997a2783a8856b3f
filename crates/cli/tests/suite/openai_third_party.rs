//! The OpenAI-compatible provider against a server no one here wrote: `fakellm` (PyPI), a
//! mock OpenAI server driven by YAML rules, which streams tool calls with their arguments in
//! pieces. `scripts/test.sh` installs it in a venv and sets `DESKHAND_FAKELLM` to its command;
//! without that variable these tests say so and pass, and with it they fail if it does not work.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;
use deskhand_engine::agent::{AgentEvent, ApprovalPolicy, Decision, FixedApprover, RunStatus};
use deskhand_engine::llm::openai::{OpenAi, OpenAiConfig, Service};
use serde_json::Value;

/// A running fakellm, stopped when dropped.
struct FakeLlm {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl FakeLlm {
    /// Starts fakellm with these rules, or `None` when `DESKHAND_FAKELLM` is unset.
    fn start(rules: &str) -> Option<FakeLlm> {
        let Some(command) = std::env::var_os("DESKHAND_FAKELLM") else {
            eprintln!("skipped: DESKHAND_FAKELLM is not set (scripts/test.sh sets it)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("fakellm.yaml");
        std::fs::write(&config, rules).unwrap();
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.path().join("fakellm.log")).unwrap();
        let child = Command::new(&command)
            .args(["serve", "--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--config")
            .arg(&config)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("DESKHAND_FAKELLM={command:?} does not start: {e}"));
        let mut server = FakeLlm {
            child,
            port,
            _dir: dir,
        };
        server.wait_until_listening();
        Some(server)
    }

    fn wait_until_listening(&mut self) {
        let started = Instant::now();
        while TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_err() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("fakellm exited ({status}):\n{}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "fakellm did not listen within a minute:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("fakellm.log")).unwrap_or_default()
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// fakellm's own record: which rule answered each request.
    async fn stats(&self) -> Value {
        reqwest::get(format!("http://127.0.0.1:{}/_fakellm/stats", self.port))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Turn 1 calls the echo tool twice in parallel; turn 2 answers only once fakellm has seen
/// both results in `tool` messages.
const PARALLEL_ECHO: &str = r#"
rules:
  - name: calls
    when:
      turn: 1
    respond:
      tool_calls:
        - name: echo
          arguments: {text: "hello from a third-party server"}
        - name: echo
          arguments: {text: "second call"}
  - name: after_results
    when:
      turn: 2
      tool_result_contains: "echo: second call"
    respond:
      content: "Both calls came back."
"#;

#[tokio::test]
async fn a_tool_session_runs_against_fakellm() {
    let Some(server) = FakeLlm::start(PARALLEL_ECHO) else {
        return;
    };
    let provider = OpenAi::new(OpenAiConfig {
        service: Service::Compatible,
        base_url: server.base_url(),
        api_key: Some(deskhand_engine::secrets::ApiKey::new("not-used").unwrap()),
        retry: fast_retries(),
        effort: None,
    })
    .unwrap();
    let h = harness_with(
        std::sync::Arc::new(provider),
        ApprovalPolicy::Auto,
        Box::new(FixedApprover(Decision::Approve)),
        10,
    );
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&h.agent, &mut history, "echo twice, please").await;

    let errors: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Error { .. }))
        .collect();
    assert_eq!(
        outcome.status,
        RunStatus::Done,
        "{errors:?}\n{}",
        server.log()
    );
    assert_eq!(
        *h.echo.ran.lock().unwrap(),
        ["hello from a third-party server", "second call"]
    );
    assert_eq!(streamed_text(&events), "Both calls came back.");
    // fakellm streamed the text word by word, and the call ids it made are the ones answered.
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TextDelta { .. }))
            .count()
            > 1
    );
    let ids: Vec<&str> = history[1].tool_uses().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|id| id.starts_with("call_")), "{ids:?}");

    let stats = server.stats().await;
    assert_eq!(stats["total_requests"], 2, "{stats}");
    assert_eq!(stats["by_rule"]["calls"], 1, "{stats}");
    assert_eq!(stats["by_rule"]["after_results"], 1, "{stats}");
}

const BASH_SESSION: &str = r#"
rules:
  - name: run_bash
    when:
      turn: 1
    respond:
      tool_calls:
        - name: bash
          arguments: {command: "echo made-by-$((6*7))"}
  - name: saw_output
    when:
      turn: 2
      tool_result_contains: "made-by-42"
    respond:
      content: "The shell said made-by-42."
"#;

/// The CLI, configured by environment alone, runs a real bash command that fakellm asked for.
#[test]
fn the_cli_runs_bash_for_fakellm() {
    let Some(server) = FakeLlm::start(BASH_SESSION) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .args([
            "ask",
            "--json",
            "--tools",
            "bash",
            "--approve",
            "auto",
            "run it",
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("LLM_PROVIDER", "compatible")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_MODEL", "fake-model")
        .env("DESKHAND_DATA_DIR", dir.path())
        .env("DESKHAND_CONFIG_DIR", dir.path())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{}", server.log());
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("a tool result");
    assert_eq!(result["name"], "bash");
    assert_eq!(result["text"], "made-by-42\n");
    assert_eq!(events.last().unwrap()["status"], "done");
}
