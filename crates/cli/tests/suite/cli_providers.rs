//! Choosing the provider from the CLI as a process: `--provider`, `--model`, `--base-url`
//! and the environment; a missing or contradictory setting is one clear line before any
//! request; and the scripted bash and editor session of the Anthropic tests, run end to end
//! against the stand-in's Chat Completions side.

use std::path::Path;
use std::process::Command;

use crate::support::cli::{BashEditorSession, EDITOR, ask_over_openai, deskhand, json_lines, run};
use crate::support::{API_KEY, PNG_1X1};
use base64::Engine as _;
use deskhand_standin::{Reply, Script, StandIn, Turn};
use serde_json::json;

/// `deskhand ask --json hi` to a keyless vLLM server serving Qwen2.5-VL, configured by
/// environment alone.
fn ask_local_qwen(api: &StandIn, dir: &Path) -> Command {
    let base = format!("{}/v1", api.url());
    let mut command = deskhand(dir);
    command
        .envs([
            ("LLM_PROVIDER", "vllm"),
            ("OPENAI_BASE_URL", base.as_str()),
            ("OPENAI_MODEL", "Qwen/Qwen2.5-VL-7B-Instruct"),
        ])
        .args(["ask", "--json", "hi"]);
    command
}

#[test]
fn missing_and_contradictory_settings_are_one_line_before_any_request() {
    let api = StandIn::spawn([Turn::text("never sent")]);
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", api.url());
    /// Flags, environment, and what the one line must say.
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            vec!["--provider", "gemini"],
            vec![],
            vec![
                "unknown provider `gemini`",
                "anthropic, openai, azure, openrouter",
            ],
        ),
        (
            vec![],
            vec![("LLM_PROVIDER", "bard")],
            vec!["LLM_PROVIDER=bard is not a provider"],
        ),
        (
            vec!["--provider", "azure"],
            vec![],
            vec![
                "cannot use azure",
                "AZURE_OPENAI_DEPLOYMENT",
                "AZURE_OPENAI_ENDPOINT",
                "AZURE_OPENAI_API_KEY",
            ],
        ),
        (
            vec!["--provider", "openai", "--base-url", &base],
            vec![],
            // Whether or not this machine has a keyring, the line names the variable.
            vec!["no API key", "OPENAI_API_KEY"],
        ),
        (
            vec![],
            vec![("OPENAI_API_KEY", "sk-1"), ("OPENROUTER_API_KEY", "sk-2")],
            vec![
                "several providers are configured",
                "--provider or LLM_PROVIDER",
            ],
        ),
        (
            vec!["--model", "gpt-4o"],
            vec![("ANTHROPIC_API_KEY", API_KEY)],
            vec!["`gpt-4o` is not a Claude model"],
        ),
        (
            vec!["--provider", "compatible"],
            vec![],
            vec!["--base-url or OPENAI_BASE_URL", "--model or OPENAI_MODEL"],
        ),
        (
            vec!["--provider", "openai", "--base-url", "127.0.0.1:8000/v1"],
            vec![("OPENAI_API_KEY", "sk-1")],
            vec!["not an http:// or https:// URL"],
        ),
        // A key goes over plain http:// to this machine only.
        (
            vec![
                "--provider",
                "openai",
                "--base-url",
                "http://example.invalid/v1",
            ],
            vec![("OPENAI_API_KEY", "sk-1")],
            vec!["plain http://", "OPENAI_API_KEY", "https://"],
        ),
        (
            vec![],
            vec![
                ("ANTHROPIC_API_KEY", API_KEY),
                ("ANTHROPIC_BASE_URL", "http://192.0.2.1:8080"),
            ],
            vec!["plain http://", "ANTHROPIC_API_KEY"],
        ),
    ];
    for (flags, env, needles) in cases {
        let mut args = vec!["ask"];
        args.extend(&flags);
        args.push("hi");
        let (output, _, stderr) = run(deskhand(dir.path()).envs(env.iter().copied()).args(&args));
        assert_eq!(output.status.code(), Some(1), "{flags:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.starts_with("deskhand: "), "{stderr}");
        for needle in needles {
            assert!(stderr.contains(needle), "{flags:?} {env:?}: {stderr}");
        }
        assert!(!stderr.contains(API_KEY));
    }
    assert!(api.requests().is_empty(), "nothing was sent");
}

