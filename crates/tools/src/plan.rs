//! The `plan` tool: the model writes and updates a checklist of steps, so the person sees
//! where it thinks it is. Each change is reported as a `plan_updated` event (stored with the
//! session, so a resumed session keeps its plan) with what changed.

use std::sync::Mutex;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{ActionDetail, ActionPlan, ToolContext, ToolError, ToolOutput, TypedTool, input};
use deskhand_llm::ToolDefinition;
use deskhand_protocol::event::AgentEvent;
pub use deskhand_protocol::plan::{PlanChange, PlanStep, StepStatus};

pub const NAME: &str = "plan";

/// Bounds on what the model may write: a plan is a short checklist.
const MAX_STEPS: usize = 50;
const MAX_TITLE: usize = 200;
const MAX_NOTE: usize = 1000;

// What the model sends: one step, in full (`set`) or only what changes (`update`). Field doc
// comments are the descriptions the model reads in the schema.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StepInput {
    /// a short id, e.g. "1"
    id: String,
    /// what the step does (required in set)
    title: Option<String>,
    status: Option<StepStatus>,
    /// a short note: a result, or why it was skipped
    note: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanInput {
    /// set: write or replace the whole plan; update: change some steps
    action: PlanAction,
    #[schemars(length(max = MAX_STEPS))]
    steps: Vec<StepInput>,
}

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum PlanAction {
    Set,
    Update,
}

pub struct PlanTool {
    steps: Mutex<Vec<PlanStep>>,
    pending: Mutex<Vec<AgentEvent>>,
}

impl PlanTool {
    /// A plan tool starting from `steps`: the session's stored plan, or none.
    pub fn new(steps: Vec<PlanStep>) -> Self {
        Self {
            steps: Mutex::new(steps),
            pending: Mutex::new(Vec::new()),
        }
    }

    fn current(&self) -> Vec<PlanStep> {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The plan `input` makes of `current`, or what is wrong with it.
    fn apply(current: &[PlanStep], input: &PlanInput) -> Result<Vec<PlanStep>, ToolError> {
        for step in &input.steps {
            if step.id.trim().is_empty() {
                return Err(ToolError::InvalidInput(
                    "every step needs a non-empty `id`".into(),
                ));
            }
            if step
                .title
                .as_ref()
                .is_some_and(|t| t.chars().count() > MAX_TITLE)
            {
                return Err(ToolError::OutOfRange(format!(
                    "step `{}`: a title holds at most {MAX_TITLE} characters",
                    step.id
                )));
            }
            if step
                .note
                .as_ref()
                .is_some_and(|n| n.chars().count() > MAX_NOTE)
            {
                return Err(ToolError::OutOfRange(format!(
                    "step `{}`: a note holds at most {MAX_NOTE} characters",
                    step.id
                )));
            }
        }
        match input.action {
            PlanAction::Set => {
                if input.steps.is_empty() {
                    return Err(ToolError::InvalidInput(
                        "`set` needs at least one step".into(),
                    ));
                }
                if input.steps.len() > MAX_STEPS {
                    return Err(ToolError::OutOfRange(format!(
                        "a plan holds at most {MAX_STEPS} steps"
                    )));
                }
                let mut ids = std::collections::HashSet::new();
                if let Some(twice) = input.steps.iter().find(|s| !ids.insert(s.id.as_str())) {
                    return Err(ToolError::InvalidInput(format!(
                        "duplicate step id `{}`: every step of a plan needs its own id",
                        twice.id
                    )));
                }
                input
                    .steps
                    .iter()
                    .map(|s| {
                        let title = s
                            .title
                            .clone()
                            .filter(|t| !t.trim().is_empty())
                            .ok_or_else(|| {
                                ToolError::InvalidInput(format!(
                                    "step `{}` needs a `title` in `set`",
                                    s.id
                                ))
                            })?;
                        Ok(PlanStep {
                            id: s.id.clone(),
                            title,
                            status: s.status.unwrap_or(StepStatus::Pending),
                            note: s.note.clone().unwrap_or_default(),
                        })
                    })
                    .collect()
            }
            PlanAction::Update => {
                if input.steps.is_empty() {
                    return Err(ToolError::InvalidInput(
                        "`update` needs at least one step to change".into(),
                    ));
                }
                if current.is_empty() {
                    return Err(ToolError::NotFound(
                        "there is no plan yet: write one with `set` first".into(),
                    ));
                }
                let mut next = current.to_vec();
                for change in &input.steps {
                    let Some(step) = next.iter_mut().find(|s| s.id == change.id) else {
                        let ids: Vec<&str> = current.iter().map(|s| s.id.as_str()).collect();
                        return Err(ToolError::NotFound(format!(
                            "no step `{}` in the plan (its steps are {}); use `set` to replan",
                            change.id,
                            ids.join(", ")
                        )));
                    };
                    if let Some(title) = change.title.as_ref().filter(|t| !t.trim().is_empty()) {
                        step.title = title.clone();
                    }
                    if let Some(status) = change.status {
                        step.status = status;
                    }
                    if let Some(note) = &change.note {
                        step.note = note.clone();
                    }
                }
                Ok(next)
            }
        }
    }
}

/// What changed from `before` to `after`, step by step.
pub fn changes(before: &[PlanStep], after: &[PlanStep]) -> Vec<PlanChange> {
    let mut out = Vec::new();
    for step in after {
        match before.iter().find(|b| b.id == step.id) {
            None => out.push(PlanChange::Added {
                id: step.id.clone(),
                title: step.title.clone(),
            }),
            Some(old) => {
                if old.title != step.title {
                    out.push(PlanChange::Retitled {
                        id: step.id.clone(),
                        from: old.title.clone(),
                        to: step.title.clone(),
                    });
                }
                if old.status != step.status {
                    out.push(PlanChange::Status {
                        id: step.id.clone(),
                        from: old.status,
                        to: step.status,
                    });
                }
                if old.note != step.note {
                    out.push(PlanChange::Note {
                        id: step.id.clone(),
                        note: step.note.clone(),
                    });
                }
            }
        }
    }
    for old in before {
        if !after.iter().any(|s| s.id == old.id) {
            out.push(PlanChange::Removed {
                id: old.id.clone(),
                title: old.title.clone(),
            });
        }
    }
    out
}

/// The plan as the model reads it back.
fn describe(steps: &[PlanStep]) -> String {
    let mut out = String::from("The plan now:");
    for step in steps {
        let mark = match step.status {
            StepStatus::Pending => "[ ]",
            StepStatus::InProgress => "[>]",
            StepStatus::Done => "[x]",
            StepStatus::Skipped => "[-]",
        };
        out.push_str(&format!("\n{mark} {}. {}", step.id, step.title));
        if !step.note.is_empty() {
            out.push_str(&format!(" ({})", step.note));
        }
    }
    out
}

impl PlanAction {
    fn name(self) -> &'static str {
        match self {
            Self::Set => "set",
            Self::Update => "update",
        }
    }
}

