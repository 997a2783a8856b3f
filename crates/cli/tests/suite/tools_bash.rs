//! The bash tool on a real bash: state that persists, timeouts that kill, capped output,
//! restarts, stops and bytes that are not UTF-8.

use std::path::Path;
use std::time::Duration;

use crate::support::{output_text, wait_until_gone};
use deskhand_engine::tools::bash::{BashTool, DEFAULT_OUTPUT_LIMIT};
use deskhand_engine::tools::{ActionDetail, Tool, ToolContext, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn bash() -> BashTool {
    BashTool::new(Duration::from_secs(30), DEFAULT_OUTPUT_LIMIT)
}

fn ctx() -> ToolContext {
    ToolContext::new(CancellationToken::new())
}

async fn run(tool: &BashTool, command: &str) -> ToolOutput {
    tool.run(&json!({ "command": command }), &ctx()).await
}

#[tokio::test]
async fn working_directory_variables_and_functions_carry_over() {
    let dir = tempfile::tempdir().unwrap();
    let tool = bash();
    let first = run(
        &tool,
        &format!(
            "cd {}\nexport GREETING=hello\ncount=41\nshout() {{ echo \"$1!\"; }}",
            dir.path().display()
        ),
    )
    .await;
    assert!(!first.is_error, "{}", output_text(&first));
    assert_eq!(output_text(&first), "(no output)");

    let second = run(&tool, "pwd; echo $GREETING $((count + 1)); shout hi").await;
    assert!(!second.is_error);
    assert_eq!(
        output_text(&second),
        format!(
            "{}\nhello 42\nhi!\n",
            dir.path().canonicalize().unwrap().display()
        )
    );
}

#[tokio::test]
async fn stdout_stderr_and_the_exit_status_all_come_back() {
    let tool = bash();
    let output = run(
        &tool,
        "echo to-out; echo to-err >&2; printf 'no newline'; false",
    )
    .await;
    assert!(
        !output.is_error,
        "a failing command is a result, not a tool error"
    );
    assert_eq!(
        output_text(&output),
        "to-out\nno newline\n[stderr]\nto-err\n[exit status 1]"
    );
}

#[tokio::test]
async fn a_syntax_error_fails_that_command_only() {
    let tool = bash();
    let broken = run(&tool, "echo 'never closed").await;
    let shown = output_text(&broken);
    assert!(shown.contains("[stderr]"), "{shown}");
    assert!(shown.contains("unexpected EOF"), "{shown}");
    assert!(shown.ends_with("[exit status 2]"), "{shown}");
    assert_eq!(
        output_text(&run(&tool, "echo still here").await),
        "still here\n"
    );
}

#[tokio::test]
async fn commands_read_no_input() {
    let tool = bash();
    let output = run(
        &tool,
        "read line; echo \"read: [$line] $?\"; cat; echo done",
    )
    .await;
    assert_eq!(output_text(&output), "read: [] 1\ndone\n");
}

#[tokio::test]
async fn bytes_that_are_not_utf8_are_replaced() {
    let tool = bash();
    let output = run(&tool, r"printf 'a\xff\xfeb\n'; printf '\xc3' >&2").await;
    assert!(!output.is_error);
    assert_eq!(
        output_text(&output),
        "a\u{fffd}\u{fffd}b\n[stderr]\n\u{fffd}"
    );
    assert_eq!(output_text(&run(&tool, "echo fine").await), "fine\n");
}

#[tokio::test]
async fn long_output_keeps_its_start_and_end() {
    let tool = BashTool::new(Duration::from_secs(30), 2_000);
    let output = run(&tool, "seq 1 100000; seq 1 5000 >&2").await;
    assert!(!output.is_error);
    let shown = output_text(&output);
    let (stdout, stderr) = shown.split_once("[stderr]\n").unwrap();
    assert!(stdout.starts_with("1\n2\n3\n"), "{stdout}");
    assert!(stdout.ends_with("99999\n100000\n"), "{stdout}");
    // seq 1 100000 prints 588,895 bytes; 1,000 are kept from each end.
    assert!(
        stdout.contains("[... 586895 bytes ("),
        "the note says how much was cut: {stdout}"
    );
    assert!(stderr.starts_with("1\n2\n") && stderr.ends_with("4999\n5000\n"));
    assert!(stderr.contains("cut from the middle"));
    assert!(shown.len() < 5_000, "{} bytes", shown.len());
}

#[tokio::test]
async fn a_command_past_its_timeout_is_killed_and_the_shell_starts_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let tool = BashTool::new(Duration::from_secs(1), DEFAULT_OUTPUT_LIMIT);
    run(&tool, "export MARK=before").await;
    let output = run(
        &tool,
        &format!(
            "echo $$ > {p}; sleep 300 & echo $! >> {p}; echo started; sleep 300",
            p = pids.display()
        ),
    )
    .await;
    assert!(output.is_error);
    let shown = output_text(&output);
    assert!(
        shown.starts_with("started\n"),
        "partial output is kept: {shown}"
    );
    assert!(
        shown.contains("timed out after 1 s: the command was killed"),
        "{shown}"
    );
    let pids = std::fs::read_to_string(&pids).unwrap();
    for pid in pids.lines() {
        assert!(wait_until_gone(pid).await, "process {pid} still runs");
    }
    let after = run(&tool, "echo \"mark=[$MARK]\"").await;
    assert!(!after.is_error);
    assert_eq!(output_text(&after), "mark=[]\n", "a fresh shell");
}

