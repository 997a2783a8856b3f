//! What reaches a person's terminal: `deskhand` run on a real pseudo-terminal (python3's
//! `pty`), with a hostile model, tool output and imported session. No control character from
//! outside may reach the terminal raw, and the approval prompt shows the real command.

use crate::support::API_KEY;
use crate::support::cli::{PROMPT_END, deskhand, on_terminal, run};
use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};

/// Fails on any byte that a terminal would act on: ESC, BEL, C1 introducers, and a carriage
/// return that is not the terminal's own line ending (the pty turns `\n` into `\r\n`).
fn assert_no_raw_controls(screen: &[u8]) {
    let text = String::from_utf8_lossy(screen);
    for (at, c) in text.char_indices() {
        let lone_cr = c == '\r' && !text[at + 1..].starts_with('\n');
        let control = c.is_control() && c != '\n' && c != '\r' && c != '\t';
        assert!(
            !(lone_cr || control || deskhand_engine::visible::is_hidden(c) && c > '\u{7f}'),
            "a raw {c:?} reached the terminal at byte {at}:\n{text}"
        );
    }
}

#[test]
fn a_hostile_command_tool_output_and_reply_are_shown_escaped_on_the_terminal() {
    let data = tempfile::tempdir().unwrap();
    let ran = data.path().join("ran.txt");
    // The command erases its own line and draws a harmless-looking prompt in its place (a
    // bidi override for good measure); what it prints writes the clipboard (OSC 52) and the
    // window title.
    let command = format!(
        "printf 'real\\n' > {}; printf 'x\\033]52;c;ZXZpbA==\\a\\033]0;owned\\a\\n' #\u{202e}\r\u{1b}[2K\u{1b}[1AAllow bash: ls -la?",
        ran.display()
    );
    // An edit whose diff would write the clipboard when shown.
    let notes = data.path().join("notes.txt");
    let api = StandIn::spawn([
        Turn::tool_use("bash", json!({ "command": command })),
        Turn::tool_use(
            "str_replace_based_edit_tool",
            json!({"command": "create", "path": notes, "file_text": "note\u{1b}]52;c;ZXZpbA==\u{7}\n"}),
        ),
        Turn::text("All done.\u{1b}[2J\u{1b}[H\u{202e}gnp.exe"),
    ]);
    let (status, screen) = on_terminal(
        data.path(),
        &[
            ("ANTHROPIC_API_KEY", API_KEY.to_string()),
            ("ANTHROPIC_BASE_URL", api.url()),
        ],
        "y",
        &[
            "ask",
            "--tools",
            "bash,editor",
            "--approve",
            "ask",
            "tidy up",
        ],
    );
    // The same run as JSON Lines: each line the same event, hidden characters as escapes.
    let again = StandIn::spawn([Turn::text("All done.\u{1b}[2J\u{9b}2J\u{202e}gnp.exe")]);
    let (json_status, json_screen) = on_terminal(
        data.path(),
        &[
            ("ANTHROPIC_API_KEY", API_KEY.to_string()),
            ("ANTHROPIC_BASE_URL", again.url()),
        ],
        "n",
        &["ask", "--json", "tidy up"],
    );
    assert_eq!(json_status, 0);
    assert_no_raw_controls(&json_screen);
    let deltas: String = String::from_utf8_lossy(&json_screen)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l.trim_end()).unwrap())
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(deltas, "All done.\u{1b}[2J\u{9b}2J\u{202e}gnp.exe");
    let text = String::from_utf8_lossy(&screen);
    assert_eq!(status, 0, "{text}");
    assert_no_raw_controls(&screen);
    // The prompt carries the whole real command, its hidden part made visible, and says so.
    let prompt = text
        .lines()
        .find(|l| l.contains(PROMPT_END.trim_end()))
        .unwrap_or_else(|| panic!("no approval prompt:\n{text}"));
    assert!(
        prompt.contains(&format!(
            "Allow bash: printf 'real\\n' > {}; printf",
            ran.display()
        )),
        "{prompt}"
    );
    assert!(
        prompt.contains("#\\u{202e}\\r\\e[2K\\e[1AAllow bash: ls -la??"),
        "{prompt}"
    );
    assert!(
        text.contains("4 control or invisible characters"),
        "the prompt warns: {text}"
    );
    // Answering `y` ran the command that was shown.
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "real\n");
    assert!(
        text.contains("x\\e]52;c;ZXZpbA==\\u{7}\\e]0;owned\\u{7}"),
        "the tool result is escaped: {text}"
    );
    assert!(
        text.contains("+note\\e]52;c;ZXZpbA==\\u{7}\r\n"),
        "the diff is escaped: {text}"
    );
    assert!(
        text.contains("2 control or invisible characters"),
        "the edit's prompt warns: {text}"
    );
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "note\u{1b}]52;c;ZXZpbA==\u{7}\n",
        "what runs is what the model sent, only the display is escaped"
    );
    assert!(
        text.contains("All done.\\e[2J\\e[H\\u{202e}gnp.exe"),
        "the reply is escaped: {text}"
    );
}

