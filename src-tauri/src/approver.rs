//! The window as the approval gate's person: an action waits until the window answers
//! `approve` with that call's id, or the run stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use deskhand::agent::{Answer, ApprovalRequest, Approver, Decision};
use tokio::sync::oneshot;

use crate::error::{IpcError, IpcResult};

/// One question to the window. It is opened when the `approval_needed` event goes out, before
/// the gate waits on it, so an answer can never arrive before its question exists.
struct Question {
    /// The action's kind (`bash`, `computer.left_click`, ...), for what "always allow" means.
    kind: String,
    answer: Option<oneshot::Sender<Answer>>,
    waiting: Option<oneshot::Receiver<Answer>>,
}

/// The questions the window has not answered yet, by `tool_use` id.
#[derive(Default)]
pub struct PendingApprovals(Mutex<HashMap<String, Question>>);

impl PendingApprovals {
    fn questions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Question>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn open(&self, id: &str, kind: &str) {
        let (answer, waiting) = oneshot::channel();
        self.questions().insert(
            id.to_string(),
            Question {
                kind: kind.to_string(),
                answer: Some(answer),
                waiting: Some(waiting),
            },
        );
    }

    /// The kind of the action `id`, while it waits for an answer.
    pub fn kind(&self, id: &str) -> Option<String> {
        self.questions()
            .get(id)
            .filter(|q| q.answer.is_some())
            .map(|q| q.kind.clone())
    }

    /// The window's answer. `not_found` if nothing with that id waits for one.
    pub fn answer(&self, id: &str, decision: Decision) -> IpcResult<()> {
        let sender = self
            .questions()
            .get_mut(id)
            .and_then(|q| q.answer.take())
            .ok_or_else(|| {
                IpcError::not_found(format!("no action `{id}` is waiting for approval"))
            })?;
        let answer = Answer {
            tool_use_id: id.to_string(),
            decision,
        };
        sender
            .send(answer)
            .map_err(|_| IpcError::not_found(format!("action `{id}` no longer waits for approval")))
    }

    /// Drops every open question (the run ended): late answers get `not_found`.
    pub fn clear(&self) {
        self.questions().clear();
    }

    fn wait(&self, request: &ApprovalRequest) -> oneshot::Receiver<Answer> {
        let id = &request.tool_use_id;
        let mut questions = self.questions();
        if let Some(waiting) = questions.get_mut(id).and_then(|q| q.waiting.take()) {
            return waiting;
        }
        drop(questions);
        self.open(id, &request.plan.kind);
        self.wait(request)
    }

    fn close(&self, id: &str) {
        self.questions().remove(id);
    }
}

pub struct WindowApprover {
    pub pending: Arc<PendingApprovals>,
}

/// Closes the question however the wait ends, including a stop that drops the future.
struct CloseOnDrop<'a>(&'a PendingApprovals, &'a str);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close(self.1);
    }
}

#[async_trait]
impl Approver for WindowApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Answer {
        let waiting = self.pending.wait(request);
        let _close = CloseOnDrop(&self.pending, &request.tool_use_id);
        waiting.await.unwrap_or_else(|_| {
            request.answer(Decision::Deny {
                reason: Some("the window closed before answering".into()),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use deskhand::tools::ActionPlan;
    use serde_json::Value;

    use super::*;

    fn request(id: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool_use_id: id.into(),
            tool: "bash".into(),
            input: Value::Null,
            plan: ActionPlan {
                kind: "bash".into(),
                read_only: false,
                summary: "run ls".into(),
                detail: Value::Null,
                target: None,
            },
        }
    }

    #[tokio::test]
    async fn an_answer_before_the_wait_is_kept_and_unknown_ids_are_refused() {
        let pending = Arc::new(PendingApprovals::default());
        let approver = WindowApprover {
            pending: pending.clone(),
        };
        pending.open("t1", "bash");
        assert_eq!(pending.kind("t1").as_deref(), Some("bash"));
        pending.answer("t1", Decision::ApproveKind).unwrap();
        assert_eq!(
            approver.decide(&request("t1")).await.decision,
            Decision::ApproveKind
        );
        let error = pending.answer("t1", Decision::Approve).unwrap_err();
        assert_eq!(error.kind, crate::error::ErrorKind::NotFound);

        let waiting = tokio::spawn({
            let pending = pending.clone();
            async move { WindowApprover { pending }.decide(&request("t2")).await }
        });
        while pending
            .answer("t2", Decision::Deny { reason: None })
            .is_err()
        {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            waiting.await.unwrap(),
            request("t2").answer(Decision::Deny { reason: None })
        );
    }
}
