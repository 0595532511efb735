//! Expert replication and placement for MoE serving, with EPLB beside every plan.
//!
//! A [`PlacementSpec`] gives per-layer expert loads (tokens routed to each logical expert in a
//! window, the `logical_count` an SGLang dump holds), the cluster (GPUs, slots per GPU, nodes,
//! optional speeds), the policy and, for a rebalance, the current `physical_to_logical_map`.
//! [`plan_placement`] places every layer with `colocation-matching`'s planners, runs DeepSeek's
//! EPLB on the same input as the baseline, and, with a current placement, finds the plan with the
//! fewest expert-weight transfers within the tolerance and schedules those transfers as a
//! contention-free all-to-all with `alltoall-sched`. File formats of the serving engines are in
//! [`formats`].
//!
//! # Examples
//!
//! ```
//! use moe_planner::placement::{PlacementSpec, plan_placement};
//!
//! // vLLM PR 37656: one layer, 8 GPUs with 2 slots each.
//! let spec = PlacementSpec::new(vec![vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0]], 8, 2);
//! let plan = plan_placement(&spec)?;
//! let layer = &plan.layers[0];
//! assert!((layer.max_gpu_load - 590.0 / 3.0).abs() < 1e-9); // the optimum
//! assert_eq!(layer.lower_bound, layer.max_gpu_load); // proved
//! assert_eq!(layer.baseline_max_gpu_load, 232.0); // EPLB
//! assert_eq!(layer.duplicates_on_gpu, 0);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

mod advise;
pub mod formats;
mod plan;
mod spec;

pub use advise::{
    ADVISE_SEARCH_STEPS, Advice, AdviseSpec, DEFAULT_MIN_GAIN, DEFAULT_TARGET_IMBALANCE,
    RebalanceAdvice, RedundancyPoint, advise,
};
pub use expert_placement::RobustObjective;
pub use formats::MAX_PADDED_MAP_ENTRIES;
pub use plan::{
    LOAD_COMPARISON_TOLERANCE, LayerPlacement, PlacementPlan, PlacementTotals, TransferPlan,
    TransferRoundsPlan, WeightTransfer, WindowFigure, plan_placement,
};
pub use spec::{PlacementPolicy, PlacementSpec};