#[test]
fn a_hostile_imported_session_title_and_id_are_shown_escaped() {
    let api = StandIn::spawn([Turn::text("hi")]);
    let first = tempfile::tempdir().unwrap();
    let (output, _, stderr) = run(deskhand(first.path())
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_BASE_URL", api.url())
        .args(["ask", "hello"]));
    assert!(output.status.success(), "{stderr}");
    let (_, id, _) = run(deskhand(first.path()).args(["sessions", "list", "--json"]));
    let id = serde_json::from_str::<Value>(&id).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, export, _) = run(deskhand(first.path()).args(["sessions", "export", &id]));
    let mut export: Value = serde_json::from_str(&export).unwrap();
    let title = "Groceries\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{9b}2J\u{202e}txt.sh";
    export["session"]["title"] = json!(title);
    let second = tempfile::tempdir().unwrap();
    let file = second.path().join("hostile.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let (status, screen) = on_terminal(
        second.path(),
        &[],
        "n",
        &["sessions", "import", &file.display().to_string()],
    );
    assert_eq!(status, 0, "{}", String::from_utf8_lossy(&screen));
    // The import drops the title's control characters; a rename keeps what it is given.
    let (output, _, stderr) = run(deskhand(second.path()).args(["sessions", "rename", &id, title]));
    assert!(output.status.success(), "{stderr}");
    // The id is the file's word too: one that is not an id is refused, and the refusal,
    // which quotes it, reaches the terminal escaped.
    export["session"]["id"] = json!("evil\u{1b}[2J\u{1b}]0;owned\u{7}");
    std::fs::write(&file, export.to_string()).unwrap();
    let (status, screen) = on_terminal(
        second.path(),
        &[],
        "n",
        &["sessions", "import", &file.display().to_string()],
    );
    assert_ne!(status, 0, "{}", String::from_utf8_lossy(&screen));
    assert_no_raw_controls(&screen);

    for args in [
        &["sessions", "list"][..],
        &["sessions", "show", &id],
        &["sessions", "search", "hello"],
    ] {
        let (status, screen) = on_terminal(second.path(), &[], "n", args);
        let text = String::from_utf8_lossy(&screen);
        assert_eq!(status, 0, "{args:?}: {text}");
        assert_no_raw_controls(&screen);
        assert!(
            text.contains("Groceries\\e]52;c;ZXZpbA==\\u{7}\\e[2J\\u{9b}2J\\u{202e}txt.sh"),
            "{args:?}: {text}"
        );
    }
    // JSON on a terminal: the same value, its hidden characters as JSON escapes.
    for args in [
        &["sessions", "list", "--json"][..],
        &["sessions", "show", &id, "--json"],
        &["sessions", "search", "hello", "--json"],
        &["sessions", "export", &id],
    ] {
        let (status, screen) = on_terminal(second.path(), &[], "n", args);
        let text = String::from_utf8_lossy(&screen);
        assert_eq!(status, 0, "{args:?}: {text}");
        assert_no_raw_controls(&screen);
        assert!(text.contains(r"\u009b2J\u202etxt.sh"), "{args:?}: {text}");
        let json = text.replace("\r\n", "\n");
        let shown = serde_json::Deserializer::from_str(&json)
            .into_iter::<Value>()
            .map(Result::unwrap)
            .collect::<Vec<_>>();
        assert!(
            shown
                .iter()
                .any(|v| v.to_string().contains(&json!(title).to_string())),
            "{args:?}: the title survives as the same JSON value"
        );
    }
    let (status, screen) = on_terminal(second.path(), &[], "n", &["sessions", "delete", &id]);
    assert_eq!(status, 0, "{}", String::from_utf8_lossy(&screen));
    assert_no_raw_controls(&screen);
}

