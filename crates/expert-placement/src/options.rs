//! The visible budget of the placement search, and how a search ended.

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::PlacementError;

/// Default search steps of the branch and bound behind [`crate::PlacementAlgorithm::Optimal`]
/// (about 0.1-0.3 s on a 2-core machine on the instances that use all of it).
pub const DEFAULT_SEARCH_STEPS: u64 = 2_000_000;

/// Default search steps of [`crate::PlacementAlgorithm::Exact`] (it errs rather than return an
/// unproved plan, so it may search longer).
pub const DEFAULT_EXACT_SEARCH_STEPS: u64 = 20_000_000;

/// Default wall-clock limit of one layer's branch and bound, seconds.
pub const DEFAULT_TIME_BUDGET_S: f64 = 1.0;

/// The budget of a placement search.
///
/// The branch and bound counts *steps* (each node it opens and each choice of GPUs it tries);
/// steps are deterministic, so the same input and budget give the same plan on every machine.
/// The wall-clock limit is a safety net: when it, rather than the step budget, ends a search,
/// the plan depends on the machine's speed (the plan still says so: `budget-exhausted`).
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementOptions,
///     Termination, place_with};
///
/// let c = PlacementCluster::uniform(4, 2, 1)?;
/// let w = LayerLoads::new(vec![9.0, 7.0, 3.0, 3.0, 1.0])?;
/// let p = place_with(&w, &c, PlacementAlgorithm::Optimal, &PlacementOptions::default())?;
/// assert!(matches!(p.termination, Termination::ProvedOptimal | Termination::BoundReached));
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementOptions {
    /// Steps the branch and bound may take per layer (per node for the node-aware planner);
    /// `None`: [`DEFAULT_SEARCH_STEPS`], or [`DEFAULT_EXACT_SEARCH_STEPS`] for `Exact`.
    /// `Some(0)` skips the exact search.
    #[serde(default)]
    pub search_steps: Option<u64>,
    /// Wall-clock limit of one branch and bound, seconds ([`DEFAULT_TIME_BUDGET_S`]).
    #[serde(default = "default_time_budget_s")]
    pub time_budget_s: f64,
}

fn default_time_budget_s() -> f64 {
    DEFAULT_TIME_BUDGET_S
}

impl Default for PlacementOptions {
    fn default() -> Self {
        Self {
            search_steps: None,
            time_budget_s: DEFAULT_TIME_BUDGET_S,
        }
    }
}

impl PlacementOptions {
    /// Checks the time budget: a finite, non-negative number of seconds.
    ///
    /// # Errors
    ///
    /// [`PlacementError::Input`] (`NonFinite` or `Negative`) naming `time_budget_s`.
    pub fn validate(&self) -> Result<(), PlacementError> {
        comm_cost_model::check_non_negative("time_budget_s", self.time_budget_s)?;
        Ok(())
    }

    /// The step and time budget with `default_steps` when none is set.
    pub(crate) fn budget(&self, default_steps: u64) -> Budget {
        Budget {
            steps: self.search_steps.unwrap_or(default_steps),
            time: Duration::try_from_secs_f64(self.time_budget_s).unwrap_or(Duration::MAX),
        }
    }
}

/// A resolved budget: steps and wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Budget {
    pub(crate) steps: u64,
    pub(crate) time: Duration,
}

impl Budget {
    /// The default budget of the optimal planner.
    pub(crate) fn default_optimal() -> Self {
        PlacementOptions::default().budget(DEFAULT_SEARCH_STEPS)
    }

    /// A deadline for a search starting now (`None` when it does not fit in an `Instant`).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        Instant::now().checked_add(self.time)
    }
}

/// How the search behind a plan ended.
///
/// Serialized in kebab case (`"proved-optimal"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Termination {
    /// The branch and bound finished: the plan is optimal and its `lower_bound` equals its
    /// maximum load.
    ProvedOptimal,
    /// The plan's maximum load equals its certified lower bound (optimal, no search needed).
    BoundReached,
    /// The branch and bound ran out of steps or time: the plan is the best found, its gap to
    /// `lower_bound` is what is certified.
    BudgetExhausted,
    /// The instance is above the exact search's limits (or the step budget is 0): the plan is
    /// the heuristic's, its gap to `lower_bound` is what is certified.
    #[default]
    Heuristic,
    /// A baseline (EPLB) or an evaluated map: nothing was searched.
    NotSearched,
}

impl Termination {
    /// The kebab-case name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::ProvedOptimal => "proved-optimal",
            Self::BoundReached => "bound-reached",
            Self::BudgetExhausted => "budget-exhausted",
            Self::Heuristic => "heuristic",
            Self::NotSearched => "not-searched",
        }
    }

    /// Whether the plan is proved optimal (searched to the end or at its bound).
    #[must_use]
    pub fn is_optimal(self) -> bool {
        matches!(self, Self::ProvedOptimal | Self::BoundReached)
    }

    /// The weaker of two terminations (the one a plan made of several searches reports):
    /// budget exhausted before heuristic before bound reached before proved optimal.
    #[must_use]
    pub(crate) fn weakest(self, other: Self) -> Self {
        let rank = |t: Self| match t {
            Self::BudgetExhausted => 0,
            Self::Heuristic => 1,
            Self::NotSearched => 2,
            Self::BoundReached => 3,
            Self::ProvedOptimal => 4,
        };
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
