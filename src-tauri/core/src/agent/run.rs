//! The turn loop: send the history, stream the answer, run each tool call through the gate,
//! answer it, and go on until the model ends its turn, the turn limit, a stop or an error.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::approval::{ApprovalGate, ApprovalRequest, DecidedBy, Decision, Precheck};
use super::event::{AgentEvent, RunStatus};
use super::history;
use crate::images::ImageRef;
use crate::llm::{
    ContentBlock, Message, ModelRequest, Provider, StopReason, StreamEvent, ToolResultContent,
    Usage,
};
use crate::tools::{ToolContext, ToolOutput, ToolRegistry};

pub const DEFAULT_MAX_TURNS: u32 = 50;
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
pub const CANCELLED: &str = "cancelled by the user";

#[derive(Clone, Debug)]
pub struct AgentConfig {
    pub model: String,
    pub system: String,
    pub max_turns: u32,
    pub max_tokens: u32,
}

/// Where events go: the CLI's printer, the window's channel, the store.
pub type EventSink<'a> = dyn FnMut(AgentEvent) + Send + 'a;

pub struct Agent {
    pub provider: Arc<dyn Provider>,
    pub tools: Arc<ToolRegistry>,
    pub gate: Arc<ApprovalGate>,
    pub config: AgentConfig,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub turns: u32,
    pub usage: Usage,
}

