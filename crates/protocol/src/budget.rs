//! A run's limits.

/// Limits that stop a run cleanly once reached.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    pub max_cost_usd: Option<f64>,
    /// Input, output and cache tokens together.
    pub max_tokens: Option<u64>,
}

impl Budget {
    /// The stored settings that hold a budget for every run (set in the window's settings or
    /// with `deskhand settings`); a run's own limits take precedence.
    pub const MAX_COST_SETTING: &'static str = "budget.max_cost_usd";
    pub const MAX_TOKENS_SETTING: &'static str = "budget.max_tokens";
}
