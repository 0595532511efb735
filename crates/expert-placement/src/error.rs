//! The one error type of the crate.
//!
//! Generic input checks (sizes, values, indices, limits) are comm-cost-model's helpers and
//! arrive as [`PlacementError::Input`]; the other variants are this crate's own (too little
//! capacity, EPLB's shape rules, an exhausted search budget).

use comm_cost_model::InputError;
use thiserror::Error;

/// Everything that can go wrong in `expert-placement`.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// Worker capacities cannot hold every expert.
    #[error("capacities hold {capacity} experts but there are {experts}")]
    InsufficientCapacity {
        /// Sum of the capacities.
        capacity: usize,
        /// Number of experts.
        experts: usize,
    },
    /// A GPU has more slots than there are distinct experts, so it cannot be filled without two
    /// replicas of one expert.
    #[error("GPU {gpu} has {slots} slots but there are only {experts} experts")]
    SlotsExceedExperts {
        /// The GPU.
        gpu: usize,
        /// Its slot count.
        slots: usize,
        /// Number of logical experts.
        experts: usize,
    },
    /// A placement leaves a logical expert without any replica.
    #[error("{what}: expert {expert} has no replica")]
    MissingExpert {
        /// Which placement.
        what: &'static str,
        /// The expert.
        expert: usize,
    },
    /// An algorithm needs a uniform shape the input does not have (EPLB: equal slot counts,
    /// equal contiguous nodes).
    #[error("{what} must be uniform")]
    NotUniform {
        /// What must be uniform, and for which algorithm.
        what: &'static str,
    },
    /// Bad input in the workspace's vocabulary (comm-cost-model's [`InputError`]): an empty
    /// list, a size mismatch, a load that is NaN, infinite, negative or zero where it must be
    /// positive (with its index), an index out of range, a size above a planner's limit, a
    /// count that is not a multiple of another (EPLB's shape rules).
    #[error(transparent)]
    Input(#[from] InputError),
    /// An error of a matching primitive (the `bipartite` crate) with no variant of its own
    /// here (the shared shapes convert to theirs).
    #[error(transparent)]
    Bipartite(bipartite::BipartiteError),
    /// An exact search ran out of its budget ([`crate::PlacementOptions`]) before proving
    /// optimality.
    #[error("{what}: the search budget was exhausted before optimality was proved")]
    BudgetExhausted {
        /// Which search.
        what: &'static str,
    },
    /// The caller raised [`crate::PlacementOptions::cancel`] while the call ran; no plan is
    /// returned.
    #[error("the placement was cancelled")]
    Cancelled,
}

impl From<bipartite::BipartiteError> for PlacementError {
    fn from(e: bipartite::BipartiteError) -> Self {
        use bipartite::BipartiteError;
        match e {
            BipartiteError::Input(e) => Self::Input(e),
            other => Self::Bipartite(other),
        }
    }
}
