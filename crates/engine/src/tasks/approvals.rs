//! Approvals a task waits for, answered by whichever front end watches it (the terminal, the
//! window, an HTTP client): an action waits until an answer names its call, or the task
//! stops. The stall breaker's question (go on, go on with a hint, or stop) is answered the
//! same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tokio::sync::oneshot;

use super::TaskError;
use crate::agent::stall::{StallAnswer, StallQuestion};
use crate::agent::{Answer, Answerer, ApprovalRequest, Approver, Decision};
use deskhand_protocol::ids::ToolUseId;

/// One question. It is opened when the `approval_needed` event goes out, before the gate
/// waits on it, so an answer can never arrive before its question exists.
struct Question {
    answer: Option<oneshot::Sender<Answer>>,
    waiting: Option<oneshot::Receiver<Answer>>,
}

/// The stall question of a task, opened like an approval when its event goes out.
#[derive(Default)]
struct StallSlot {
    answer: Option<oneshot::Sender<StallAnswer>>,
    waiting: Option<oneshot::Receiver<StallAnswer>>,
}

/// The questions of one task not answered yet, by `tool_use` id, and its stall question.
#[derive(Default)]
pub struct PendingApprovals {
    questions: Mutex<HashMap<ToolUseId, Question>>,
    stall: Mutex<StallSlot>,
}

impl PendingApprovals {
    fn questions(&self) -> MutexGuard<'_, HashMap<ToolUseId, Question>> {
        self.questions.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stall(&self) -> MutexGuard<'_, StallSlot> {
        self.stall.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens the stall question (its `stall_detected` event is going out).
    pub fn open_stall(&self) {
        let (answer, waiting) = oneshot::channel();
        *self.stall() = StallSlot {
            answer: Some(answer),
            waiting: Some(waiting),
        };
    }

    /// The person's answer to the stall question; `false` if none is open.
    pub fn answer_stall(&self, answer: StallAnswer) -> bool {
        let sender = self.stall().answer.take();
        sender.is_some_and(|sender| sender.send(answer).is_ok())
    }

    /// Opens the question `id`, unless it is open already: a tool that asks the person
    /// itself (a delegated task's approval) may wait on it before its event is recorded.
    pub fn open(&self, id: &ToolUseId) {
        self.questions().entry(id.clone()).or_insert_with(|| {
            let (answer, waiting) = oneshot::channel();
            Question {
                answer: Some(answer),
                waiting: Some(waiting),
            }
        });
    }

    /// Whether the action `id` waits for an answer.
    pub fn is_open(&self, id: &ToolUseId) -> bool {
        self.questions().get(id).is_some_and(|q| q.answer.is_some())
    }

    /// An answer, and who gave it. `NotPending` if nothing with that id waits for one.
    pub fn answer(
        &self,
        id: &ToolUseId,
        decision: Decision,
        answerer: Answerer,
    ) -> Result<(), TaskError> {
        let not_pending = || TaskError::NotPending(id.clone());
        let sender = self
            .questions()
            .get_mut(id)
            .and_then(|q| q.answer.take())
            .ok_or_else(not_pending)?;
        sender
            .send(Answer {
                tool_use_id: id.clone(),
                decision,
                answerer,
            })
            .map_err(|_| not_pending())
    }

    /// Drops every open question (the task ended): late answers get `NotPending`.
    pub fn clear(&self) {
        self.questions().clear();
        *self.stall() = StallSlot::default();
    }

    fn wait(&self, id: &ToolUseId) -> oneshot::Receiver<Answer> {
        let mut questions = self.questions();
        if let Some(waiting) = questions.get_mut(id).and_then(|q| q.waiting.take()) {
            return waiting;
        }
        drop(questions);
        self.open(id);
        self.wait(id)
    }

    fn close(&self, id: &ToolUseId) {
        self.questions().remove(id);
    }
}

/// The gate's person for a task: whoever answers through the engine.
pub struct TaskApprover {
    pub approvals: Arc<PendingApprovals>,
}

/// Closes the question however the wait ends, including a stop that drops the future.
struct CloseOnDrop<'a>(&'a PendingApprovals, &'a ToolUseId);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close(self.1);
    }
}

