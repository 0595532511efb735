//! How a traffic-aware plan's search ended.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How the search behind a [`crate::TrafficPlacement`] ended.
///
/// Every search stops on counted work, so the first three are the same on any machine; only
/// [`TrafficTermination::TimeCapped`] says the wall-clock safety cap
/// ([`crate::TrafficOptions::time_budget_s`]) cut something short, and such a plan can differ
/// between runs. Serialized in kebab case (`"bound-reached"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TrafficTermination {
    /// The plan meets the balance limit and its cross-node tokens equal the certified bound:
    /// proved fewest.
    BoundReached,
    /// The searches ran to their ends (local optima, every grid point or construction tried);
    /// the gap to the bound is what is certified.
    Heuristic,
    /// A search used its whole step budget ([`crate::TrafficOptions::search_steps`]).
    StepsExhausted,
    /// The wall-clock safety cap stopped a search: the plan is valid but may differ between
    /// machines and runs.
    TimeCapped,
}

impl TrafficTermination {
    /// The kebab-case name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::BoundReached => "bound-reached",
            Self::Heuristic => "heuristic",
            Self::StepsExhausted => "steps-exhausted",
            Self::TimeCapped => "time-capped",
        }
    }
}

impl fmt::Display for TrafficTermination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
