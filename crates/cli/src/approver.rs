//! The CLI's approvals and stall questions: asked on the terminal, for `ask` and `tasks
//! watch` alike.

use std::io::IsTerminal;
use std::time::Instant;

use deskhand_engine::agent::stall::StallAnswer;
use deskhand_engine::agent::{ApprovalRequest, Decision};
use deskhand_engine::visible;

use crate::{keypress, printer};

/// The answer to the question about `request`, one key on the terminal: y = yes, n = no, then
/// an optional reason for the model on its own line, Esc = no, a = always for this kind, v =
/// the call in full, then the question again. Keys typed before the question was on screen
/// for a moment do not count (`keypress`). With no terminal it refuses, and says why.
pub async fn ask(request: &ApprovalRequest) -> Decision {
    let shown =
        |line: &str| printer::emphasized(line, std::io::stderr().is_terminal(), visible::text);
    // A batched call's one answer holds for all its actions: the question lists them.
    let summary = match request.batch.as_slice() {
        [] => shown(&request.plan.summary),
        batch => {
            let lines = batch.iter().enumerate();
            let lines: Vec<String> = lines
                .map(|(i, line)| format!("\n  {}. {}", i + 1, shown(line)))
                .collect();
            format!(
                "these {} actions, in order:{}\n",
                batch.len(),
                lines.concat()
            )
        }
    };
    if !std::io::stdin().is_terminal() {
        // `--approve auto` allows nothing more for an action whose argument came from
        // untrusted content: only a person does.
        let reason = match request.derived_from {
            Some(_) => {
                "no terminal to ask for approval (stdin is not a TTY); an action that comes from what the agent read asks in every mode"
            }
            None => {
                "no terminal to ask for approval (stdin is not a TTY); run with --approve auto to allow actions"
            }
        };
        eprintln!("deskhand: refused {summary}: {reason}");
        return Decision::Deny {
            reason: Some(reason.into()),
        };
    }
    // Everything the model chose is shown escaped, and the prompt says when it had to be:
    // a command must not be able to erase itself and draw a harmless one in its place.
    let diff = request.plan.detail.diff().unwrap_or_default();
    let hidden = visible::hidden_count(&request.plan.summary)
        + request
            .batch
            .iter()
            .map(|line| visible::hidden_count(line))
            .sum::<usize>()
        + visible::hidden_count(&request.plan.kind)
        + visible::hidden_count(diff);
    let warning = if hidden > 0 {
        format!(
            "\n⚠ this contains {hidden} control or invisible character{}, shown as \\e, \\r, \\u{{…}}",
            if hidden == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    // An action whose argument was read in a file, on the screen or in a tool's result says
    // where, and shows that text as it was read.
    let derived = request
        .derived_from
        .as_ref()
        .map(|derived| {
            let text: String = visible::text(&derived.text)
                .lines()
                .map(|line| format!("\n  │ {line}"))
                .collect();
            format!(
                "\n⚠ not from you: {} ({}):{text}",
                visible::line(&derived.sentence()),
                derived.source.name()
            )
        })
        .unwrap_or_default();
    let prompt = format!(
        "{warning}{derived}\nAllow {summary}? [y]es / [n]o / [v]iew in full / [a]lways for {} this session: ",
        visible::line(&request.plan.kind)
    );
    // An edit is approved by its diff, shown before the question.
    let diff = (!diff.is_empty()).then(|| visible::text(diff).into_owned());
    let full = in_full(request);
    let answer = tokio::task::spawn_blocking(move || {
        if let Some(diff) = diff {
            eprint!("\n{diff}");
        }
        one_key_answer(&prompt, &full)
    })
    .await;
    answer.unwrap_or_else(|_| Decision::Deny {
        reason: Some("could not read the answer".into()),
    })
}

/// Shows `prompt` and reads the key that answers it; `v` shows `full` and asks again.
fn one_key_answer(prompt: &str, full: &str) -> Decision {
    let could_not_read = || Decision::Deny {
        reason: Some("could not read the answer".into()),
    };
    let Some(terminal) = keypress::OneKey::start() else {
        return could_not_read();
    };
    loop {
        keypress::discard_pending_input();
        eprint!("{prompt}");
        let mut key = terminal.key_after(Instant::now());
        let key = loop {
            match key {
                None => return could_not_read(),
                Some(key) if b"ynavYNAV".contains(&key) || key == keypress::ESCAPE => {
                    break key.to_ascii_lowercase();
                }
                // Any other key (Enter, a letter typed by mistake) answers nothing.
                Some(_) => key = terminal.next_key(),
            }
        };
        match key {
            b'y' => {
                eprintln!("y");
                return Decision::Approve;
            }
            b'a' => {
                eprintln!("a");
                return Decision::ApproveKind;
            }
            b'v' => eprintln!("v\n{full}"),
            // Esc denies at once: an arrow key starts with it, and the rest of its bytes must
            // not become a reason.
            keypress::ESCAPE => {
                eprintln!("n");
                return Decision::Deny { reason: None };
            }
            _ => {
                eprint!("n\nReason for the model (optional, Enter to skip): ");
                drop(terminal);
                let mut line = String::new();
                let reason = std::io::stdin()
                    .read_line(&mut line)
                    .ok()
                    .map(|_| line.trim().to_string())
                    .filter(|reason| !reason.is_empty());
                return Decision::Deny { reason };
            }
        }
    }
}

/// The call as the model sent it, and the whole name of the element it touches, escaped:
/// what the `v` key shows when the question shortened them.
fn in_full(request: &ApprovalRequest) -> String {
    let input = serde_json::to_string_pretty(&request.input).unwrap_or_default();
    let mut out = format!(
        "The call in full ({} {}):\n{}",
        visible::line(&request.tool),
        visible::line(&request.plan.kind),
        visible::json(&input)
    );
    if let Some(target) = request.plan.target.as_deref().filter(|t| t.known) {
        out.push_str(&format!(
            "\nThe target's name in full ({} characters): {}",
            target.name.chars().count(),
            visible::line(&target.name)
        ));
    }
    out
}

/// The answer typed on the terminal when the agent seems stuck: c = go on, h TEXT = go on
/// with a hint, anything else = stop. Without a terminal nobody can answer: the run then ends
/// `stalled`.
pub async fn ask_stall(message: &str) -> StallAnswer {
    if !std::io::stdin().is_terminal() {
        return StallAnswer::NoOne;
    }
    let prompt = format!(
        "\nThe agent seems stuck: {}.\n[c]ontinue / [h]int <text for the agent> / [s]top: ",
        visible::line(message)
    );
    let answer = tokio::task::spawn_blocking(move || {
        // A line, for a hint; what was typed before the question was on screen for a moment
        // is thrown away, as for approvals.
        keypress::discard_pending_input();
        eprint!("{prompt}");
        std::thread::sleep(keypress::SETTLE);
        keypress::discard_pending_input();
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await;
    let Ok(Ok(line)) = answer else {
        return StallAnswer::NoOne;
    };
    let line = line.trim();
    match line.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('c') => StallAnswer::Continue,
        Some('h') => match line.get(1..).map(str::trim).filter(|t| !t.is_empty()) {
            Some(text) => StallAnswer::Hint { text: text.into() },
            None => StallAnswer::Continue,
        },
        _ => StallAnswer::Stop,
    }
}
