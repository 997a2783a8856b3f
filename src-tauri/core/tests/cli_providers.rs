//! Choosing the provider from the CLI as a process: `--provider`, `--model`, `--base-url`
//! and the environment; a missing or contradictory setting is one clear line before any
//! request; and the scripted bash and editor session of the Anthropic tests, run end to end
//! against the stand-in's Chat Completions side.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use deskhand_standin::{Script, StandIn, Turn};
use serde_json::{Value, json};
use support::API_KEY;

const EDITOR: &str = "str_replace_based_edit_tool";

/// Every variable that could choose a provider, so the developer's own cannot leak in.
const PROVIDER_VARIABLES: &[&str] = &[
    "LLM_PROVIDER",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_DEPLOYMENT",
    "AZURE_OPENAI_API_VERSION",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
];

fn deskhand(dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deskhand"));
    for variable in PROVIDER_VARIABLES {
        command.env_remove(variable);
    }
    command
        .envs(env.iter().copied())
        .env("DESKHAND_DATA_DIR", dir)
        .env("DESKHAND_CONFIG_DIR", dir)
        .current_dir(dir)
        .stdin(Stdio::null());
    command
}

fn run(command: &mut Command) -> (Output, String) {
    let output = command.output().expect("deskhand runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
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
    ];
    for (flags, env, needles) in cases {
        let mut args = vec!["ask"];
        args.extend(&flags);
        args.push("hi");
        let (output, stderr) = run(deskhand(dir.path(), &env).args(&args));
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
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    let app = root.join("project/app.py");
    let app_path = app.display().to_string();
    let api = StandIn::spawn([
        Turn::tool_use(
            "bash",
            json!({"command": "mkdir -p project && cd project && printf 'hello\\n' > greeting.txt && pwd; env | grep API_KEY; echo \"keys found: $?\""}),
        ),
        Turn::tool_use(
            EDITOR,
            json!({"command": "create", "path": app_path, "file_text": "def main():\n    print('hi')\n"}),
        ),
        Turn::tool_use(
            EDITOR,
            json!({"command": "str_replace", "path": app_path, "old_str": "print('hi')", "new_str": "print(open('greeting.txt').read())"}),
        ),
        Turn::tool_use(
            EDITOR,
            json!({"command": "insert", "path": app_path, "insert_line": 2, "new_str": "\nmain()"}),
        ),
        Turn::tool_use("bash", json!({"command": "ls; python3 app.py"})),
        Turn::text("The project is set up."),
    ]);
    let base = format!("{}/v1", api.url());
    let (output, stderr) = run(deskhand(&root, &[("OPENAI_API_KEY", API_KEY)]).args([
        "ask",
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--model",
        "gpt-4.1",
        "--json",
        "--tools",
        "bash,editor",
        "--approve",
        "auto",
        "set up the project",
    ]));
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        std::fs::read_to_string(root.join("project/greeting.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(&app).unwrap(),
        "def main():\n    print(open('greeting.txt').read())\n\nmain()\n"
    );

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
    let answer = |i: usize| -> String {
        let messages = requests[i].body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "tool");
        last["content"].as_str().unwrap().to_string()
    };
    assert_eq!(
        answer(1),
        format!("{}\nkeys found: 1\n", root.join("project").display()),
        "no API key reaches the shell"
    );
    assert_eq!(answer(2), format!("File created: {app_path}"));
    assert!(answer(3).contains("print(open('greeting.txt').read())"));
    assert!(answer(4).contains("     4\tmain()\n"));
    assert_eq!(answer(5), "app.py\ngreeting.txt\nhello\n\n");

    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
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
    let (output, stderr) = run(deskhand(
        dir.path(),
        &[
            ("LLM_PROVIDER", "azure"),
            ("AZURE_OPENAI_API_KEY", API_KEY),
            ("AZURE_OPENAI_ENDPOINT", &endpoint),
            ("AZURE_OPENAI_DEPLOYMENT", "prod-gpt4o"),
            ("AZURE_OPENAI_API_VERSION", "2025-01-01-preview"),
        ],
    )
    .args(["ask", "hi"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "Azure here."
    );
    let request = &api.requests()[0];
    assert_eq!(request.rejected, None);
    assert_eq!(
        request.path,
        "/openai/deployments/prod-gpt4o/chat/completions?api-version=2025-01-01-preview"
    );
    assert_eq!(request.headers["api-key"], API_KEY);
    assert!(!request.headers.contains_key("authorization"));

    let api = StandIn::spawn(Script::new([Turn::text("Served locally.")]).without_keys());
    let base = format!("{}/v1", api.url());
    let (output, stderr) = run(deskhand(
        dir.path(),
        &[
            ("LLM_PROVIDER", "vllm"),
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_MODEL", "Qwen/Qwen2.5-VL-7B-Instruct"),
        ],
    )
    .args(["ask", "--json", "hi"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let request = &api.requests()[0];
    assert_eq!(request.body["model"], "Qwen/Qwen2.5-VL-7B-Instruct");
    assert!(!request.headers.contains_key("authorization"));
    let last: Value = serde_json::from_str(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["status"], "done");
    assert!(last["cost_usd"].is_null(), "no price for a local model");
}
