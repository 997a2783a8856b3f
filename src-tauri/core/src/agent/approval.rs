//! The approval gate: nothing runs unless the policy, a session rule or the person allows it.

use std::collections::HashSet;
use std::sync::{Mutex, RwLock};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::ActionPlan;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// Ask the person before every action that changes anything.
    #[default]
    Ask,
    /// Allow everything.
    Auto,
    /// Allow read-only actions only.
    Deny,
}

impl std::str::FromStr for ApprovalPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ask" => Ok(Self::Ask),
            "auto" => Ok(Self::Auto),
            "deny" | "read-only" => Ok(Self::Deny),
            _ => Err(format!(
                "unknown approval policy `{s}` (expected ask, auto or deny)"
            )),
        }
    }
}

/// What the person is asked to approve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub tool_use_id: String,
    pub tool: String,
    pub input: Value,
    #[serde(flatten)]
    pub plan: ActionPlan,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Approve,
    /// Approve, and every later action of the same kind in this session.
    ApproveKind,
    Deny {
        reason: Option<String>,
    },
}

/// Who made a decision, for the action log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    Policy,
    SessionRule,
    User,
}

/// Asks a person: the terminal in the CLI, the window in the app.
#[async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: &ApprovalRequest) -> Decision;
}

/// An approver that always answers the same, for scripts and tests.
pub struct FixedApprover(pub Decision);

#[async_trait]
impl Approver for FixedApprover {
    async fn decide(&self, _: &ApprovalRequest) -> Decision {
        self.0.clone()
    }
}

pub struct ApprovalGate {
    policy: RwLock<ApprovalPolicy>,
    allowed_kinds: Mutex<HashSet<String>>,
    approver: Box<dyn Approver>,
}

/// The gate's answer before the person is asked, if it needs no person.
pub enum Precheck {
    Decided(Decision, DecidedBy),
    AskUser,
}

impl ApprovalGate {
    pub fn new(policy: ApprovalPolicy, approver: Box<dyn Approver>) -> Self {
        Self {
            policy: RwLock::new(policy),
            allowed_kinds: Mutex::default(),
            approver,
        }
    }

    pub fn policy(&self) -> ApprovalPolicy {
        *self.policy.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Switches the mode, also mid-run: the next action sees the new policy.
    pub fn set_policy(&self, policy: ApprovalPolicy) {
        *self.policy.write().unwrap_or_else(|e| e.into_inner()) = policy;
    }

    pub fn precheck(&self, plan: &ActionPlan) -> Precheck {
        let policy = self.policy();
        if plan.read_only {
            return Precheck::Decided(Decision::Approve, DecidedBy::Policy);
        }
        match policy {
            ApprovalPolicy::Auto => Precheck::Decided(Decision::Approve, DecidedBy::Policy),
            ApprovalPolicy::Deny => Precheck::Decided(
                Decision::Deny {
                    reason: Some("the approval policy allows read-only actions only".into()),
                },
                DecidedBy::Policy,
            ),
            ApprovalPolicy::Ask => {
                let allowed = self.allowed_kinds.lock().unwrap_or_else(|e| e.into_inner());
                if allowed.contains(&plan.kind) {
                    Precheck::Decided(Decision::Approve, DecidedBy::SessionRule)
                } else {
                    Precheck::AskUser
                }
            }
        }
    }

    pub async fn ask(&self, request: &ApprovalRequest) -> Decision {
        let decision = self.approver.decide(request).await;
        if decision == Decision::ApproveKind {
            self.allowed_kinds
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(request.plan.kind.clone());
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(kind: &str, read_only: bool) -> ActionPlan {
        ActionPlan {
            kind: kind.into(),
            read_only,
            summary: String::new(),
            detail: Value::Null,
        }
    }

    fn decided(precheck: Precheck) -> Option<(Decision, DecidedBy)> {
        match precheck {
            Precheck::Decided(d, by) => Some((d, by)),
            Precheck::AskUser => None,
        }
    }

    #[tokio::test]
    async fn policies_and_session_rules() {
        let gate = ApprovalGate::new(
            ApprovalPolicy::Ask,
            Box::new(FixedApprover(Decision::ApproveKind)),
        );
        assert_eq!(
            decided(gate.precheck(&plan("computer.screenshot", true))),
            Some((Decision::Approve, DecidedBy::Policy))
        );
        assert!(decided(gate.precheck(&plan("bash", false))).is_none());
        let request = ApprovalRequest {
            tool_use_id: "t".into(),
            tool: "bash".into(),
            input: Value::Null,
            plan: plan("bash", false),
        };
        assert_eq!(gate.ask(&request).await, Decision::ApproveKind);
        assert_eq!(
            decided(gate.precheck(&plan("bash", false))),
            Some((Decision::Approve, DecidedBy::SessionRule))
        );
        assert!(decided(gate.precheck(&plan("editor.create", false))).is_none());
        gate.set_policy(ApprovalPolicy::Deny);
        assert!(matches!(
            decided(gate.precheck(&plan("bash", false))),
            Some((Decision::Deny { .. }, DecidedBy::Policy))
        ));
        assert_eq!(
            decided(gate.precheck(&plan("editor.view", true))),
            Some((Decision::Approve, DecidedBy::Policy))
        );
        gate.set_policy(ApprovalPolicy::Auto);
        assert_eq!(
            decided(gate.precheck(&plan("editor.create", false))),
            Some((Decision::Approve, DecidedBy::Policy))
        );
    }
}
