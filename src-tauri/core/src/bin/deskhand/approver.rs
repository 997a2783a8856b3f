//! The CLI's approvals and stall questions: asked on the terminal, for `ask` and `tasks
//! watch` alike.

use std::io::IsTerminal;

use deskhand::agent::stall::StallAnswer;
use deskhand::agent::{ApprovalRequest, Decision};
use deskhand::visible;

/// The answer typed on the terminal to the question about `request`: y = yes, n = no
/// (optionally "n reason"), a = always for this kind. With no terminal it refuses, and says
/// why.
pub async fn ask(request: &ApprovalRequest) -> Decision {
    let summary = visible::text(&request.plan.summary);
    if !std::io::stdin().is_terminal() {
        let reason = "no terminal to ask for approval (stdin is not a TTY); run with --approve auto to allow actions";
        eprintln!("deskhand: refused {summary}: {reason}");
        return Decision::Deny {
            reason: Some(reason.into()),
        };
    }
    // Everything the model chose is shown escaped, and the prompt says when it had to be:
    // a command must not be able to erase itself and draw a harmless one in its place.
    let diff = request.plan.detail.diff().unwrap_or_default();
    let hidden = visible::hidden_count(&request.plan.summary)
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
    let prompt = format!(
        "{warning}\nAllow {summary}? [y]es / [n]o (n <reason>) / [a]lways for {} this session: ",
        visible::line(&request.plan.kind)
    );
    // An edit is approved by its diff, shown before the question.
    let diff = (!diff.is_empty()).then(|| visible::text(diff).into_owned());
    let answer = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        if let Some(diff) = diff {
            eprint!("\n{diff}");
        }
        eprint!("{prompt}");
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await;
    let line = match answer {
        Ok(Ok(line)) => line,
        _ => {
            return Decision::Deny {
                reason: Some("could not read the answer".into()),
            };
        }
    };
    let line = line.trim();
    match line.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('y') => Decision::Approve,
        Some('a') => Decision::ApproveKind,
        _ => {
            let reason = line.get(1..).map(str::trim).filter(|r| !r.is_empty());
            Decision::Deny {
                reason: reason.map(str::to_string),
            }
        }
    }
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
        let mut line = String::new();
        eprint!("{prompt}");
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