#[tokio::test]
async fn restart_gives_a_fresh_shell_and_ends_the_old_ones_jobs() {
    let tool = bash();
    let started = run(&tool, "export MARK=old; sleep 300 & echo $!").await;
    let job = output_text(&started);
    let restarted = tool.run(&json!({"restart": true}), &ctx()).await;
    assert!(!restarted.is_error);
    assert_eq!(output_text(&restarted), "The shell has been restarted.");
    assert!(wait_until_gone(&job).await, "background job {job} survived");
    assert_eq!(output_text(&run(&tool, "echo \"[$MARK]\"").await), "[]\n");
}

#[tokio::test]
async fn exit_ends_the_shell_and_the_next_command_gets_a_new_one() {
    let tool = bash();
    let output = run(&tool, "echo bye; exit 5").await;
    let shown = output_text(&output);
    assert!(shown.starts_with("bye\n"), "{shown}");
    assert!(
        shown.contains("the shell exited (exit status: 5)"),
        "{shown}"
    );
    assert_eq!(output_text(&run(&tool, "echo again").await), "again\n");
}

#[tokio::test]
async fn a_stop_kills_the_running_command() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let tool = bash();
    let cancel = CancellationToken::new();
    let ctx = ToolContext::new(cancel.clone());
    let command = json!({"command": format!("sleep 300 & echo $! > {}; wait", pid_file.display())});
    let stopper = async {
        while !Path::new(&pid_file).exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
    };
    let (output, ()) = tokio::join!(tool.run(&command, &ctx), stopper);
    assert!(output.is_error);
    assert!(
        output_text(&output).contains("cancelled"),
        "{}",
        output_text(&output)
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(wait_until_gone(&pid).await, "sleep {pid} survived the stop");
    assert_eq!(output_text(&run(&tool, "echo next").await), "next\n");
}

#[test]
fn the_plan_shows_the_exact_command() {
    let tool = bash();
    let plan = tool
        .plan(&json!({"command": "rm -rf build && make -j2 'all'"}))
        .unwrap();
    assert_eq!(plan.kind, "bash");
    assert!(!plan.read_only);
    assert_eq!(plan.summary, "bash: rm -rf build && make -j2 'all'");
    assert!(matches!(
        &plan.detail,
        ActionDetail::Command { command, .. } if command == "rm -rf build && make -j2 'all'"
    ));
    assert!(tool.plan(&json!({})).is_err());
    assert!(tool.plan(&json!({"command": "  "})).is_err());
    assert_eq!(
        tool.plan(&json!({"restart": true})).unwrap().summary,
        "restart the bash shell"
    );
    let definition = tool.definition();
    assert_eq!(
        definition.anthropic.unwrap().definition,
        json!({"type": "bash_20250124", "name": "bash"})
    );
    assert_eq!(definition.input_schema["type"], "object");
    assert!(definition.description.contains("persistent"));
}

/// The shell's environment is the allowlist and the names the person passes on: a listed
/// secret, a variable Deskhand set for itself and an unlisted one stay out. It runs in a
/// process of its own: it sets the environment and the names passed on, which are the
/// process's, and a run in a test beside it sets the names too.
#[test]
fn the_shell_gets_only_the_allowlist_and_the_listed_names_never_a_secret() {
    let child =
        crate::support::rss::measure(module_path!(), "child_environment", Duration::from_secs(60));
    assert!(
        child.passed,
        "`child_environment` failed in its child process (see above)"
    );
}

