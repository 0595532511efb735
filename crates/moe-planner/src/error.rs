//! The one error type of the facade: every algorithm crate's error, and the spec's own.

use alltoall_sched::ScheduleError;
use colocation_matching::MatchingError;
use comm_cost_model::CostModelError;
use expert_placement::PlacementError;
use rail_network::RailNetworkError;
use thiserror::Error;
use topology_partition::TopologyError;
use traffic_placement::TrafficError;

/// Why a spec could not be planned: an algorithm crate rejected what the facade passed it, or the
/// spec itself is malformed.
///
/// Algorithm-crate errors arrive unchanged (`#[error(transparent)]`), so their messages name the
/// failed constraint; value checks on spec fields (a negative time, a zero count) use
/// comm-cost-model's helpers and arrive as [`PlanError::Cost`]. The shapes of
/// [`PlanError::SizeMismatch`] and [`PlanError::TooLarge`] are the workspace's.
///
/// # Examples
///
/// ```
/// use moe_planner::PlanError;
/// use moe_planner::comm_cost_model::CostModelError;
/// use moe_planner::inference::{plan_inference, OnePerGpuSpec};
/// let spec = OnePerGpuSpec { gpus: vec![], models: vec![], seed: 0, ..Default::default() };
/// assert!(matches!(
///     plan_inference(&spec.into()),
///     Err(PlanError::Cost(CostModelError::CountTooSmall { what: "GPUs", .. }))
/// ));
/// ```
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A spec value (time, rate, count) failed a comm-cost-model check, or a cost model
    /// rejected its input.
    #[error(transparent)]
    Cost(#[from] CostModelError),
    /// The all-to-all scheduler rejected a traffic matrix, a bandwidth or a placement.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A colocation problem (GPU assignment, expert pairing, LysiAssign) was rejected.
    #[error(transparent)]
    Matching(#[from] MatchingError),
    /// An expert replication and placement problem was rejected.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// A traffic-aware placement problem (routed tokens, tolerance) was rejected.
    #[error(transparent)]
    Traffic(#[from] TrafficError),
    /// A cluster, objective or grouping was rejected.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A fabric, model, system or parallelization was rejected (the message names the failed
    /// constraint).
    #[error(transparent)]
    Rail(#[from] RailNetworkError),
    /// Two parts of a spec that must agree in size do not.
    #[error("{what}: expected {expected}, got {actual}")]
    SizeMismatch {
        /// What was compared.
        what: &'static str,
        /// The size required.
        expected: usize,
        /// The size received.
        actual: usize,
    },
    /// A spec asks for more than the planner supports.
    #[error("{what} = {value} exceeds the limit {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The largest value supported.
        limit: usize,
        /// The value received.
        value: usize,
    },
    /// One layer of a multi-layer spec was rejected by its planner.
    #[error("layer {layer}: {source}")]
    Layer {
        /// Index of the layer.
        layer: usize,
        /// The planner's error.
        source: PlacementError,
    },
    /// A field the chosen option needs is absent.
    #[error("{needed_by} needs `{field}`")]
    MissingField {
        /// The absent field.
        field: &'static str,
        /// The option that needs it.
        needed_by: &'static str,
    },
    /// A text file in a tool's format (nccl-tests output) could not be read.
    #[error("line {line}: {message}")]
    Format {
        /// 1-based line (0 for the file as a whole).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A spec field holds a value the planner cannot use. `field` is the spec's (serde) name of
    /// the field, so an edge (CLI, Python) can name its own flag or argument for it.
    #[error("`{field}`: {reason}")]
    InvalidField {
        /// The spec field, as spelled in the spec (`slots_per_gpu`, `groups`, `loads`, ...).
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Two options of a spec cannot be used together (the planner would otherwise silently
    /// ignore one of them).
    #[error("`{field}` cannot be combined with `{other}`: {reason}")]
    Incompatible {
        /// The first spec field.
        field: &'static str,
        /// The field it conflicts with.
        other: &'static str,
        /// Why, and what to do instead.
        reason: String,
    },
    /// An id that must be a non-negative index is negative.
    #[error("{what}: row {row}, entry {index}: id {value} is negative")]
    NegativeId {
        /// Which input.
        what: &'static str,
        /// Row (for example the layer).
        row: usize,
        /// Position in the row.
        index: usize,
        /// The id.
        value: i64,
    },
}
