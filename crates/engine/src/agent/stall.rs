//! The stall breaker: notices when the agent loops on the screen (the same action on the
//! same screen, a cycle between two or three screens, or actions that change nothing) and
//! climbs a ladder: a note to the model, then a question to the person, then the end of the
//! run with the status `stalled` where nobody answers.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approval::ApprovalGate;
use super::outcome::EventSink;
use crate::agent::AgentEvent;
use crate::ids::ToolUseId;
use crate::llm::ToolResultContent;
use crate::tools::ToolOutput;
use crate::tools::computer::fingerprint::same_screen;
pub use deskhand_protocol::stall::{StallAnswer, StallPattern, StallQuestion, StallStep};

/// When the breaker steps in. Counts below 2 are raised to 2: one step is no pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StallPolicy {
    pub enabled: bool,
    /// The same action on a near-identical screen this many times in a row.
    pub repeats: u32,
    /// This many actions in a row that changed nothing on the screen.
    pub no_ops: u32,
    /// A cycle between two or three screens that goes round this many times.
    pub cycles: u32,
    /// How long a question to the person waits for an answer before the run ends `stalled`.
    pub ask_timeout: Duration,
}

impl Default for StallPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            repeats: 3,
            no_ops: 3,
            cycles: 3,
            ask_timeout: Duration::from_secs(600),
        }
    }
}

impl StallPolicy {
    /// Stored settings (`deskhand settings set stall-…`) every run reads unless a flag says
    /// otherwise.
    pub const REPEATS_SETTING: &'static str = "stall.repeats";
    pub const NO_OPS_SETTING: &'static str = "stall.no_ops";
    pub const CYCLES_SETTING: &'static str = "stall.cycles";
}

/// One computer action as the breaker remembers it.
struct Step {
    id: ToolUseId,
    action: String,
    hash: u64,
    changed: bool,
}

/// The breaker's state for one run.
pub struct StallBreaker {
    policy: StallPolicy,
    steps: VecDeque<Step>,
    /// Whether the step before this one was already noted: a stall that goes on is asked.
    noted: bool,
}

impl StallBreaker {
    pub fn new(policy: StallPolicy) -> Self {
        Self {
            policy,
            steps: VecDeque::new(),
            noted: false,
        }
    }

    /// Looks at one finished tool call. A note is added to `output`, the person is asked
    /// (their hint is added to `output` too), and `true` means the run ends `stalled`.
    #[allow(clippy::too_many_arguments)]
    pub async fn after_step(
        &mut self,
        id: &ToolUseId,
        name: &str,
        input: &Value,
        output: &mut ToolOutput,
        gate: &ApprovalGate,
        sink: &mut EventSink<'_>,
        cancel: &CancellationToken,
    ) -> bool {
        let Some(screen) = output.screen.filter(|_| self.policy.enabled) else {
            return false;
        };
        self.steps.push_back(Step {
            id: id.clone(),
            action: format!("{name} {input}"),
            hash: screen.hash,
            changed: screen.changed,
        });
        let longest = (self.policy.cycles.max(2) * 3).max(self.policy.repeats.max(2));
        while self.steps.len() > longest.max(self.policy.no_ops.max(2)) as usize {
            self.steps.pop_front();
        }
        let Some((pattern, count)) = self.detect() else {
            self.noted = false;
            return false;
        };
        let steps: Vec<ToolUseId> = self
            .steps
            .iter()
            .rev()
            .take(count)
            .rev()
            .map(|s| s.id.clone())
            .collect();
        let message = describe(pattern, count);
        if !self.noted {
            self.noted = true;
            sink(AgentEvent::StallDetected {
                pattern,
                steps,
                step: StallStep::Note,
                message: message.clone(),
            });
            note(
                output,
                format!(
                    "[Deskhand] You seem to be stuck: {message}. Do not repeat it: zoom in to look \
                 closer, try another way (a keyboard shortcut, another control), or ask the \
                 person."
                ),
            );
            return false;
        }
        sink(AgentEvent::StallDetected {
            pattern,
            steps: steps.clone(),
            step: StallStep::Ask,
            message: message.clone(),
        });
        let question = StallQuestion {
            tool_use_id: id.clone(),
            pattern,
            message: message.clone(),
        };
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.policy.ask_timeout, gate.ask_stall(&question)) => {
                answer.unwrap_or(StallAnswer::NoOne)
            }
            () = cancel.cancelled() => StallAnswer::Stop,
        };
        sink(AgentEvent::StallAnswered {
            answer: answer.clone(),
        });
        match answer {
            StallAnswer::Continue | StallAnswer::Hint { .. } => {
                self.steps.clear();
                self.noted = false;
                if let StallAnswer::Hint { text } = answer {
                    note(
                        output,
                        format!("[Deskhand] The person was asked and says: {text}"),
                    );
                } else {
                    note(
                        output,
                        "[Deskhand] The person was asked and says to go on.".into(),
                    );
                }
                false
            }
            StallAnswer::Stop | StallAnswer::NoOne => {
                sink(AgentEvent::StallDetected {
                    pattern,
                    steps,
                    step: StallStep::Stalled,
                    message,
                });
                note(
                    output,
                    "[Deskhand] The run was stopped because it is stuck.".into(),
                );
                true
            }
        }
    }

    /// The pattern the latest steps show, and how many steps show it.
    fn detect(&self) -> Option<(StallPattern, usize)> {
        let steps: Vec<&Step> = self.steps.iter().rev().collect(); // newest first
        let repeats = self.policy.repeats.max(2) as usize;
        if steps.len() >= repeats
            && steps[..repeats]
                .iter()
                .all(|s| s.action == steps[0].action && same_screen(s.hash, steps[0].hash))
        {
            return Some((StallPattern::SameAction, repeats));
        }
        for period in [2, 3] {
            let span = period * self.policy.cycles.max(2) as usize;
            let periodic = steps.len() >= span
                && (period..span).all(|i| same_screen(steps[i].hash, steps[i - period].hash))
                && (1..period).all(|i| !same_screen(steps[i].hash, steps[0].hash));
            if periodic {
                return Some((StallPattern::Cycle, span));
            }
        }
        let no_ops = self.policy.no_ops.max(2) as usize;
        if steps.len() >= no_ops && steps[..no_ops].iter().all(|s| !s.changed) {
            return Some((StallPattern::NoChange, no_ops));
        }
        None
    }
}