#[tokio::test]
#[ignore = "run by the_shell_gets_only_the_allowlist_and_the_listed_names_never_a_secret in a child process"]
async fn child_environment() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    // SAFETY: this process runs this test alone (see above).
    unsafe {
        std::env::set_var("DESKHAND_TEST_EXAMPLE_API_KEY", "sk-test-not-for-the-model");
        std::env::set_var("DESKHAND_TEST_OWN_SETTING", "for deskhand only");
        std::env::set_var("DESKHAND_TEST_PERSONS_SETTING", "for every program");
        std::env::set_var("DESKHAND_TEST_UNLISTED", "not listed");
        std::env::set_var("DESKHAND_TEST_DATABASE_URL", "postgres://u:pw@db/x");
    }
    deskhand_engine::program_env::withhold_from_programs(vec!["DESKHAND_TEST_OWN_SETTING".into()]);
    deskhand_engine::program_env::pass_on(
        [
            "DESKHAND_TEST_EXAMPLE_API_KEY",
            "DESKHAND_TEST_OWN_SETTING",
            "DESKHAND_TEST_PERSONS_SETTING",
            "DESKHAND_TEST_DATABASE_URL",
        ]
        .map(String::from)
        .to_vec(),
    );
    let tool = bash();
    let output = run(
        &tool,
        "echo \"${DESKHAND_TEST_EXAMPLE_API_KEY-unset} ${DESKHAND_TEST_OWN_SETTING-unset} \
         ${DESKHAND_TEST_PERSONS_SETTING-unset} ${DESKHAND_TEST_UNLISTED-unset} \
         ${DESKHAND_TEST_DATABASE_URL-unset} ${PATH:+path}\"",
    )
    .await;
    assert_eq!(
        output_text(&output),
        "unset unset for every program unset unset path\n"
    );
}

/// Issue 14: what leaves the shell's process group (`setsid`) or is orphaned on the way
/// (`(cmd &)`) ends at the timeout too, and when the tool goes (the end of a run).
#[tokio::test]
async fn setsid_and_orphaned_processes_end_at_the_timeout_and_with_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let escape = format!(
        "setsid sleep 300 > /dev/null 2>&1 & echo $! >> {p}; (sleep 301 & echo $! >> {p}); \
         (setsid tail -f /dev/null > /dev/null 2>&1 & echo $! >> {p})",
        p = pids.display()
    );
    let tool = BashTool::new(Duration::from_secs(1), DEFAULT_OUTPUT_LIMIT);
    let output = run(&tool, &format!("{escape}; sleep 300")).await;
    assert!(output.is_error, "{}", output_text(&output));
    let started = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(started.lines().count(), 3, "{started}");
    for pid in started.lines() {
        assert!(
            wait_until_gone(pid).await,
            "process {pid} outlived the timeout"
        );
    }

    std::fs::remove_file(&pids).unwrap();
    let output = run(&tool, &escape).await;
    assert!(!output.is_error, "{}", output_text(&output));
    drop(tool);
    let started = std::fs::read_to_string(&pids).unwrap();
    for pid in started.lines() {
        assert!(
            wait_until_gone(pid).await,
            "process {pid} outlived the tool"
        );
    }
}

/// Issue 14: what a background job writes between two commands is not charged to the
/// second one: it comes under its own heading.
#[tokio::test]
async fn output_of_background_jobs_between_commands_is_labelled() {
    let tool = bash();
    let done = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    std::fs::remove_file(&done).unwrap();
    let job = format!(
        "(sleep 0.2; echo late; echo late-err >&2; touch {}) &",
        done.display()
    );
    let first = run(&tool, &job).await;
    assert_eq!(output_text(&first), "(no output)");
    // The job has written both lines once it touched its file.
    assert!(crate::support::wait_until(Duration::from_secs(5), || done.exists()));
    let second = run(&tool, "echo now").await;
    assert_eq!(
        output_text(&second),
        "now\n[output of background jobs, written before this command started]\n\
         late\n[stderr]\nlate-err\n"
    );
    assert_eq!(output_text(&run(&tool, "echo quiet").await), "quiet\n");
}

/// The session id (field 6 of `/proc/PID/stat`, after the name's closing parenthesis).
fn session_of(stat: &str) -> String {
    let (_, rest) = stat.rsplit_once(')').expect("a stat line");
    rest.split_whitespace()
        .nth(3)
        .expect("a session field")
        .to_string()
}

/// Issue 31: the shell runs in a session of its own, so it has no controlling terminal: a
/// command (or a loop it left running) cannot open `/dev/tty` to type into the CLI's
/// approval prompt (TIOCSTI).
#[tokio::test]
async fn the_shell_has_no_controlling_terminal() {
    let tool = bash();
    let output = run(&tool, "cat /proc/$$/stat").await;
    assert!(!output.is_error, "{}", output_text(&output));
    let mine = std::fs::read_to_string("/proc/self/stat").unwrap();
    let shell = session_of(&output_text(&output));
    assert_ne!(
        shell,
        session_of(&mine),
        "the shell shares Deskhand's session"
    );

    // ENXIO: the process has no controlling terminal (not: the file is missing or denied).
    for command in [": < /dev/tty", "python3 -c \"open('/dev/tty')\""] {
        let output = run(&tool, &format!("{command} 2>&1 | tail -n 1")).await;
        assert!(
            output_text(&output).contains("No such device or address"),
            "{command}: {}",
            output_text(&output)
        );
    }
}
