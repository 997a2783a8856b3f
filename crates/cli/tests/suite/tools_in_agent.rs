//! Bash and the editor inside real runs against the stand-in server: denied actions do
//! nothing and the model is told, and `deskhand ask --tools bash,editor` works end to end.

use std::sync::Arc;

use crate::support::cli::{self, BashEditorSession, EDITOR};
use crate::support::*;
use deskhand_engine::agent::{
    AgentEvent, ApprovalGate, ApprovalPolicy, Decision, FixedApprover, RunStatus, SecretPlaces,
};
use deskhand_engine::tools::catalog::{self, ToolSettings};
use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn denied_actions_run_nothing_write_nothing_and_the_model_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let notes = dir.path().join("notes.txt");
    let api = StandIn::spawn([
        Turn::tool_uses([
            (
                "bash",
                json!({"command": format!("touch {}", marker.display())}),
            ),
            (
                EDITOR,
                json!({"command": "create", "path": notes.display().to_string(), "file_text": "secret plan\n"}),
            ),
            (
                EDITOR,
                json!({"command": "view", "path": dir.path().display().to_string()}),
            ),
        ]),
        Turn::text("Understood, I will not."),
    ]);
    let names = ["bash".to_string(), "editor".to_string()];
    let tools = catalog::registry(Some(&names), &ToolSettings::default()).unwrap();
    let denier = FixedApprover(Decision::Deny {
        reason: Some("not on my machine".into()),
    });
    let agent = agent(&api.url(), tools, ApprovalPolicy::Ask, Box::new(denier), 10);
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&agent, &mut history, "tidy up").await;

    assert_eq!(outcome.status, RunStatus::Done);
    assert!(!marker.exists(), "the denied command ran");
    assert!(!notes.exists(), "the denied file was written");

    // The person was asked with the exact command and the diff; the view needed no one.
    let asked: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalNeeded { request } => Some(request.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        asked[0].plan.summary,
        format!("bash: touch {}", marker.display())
    );
    assert_eq!(
        asked[1].plan.detail.diff().unwrap(),
        format!(
            "--- /dev/null\n+++ {}\n@@ -0,0 +1 @@\n+secret plan\n",
            notes.display()
        )
    );

    let requests = api.requests();
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    let results = last_tool_results(&requests[1].body);
    assert_eq!(results.len(), 3);
    for denied in &results[..2] {
        assert_eq!(denied["is_error"], true);
        assert_eq!(
            result_text(denied),
            "the user denied this action: not on my machine"
        );
    }
    assert!(results[2].get("is_error").is_none());
    assert!(result_text(&results[2]).contains("excluding hidden items"));
}

/// A stop while a command runs ends the run at once and kills the command with everything it
/// started; the history stays valid for the next request.
#[tokio::test]
async fn a_stop_mid_command_kills_it_and_keeps_the_history_valid() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let api = StandIn::spawn([
        Turn::tool_use(
            "bash",
            json!({"command": format!("sleep 300 & echo $! > {}; wait", pid_file.display())}),
        ),
        Turn::text("Stopped, as you asked."),
    ]);
    let names = ["bash".to_string()];
    let tools = catalog::registry(Some(&names), &ToolSettings::default()).unwrap();
    let approver = FixedApprover(Decision::Approve);
    let agent = agent(
        &api.url(),
        tools,
        ApprovalPolicy::Auto,
        Box::new(approver),
        10,
    );
    let cancel = CancellationToken::new();
    let stopper = async {
        while !pid_file.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        cancel.cancel();
    };
    let mut history = Vec::new();
    let ((outcome, _), ()) = tokio::join!(
        run_collect(&agent, &mut history, "wait", &cancel, |_| {}),
        stopper
    );
    assert_eq!(outcome.status, RunStatus::Cancelled);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let gone = wait_until_gone(&pid).await;
    assert!(gone, "the command's child {pid} survived the stop");

    let (outcome, _) = run_prompt(&agent, &mut history, "never mind").await;
    assert_eq!(outcome.status, RunStatus::Done);
    let requests = api.requests();
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    let answered = &requests[1].body["messages"][2]["content"][0];
    assert_eq!(answered["type"], "tool_result");
    assert_eq!(answered["is_error"], true);
    assert_eq!(result_text(answered), "cancelled by the user");
}

