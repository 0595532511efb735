//! The one error type of the crate.
//!
//! Generic input checks (sizes, values, indices, limits) are comm-cost-model's helpers and
//! arrive as [`MatchingError::Input`]; the other variants are this crate's own (no perfect
//! matching, too little capacity, a solver failure).

use comm_cost_model::InputError;
use thiserror::Error;

/// Everything that can go wrong in `colocation-matching`.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum MatchingError {
    /// No perfect matching exists among the allowed pairs.
    #[error("no perfect matching exists among the allowed pairs ({matched} of {n} rows matched)")]
    NoPerfectMatching {
        /// Rows matched before the search failed (the maximum matching's size for the threshold
        /// searches; a lower bound on it from the Hungarian method).
        matched: usize,
        /// Rows in total.
        n: usize,
    },
    /// Worker capacities cannot hold every expert.
    #[error("capacities hold {capacity} experts but there are {experts}")]
    InsufficientCapacity {
        /// Sum of the capacities.
        capacity: usize,
        /// Number of experts.
        experts: usize,
    },
    /// An external solver (the `good_lp` MILP backend) did not return a solution.
    #[error("{what}: the solver failed ({failure})")]
    Solver {
        /// Which model was being solved.
        what: &'static str,
        /// Why it failed.
        failure: SolverFailure,
    },
    /// Bad input in the workspace's vocabulary (comm-cost-model's [`InputError`]): an empty
    /// list, a size mismatch, a value that is NaN, infinite, negative or zero where it must be
    /// positive (with its index), an index out of range, a size above a solver's limit, a
    /// count that is not a multiple of another.
    #[error(transparent)]
    Input(#[from] InputError),
    /// An error of a matching primitive (the `bipartite` crate) with no variant of its own
    /// here (the shared shapes convert to theirs).
    #[error(transparent)]
    Bipartite(bipartite::BipartiteError),
}

/// Why an external solver returned no solution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SolverFailure {
    /// The model has no feasible point (a bug in the model for the crate's own formulations).
    #[error("infeasible")]
    Infeasible,
    /// The objective is unbounded.
    #[error("unbounded")]
    Unbounded,
    /// Any other failure reported by the backend (numerical trouble, iteration limits).
    #[error("internal solver error")]
    Internal,
    /// A branch and bound explored its node budget without proving optimality.
    #[error("node budget exhausted before optimality was proved")]
    BudgetExhausted,
}

impl MatchingError {
    /// Maps a `good_lp` resolution error of the model `what`.
    pub(crate) fn solver(what: &'static str, error: &good_lp::ResolutionError) -> Self {
        let failure = match error {
            good_lp::ResolutionError::Infeasible => SolverFailure::Infeasible,
            good_lp::ResolutionError::Unbounded => SolverFailure::Unbounded,
            _ => SolverFailure::Internal,
        };
        Self::Solver { what, failure }
    }
}

impl From<bipartite::BipartiteError> for MatchingError {
    fn from(e: bipartite::BipartiteError) -> Self {
        use bipartite::BipartiteError;
        match e {
            BipartiteError::NoPerfectMatching { matched, n } => {
                Self::NoPerfectMatching { matched, n }
            }
            BipartiteError::Input(e) => Self::Input(e),
            other => Self::Bipartite(other),
        }
    }
}