fn describe(pattern: StallPattern, count: usize) -> String {
    match pattern {
        StallPattern::SameAction => {
            format!("the same action ran {count} times in a row on the same screen")
        }
        StallPattern::Cycle => {
            format!("the last {count} actions went round in a cycle between the same screens")
        }
        StallPattern::NoChange => {
            format!("the last {count} actions changed nothing on the screen")
        }
    }
}

fn note(output: &mut ToolOutput, text: String) {
    output.content.push(ToolResultContent::Text { text });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::FixedApprover;
    use crate::agent::approval::{ApprovalPolicy, Decision};
    use crate::tools::computer::fingerprint::ScreenState;

    fn output(hash: u64, changed: bool) -> ToolOutput {
        ToolOutput {
            screen: Some(ScreenState { hash, changed }),
            ..ToolOutput::text("")
        }
    }

    /// Feeds (action, hash, changed) steps; returns the ladder's events.
    async fn feed(policy: StallPolicy, steps: &[(&str, u64, bool)]) -> (Vec<AgentEvent>, bool) {
        let gate = ApprovalGate::new(
            ApprovalPolicy::Auto,
            Box::new(FixedApprover(Decision::Approve)),
        );
        let mut breaker = StallBreaker::new(policy);
        let mut events = Vec::new();
        let mut stalled = false;
        for (i, (action, hash, changed)) in steps.iter().enumerate() {
            let mut out = output(*hash, *changed);
            stalled = breaker
                .after_step(
                    &ToolUseId::from(format!("t{i}")),
                    "computer",
                    &serde_json::json!({ "action": action }),
                    &mut out,
                    &gate,
                    &mut |e| events.push(e),
                    &CancellationToken::new(),
                )
                .await;
            if stalled {
                break;
            }
        }
        (events, stalled)
    }

    fn rungs(events: &[AgentEvent]) -> Vec<(StallPattern, StallStep)> {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::StallDetected { pattern, step, .. } => Some((*pattern, *step)),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn the_same_click_is_noted_then_asked_then_stalled_without_a_person() {
        let (events, stalled) = feed(StallPolicy::default(), &[("click", 7, false); 6]).await;
        assert!(stalled);
        assert_eq!(
            rungs(&events),
            [
                (StallPattern::SameAction, StallStep::Note),
                (StallPattern::SameAction, StallStep::Ask),
                (StallPattern::SameAction, StallStep::Stalled)
            ]
        );
    }

    #[tokio::test]
    async fn two_screens_in_turn_are_a_cycle_and_changing_screens_are_not() {
        let a = 0u64;
        let b = u64::MAX;
        let steps: Vec<(&str, u64, bool)> = (0..6)
            .map(|i| {
                (
                    if i % 2 == 0 { "x" } else { "y" },
                    if i % 2 == 0 { a } else { b },
                    true,
                )
            })
            .collect();
        let (events, _) = feed(StallPolicy::default(), &steps).await;
        assert_eq!(rungs(&events), [(StallPattern::Cycle, StallStep::Note)]);
        let fresh: Vec<(&str, u64, bool)> =
            (0..8).map(|i| ("x", 0xFFu64 << (i * 8), true)).collect();
        let (events, stalled) = feed(StallPolicy::default(), &fresh).await;
        assert!(events.is_empty() && !stalled);
    }

    struct NeverAnswers;

    #[async_trait::async_trait]
    impl crate::agent::Approver for NeverAnswers {
        async fn decide(&self, request: &crate::agent::ApprovalRequest) -> crate::agent::Answer {
            std::future::pending::<()>().await;
            request.answer(Decision::Approve)
        }
        async fn stalled(&self, _: &StallQuestion) -> StallAnswer {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn a_question_nobody_answers_ends_stalled_at_its_timeout() {
        let gate = ApprovalGate::new(ApprovalPolicy::Auto, Box::new(NeverAnswers));
        let mut breaker = StallBreaker::new(StallPolicy {
            ask_timeout: Duration::from_millis(100),
            ..StallPolicy::default()
        });
        let started = std::time::Instant::now();
        let mut stalled = false;
        let mut answers = Vec::new();
        for i in 0..4 {
            let mut out = output(7, false);
            stalled = breaker
                .after_step(
                    &ToolUseId::from(format!("t{i}")),
                    "computer",
                    &serde_json::json!({}),
                    &mut out,
                    &gate,
                    &mut |e| {
                        if let AgentEvent::StallAnswered { answer } = e {
                            answers.push(answer);
                        }
                    },
                    &CancellationToken::new(),
                )
                .await;
        }
        assert!(stalled);
        assert_eq!(answers, [StallAnswer::NoOne]);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn off_means_off() {
        let policy = StallPolicy {
            enabled: false,
            ..StallPolicy::default()
        };
        let (events, stalled) = feed(policy, &[("click", 7, false); 8]).await;
        assert!(events.is_empty() && !stalled);
    }
}