/// A process run of the CLI: the model (the stand-in) makes a directory with bash, writes
/// and edits a file with the editor, and checks the result with bash in the same shell.
#[test]
fn ask_with_bash_and_editor_changes_files_end_to_end() {
    let session = BashEditorSession::new();
    let api = StandIn::spawn(session.turns());
    let (output, stdout, stderr) = cli::run(
        cli::deskhand_at(&api, &session.data)
            .arg("ask")
            .args(BashEditorSession::ASK_ARGS)
            .current_dir(&session.root)
            .env("OPENAI_API_KEY", "sk-other-provider"),
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");

    let requests = api.requests();
    assert_eq!(requests.len(), 6);
    assert!(requests.iter().all(|r| r.rejected.is_none()));
    let first = &requests[0];
    assert_eq!(
        first.body["tools"],
        json!([
            {"type": "bash_20250124", "name": "bash"},
            {"type": "text_editor_20250728", "name": EDITOR}
        ])
    );
    assert!(!first.headers.contains_key("anthropic-beta"));

    let results: Vec<Value> = requests[1..]
        .iter()
        .map(|r| last_tool_results(&r.body)[0].clone())
        .collect();
    for result in &results {
        assert!(result.get("is_error").is_none(), "{result}");
    }
    session.check(&results.iter().map(result_text).collect::<Vec<_>>());

    let events = cli::json_lines(&stdout);
    let decided: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "approval_decided")
        .collect();
    assert_eq!(decided.len(), 5);
    assert!(decided.iter().all(|e| e["by"] == "policy"));
    assert_eq!(events.last().unwrap()["status"], "done");
}

/// A prompt-injected model reads `~/.ssh/id_ed25519` directly, through a symlink and through
/// `..`: in auto mode each read asks, in read-only mode each is refused, and an ordinary file
/// is read without asking in both.
#[tokio::test]
async fn editor_views_of_secret_places_ask_in_auto_mode_and_are_refused_in_read_only_mode() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join("docs")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    std::fs::write(home.join("docs/readme.txt"), "just a readme\n").unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), home.join("docs/notes.txt")).unwrap();
    let view = |path: std::path::PathBuf| {
        (
            EDITOR,
            json!({"command": "view", "path": path.display().to_string()}),
        )
    };
    let calls = [
        view(home.join(".ssh/id_ed25519")),
        view(home.join("docs/notes.txt")),
        view(home.join("docs/../.ssh/id_ed25519")),
        view(home.join("docs/readme.txt")),
    ];
    for (policy, reason) in [
        (
            ApprovalPolicy::Auto,
            "the user denied this action: not my keys",
        ),
        (
            ApprovalPolicy::ReadOnly,
            "not allowed: it reads ~/.ssh, a secret place, which the read-only mode never allows",
        ),
    ] {
        let api = StandIn::spawn([Turn::tool_uses(calls.clone()), Turn::text("Fine.")]);
        let names = ["editor".to_string()];
        let tools = catalog::registry(Some(&names), &ToolSettings::default()).unwrap();
        // In read-only mode nobody may be asked: an approver that would approve shows it.
        let answer = match policy {
            ApprovalPolicy::ReadOnly => Decision::Approve,
            _ => Decision::Deny {
                reason: Some("not my keys".into()),
            },
        };
        let mut agent = agent(
            &api.url(),
            tools,
            policy,
            Box::new(FixedApprover(Decision::Approve)),
            10,
        );
        agent.gate = Arc::new(
            ApprovalGate::new(policy, Box::new(FixedApprover(answer)))
                .with_secret_places(SecretPlaces::new(Some(home), &[], &[])),
        );
        let mut history = Vec::new();
        let (outcome, events) = run_prompt(&agent, &mut history, "look around").await;
        assert_eq!(outcome.status, RunStatus::Done);

        let asked: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ApprovalNeeded { request } => Some(request.plan.summary.clone()),
                _ => None,
            })
            .collect();
        if policy == ApprovalPolicy::Auto {
            assert_eq!(asked.len(), 3, "{asked:?}");
            assert!(
                asked
                    .iter()
                    .all(|s| s.ends_with("(reads ~/.ssh, a secret place)")),
                "{asked:?}"
            );
        } else {
            assert!(asked.is_empty(), "{asked:?}");
        }
        let requests = api.requests();
        let results = last_tool_results(&requests[1].body);
        assert_eq!(results.len(), 4);
        for refused in &results[..3] {
            assert_eq!(refused["is_error"], true, "{policy:?}");
            assert_eq!(result_text(refused), reason);
        }
        assert!(result_text(&results[3]).contains("just a readme"));
        assert!(
            requests
                .iter()
                .all(|r| !r.body.to_string().contains("PRIVATE KEY")),
            "the key reached the model under {policy:?}"
        );
    }
}

