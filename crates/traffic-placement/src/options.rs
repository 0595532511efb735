//! The knobs of the traffic-aware planner, with their documented defaults.

use expert_placement::PlacementOptions;
use serde::{Deserialize, Serialize};

use crate::bound::DEFAULT_BOUND_ROUNDS;
use crate::error::TrafficError;

/// Default allowed excess of the busiest GPU over the best compute-only plan, `0.01` (1%).
pub const DEFAULT_TRAFFIC_TOLERANCE: f64 = 0.01;

/// Default step budget of one layer's traffic search (one step = one move scored).
pub const DEFAULT_TRAFFIC_SEARCH_STEPS: u64 = 200_000;

/// Default wall-clock safety cap of one layer's plan, seconds: about 100 times what a 4-node
/// DeepSeek-like layer needs, so that only a pathological instance or a stalled machine meets it.
pub const DEFAULT_TRAFFIC_TIME_BUDGET_S: f64 = 10.0;

/// Options of [`crate::place_traffic_aware`] and [`crate::tradeoff_curve`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficOptions {
    /// Allowed relative excess `eps` of the busiest GPU over the best compute-only plan: the plan
    /// keeps its busiest GPU at most `(1 + eps)` times that plan's (default
    /// [`DEFAULT_TRAFFIC_TOLERANCE`]).
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    /// Keep each of this many contiguous expert groups inside one node (groups-in-nodes, as
    /// EPLB's hierarchical policy does); absent: no such constraint.
    #[serde(default)]
    pub groups: Option<usize>,
    /// Step budget of one layer's search (default [`DEFAULT_TRAFFIC_SEARCH_STEPS`]).
    #[serde(default = "default_steps")]
    pub search_steps: u64,
    /// Wall-clock safety cap of one layer in seconds (default [`DEFAULT_TRAFFIC_TIME_BUDGET_S`]).
    /// Every search stops on counted work (this struct's step and round budgets, fixed grids and
    /// iteration counts, the node packer's counted starts), so a plan that stays under the cap is
    /// the same on any machine at any load; a plan the cap cut short (the bound still runs one
    /// round) says [`crate::TrafficTermination::TimeCapped`] and can differ between runs.
    #[serde(default = "default_time")]
    pub time_budget_s: f64,
    /// Coordinate-descent rounds of the traffic lower bound (default
    /// [`crate::DEFAULT_BOUND_ROUNDS`]).
    #[serde(default = "default_rounds")]
    pub bound_rounds: usize,
    /// Budget of the compute-only plan the balance limit is measured from (and of the node
    /// packings with groups in nodes). Its `time_budget_s` is raised to this struct's
    /// [`TrafficOptions::time_budget_s`] when smaller, so that those searches too stop on their
    /// counted work rather than on the clock.
    #[serde(default)]
    pub placement: PlacementOptions,
}

fn default_tolerance() -> f64 {
    DEFAULT_TRAFFIC_TOLERANCE
}
fn default_steps() -> u64 {
    DEFAULT_TRAFFIC_SEARCH_STEPS
}
fn default_time() -> f64 {
    DEFAULT_TRAFFIC_TIME_BUDGET_S
}
fn default_rounds() -> usize {
    DEFAULT_BOUND_ROUNDS
}

impl Default for TrafficOptions {
    fn default() -> Self {
        Self {
            tolerance: DEFAULT_TRAFFIC_TOLERANCE,
            groups: None,
            search_steps: DEFAULT_TRAFFIC_SEARCH_STEPS,
            time_budget_s: DEFAULT_TRAFFIC_TIME_BUDGET_S,
            bound_rounds: DEFAULT_BOUND_ROUNDS,
            placement: PlacementOptions::default(),
        }
    }
}

impl TrafficOptions {
    /// The `expert-placement` options of the compute-only plan: [`TrafficOptions::placement`]
    /// with its time budget raised to the layer's safety cap.
    pub(crate) fn compute_only_options(&self) -> PlacementOptions {
        PlacementOptions {
            time_budget_s: self.placement.time_budget_s.max(self.time_budget_s),
            ..self.placement.clone()
        }
    }

    /// Checks the scalar options.
    ///
    /// # Errors
    ///
    /// [`TrafficError::Input`] (`NonFinite` or `Negative`) for a tolerance or time budget that is
    /// not a finite non-negative number; the errors of [`PlacementOptions::validate`].
    pub fn validate(&self) -> Result<(), TrafficError> {
        comm_cost_model::check_non_negative("tolerance", self.tolerance)?;
        comm_cost_model::check_non_negative("time_budget_s", self.time_budget_s)?;
        self.placement.validate()?;
        Ok(())
    }
}
