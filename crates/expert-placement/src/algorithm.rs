//! One entry point for every placement algorithm.

use rayon::prelude::*;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::eplb::{EplbPolicy, eplb};
use crate::error::PlacementError;
use crate::exact::{PLACEMENT_EXACT_MAX_EXPERTS, PLACEMENT_EXACT_MAX_GPUS};
use crate::model::{LayerLoads, PlacementCluster};
use crate::node_aware::solve_node_aware;
use crate::optimal::{solve, solve_to};
use crate::options::{
    DEFAULT_EXACT_SEARCH_STEPS, DEFAULT_SEARCH_STEPS, PlacementOptions, Termination,
};
use crate::plan::Placement;
use comm_cost_model::check_at_most;

/// The expert placement algorithms, by name.
///
/// Serialized in kebab case: `"optimal"`, `{"optimal-node-aware": {"groups": 8}}`, `"exact"`,
/// `{"eplb": {"hierarchical": {"groups": 8}}}`, `{"eplb": "global"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementAlgorithm {
    /// Replica counts and packing that minimize the maximum GPU load: greedy replication,
    /// conflict-free packing and local search, then branch and bound on small instances (up to
    /// [`PLACEMENT_EXACT_MAX_EXPERTS`] experts and [`PLACEMENT_EXACT_MAX_GPUS`] GPUs, within a node budget), which
    /// proves the result optimal (`lower_bound == max_gpu_load`) when it finishes. On GPUs of
    /// two slots and one speed, up to 64 GPUs at any expert count, an exact search over replica
    /// counts does the same within the budget, and raises `lower_bound` when it cannot finish.
    Optimal,
    /// [`PlacementAlgorithm::Optimal`] with every replica of each of `groups` contiguous expert
    /// groups inside one node. The plan reports the unconstrained optimum beside it
    /// ([`Placement::unconstrained_max_gpu_load`]).
    OptimalNodeAware {
        /// Number of expert groups.
        groups: usize,
    },
    /// Branch and bound to proven optimality; an error rather than an unproved plan.
    Exact,
    /// DeepSeek's EPLB, the baseline ([`eplb`]).
    Eplb(EplbPolicy),
}

impl PlacementAlgorithm {
    /// The kebab-case name (`optimal`, `optimal-node-aware`, `exact`, `eplb-hierarchical`,
    /// `eplb-global`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Optimal => "optimal",
            Self::OptimalNodeAware { .. } => "optimal-node-aware",
            Self::Exact => "exact",
            Self::Eplb(EplbPolicy::Hierarchical { .. }) => "eplb-hierarchical",
            Self::Eplb(EplbPolicy::Global) => "eplb-global",
        }
    }
}

impl fmt::Display for PlacementAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Places one layer's experts on the cluster's slots with `algorithm`.
///
/// Model: a replica of expert `e` carries `w_e / c_e` (the even split engines use by default), a
/// GPU's load is the sum of its replicas' loads over its speed; every expert has at least one
/// replica, every GPU holds exactly its slots, and (except for the EPLB baseline) no GPU holds two
/// replicas of one expert. The objective is the maximum GPU load; every plan carries a certified
/// lower bound ([`crate::placement_lower_bound`] or a proved optimum).
///
/// # Errors
///
/// [`PlacementError::Input`] (`NonFinite`) when a GPU's load, the plan's gap or its imbalance
/// overflows (loads near `f64::MAX` or tiny speeds), [`PlacementError::InsufficientCapacity`] for fewer slots than experts,
/// [`PlacementError::SlotsExceedExperts`] for a GPU with more slots than experts,
/// [`PlacementError::Input`] (`TooLarge`) above [`crate::MAX_GPU_EXPERT_PAIRS`] GPU-expert pairs; the shape errors
/// of [`eplb`] and, node-aware, [`PlacementError::Input`] (`NotDivisible`) when `groups` does not divide
/// the expert count, [`PlacementError::Input`] (`Empty`) for zero groups and
/// [`PlacementError::InsufficientCapacity`] when groups cannot be spread over the nodes (more
/// nodes than groups included: every node needs one);
/// [`PlacementError::Input`] (`TooLarge`) for [`PlacementAlgorithm::Exact`] above [`PLACEMENT_EXACT_MAX_EXPERTS`]
/// experts or [`PLACEMENT_EXACT_MAX_GPUS`] GPUs, and [`PlacementError::BudgetExhausted`] when it cannot prove optimality within
/// its step budget ([`crate::DEFAULT_EXACT_SEARCH_STEPS`] or [`PlacementOptions::search_steps`]).
///
/// # Complexity
///
/// [`PlacementAlgorithm::Optimal`]: `O(R · C · log G)` for the packing (`C` distinct GPU
/// speeds) plus local search moves of `O(S_max · (R + E · c_max) · log c_max)` each, at most
/// `4R + 64` of them and at most about 2^28 units of scoring work in all (so a few experts
/// with thousands of replicas each stay fast); in practice well under a millisecond for 256
/// experts on 288 slots. [`PlacementAlgorithm::Exact`]: exponential,
/// bounded by the node budget. EPLB: `O(R log R)`.
///
/// # Examples
///
/// ```
/// use expert_placement::{EplbPolicy, LayerLoads, PlacementAlgorithm, PlacementCluster, place};
///
/// // vLLM PR 37656: 8 GPUs with 2 slots each.
/// let c = PlacementCluster::uniform(8, 2, 1)?;
/// let w = LayerLoads::new(vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0])?;
/// let best = place(&w, &c, PlacementAlgorithm::Optimal)?;
/// assert!((best.max_gpu_load - 590.0 / 3.0).abs() < 1e-9);
/// assert_eq!(best.gap(), 0.0); // proved optimal
/// let base = place(&w, &c, PlacementAlgorithm::Eplb(EplbPolicy::Global))?;
/// assert_eq!(base.max_gpu_load, 232.0);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn place(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    algorithm: PlacementAlgorithm,
) -> Result<Placement, PlacementError> {
    place_with(loads, cluster, algorithm, &PlacementOptions::default())
}