/// Every editor command on a secret place asks in auto mode, not only `view`: a no-op
/// `str_replace` or an empty `insert` returned the file (issue 32). Denied, the key never
/// reaches the model and the file is as it was.
#[tokio::test]
async fn editor_edits_of_secret_places_ask_in_auto_mode_and_return_nothing_when_denied() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let key = home.join(".ssh/id_ed25519");
    std::fs::write(&key, "PRIVATE KEY\n").unwrap();
    let path = key.display().to_string();
    let calls = [
        (
            EDITOR,
            json!({"command": "str_replace", "path": path, "old_str": "PRIVATE", "new_str": "PRIVATE"}),
        ),
        (
            EDITOR,
            json!({"command": "insert", "path": path, "insert_line": 0, "new_str": ""}),
        ),
        (
            EDITOR,
            json!({"command": "create", "path": path, "file_text": "replaced\n"}),
        ),
    ];
    let api = StandIn::spawn([Turn::tool_uses(calls), Turn::text("Fine.")]);
    let names = ["editor".to_string()];
    let tools = catalog::registry(Some(&names), &ToolSettings::default()).unwrap();
    let mut agent = agent(
        &api.url(),
        tools,
        ApprovalPolicy::Auto,
        Box::new(FixedApprover(Decision::Approve)),
        10,
    );
    let deny = Decision::Deny {
        reason: Some("not my keys".into()),
    };
    agent.gate = Arc::new(
        ApprovalGate::new(ApprovalPolicy::Auto, Box::new(FixedApprover(deny)))
            .with_secret_places(SecretPlaces::new(Some(home), &[], &[])),
    );
    let mut history = Vec::new();
    let (outcome, events) = run_prompt(&agent, &mut history, "tidy the keys").await;
    assert_eq!(outcome.status, RunStatus::Done);
    let asked: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalNeeded { request } => Some(request.plan.summary.clone()),
            _ => None,
        })
        .collect();
    let results = last_tool_results(&api.requests()[1].body);
    assert_eq!(results.len(), 3);
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(
        asked
            .iter()
            .all(|s| s.ends_with("(works in ~/.ssh, a secret place)")),
        "{asked:?}"
    );
    for result in &results {
        assert_eq!(
            result_text(result),
            "the user denied this action: not my keys"
        );
    }
    assert!(
        api.requests()
            .iter()
            .all(|r| !r.body.to_string().contains("PRIVATE KEY")),
        "the key reached the model"
    );
    assert_eq!(std::fs::read_to_string(&key).unwrap(), "PRIVATE KEY\n");
}

/// The list is the person's to extend: `deskhand settings set secret-paths` adds places, and a
/// CLI run in read-only mode refuses to read them, as it refuses `~/.ssh` of `$HOME`.
#[test]
fn places_added_with_settings_set_secret_paths_are_refused_in_read_only_mode() {
    let data = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join("vault")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join("vault/token"), "TOKEN-1234\n").unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    std::fs::write(home.join("plain.txt"), "plain text\n").unwrap();
    let (output, _, stderr) = cli::run(cli::deskhand(data.path()).env("HOME", &home).args([
        "settings",
        "set",
        "secret-paths",
        "~/vault:/srv/other",
    ]));
    assert!(output.status.success(), "{stderr}");
    let (_, shown, _) = cli::run(cli::deskhand(data.path()).args(["settings"]));
    assert!(
        shown.contains(r#"secret-paths = ["~/vault","/srv/other"]"#),
        "{shown}"
    );
    let (output, _, stderr) =
        cli::run(cli::deskhand(data.path()).args(["settings", "set", "secret-paths", "vault"]));
    assert!(!output.status.success());
    assert!(stderr.contains("absolute"), "{stderr}");

    let view = |path: std::path::PathBuf| {
        (
            EDITOR,
            json!({"command": "view", "path": path.display().to_string()}),
        )
    };
    let api = StandIn::spawn([
        Turn::tool_uses([
            view(home.join("vault/token")),
            view(home.join(".ssh/id_rsa")),
            view(home.join("plain.txt")),
        ]),
        Turn::text("Fine."),
    ]);
    let (output, _, stderr) = cli::run(
        cli::deskhand_at(&api, data.path())
            .env("HOME", &home)
            .args(["ask", "--tools", "editor", "--approve", "deny", "look"]),
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results = last_tool_results(&api.requests()[1].body);
    assert_eq!(
        result_text(&results[0]),
        "not allowed: it reads ~/vault, a secret place, which the read-only mode never allows"
    );
    assert_eq!(
        result_text(&results[1]),
        "not allowed: it reads ~/.ssh, a secret place, which the read-only mode never allows"
    );
    assert!(result_text(&results[2]).contains("plain text"));
}
