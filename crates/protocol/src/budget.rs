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

/// Where a model's price comes from, said wherever a cost is shown or limited: a reseller's
/// list is likely, not certain.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    /// The vendor's own price pages.
    #[default]
    Official,
    /// Third-party price lists only.
    Reseller,
    /// The person's `prices.json`.
    File,
}

impl PriceSource {
    /// The words a front end adds to a cost from this source (none for an official one).
    pub fn caveat(self) -> Option<&'static str> {
        match self {
            Self::Official => None,
            Self::Reseller => Some("reseller price, likely but not certain"),
            Self::File => Some("price from prices.json"),
        }
    }
}
