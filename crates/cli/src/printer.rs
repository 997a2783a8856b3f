//! How `ask` shows a run: text for people, JSON Lines for scripts. What the model, a tool or
//! a server said is shown through `deskhand_engine::visible`, so it cannot drive the terminal.

use std::io::{IsTerminal, Write};

use deskhand_engine::agent::{AgentEvent, Decision};
use deskhand_engine::llm::pricing::PriceSource;
use deskhand_engine::tools::plan::{PlanChange, PlanStep, StepStatus};
use deskhand_engine::{emphasis, visible};

/// Text mode: the assistant's words on stdout, everything else on stderr.
/// JSON mode: one event per line on stdout (full messages excepted: they carry image data).
pub struct Printer {
    pub json: bool,
    pub in_text: bool,
    /// A thinking line is open on stderr.
    pub in_thinking: bool,
    /// What the run's `started` said of its price, added to its cost.
    pub price_caveat: Option<&'static str>,
}

impl Printer {
    pub fn print(&mut self, event: &AgentEvent) {
        if self.json {
            if !matches!(event, AgentEvent::Message { .. })
                && let Ok(line) = serde_json::to_string(event)
            {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", visible::json(&line));
                let _ = out.flush();
            }
            return;
        }
        if let AgentEvent::ThinkingDelta { text } = event {
            // A quiet line on stderr, apart from the answer on stdout.
            let mut err = std::io::stderr().lock();
            if !std::mem::replace(&mut self.in_thinking, true) {
                let _ = err.write_all("· thinking: ".as_bytes());
            }
            let _ = err.write_all(visible::text(&text.replace('\n', " ")).as_bytes());
            let _ = err.flush();
            return;
        }
        if std::mem::take(&mut self.in_thinking) {
            eprintln!();
        }
        if let AgentEvent::TextDelta { text } = event {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(visible::text(text).as_bytes());
            let _ = out.flush();
            self.in_text = true;
            return;
        }
        let line = match event {
            AgentEvent::ToolCall { name, input, .. } => format!("→ {name} {input}"),
            AgentEvent::ApprovalDecided {
                decision: Decision::Deny { reason },
                ..
            } => {
                format!(
                    "✗ denied{}",
                    reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                )
            }
            AgentEvent::ToolResult {
                name,
                is_error,
                text,
                images,
                duration_ms,
                ..
            } => {
                let mark = if *is_error { "✗" } else { "✓" };
                let first: String = text
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(160)
                    .collect();
                // The screen tools' results say what they touched as a summary does.
                let mut summary = if matches!(name.as_str(), "computer" | "ui") {
                    emphasized(&first, std::io::stderr().is_terminal(), visible::line)
                } else {
                    visible::line(&first).into_owned()
                };
                if !images.is_empty() {
                    summary.push_str(&format!(" [{} image(s)]", images.len()));
                }
                self.end_text();
                eprintln!(
                    "{mark} {} ({duration_ms} ms) {summary}",
                    visible::line(name)
                );
                return;
            }
            AgentEvent::Retrying {
                attempt,
                delay_ms,
                error,
                ..
            } => {
                format!(
                    "… {error}; retry {attempt} in {:.1} s",
                    *delay_ms as f64 / 1000.0
                )
            }
            AgentEvent::Started {
                notes,
                price_source,
                warnings,
                model,
                ..
            } => {
                self.price_caveat = price_source.and_then(|source| source.caveat());
                let mut lines: Vec<String> =
                    warnings.iter().map(|w| format!("! warning: {w}")).collect();
                if *price_source == Some(PriceSource::Reseller) {
                    lines.push(format!(
                        "… the price of {model} comes from reseller lists, not its vendor: \
                         its costs, and any cost limit, are likely but not certain"
                    ));
                }
                if !notes.is_empty() {
                    let ids: Vec<String> = notes.iter().map(|n| n.id.to_string()).collect();
                    lines.push(format!(
                        "… {} note(s) in the prompt: {}",
                        notes.len(),
                        ids.join(", ")
                    ));
                }
                if lines.is_empty() {
                    return;
                }
                lines.join("\n")
            }
            AgentEvent::PlanUpdated {
                steps,
                changes,
                replanned,
            } => plan_lines(steps, changes, *replanned),
            AgentEvent::Error { message, .. } => format!("error: {message}"),
            // What the tool's result said is shown escaped, as every text from outside.
            AgentEvent::SuspectedInjection {
                origin,
                pattern,
                text,
                ..
            } => format!(
                "! suspected prompt injection ({pattern}) in {}: {}",
                deskhand_engine::visible::line(origin),
                deskhand_engine::visible::line(text)
            ),
            AgentEvent::StallDetected { step, message, .. } => {
                format!(
                    "⟳ stuck ({}): {message}",
                    serde_json::json!(step).as_str().unwrap_or_default()
                )
            }
            AgentEvent::CostForecast {
                forecast_cost_usd,
                max_cost_usd,
                forecast_tokens,
                max_tokens,
                max_turns,
                ..
            } => match (forecast_cost_usd, max_cost_usd) {
                (Some(f), Some(max)) if f > max => format!(
                    "! at this pace the run costs ${f:.2} by turn {max_turns}, over the budget of ${max:.2}"
                ),
                _ => format!(
                    "! at this pace the run uses {forecast_tokens} tokens by turn {max_turns}, over the budget of {}",
                    max_tokens.unwrap_or_default()
                ),
            },
            AgentEvent::Verification(v) => {
                let mut line = format!("[{}]", v.outcome.name());
                if let Some(check) = &v.check {
                    line.push_str(&format!(" check `{check}`"));
                }
                if let Some(code) = v.exit_code {
                    line.push_str(&format!(" exited {code}"));
                }
                if let Some(error) = &v.error {
                    line.push_str(&format!(": {error}"));
                }
                line
            }
            AgentEvent::ContextSummarized {
                upto,
                tokens_before,
                tokens_after,
            } => format!(
                "… summarized the first {upto} messages to fit the context ({tokens_before} → {tokens_after} tokens)"
            ),
            AgentEvent::Done {
                status,
                turns,
                usage,
                cost_usd,
                session_id,
            } => format!(
                "[{}] {turns} turn(s), {} input + {} output tokens{}, session {session_id}",
                status.name(),
                usage.input_tokens
                    + usage.cache_creation_input_tokens
                    + usage.cache_read_input_tokens,
                usage.output_tokens,
                cost_usd
                    .map(|c| match self.price_caveat {
                        Some(caveat) => format!(", ${c:.4} ({caveat})"),
                        None => format!(", ${c:.4}"),
                    })
                    .unwrap_or_default()
            ),
            AgentEvent::ChildEvent { task, event } => match child_line(event) {
                Some(line) => format!("  ↳ [task {}] {line}", short(task.as_str())),
                None => return,
            },
            _ => return,
        };
        self.end_text();
        eprintln!("{}", visible::text(&line));
    }