impl Agent {
    /// Runs one user input to the end. `history` is the session so far and is left valid for
    /// the API whatever happens: every `tool_use` is answered.
    pub async fn run(
        &self,
        session_id: &str,
        history: &mut Vec<Message>,
        input: Vec<ContentBlock>,
        sink: &mut EventSink<'_>,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        sink(AgentEvent::Started {
            session_id: session_id.into(),
            provider: self.provider.name().into(),
            model: self.config.model.clone(),
        });
        let mut outcome = RunOutcome {
            status: RunStatus::Done,
            turns: 0,
            usage: Usage::default(),
        };
        let mut user_content = input;
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
            let response = match self.request(history, sink, cancel).await {
                Ok(response) => response,
                Err(status) => {
                    outcome.status = status;
                    break;
                }
            };
            outcome.usage.add(&response.usage);
            sink(AgentEvent::Usage {
                turn: response.usage,
                total: outcome.usage,
            });
            let assistant = Message::assistant(response.content);
            history.push(assistant.clone());
            sink(AgentEvent::Message {
                message: assistant.clone(),
            });

            if assistant.tool_uses().next().is_none() {
                if response.stop_reason == StopReason::PauseTurn && !final_turn {
                    continue; // the API asks to be called again with the history as it is
                }
                outcome.status = if final_turn && response.stop_reason == StopReason::PauseTurn {
                    RunStatus::MaxTurns
                } else {
                    RunStatus::Done
                };
                break;
            }

            let mut results = Vec::new();
            for call in assistant.tool_uses() {
                let refusal = if cancel.is_cancelled() {
                    Some(CANCELLED.to_string())
                } else if final_turn {
                    Some(format!(
                        "not run: the turn limit of {} was reached",
                        self.config.max_turns
                    ))
                } else {
                    response
                        .malformed_tool_inputs
                        .iter()
                        .find(|(id, _)| id == call.id)
                        .map(|(_, error)| format!("the tool input could not be read: {error}"))
                };
                sink(AgentEvent::ToolCall {
                    id: call.id.into(),
                    name: call.name.into(),
                    input: call.input.clone(),
                });
                let started = Instant::now();
                let output = match refusal {
                    Some(message) => ToolOutput::error(message),
                    None => {
                        self.call_tool(call.id, call.name, call.input, sink, cancel)
                            .await
                    }
                };
                results.push(tool_result(call.id, call.name, output, started, sink));
            }
            if cancel.is_cancelled() {
                outcome.status = RunStatus::Cancelled;
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
        sink(AgentEvent::Done {
            status: outcome.status,
            turns: outcome.turns,
            session_id: session_id.into(),
            usage: outcome.usage,
        });
        outcome
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

    /// Streams one response. A stop keeps the text that already arrived, so nothing the
    /// person saw is lost.
    async fn request(
        &self,
        history: &mut Vec<Message>,
        sink: &mut EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<crate::llm::ModelResponse, RunStatus> {
        let mut partial = String::new();
        let request = ModelRequest {
            model: &self.config.model,
            system: &self.config.system,
            messages: history,
            tools: self.tools.definitions(),
            max_tokens: self.config.max_tokens,
        };
        let mut on_event = |event: StreamEvent| match event {
            StreamEvent::TextDelta(text) => {
                partial.push_str(&text);
                sink(AgentEvent::TextDelta { text });
            }
            StreamEvent::Retrying {
                attempt,
                delay_ms,
                error,
            } => sink(AgentEvent::Retrying {
                attempt,
                delay_ms,
                error,
            }),
        };
        let result = tokio::select! {
            result = self.provider.stream(request, &mut on_event) => Some(result),
            () = cancel.cancelled() => None,
        };
        match result {
            Some(Ok(response)) => Ok(response),
            Some(Err(error)) => {
                sink(AgentEvent::Error {
                    message: error.to_string(),
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

    /// Validates, plans, gates and runs one tool call. Every failure becomes an error result
    /// the model can act on.
    async fn call_tool(
        &self,
        id: &str,
        name: &str,
        input: &serde_json::Value,
        sink: &mut EventSink<'_>,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let tool = match self.tools.resolve(name, input) {
            Ok(tool) => tool,
            Err(message) => return ToolOutput::error(message),
        };
        let plan = match tool.plan(input) {
            Ok(plan) => plan,
            Err(message) => return ToolOutput::error(message),
        };
        let (decision, by) = match self.gate.precheck(&plan) {
            Precheck::Decided(decision, by) => (decision, by),
            Precheck::AskUser => {
                let request = ApprovalRequest {
                    tool_use_id: id.into(),
                    tool: name.into(),
                    input: input.clone(),
                    plan,
                };
                sink(AgentEvent::ApprovalNeeded {
                    request: request.clone(),
                });
                tokio::select! {
                    decision = self.gate.ask(&request) => (decision, DecidedBy::User),
                    () = cancel.cancelled() => return ToolOutput::error(CANCELLED),
                }
            }
        };
        sink(AgentEvent::ApprovalDecided {
            id: id.into(),
            decision: decision.clone(),
            by,
        });
        if let Decision::Deny { reason } = decision {
            let why = match (by, reason) {
                (DecidedBy::User, Some(reason)) => format!("the user denied this action: {reason}"),
                (DecidedBy::User, None) => "the user denied this action".to_string(),
                (_, Some(reason)) => format!("not allowed: {reason}"),
                (_, None) => "not allowed by the approval policy".to_string(),
            };
            return ToolOutput::error(why);
        }
        let ctx = ToolContext {
            cancel: cancel.child_token(),
        };
        tokio::select! {
            output = tool.run(input, &ctx) => output,
            () = cancel.cancelled() => ToolOutput::error(CANCELLED),
        }
    }
}

/// Turns a tool's output into its `tool_result` block and reports it.
fn tool_result(
    id: &str,
    name: &str,
    output: ToolOutput,
    started: Instant,
    sink: &mut EventSink<'_>,
) -> ContentBlock {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for part in &output.content {
        match part {
            ToolResultContent::Text { text: t } => text.push(t.as_str()),
            ToolResultContent::Image { source } => images.push(ImageRef::of(source)),
        }
    }
    sink(AgentEvent::ToolResult {
        id: id.into(),
        name: name.into(),
        is_error: output.is_error,
        text: text.join("\n"),
        images,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: output.content,
        is_error: output.is_error,
    }
}

fn final_turn_note(max_turns: u32) -> ContentBlock {
    ContentBlock::text(format!(
        "[Deskhand] This is your final turn: the turn limit of {max_turns} is reached and no tool \
         will run after this reply. Summarise what was done and what remains."
    ))
}
