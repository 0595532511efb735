//! The one error type of the facade: every algorithm crate's error, and the spec's own.

use alltoall_sched::ScheduleError;
use colocation_matching::BipartiteError;
use colocation_matching::MatchingError;
use comm_cost_model::InputError;
use expert_placement::PlacementError;
use rail_network::RailNetworkError;
use thiserror::Error;
use topology_partition::TopologyError;
use traffic_placement::TrafficError;

/// Why a spec could not be planned: an algorithm crate rejected what the facade passed it, or the
/// spec itself is malformed.
///
/// Algorithm-crate errors arrive unchanged (`#[error(transparent)]`), so their messages name the
/// failed constraint; checks on spec fields (a negative time, a zero count, a list of the wrong
/// length, a size above a limit) use comm-cost-model's helpers and arrive as
/// [`PlanError::Input`]. Every crate embeds the same [`InputError`], so [`PlanError::input`]
/// answers "which input check failed" whichever crate made it.
///
/// # Examples
///
/// ```
/// use moe_planner::PlanError;
/// use moe_planner::comm_cost_model::InputError;
/// use moe_planner::inference::{plan_inference, OnePerGpuSpec};
/// let spec = OnePerGpuSpec { gpus: vec![], models: vec![], seed: 0, ..Default::default() };
/// let err = plan_inference(&spec.into()).unwrap_err();
/// assert!(matches!(err, PlanError::Input(InputError::CountTooSmall { what: "GPUs", .. })));
/// assert!(matches!(err.input(), Some(InputError::CountTooSmall { .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Bad input in the workspace's vocabulary (comm-cost-model's [`InputError`]): a spec value
    /// (time, rate, count) that failed a check, two parts of a spec that must agree in size and
    /// do not (`SizeMismatch`), a spec asking for more than the planner supports (`TooLarge`),
    /// or a cost model's rejection of its input. An algorithm crate's input errors arrive inside
    /// that crate's variant; [`PlanError::input`] finds them wherever they are.
    #[error(transparent)]
    Input(#[from] InputError),
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

impl PlanError {
    /// The generic input check that failed, wherever it was made: in the facade's spec checks
    /// or in any algorithm crate (each embeds comm-cost-model's [`InputError`] as its `Input`
    /// variant). `None` for the errors that are not generic input checks (an infeasible
    /// instance, an exhausted budget, a spec field the planner cannot use, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use moe_planner::PlanError;
    /// use moe_planner::comm_cost_model::InputError;
    /// use moe_planner::expert_placement::PlacementError;
    /// let err = PlanError::from(PlacementError::from(InputError::Empty { what: "loads" }));
    /// assert_eq!(err.input(), Some(&InputError::Empty { what: "loads" }));
    /// ```
    #[must_use]
    pub fn input(&self) -> Option<&InputError> {
        match self {
            Self::Input(e) => Some(e),
            Self::Schedule(e) => schedule_input(e),
            Self::Matching(e) => match e {
                MatchingError::Input(e) => Some(e),
                MatchingError::Bipartite(BipartiteError::Input(e)) => Some(e),
                _ => None,
            },
            Self::Placement(e) | Self::Layer { source: e, .. } => placement_input(e),
            Self::Traffic(e) => match e {
                TrafficError::Input(e) => Some(e),
                TrafficError::Placement(e) => placement_input(e),
                _ => None,
            },
            Self::Topology(TopologyError::Input(e)) | Self::Rail(RailNetworkError::Input(e)) => {
                Some(e)
            }
            _ => None,
        }
    }
}

/// The input check inside a scheduling error (with or without the entry's position).
fn schedule_input(e: &ScheduleError) -> Option<&InputError> {
    match e {
        ScheduleError::Input(e)
        | ScheduleError::InvalidTraffic { source: e, .. }
        | ScheduleError::InvalidBandwidth { source: e, .. } => Some(e),
        _ => None,
    }
}

/// The input check inside a placement error.
fn placement_input(e: &PlacementError) -> Option<&InputError> {
    match e {
        PlacementError::Input(e) => Some(e),
        PlacementError::Bipartite(BipartiteError::Input(e)) => Some(e),
        _ => None,
    }
}
