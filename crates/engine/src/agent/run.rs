//! The turn loop: send the history, stream the answer, run each tool call through the gate,
//! answer it, and go on until the model ends its turn, the turn limit, a stop or an error.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::approval::{
    Answerer, ApprovalGate, ApprovalRequest, DecidedBy, Decision, Precheck, with_safety_checks,
};
use super::context::{ContextPolicy, Summary};
use super::forecast::over_budget_forecast;
use super::outcome::{EventSink, RunOutcome};
use super::redact::{DeltaRedactor, Redactor};
use super::spotlight::Spotlight;
use super::stall::{StallBreaker, StallPolicy};
use super::verify::{Check, Checker, Verification};
use crate::agent::history;
use crate::agent::{AgentEvent, RunStatus, ToolStatus};
use crate::ids::{SessionId, ToolUseId};
use crate::llm::estimate::estimate_request;
use crate::llm::{
    ContentBlock, Message, ModelRequest, ModelResponse, Provider, StopReason, StreamEvent,
    ToolResultContent, Usage, pricing::Price,
};
use crate::llm::{responses, retirement};
use crate::memory::NoteRef;
use crate::tools::computer::toolset;
use crate::tools::{PreparedCall, Progress, ToolContext, ToolOutput, ToolRegistry};
pub use deskhand_protocol::budget::Budget;
use deskhand_protocol::provenance::Derivation;

pub const DEFAULT_MAX_TURNS: u32 = 50;
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
pub use deskhand_protocol::event::CANCELLED;
/// The answer when an approved action would now do something else than what was shown.
pub const CHANGED_WHILE_ASKING: &str = "nothing was done: what this action would do changed \
while it waited for approval (e.g. the file was edited); look again and retry";
/// The system prompt of the CLI and the window unless the person gives another.
pub const DEFAULT_SYSTEM: &str = "You are Deskhand, an assistant that works on the user's computer \
through the tools you are given, while the user watches and approves each action. Take a \
screenshot before acting on the screen, act in small steps, and check the result of each step. \
If an action is denied, do not retry it; ask or choose another way.";

#[derive(Clone, Debug)]
pub struct AgentConfig {
    pub model: String,
    pub system: String,
    pub max_turns: u32,
    /// The most output tokens of one response.
    pub max_tokens: u32,
    pub context: ContextPolicy,
    /// The model's price, for cost reports and the cost budget.
    pub price: Option<Price>,
    pub budget: Budget,
    /// The notes `system` holds, named in the `started` event.
    pub notes: Vec<NoteRef>,
    pub stall: StallPolicy,
    /// Proof of done: run after the model stops (`agent::verify`).
    pub check: Option<Check>,
    /// The front end's window on the screen the run acts on, which steps aside while the
    /// check looks.
    pub window: Option<Arc<dyn super::RunWindow>>,
}

impl AgentConfig {
    /// The loop's own defaults for everything but the model, which only the front end knows
    /// (chosen with its provider, `llm::config`).
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system: String::new(),
            max_turns: DEFAULT_MAX_TURNS,
            max_tokens: DEFAULT_MAX_TOKENS,
            context: ContextPolicy::default(),
            price: None,
            budget: Budget::default(),
            notes: Vec::new(),
            stall: StallPolicy::default(),
            check: None,
            window: None,
        }
    }
}

pub struct Agent {
    pub provider: Arc<dyn Provider>,
    pub tools: Arc<ToolRegistry>,
    pub gate: Arc<ApprovalGate>,
    pub config: AgentConfig,
}