#[async_trait]
impl Approver for TaskApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Answer {
        let waiting = self.approvals.wait(&request.tool_use_id);
        let _close = CloseOnDrop(&self.approvals, &request.tool_use_id);
        waiting.await.unwrap_or_else(|_| Answer {
            tool_use_id: request.tool_use_id.clone(),
            decision: Decision::Deny {
                reason: Some("the task ended before an answer came".into()),
            },
            answerer: Answerer::new(crate::agent::DecidedBy::Policy),
        })
    }

    /// Waits for whoever watches the task; the stall breaker's own timeout ends the wait
    /// when nobody answers.
    async fn stalled(&self, _question: &StallQuestion) -> StallAnswer {
        let waiting = {
            let mut slot = self.approvals.stall();
            if slot.waiting.is_none() {
                drop(slot);
                self.approvals.open_stall();
                slot = self.approvals.stall();
            }
            slot.waiting.take()
        };
        match waiting {
            Some(waiting) => waiting.await.unwrap_or(StallAnswer::NoOne),
            None => StallAnswer::NoOne,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::tools::ActionPlan;

    fn request(id: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool_use_id: id.into(),
            tool: "bash".into(),
            derived_from: None,
            needs_person: false,
            input: Value::Null,
            plan: ActionPlan {
                kind: "bash".into(),
                read_only: false,
                summary: "run ls".into(),
                detail: Default::default(),
                on_screen: false,
                safety_checks: Vec::new(),
                target: None,
            },
            batch: Vec::new(),
        }
    }

    fn terminal() -> Answerer {
        Answerer::new(crate::agent::DecidedBy::Terminal)
    }

    #[tokio::test]
    async fn an_answer_before_the_wait_is_kept_and_unknown_ids_are_refused() {
        let approvals = Arc::new(PendingApprovals::default());
        let approver = TaskApprover {
            approvals: approvals.clone(),
        };
        approvals.open(&"t1".into());
        approvals
            .answer(&"t1".into(), Decision::ApproveKind, terminal())
            .unwrap();
        assert_eq!(
            approver.decide(&request("t1")).await.decision,
            Decision::ApproveKind
        );
        assert!(matches!(
            approvals.answer(&"t1".into(), Decision::Approve, terminal()),
            Err(TaskError::NotPending(_))
        ));
        let waiting = tokio::spawn({
            let approvals = approvals.clone();
            async move { TaskApprover { approvals }.decide(&request("t2")).await }
        });
        while approvals
            .answer(&"t2".into(), Decision::Deny { reason: None }, terminal())
            .is_err()
        {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            waiting.await.unwrap(),
            Answer {
                answerer: terminal(),
                ..request("t2").answer(Decision::Deny { reason: None })
            }
        );
    }

    /// A tool that asks the person itself (a delegated task's approval) waits before its
    /// `approval_needed` is recorded, which opens the question again: the wait keeps it.
    #[tokio::test]
    async fn a_question_waited_on_before_its_event_is_recorded_keeps_its_answer() {
        let approvals = Arc::new(PendingApprovals::default());
        let waiting = tokio::spawn({
            let approvals = approvals.clone();
            async move { TaskApprover { approvals }.decide(&request("d.c1")).await }
        });
        while !approvals.is_open(&"d.c1".into()) {
            tokio::task::yield_now().await;
        }
        approvals.open(&"d.c1".into());
        approvals
            .answer(&"d.c1".into(), Decision::Approve, terminal())
            .unwrap();
        assert_eq!(
            waiting.await.unwrap(),
            Answer {
                answerer: terminal(),
                ..request("d.c1").answer(Decision::Approve)
            }
        );
    }

    #[tokio::test]
    async fn a_stall_answer_reaches_the_question_once_and_none_without_one() {
        let approvals = Arc::new(PendingApprovals::default());
        let approver = TaskApprover {
            approvals: approvals.clone(),
        };
        let question = StallQuestion {
            tool_use_id: "t1".into(),
            pattern: crate::agent::stall::StallPattern::SameAction,
            message: "clicked Save 3 times".into(),
        };
        assert!(
            !approvals.answer_stall(StallAnswer::Continue),
            "nothing asked"
        );
        // Opened when the event goes out, answered before the run waits: the answer is kept.
        approvals.open_stall();
        let hint = StallAnswer::Hint {
            text: "use the menu".into(),
        };
        assert!(approvals.answer_stall(hint.clone()));
        assert!(
            !approvals.answer_stall(StallAnswer::Stop),
            "answered already"
        );
        assert_eq!(approver.stalled(&question).await, hint);
        // A task that ends drops the question: the run hears nobody.
        approvals.open_stall();
        let waiting = tokio::spawn({
            let approvals = approvals.clone();
            let question = question.clone();
            async move { TaskApprover { approvals }.stalled(&question).await }
        });
        while approvals.stall().waiting.is_some() {
            tokio::task::yield_now().await;
        }
        approvals.clear();
        assert_eq!(waiting.await.unwrap(), StallAnswer::NoOne);
    }
}
