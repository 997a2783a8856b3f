//! The cost forecast: from what the steps so far cost, what the run will cost at its turn
//! limit, so the person is warned before the budget is spent rather than when it is.

use super::outcome::RunOutcome;
use crate::agent::AgentEvent;
use deskhand_protocol::budget::Budget;

/// The warning, if the forecast at `max_turns` passes the budget. Computed from numbers the
/// run already has: no request is added.
pub fn over_budget_forecast(
    outcome: &RunOutcome,
    max_turns: u32,
    budget: Budget,
) -> Option<AgentEvent> {
    let turns = outcome.turns.max(1);
    let scale = f64::from(max_turns) / f64::from(turns);
    let u = &outcome.usage;
    let tokens = u.input_tokens
        + u.output_tokens
        + u.cache_creation_input_tokens
        + u.cache_read_input_tokens;
    let forecast_tokens = (tokens as f64 * scale).round() as u64;
    let forecast_cost = outcome.cost_usd.map(|cost| cost * scale);
    let over_cost = matches!((forecast_cost, budget.max_cost_usd), (Some(f), Some(max)) if f > max);
    let over_tokens = budget.max_tokens.is_some_and(|max| forecast_tokens > max);
    (over_cost || over_tokens).then_some(AgentEvent::CostForecast {
        turns: outcome.turns,
        max_turns,
        forecast_cost_usd: forecast_cost,
        max_cost_usd: budget.max_cost_usd,
        forecast_tokens,
        max_tokens: budget.max_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::RunStatus;
    use crate::llm::Usage;

    fn after(turns: u32, cost: f64) -> RunOutcome {
        RunOutcome {
            status: RunStatus::Done,
            turns,
            usage: Usage {
                input_tokens: 1000 * u64::from(turns),
                ..Usage::default()
            },
            cost_usd: Some(cost),
            verification: Default::default(),
        }
    }

    #[test]
    fn warns_once_the_pace_would_pass_the_budget_before_it_is_spent() {
        let budget = Budget {
            max_cost_usd: Some(1.0),
            max_tokens: None,
        };
        // 2 of 50 turns at 1 cent each: 50 cents at the limit.
        assert_eq!(over_budget_forecast(&after(2, 0.02), 50, budget), None);
        // 2 turns at 5 cents each: $2.50 at the limit, with only 10 cents spent.
        let Some(AgentEvent::CostForecast {
            forecast_cost_usd: Some(f),
            ..
        }) = over_budget_forecast(&after(2, 0.10), 50, budget)
        else {
            panic!("no warning")
        };
        assert!((f - 2.5).abs() < 1e-9);
    }
}