impl Agent {
    /// Runs one user input to the end. `history` is the session so far and is left valid for
    /// the API whatever happens: every `tool_use` is answered.
    pub async fn run(
        &self,
        session_id: &SessionId,
        history: &mut Vec<Message>,
        input: Vec<ContentBlock>,
        sink: &mut EventSink<'_>,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        sink(AgentEvent::Started {
            session_id: session_id.clone(),
            provider: self.provider.name().into(),
            model: self.config.model.clone(),
            notes: self.config.notes.clone(),
            tool_fallbacks: self.provider.tool_fallbacks(&self.config.model),
            price_source: self.config.price.map(|price| price.source),
            warnings: retirement::warning(&self.config.model, retirement::today())
                .into_iter()
                .collect(),
        });
        let mut outcome = RunOutcome {
            status: RunStatus::Done,
            turns: 0,
            usage: Usage::default(),
            cost_usd: self.config.price.map(|_| 0.0),
            verification: Verification::default(),
        };
        let mut checker = Checker::new(self.config.check.as_ref(), self.config.window.as_deref());
        let mut summary: Option<Summary> = None;
        let mut stall = StallBreaker::new(self.config.stall);
        let mut forecast_sent = false;
        let redactor = Redactor::new(
            self.provider
                .api_key()
                .into_iter()
                .chain(crate::key_guard::environment_secrets()),
        );
        // Tool results reach the model marked as data (`agent::spotlight`).
        let spotlight = Spotlight::new(&self.config.system);
        let mut user_content = input;
        redactor.blocks(&mut user_content);
        self.gate.ledger().heard(history, &user_content);
        if self.config.max_turns <= 1 {
            user_content.push(final_turn_note(self.config.max_turns));
        }
        self.push_user(history, user_content, sink);

        loop {
            if cancel.is_cancelled() {
                outcome.status = RunStatus::Cancelled;
                break;
            }
            outcome.turns += 1;
            let final_turn = outcome.turns >= self.config.max_turns;
            self.summarize_if_needed(history, &mut summary, &mut outcome, &spotlight, sink)
                .await;
            let response = match self
                .request(
                    history,
                    summary.as_ref(),
                    &redactor,
                    &spotlight,
                    sink,
                    cancel,
                )
                .await
            {
                Ok(response) => response,
                Err(status) => {
                    outcome.status = status;
                    break;
                }
            };
            self.count_usage(&response.usage, &mut outcome, sink);
            if !forecast_sent
                && let Some(warning) =
                    over_budget_forecast(&outcome, self.config.max_turns, self.config.budget)
            {
                forecast_sent = true;
                sink(warning);
            }
            let over_budget = self.over_budget(&outcome);
            let assistant = Message::assistant(response.content);
            history.push(assistant.clone());
            sink(AgentEvent::Message {
                message: assistant.clone(),
            });

            if assistant.tool_uses().next().is_none() {
                if over_budget.is_some() {
                    outcome.status = RunStatus::Budget;
                    break;
                }
                if response.stop_reason == StopReason::PauseTurn && !final_turn {
                    continue; // the API asks to be called again with the history as it is
                }
                outcome.status = if final_turn && response.stop_reason == StopReason::PauseTurn {
                    RunStatus::MaxTurns
                } else {
                    RunStatus::Done
                };
                let turns_left = self.config.max_turns.saturating_sub(outcome.turns);
                if outcome.status == RunStatus::Done
                    && let Some(report) = checker.after_model_stopped(turns_left, cancel).await
                {
                    self.push_user(history, vec![report], sink);
                    continue;
                }
                break;
            }

            let mut results = Vec::new();
            // A toolset, or a batched computer call (OpenAI's GA tool), whose action failed in
            // this response: its later actions do not run.
            let mut failed_groups: Vec<&str> = Vec::new();
            // A batched computer call's one approval, shared by its actions.
            let mut batch_approvals: Vec<(&str, BatchApproval)> = Vec::new();
            let mut stalled = false;
            for call in assistant.tool_uses() {
                let group = call.toolset_name.or_else(|| {
                    responses::batch_of(&assistant, call.id.as_str()).map(|(batch, _)| batch)
                });
                // A toolset member runs as its tool's action of the same name.
                let member = call
                    .toolset_name
                    .map(|toolset| toolset::action_input(toolset, call.name, call.input));
                let (name, input) = match &member {
                    Some(Ok(input)) => (toolset::TOOLSET_NAME, input),
                    _ => (call.name, call.input),
                };
                let refusal = if cancel.is_cancelled() {
                    Some(CANCELLED.to_string())
                } else if stalled {
                    Some("not run: the run stopped because it was stuck".to_string())
                } else if let Some(limit) = &over_budget {
                    Some(format!("not run: the run's budget was reached ({limit})"))
                } else if final_turn {
                    Some(format!(
                        "not run: the turn limit of {} was reached",
                        self.config.max_turns
                    ))
                } else if group.is_some_and(|group| failed_groups.contains(&group)) {
                    Some(toolset::NOT_EXECUTED.to_string())
                } else if let Some(Err(problem)) = &member {
                    Some(problem.to_string())
                } else {
                    response
                        .malformed_tool_inputs
                        .iter()
                        .find(|(id, _)| call.id == id.as_str())
                        .map(|(_, error)| format!("the tool input could not be read: {error}"))
                };
                sink(AgentEvent::ToolCall {
                    id: call.id.clone(),
                    name: name.into(),
                    input: input.clone(),
                });
                let started = Instant::now();
                let (mut output, status) = match refusal {
                    Some(message) if cancel.is_cancelled() => {
                        (ToolOutput::error(message), ToolStatus::Cancelled)
                    }
                    Some(message) => (ToolOutput::error(message), ToolStatus::Error),
                    None => {
                        let checks = responses::pending_safety_checks(&assistant, call.id.as_str());
                        let batch =
                            responses::batch_of(&assistant, call.id.as_str()).map(|(parent, _)| {
                                let at =
                                    match batch_approvals.iter().position(|(p, _)| *p == parent) {
                                        Some(at) => at,
                                        None => {
                                            let listed = self.plan_batch(&assistant, parent);
                                            batch_approvals.push((parent, listed));
                                            batch_approvals.len() - 1
                                        }
                                    };
                                &mut batch_approvals[at].1
                            });
                        let asked_for = Call {
                            id: call.id,
                            name,
                            input,
                            safety_checks: checks,
                        };
                        let (mut output, status, spent) =
                            self.call_tool(asked_for, batch, sink, cancel).await;
                        // A delegated task's cost is the run's: its budget counts it.
                        if let Some(total) = &mut outcome.cost_usd {
                            *total += spent;
                        }
                        stalled = stall
                            .after_step(call.id, name, input, &mut output, &self.gate, sink, cancel)
                            .await;
                        (output, status)
                    }
                };
                if let Some(group) = group.filter(|_| output.is_error) {
                    failed_groups.push(group);
                }
                // The one place every tool's output passes before it is shown or kept.
                redactor.results(&mut output.content);
                if let Some(suspected) =
                    self.gate
                        .read_result(outcome.turns, call.id, name, input, &output.content)
                {
                    sink(suspected);
                }
                let mut result = tool_result(call.id, name, output, status, started, sink);
                if let ContentBlock::ToolResult { toolset_name, .. } = &mut result {
                    *toolset_name = call.toolset_name.map(str::to_owned);
                }
                results.push(result);
            }
            if cancel.is_cancelled() {
                outcome.status = RunStatus::Cancelled;
            } else if stalled {
                outcome.status = RunStatus::Stalled;
            } else if over_budget.is_some() || self.over_budget(&outcome).is_some() {
                // Also after the calls: a delegated task's cost may have used the budget up.
                outcome.status = RunStatus::Budget;
            } else if final_turn {
                outcome.status = RunStatus::MaxTurns;
            } else if outcome.turns + 1 >= self.config.max_turns {
                results.push(final_turn_note(self.config.max_turns));
            }
            self.push_user(history, results, sink);
            if outcome.status != RunStatus::Done {
                break;
            }
        }
        outcome.verification = checker.finish(outcome.status, cancel).await;
        sink(AgentEvent::Verification(outcome.verification.clone()));
        sink(AgentEvent::Done {
            status: outcome.status,
            turns: outcome.turns,
            session_id: session_id.clone(),
            usage: outcome.usage,
            cost_usd: outcome.cost_usd,
        });
        outcome
    }

    fn count_usage(&self, usage: &Usage, outcome: &mut RunOutcome, sink: &mut EventSink<'_>) {
        outcome.usage.add(usage);
        let turn_cost = self.config.price.map(|price| price.cost(usage));
        if let (Some(total), Some(turn)) = (&mut outcome.cost_usd, turn_cost) {
            *total += turn;
        }
        sink(AgentEvent::Usage {
            turn: *usage,
            total: outcome.usage,
            turn_cost_usd: turn_cost,
            total_cost_usd: outcome.cost_usd,
        });
    }

    /// Which budget the run has used up, if any.
    fn over_budget(&self, outcome: &RunOutcome) -> Option<String> {
        let budget = self.config.budget;
        let u = &outcome.usage;
        let tokens = u.input_tokens
            + u.output_tokens
            + u.cache_creation_input_tokens
            + u.cache_read_input_tokens;
        if let Some(max) = budget.max_tokens.filter(|&max| tokens >= max) {
            return Some(format!("{tokens} tokens used of {max}"));
        }
        match (budget.max_cost_usd, outcome.cost_usd) {
            (Some(max), Some(cost)) if cost >= max => {
                let caveat = self
                    .config
                    .price
                    .and_then(|price| price.source.caveat())
                    .map(|caveat| format!(" ({caveat})"))
                    .unwrap_or_default();
                Some(format!("${cost:.4} spent of ${max:.4}{caveat}"))
            }
            _ => None,
        }
    }

    /// Near the context window, has the model summarize the older turns, so the request
    /// fits. On failure the request goes out whole and the provider's answer decides.
    async fn summarize_if_needed(
        &self,
        history: &[Message],
        summary: &mut Option<Summary>,
        outcome: &mut RunOutcome,
        spotlight: &Spotlight,
        sink: &mut EventSink<'_>,
    ) {
        let policy = &self.config.context;
        let tools = self.tools.definitions();
        let shaped = policy.shape(history, summary.as_ref());
        let before = estimate_request(&self.config.system, tools, &shaped.messages);
        if !policy.needs_summary(before) {
            return;
        }
        let from = summary.as_ref().map_or(0, |s| s.upto);
        let Some(cut) = policy.summary_cut(history, from) else {
            return;
        };
        // The part to summarize ends with a user message; the instruction joins it.
        let mut older = policy.shape(&history[..cut], summary.as_ref()).messages;
        history::push_user(&mut older, vec![ContentBlock::text(SUMMARY_INSTRUCTION)]);
        spotlight.mark(&mut older);
        let request = ModelRequest {
            model: &self.config.model,
            system: spotlight.system(),
            messages: &older,
            tools,
            max_tokens: 2048,
            cache_breakpoints: &[],
        };
        let Ok(response) = self.provider.stream(request, &mut |_| {}).await else {
            return;
        };
        self.count_usage(&response.usage, outcome, sink);
        let text = Message::assistant(response.content).text();
        if text.trim().is_empty() {
            return;
        }
        let candidate = Summary { upto: cut, text };
        let after = estimate_request(
            &self.config.system,
            tools,
            &policy.shape(history, Some(&candidate)).messages,
        );
        sink(AgentEvent::ContextSummarized {
            upto: cut,
            tokens_before: before,
            tokens_after: after,
        });
        *summary = Some(candidate);
    }

    fn push_user(
        &self,
        history: &mut Vec<Message>,
        content: Vec<ContentBlock>,
        sink: &mut EventSink<'_>,
    ) {
        history::push_user(history, content);
        if let Some(last) = history.last() {
            sink(AgentEvent::Message {
                message: last.clone(),
            });
        }
    }

    /// Streams one response, with the run's keys redacted from all of it. A stop keeps the
    /// text that already arrived, so nothing the person saw is lost.
    async fn request(
        &self,
        history: &mut Vec<Message>,
        summary: Option<&Summary>,
        redactor: &Redactor,
        spotlight: &Spotlight,
        sink: &mut EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, RunStatus> {
        let mut partial = String::new();
        let mut shaped = self.config.context.shape(history, summary);
        spotlight.mark(&mut shaped.messages);
        let request = ModelRequest {
            model: &self.config.model,
            system: spotlight.system(),
            messages: &shaped.messages,
            tools: self.tools.definitions(),
            max_tokens: self.config.max_tokens,
            cache_breakpoints: &shaped.cache_breakpoints,
        };
        let mut deltas = DeltaRedactor::new(redactor);
        let mut thinking_deltas = DeltaRedactor::new(redactor);
        let mut on_event = |event: StreamEvent| match event {
            StreamEvent::TextDelta(text) => {
                let text = deltas.push(&text);
                if !text.is_empty() {
                    partial.push_str(&text);
                    sink(AgentEvent::TextDelta { text });
                }
            }
            StreamEvent::ThinkingDelta(text) => {
                let text = thinking_deltas.push(&text);
                if !text.is_empty() {
                    sink(AgentEvent::ThinkingDelta { text });
                }
            }
            StreamEvent::Retrying {
                attempt,
                delay_ms,
                kind,
                mut error,
            } => {
                redactor.text(&mut error);
                sink(AgentEvent::Retrying {
                    attempt,
                    delay_ms,
                    kind: Some(kind),
                    error,
                })
            }
        };
        let result = tokio::select! {
            result = self.provider.stream(request, &mut on_event) => Some(result),
            () = cancel.cancelled() => None,
        };
        let held = thinking_deltas.finish();
        if !held.is_empty() {
            sink(AgentEvent::ThinkingDelta { text: held });
        }
        let held = deltas.finish();
        if !held.is_empty() {
            partial.push_str(&held);
            sink(AgentEvent::TextDelta { text: held });
        }
        match result {
            Some(Ok(mut response)) => {
                redactor.blocks(&mut response.content);
                Ok(response)
            }
            Some(Err(error)) => {
                let mut message = error.to_string();
                redactor.text(&mut message);
                sink(AgentEvent::Error {
                    kind: Some(error.kind),
                    message,
                });
                Err(RunStatus::Error)
            }
            None => {
                if !partial.is_empty() {
                    let message = Message::assistant(vec![ContentBlock::text(partial)]);
                    history.push(message.clone());
                    sink(AgentEvent::Message { message });
                }
                Err(RunStatus::Cancelled)
            }
        }
    }

    /// Asks the person about `call`, planned as `plan`: where it came from when it is derived
    /// from untrusted content, and with `batch`, the summaries of every action of its batch.
    /// `None` when the run was stopped first.
    async fn ask(
        &self,
        call: &Call<'_>,
        plan: &crate::tools::ActionPlan,
        derived_from: Option<Derivation>,
        batch: Vec<String>,
        sink: &mut EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Option<(Decision, Answerer)> {
        let Call {
            id, name, input, ..
        } = *call;
        let request = ApprovalRequest {
            tool_use_id: id.clone(),
            tool: name.into(),
            input: input.clone(),
            plan: self.gate.as_asked(plan, derived_from.as_ref()),
            batch,
            needs_person: self.gate.needs_person(plan, derived_from.as_ref()),
            derived_from,
        };
        sink(AgentEvent::ApprovalNeeded {
            request: request.clone(),
        });
        tokio::select! {
            answered = self.gate.ask(&request) => Some(answered),
            () = cancel.cancelled() => None,
        }
    }

    /// The plan of every action of the batched call `parent` in `message`, as the one
    /// approval that covers them lists them. An action that cannot be planned is listed by
    /// what the model asked for, and fails on its own when its turn comes.
    fn plan_batch(&self, message: &Message, parent: &str) -> BatchApproval {
        let actions = message.tool_uses().filter(|call| {
            responses::batch_of(message, call.id.as_str()).is_some_and(|(p, _)| p == parent)
        });
        let actions = actions.map(|call| {
            let plan = self
                .tools
                .resolve(call.name, call.input)
                .ok()
                .and_then(|tool| tool.prepare(call.input).ok()?.plan().ok());
            let summary = match &plan {
                Some(plan) => plan.summary.clone(),
                None => format!("{} {}", call.name, call.input),
            };
            (call.id.clone(), summary, plan)
        });
        BatchApproval {
            actions: actions.collect(),
            answer: None,
        }
    }

    /// Validates, plans, gates and runs one tool call. Every failure becomes an error result
    /// the model can act on. `batch` is the one approval of the batched call it is an action of.
    async fn call_tool(
        &self,
        asked_for: Call<'_>,
        batch: Option<&mut BatchApproval>,
        sink: &mut EventSink<'_>,
        cancel: &CancellationToken,
    ) -> (ToolOutput, ToolStatus, f64) {
        let Call {
            id,
            name,
            input,
            safety_checks,
        } = asked_for;
        let failed = |output: ToolOutput| (output, ToolStatus::Error, 0.0);
        let tool = match self.tools.resolve(name, input) {
            Ok(tool) => tool,
            Err(e) => return failed(e.into()),
        };
        // Read once: the call is planned, again after a person was asked, and run as read.
        let mut call = match tool.prepare(input) {
            Ok(call) => call,
            Err(e) => return failed(e.into()),
        };
        let plan_of = |call: &dyn PreparedCall| {
            call.plan()
                .map(|plan| with_safety_checks(plan, safety_checks))
        };
        let plan = match plan_of(&*call) {
            Ok(plan) => plan,
            Err(e) => return failed(e.into()),
        };
        let derived = self.gate.derived(name, input, &plan);
        let precheck = self.gate.precheck(&plan, derived.as_ref());
        // Whether a person was asked (and saw the plan that must still hold when it runs).
        let asked = matches!(precheck, Precheck::AskUser);
        // An action of a batch the person already answered for: that answer holds, for the
        // plan they were shown in its list.
        let (plan, answered) = match batch {
            Some(batch) if asked => match &batch.answer {
                Some(answer) => match batch.actions.iter().find(|(listed, ..)| listed == id) {
                    Some((_, _, Some(listed))) => (listed.clone(), Some(answer.clone())),
                    _ => return failed(ToolOutput::error(CHANGED_WHILE_ASKING)),
                },
                None => {
                    // This action's line as asked: with the service's safety checks.
                    let asked_as = self.gate.as_asked(&plan, derived.as_ref()).summary;
                    let listed =
                        batch
                            .actions
                            .iter()
                            .map(|(listed, summary, _)| match listed == id {
                                true => asked_as.clone(),
                                false => summary.clone(),
                            });
                    let listed = listed.collect();
                    let answer = self
                        .ask(&asked_for, &plan, derived.clone(), listed, sink, cancel)
                        .await;
                    batch.answer = answer.clone();
                    (plan, answer)
                }
            },
            _ => {
                let answered = match precheck {
                    Precheck::Decided(decision, by) => Some((decision, Answerer::new(by))),
                    Precheck::AskUser => {
                        self.ask(&asked_for, &plan, derived.clone(), Vec::new(), sink, cancel)
                            .await
                    }
                };
                (plan, answered)
            }
        };
        let Some((decision, answerer)) = answered else {
            return (ToolOutput::error(CANCELLED), ToolStatus::Cancelled, 0.0);
        };
        sink(AgentEvent::ApprovalDecided {
            id: id.clone(),
            decision: decision.clone(),
            by: answerer.by,
            client: answerer.client,
        });
        if let Decision::Deny { reason } = decision {
            let why = denial(answerer.by, reason, !safety_checks.is_empty());
            return (ToolOutput::error(why), ToolStatus::Denied, 0.0);
        }
        // What runs must be what the person saw: a file edited while they read the diff
        // would otherwise be written with changes they never approved.
        if asked {
            call.after_approval().await;
            match plan_of(&*call) {
                Ok(now) if now == plan => {}
                Ok(_) => return failed(ToolOutput::error(CHANGED_WHILE_ASKING)),
                Err(e) => return failed(e.into()),
            }
        }
        let (progress, mut reports) = tokio::sync::mpsc::unbounded_channel();
        let ctx = ToolContext {
            cancel: cancel.child_token(),
            progress,
        };
        let mut spent = 0.0;
        let mut report = |progress: Progress| match progress {
            Progress::Event(event) => sink(*event),
            Progress::Spent(usd) => spent += usd,
        };
        let run = call.run(&ctx);
        tokio::pin!(run);
        let output = loop {
            tokio::select! {
                output = &mut run => break output,
                Some(progress) = reports.recv() => report(progress),
                () = cancel.cancelled() => {
                    // A tool with a grace period winds down (a delegate cancels its child).
                    let grace = tokio::time::sleep(tool.cancel_grace());
                    tokio::pin!(grace);
                    loop {
                        tokio::select! {
                            _ = &mut run => break,
                            Some(progress) = reports.recv() => report(progress),
                            () = &mut grace => break,
                        }
                    }
                    break ToolOutput::error(CANCELLED);
                }
            }
        };
        while let Ok(progress) = reports.try_recv() {
            report(progress);
        }
        tool.take_events().into_iter().for_each(&mut *sink);
        // A tool that saw the stop answers with an error of its own.
        let status = match output.is_error {
            false => ToolStatus::Ok,
            true if cancel.is_cancelled() => ToolStatus::Cancelled,
            true => ToolStatus::Error,
        };
        (output, status, spent)
    }
}

/// One tool call as the model asked for it.
#[derive(Clone, Copy)]
struct Call<'a> {
    id: &'a ToolUseId,
    name: &'a str,
    input: &'a serde_json::Value,
    /// Those the service raised about it (OpenAI's `pending_safety_checks`): the person must
    /// acknowledge them, whatever the mode.
    safety_checks: &'a [serde_json::Value],
}

