//! The CLI's approver: asks on the terminal.

use std::io::IsTerminal;

use async_trait::async_trait;
use deskhand::agent::{ApprovalRequest, Approver, Decision};

/// Asks on the terminal: y = yes, n = no (optionally "n reason"), a = always for this kind.
/// With no terminal it refuses, and says why.
pub struct TerminalApprover;

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        if !std::io::stdin().is_terminal() {
            let reason = "no terminal to ask for approval (stdin is not a TTY); run with --approve auto to allow actions";
            eprintln!("deskhand: refused {}: {reason}", request.plan.summary);
            return Decision::Deny {
                reason: Some(reason.into()),
            };
        }
        let prompt = format!(
            "\nAllow {}? [y]es / [n]o (n <reason>) / [a]lways for {} this session: ",
            request.plan.summary, request.plan.kind
        );
        // An edit is approved by its diff, shown before the question.
        let diff = request.plan.detail["diff"].as_str().map(str::to_string);
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
}