    /// Ends the assistant's line on stdout before a line on stderr.
    fn end_text(&mut self) {
        if std::mem::take(&mut self.in_text) {
            println!();
        }
    }
}

/// An action summary on the terminal (`emphasis`): escaped by `escape` (`visible::text` or
/// `visible::line`), the names from the screen bold (ANSI) when `tty`, plain otherwise; never
/// its markup.
pub fn emphasized(
    summary: &str,
    tty: bool,
    escape: impl Fn(&str) -> std::borrow::Cow<'_, str>,
) -> String {
    emphasis::render(
        summary,
        |text| escape(text).into_owned(),
        |text| {
            if tty {
                format!("\x1b[1m{text}\x1b[22m")
            } else {
                text.to_string()
            }
        },
    )
}

/// A delegated task's event as one line, for the steps worth a line: its actions, their
/// results, its errors and its end.
fn child_line(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::ToolCall { name, input, .. } => Some(format!("→ {name} {input}")),
        AgentEvent::ToolResult {
            is_error: true,
            text,
            ..
        } => Some(format!("✗ {text}")),
        AgentEvent::Error { message, .. } => Some(format!("error: {message}")),
        AgentEvent::Done { status, turns, .. } => {
            Some(format!("[{}] {turns} turn(s)", status.name()))
        }
        _ => None,
    }
}

/// The first characters of an id, enough to tell tasks apart on a terminal.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn mark(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Pending => "[ ]",
        StepStatus::InProgress => "[>]",
        StepStatus::Done => "[x]",
        StepStatus::Skipped => "[-]",
    }
}

/// A new plan in full (and on a replan, the steps it dropped); a change to a plan, one line
/// per change.
fn plan_lines(steps: &[PlanStep], changes: &[PlanChange], replanned: bool) -> String {
    let whole = replanned
        || changes
            .iter()
            .all(|c| matches!(c, PlanChange::Added { .. }));
    if whole {
        let mut out = String::from(if replanned {
            "plan (replanned):"
        } else {
            "plan:"
        });
        for step in steps {
            let new = if replanned
                && changes.contains(&PlanChange::Added {
                    id: step.id.clone(),
                    title: step.title.clone(),
                }) {
                " (new)"
            } else {
                ""
            };
            out.push_str(&format!(
                "\n  {} {}. {}{new}",
                mark(step.status),
                step.id,
                step.title
            ));
        }
        for change in changes {
            if let PlanChange::Removed { id, title } = change {
                out.push_str(&format!("\n  removed: {id}. {title}"));
            }
        }
        return out;
    }
    let lines: Vec<String> = changes
        .iter()
        .map(|change| match change {
            PlanChange::Status { id, to, .. } => {
                let title = steps
                    .iter()
                    .find(|s| &s.id == id)
                    .map_or("", |s| s.title.as_str());
                format!("plan: {} {id}. {title}", mark(*to))
            }
            PlanChange::Note { id, note } => format!("plan: {id}. note: {note}"),
            PlanChange::Retitled { id, to, .. } => format!("plan: {id}. now \"{to}\""),
            PlanChange::Added { id, title } => format!("plan: added {id}. {title}"),
            PlanChange::Removed { id, title } => format!("plan: removed {id}. {title}"),
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::{emphasized, visible};

    #[test]
    fn a_summary_is_bold_on_a_terminal_and_plain_elsewhere_never_markdown_nor_escapes() {
        let name = deskhand_engine::emphasis::escape("**7\x1b[31m**");
        let summary = format!("Click **{name}** (toggle button) in galculator");
        assert_eq!(
            emphasized(&summary, true, visible::line),
            "Click \x1b[1m**7\\e[31m**\x1b[22m (toggle button) in galculator"
        );
        assert_eq!(
            emphasized(&summary, false, visible::line),
            "Click **7\\e[31m** (toggle button) in galculator"
        );
    }
}