/// [`place`] with an explicit search budget ([`PlacementOptions`]); the plan's
/// [`Placement::termination`] says how the search ended.
///
/// # Errors
///
/// Those of [`place`], and [`PlacementError::Input`] (`InvalidEntry`) for a time budget that is not a
/// finite non-negative number of seconds.
///
/// # Complexity
///
/// That of [`place`]; the branch and bound stops after `search_steps` steps or
/// `time_budget_s` seconds, whichever comes first (the plan says which: `BudgetExhausted` or
/// `TimeCapped`).
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementOptions,
///     Termination, place_with};
///
/// // 18 experts, two of them hot, on 9 GPUs x 3 slots (issue 20): the hot experts get 4 + 5
/// // replicas, one per GPU, never two on one GPU.
/// let w = LayerLoads::new(vec![0.0, 1.0, 5.0, 0.0, 1.0, 1000.0, 20.0, 0.0, 0.0, 5.0, 20.0,
///     0.0, 1000.0, 5.0, 5.0, 20.0, 1.0, 5.0])?;
/// let c = PlacementCluster::uniform(9, 3, 1)?;
/// // No exact search, and a clock generous enough that only counted limits end the search
/// // (a plan the clock cuts says `TimeCapped`).
/// let options = PlacementOptions {
///     search_steps: Some(0),
///     time_budget_s: 600.0,
///     ..PlacementOptions::default()
/// };
/// let p = place_with(&w, &c, PlacementAlgorithm::Optimal, &options)?;
/// assert!(p.max_gpu_load <= 251.0);
/// assert_eq!(p.replica_count[5] + p.replica_count[12], 9);
/// // No exact search was allowed, yet the plan is certified: its bound proves it optimal.
/// assert_eq!(p.termination, Termination::BoundReached);
/// assert!(p.max_gpu_load <= p.lower_bound * (1.0 + 1e-9));
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn place_with(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    algorithm: PlacementAlgorithm,
    options: &PlacementOptions,
) -> Result<Placement, PlacementError> {
    options.validate()?;
    let plan = plan_with(loads, cluster, algorithm, options);
    // A search the caller cancelled ended early: its plan (or its `BudgetExhausted`) is not
    // what the budget would give.
    options.check_cancelled()?;
    plan
}

/// [`place_with`]'s [`PlacementAlgorithm::Optimal`] that stops searching as soon as its busiest
/// GPU is at most `target`: a packing step inside another planner that only needs a plan within
/// a limit (the traffic-aware planner packs each node this way). With a `target` of 0 it is
/// [`place_with`]'s optimal plan; a positive `target` also skips the final search over replica
/// counts (as inside the node-aware planner, whose nodes only need to stay below a limit).
///
/// The work is bounded by counts (the heuristic's starts and perturbations, the local search's
/// move budget, `search_steps` for the branch and bound); [`PlacementOptions::time_budget_s`]
/// cuts the heuristic's extra starts and perturbations at half of it and everything at all of
/// it, so a generous time budget gives the same plan on any machine.
///
/// # Errors
///
/// Those of [`place_with`], and [`PlacementError::Input`] (`InvalidEntry`) for a `target` that
/// is not a finite non-negative number.
///
/// # Complexity
///
/// That of [`place_with`] with [`PlacementAlgorithm::Optimal`], less when the target is met
/// early.
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementCluster, PlacementOptions, place_within};
///
/// let c = PlacementCluster::uniform(8, 2, 1)?;
/// let w = LayerLoads::new(vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0])?;
/// let p = place_within(&w, &c, 240.0, &PlacementOptions::default())?;
/// assert!(p.max_gpu_load <= 240.0);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn place_within(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    target: f64,
    options: &PlacementOptions,
) -> Result<Placement, PlacementError> {
    options.validate()?;
    comm_cost_model::check_entry("target", 0, target)?;
    cluster.check_experts(loads.as_slice().len())?;
    let s = solve_to(
        loads,
        cluster,
        &options.budget(DEFAULT_SEARCH_STEPS),
        target,
    );
    let mut p = Placement::scored(loads.as_slice(), cluster, s.map, s.lower_bound)?;
    p.termination = s.termination;
    options.check_cancelled()?;
    Ok(p)
}