#[async_trait]
impl TypedTool for PlanTool {
    type Input = PlanInput;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: NAME.into(),
            description: "Your plan for the task, shown to the user as a checklist beside the \
                actions. On any task of more than two steps, write the plan first (`set`), \
                before acting. Mark a step in_progress when you start it and done (or skipped, \
                with a note why) when it is finished (`update`, giving only the step ids and \
                what changes). If the plan turns out wrong, replan with `set` and the whole new \
                list; keep the ids of steps that stay."
                .into(),
            input_schema: input::schema::<PlanInput>(),
            anthropic: None,
        }
    }

    fn read(&self, input: &Value) -> Result<PlanInput, ToolError> {
        input::read(NAME, input)
    }

    fn plan(&self, input: &PlanInput) -> Result<ActionPlan, ToolError> {
        let next = Self::apply(&self.current(), input)?;
        Ok(ActionPlan {
            kind: NAME.into(),
            // It changes nothing outside Deskhand: the person sees it, nothing acts on it.
            read_only: true,
            summary: format!("plan: {} ({} steps)", input.action.name(), next.len()),
            detail: ActionDetail::None,
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    async fn run(&self, input: PlanInput, _ctx: &ToolContext) -> ToolOutput {
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        let next = match Self::apply(&steps, &input) {
            Ok(next) => next,
            Err(e) => return e.into(),
        };
        let event = AgentEvent::PlanUpdated {
            replanned: matches!(input.action, PlanAction::Set) && !steps.is_empty(),
            changes: changes(&steps, &next),
            steps: next.clone(),
        };
        *steps = next;
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
        ToolOutput::text(describe(&steps))
    }

    fn take_events(&self) -> Vec<AgentEvent> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn step(id: &str, title: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            id: id.into(),
            title: title.into(),
            status,
            note: String::new(),
        }
    }

    /// What applying `input` to `current` is refused with.
    fn refused(current: &[PlanStep], input: Value) -> String {
        let input = input::read(NAME, &input).unwrap();
        PlanTool::apply(current, &input).unwrap_err().to_string()
    }

    #[test]
    fn bad_plans_are_refused_with_the_reason() {
        let dup = json!({"action": "set", "steps": [{"id": "1", "title": "a"}, {"id": "1", "title": "b"}]});
        assert!(refused(&[], dup).contains("duplicate step id `1`"));
        let current = vec![step("1", "a", StepStatus::Pending)];
        let missing = json!({"action": "update", "steps": [{"id": "7", "status": "done"}]});
        assert!(refused(&current, missing).contains("no step `7`"));
        let none = json!({"action": "update", "steps": [{"id": "1", "status": "done"}]});
        assert!(refused(&[], none).contains("no plan yet"));
        let untitled = json!({"action": "set", "steps": [{"id": "1"}]});
        assert!(refused(&[], untitled).contains("needs a `title`"));
    }

    #[test]
    fn a_replan_reports_what_changed() {
        let before = vec![
            step("1", "open", StepStatus::Done),
            step("2", "find", StepStatus::InProgress),
            step("3", "print", StepStatus::Pending),
        ];
        let after = vec![
            step("1", "open", StepStatus::Done),
            step("2", "search", StepStatus::InProgress),
            step("4", "export", StepStatus::Pending),
        ];
        assert_eq!(
            changes(&before, &after),
            vec![
                PlanChange::Retitled {
                    id: "2".into(),
                    from: "find".into(),
                    to: "search".into()
                },
                PlanChange::Added {
                    id: "4".into(),
                    title: "export".into()
                },
                PlanChange::Removed {
                    id: "3".into(),
                    title: "print".into()
                },
            ]
        );
    }
}