/// The same session as the Anthropic CLI test of bash and the editor, through
/// `--provider openai`: the tools go out as functions with their JSON Schemas, and every
/// result comes back as a `tool` message.
#[test]
fn ask_with_bash_and_editor_over_chat_completions_changes_files_end_to_end() {
    let session = BashEditorSession::new();
    let api = StandIn::spawn(session.turns());
    let (output, stdout, stderr) = run(ask_over_openai(&api, &session.data)
        .current_dir(&session.root)
        .args(BashEditorSession::ASK_ARGS));
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");

    let requests = api.requests();
    assert_eq!(requests.len(), 6);
    assert!(
        requests.iter().all(|r| r.rejected.is_none()),
        "{requests:?}"
    );
    let first = &requests[0];
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.body["model"], "gpt-4.1");
    let tools = first.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "bash");
    assert_eq!(
        tools[0]["function"]["parameters"]["properties"]["command"]["type"],
        "string"
    );
    assert_eq!(tools[1]["function"]["name"], EDITOR);
    assert_eq!(
        tools[1]["function"]["parameters"]["properties"]["command"]["enum"],
        json!(["view", "create", "str_replace", "insert"])
    );
    assert!(!first.body.to_string().contains("bash_20250124"));

    // Each request ends with the `tool` message answering the previous call.
    let results: Vec<String> = requests[1..]
        .iter()
        .map(|request| {
            let last = request.body["messages"].as_array().unwrap().last().unwrap();
            assert_eq!(last["role"], "tool");
            last["content"].as_str().unwrap().to_string()
        })
        .collect();
    session.check(&results);

    let events = json_lines(&stdout);
    assert_eq!(events[0]["provider"], "OpenAI");
    assert_eq!(events.last().unwrap()["status"], "done");
    // gpt-4.1 has a price, so the run has a cost.
    assert!(events.last().unwrap()["cost_usd"].as_f64().unwrap() > 0.0);
}

#[test]
fn azure_and_a_keyless_local_server_are_configured_by_environment_alone() {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn([Turn::text("Azure here.")]);
    let endpoint = api.url();
    let (output, stdout, stderr) = run(deskhand(dir.path())
        .envs([
            ("LLM_PROVIDER", "azure"),
            ("AZURE_OPENAI_API_KEY", API_KEY),
            ("AZURE_OPENAI_ENDPOINT", endpoint.as_str()),
            ("AZURE_OPENAI_DEPLOYMENT", "prod-gpt4o"),
            ("AZURE_OPENAI_API_VERSION", "2025-01-01-preview"),
        ])
        .args(["ask", "hi"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "Azure here.");
    let request = &api.requests()[0];
    assert_eq!(request.rejected, None);
    assert_eq!(
        request.path,
        "/openai/deployments/prod-gpt4o/chat/completions?api-version=2025-01-01-preview"
    );
    assert_eq!(request.headers["api-key"], API_KEY);
    assert!(!request.headers.contains_key("authorization"));

    let api = StandIn::spawn(Script::new([Turn::text("Served locally.")]).without_keys());
    let (output, stdout, stderr) = run(&mut ask_local_qwen(&api, dir.path()));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let request = &api.requests()[0];
    assert_eq!(request.body["model"], "Qwen/Qwen2.5-VL-7B-Instruct");
    assert!(!request.headers.contains_key("authorization"));
    let last = json_lines(&stdout).pop().unwrap();
    assert_eq!(last["status"], "done");
    assert!(last["cost_usd"].is_null(), "no price for a local model");
}

/// The price table is the person's to edit: a price added in `prices.json` in the config
/// directory (matched without regard to case or the `vendor/` prefix) gives a local model's
/// run its cost, in `done` and in the stored session the window's meter reads.
#[test]
fn a_price_added_to_prices_json_costs_a_local_models_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prices.json"),
        r#"{"qwen2.5-vl": {"input": 0.2, "output": 0.6, "cache_write": 0.2, "cache_read": 0.02}}"#,
    )
    .unwrap();
    let reply = Reply::new().text("Priced.").usage(1_000_000, 500_000);
    let api = StandIn::spawn(Script::new([reply.into()]).without_keys());
    let (output, stdout, stderr) = run(&mut ask_local_qwen(&api, dir.path()));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let done = json_lines(&stdout).pop().unwrap();
    assert_eq!(done["usage"]["input_tokens"], 1_000_000);
    assert_eq!(done["usage"]["output_tokens"], 500_000);
    // 1M input at $0.2 and 0.5M output at $0.6 per million.
    let cost = done["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.5).abs() < 1e-9, "{cost}");

    let (output, listed, stderr) = run(deskhand(dir.path()).args(["sessions", "list", "--json"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let sessions = json_lines(&listed);
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["id"], done["session_id"]);
    let stored = sessions[0]["cost_usd"].as_f64().unwrap();
    assert!((stored - 0.5).abs() < 1e-9, "{stored}");
}

/// An attached image goes to Chat Completions as an `image_url` part of the user message, as
/// a data URL the (image-checking) stand-in decodes.
#[test]
fn an_attached_image_goes_as_an_image_url_part() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("pixel.png");
    std::fs::write(
        &png,
        base64::engine::general_purpose::STANDARD
            .decode(PNG_1X1)
            .unwrap(),
    )
    .unwrap();
    let api = StandIn::spawn(Script::new([Turn::text("A single pixel.")]).validating_images());
    let (output, stdout, stderr) = run(ask_over_openai(&api, dir.path())
        .arg("--attach")
        .arg(&png)
        .arg("what is this?"));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "A single pixel.");
    let request = &api.requests()[0];
    assert_eq!(request.rejected, None);
    let user = &request.body["messages"][1];
    assert_eq!(
        user,
        &json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_1X1}")}},
        ]})
    );
}