/// [`place_with`] after its option check, before its cancellation check.
fn plan_with(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    algorithm: PlacementAlgorithm,
    options: &PlacementOptions,
) -> Result<Placement, PlacementError> {
    let w = loads.as_slice();
    if !matches!(algorithm, PlacementAlgorithm::Eplb(_)) {
        cluster.check_experts(w.len())?;
    }
    // Every plan is scored by `Placement::scored`, which refuses non-finite figures.
    match algorithm {
        PlacementAlgorithm::Eplb(policy) => eplb(loads, cluster, policy),
        PlacementAlgorithm::Optimal => {
            let s = solve(loads, cluster, &options.budget(DEFAULT_SEARCH_STEPS));
            let mut p = Placement::scored(w, cluster, s.map, s.lower_bound)?;
            p.termination = s.termination;
            Ok(p)
        }
        PlacementAlgorithm::Exact => {
            check_at_most(
                "experts (exact placement)",
                PLACEMENT_EXACT_MAX_EXPERTS,
                w.len(),
            )?;
            check_at_most(
                "GPUs (exact placement)",
                PLACEMENT_EXACT_MAX_GPUS,
                cluster.gpus(),
            )?;
            let s = solve(loads, cluster, &options.budget(DEFAULT_EXACT_SEARCH_STEPS));
            if !s.proven {
                return Err(PlacementError::BudgetExhausted {
                    what: "exact placement (branch and bound)",
                });
            }
            let mut p = Placement::scored(w, cluster, s.map, s.lower_bound)?;
            p.termination = s.termination;
            Ok(p)
        }
        PlacementAlgorithm::OptimalNodeAware { groups } => {
            let budget = options.budget(DEFAULT_SEARCH_STEPS);
            let s = solve_node_aware(loads, cluster, groups, &budget)?;
            let free = solve(loads, cluster, &budget);
            // Every groups-in-nodes plan is also an unconstrained plan, so the unconstrained
            // bound (the proved optimum when the exact search finished) holds too.
            let bound = s.lower_bound.max(free.lower_bound);
            let mut p = Placement::scored(w, cluster, s.map, bound)?;
            p.termination = if p.max_gpu_load <= p.lower_bound * (1.0 + crate::bound::AT_BOUND) {
                Termination::BoundReached
            } else {
                s.termination
            };
            // The node-aware plan is also a valid unconstrained one, so the best unconstrained
            // plan found is the better of the two (the heuristics are not monotone).
            p.unconstrained_max_gpu_load = Some(free.value.min(p.max_gpu_load));
            Ok(p)
        }
    }
}

/// [`place`] for every layer (each layer independently).
///
/// # Errors
///
/// Those of [`place`], for the first failing layer; [`PlacementError::Input`] (`TooLarge`) when
/// `layers · R` exceeds [`crate::MAX_PLAN_ENTRIES`] (checked first).
///
/// # Complexity
///
/// The sum over layers of [`place`]'s, spread over rayon's threads (the layers are
/// independent; each layer's plan is the one [`place`] returns).
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, place_layers};
///
/// let layers = LayerLoads::layers(vec![
///     vec![90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0],
///     vec![20.0, 107.0, 104.0, 64.0, 19.0, 197.0, 187.0, 157.0, 172.0, 86.0, 16.0, 27.0],
/// ])?;
/// let c = PlacementCluster::uniform(8, 2, 2)?;
/// let plans = place_layers(&layers, &c, PlacementAlgorithm::Optimal)?;
/// let maxima: Vec<f64> = plans.iter().map(|p| p.max_gpu_load).collect();
/// assert_eq!(maxima, vec![136.0, 172.0]); // EPLB: 138.5 / 172 global, 156 / 179.5 hierarchical
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn place_layers(
    layers: &[LayerLoads],
    cluster: &PlacementCluster,
    algorithm: PlacementAlgorithm,
) -> Result<Vec<Placement>, PlacementError> {
    check_at_most(
        "layers x slots",
        crate::model::MAX_PLAN_ENTRIES,
        layers.len().saturating_mul(cluster.total_slots()),
    )?;
    let plans: Vec<Result<Placement, PlacementError>> = layers
        .par_iter()
        .map(|l| place(l, cluster, algorithm))
        .collect();
    // The first failing layer's error, as a sequential loop would return.
    plans.into_iter().collect()
}