/// The one approval of a batched computer call (OpenAI's GA tool): the first of its actions
/// that the mode asks about lists every action, and the person's answer holds for the others.
struct BatchApproval {
    /// Each action, in order: its id, its summary as listed, and its plan where it could be
    /// planned.
    actions: Vec<(ToolUseId, String, Option<crate::tools::ActionPlan>)>,
    answer: Option<(Decision, Answerer)>,
}

/// What the model is told when a call is denied, naming who denied it: the person (in the
/// window or at the terminal), a client of the local API (a program, maybe not the person),
/// or the policy (its rules, an answer that never came, a task that ended first).
fn denial(by: DecidedBy, reason: Option<String>, unacknowledged_safety_check: bool) -> String {
    let who = match by {
        DecidedBy::User | DecidedBy::Window | DecidedBy::Terminal => "the user",
        DecidedBy::Api => "an API client",
        DecidedBy::Policy | DecidedBy::SessionRule => {
            return match reason {
                Some(reason) => format!("not allowed: {reason}"),
                None => "not allowed by the approval policy".to_string(),
            };
        }
    };
    match reason {
        _ if unacknowledged_safety_check => {
            format!("not run: {who} did not acknowledge the safety check")
        }
        Some(reason) => format!("{who} denied this action: {reason}"),
        None => format!("{who} denied this action"),
    }
}