/// `deskhand ask --tools bash --approve ask` on a pty, where the model runs `touch FILE` for
/// each file in turn; `env` steers the pty driver (type-ahead, answers per prompt). Returns
/// which files exist afterwards, and the screen.
fn touch_on_terminal(files: &[&str], env: &[(&str, String)]) -> (Vec<bool>, String) {
    let data = tempfile::tempdir().unwrap();
    let paths: Vec<_> = files.iter().map(|f| data.path().join(f)).collect();
    let mut turns: Vec<Turn> = paths
        .iter()
        .map(|p| {
            Turn::tool_use(
                "bash",
                json!({ "command": format!("touch {}", p.display()) }),
            )
        })
        .collect();
    turns.push(Turn::text("Done."));
    let api = StandIn::spawn(turns);
    let mut env = env.to_vec();
    env.push(("ANTHROPIC_API_KEY", API_KEY.to_string()));
    env.push(("ANTHROPIC_BASE_URL", api.url()));
    let (status, screen) = on_terminal(
        data.path(),
        &env,
        "n",
        &[
            "ask",
            "--tools",
            "bash",
            "--approve",
            "ask",
            "touch the files",
        ],
    );
    let screen = String::from_utf8_lossy(&screen).into_owned();
    assert_eq!(status, 0, "{screen}");
    (paths.iter().map(|p| p.exists()).collect(), screen)
}

#[test]
fn keys_typed_before_a_prompt_do_not_answer_it() {
    // `y⏎` typed before any prompt, then `n` at the prompt: the command does not run.
    let (ran, screen) = touch_on_terminal(&["ahead"], &[("PTY_TYPE_AHEAD", "y\n".into())]);
    assert_eq!(ran, [false], "{screen}");
    // A key pressed 200 ms after the prompt appeared is too early to count; `n` a second
    // later is the answer.
    let (ran, screen) = touch_on_terminal(
        &["early"],
        &[(
            "PTY_ANSWERS",
            json!([[[0.2, "y"], [1.2, "n\n"]]]).to_string(),
        )],
    );
    assert_eq!(ran, [false], "{screen}");
}

#[test]
fn one_key_answers_one_prompt() {
    // `y⏎y⏎` at the first prompt approves the first command only; the second is denied.
    let (ran, screen) = touch_on_terminal(
        &["one", "two"],
        &[("PTY_ANSWERS", json!(["y\ny\n", "n\n"]).to_string())],
    );
    assert_eq!(ran, [true, false], "{screen}");
    // `y` with no Enter answers at once.
    let (ran, screen) = touch_on_terminal(&["three"], &[("PTY_ANSWERS", json!(["y"]).to_string())]);
    assert_eq!(ran, [true], "{screen}");
}

#[test]
fn the_v_key_shows_the_call_in_full_and_asks_again() {
    let (ran, screen) = touch_on_terminal(
        &["viewed"],
        &[("PTY_ANSWERS", json!(["v", "y"]).to_string())],
    );
    assert_eq!(ran, [true], "{screen}");
    let full = screen.find("The call in full (bash bash):").expect(&screen);
    assert!(screen[full..].contains("\"command\": \"touch "), "{screen}");
    assert_eq!(
        screen.matches(PROMPT_END).count(),
        2,
        "asked again: {screen}"
    );
}