/// Turns a tool's output into its `tool_result` block and reports it.
fn tool_result(
    id: &ToolUseId,
    name: &str,
    output: ToolOutput,
    status: ToolStatus,
    started: Instant,
    sink: &mut EventSink<'_>,
) -> ContentBlock {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for part in &output.content {
        match part {
            ToolResultContent::Text { text: t } => text.push(t.as_str()),
            ToolResultContent::Image { source } => images.push(source.clone()),
        }
    }
    sink(AgentEvent::ToolResult {
        id: id.clone(),
        name: name.into(),
        is_error: output.is_error,
        status: Some(status),
        text: text.join("\n"),
        images,
        duration_ms: started.elapsed().as_millis() as u64,
        changed: output.screen.map(|s| s.changed),
    });
    ContentBlock::ToolResult {
        tool_use_id: id.clone(),
        content: output.content,
        is_error: output.is_error,
        toolset_name: None,
    }
}

const SUMMARY_INSTRUCTION: &str = "[Deskhand] The conversation is getting too long for the \
context window. Do not call any tool. Write a concise summary of everything above that is \
needed to continue the task: the goal, what was done and its results, the current state of \
the screen and files, and what remains. It will replace the older turns.";

fn final_turn_note(max_turns: u32) -> ContentBlock {
    ContentBlock::text(format!(
        "[Deskhand] This is your final turn: the turn limit of {max_turns} is reached and no tool \
         will run after this reply. Summarise what was done and what remains."
    ))
}
