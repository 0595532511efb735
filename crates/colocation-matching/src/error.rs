//! The one error type of the crate.
//!
//! Shapes shared with the rest of the workspace (`SizeMismatch { what, expected, actual }`,
//! `TooLarge { what, limit, value }`) mean what `comm_cost_model::CostModelError`'s
//! `SizeMismatch` and `TooLarge` mean; scalar value checks use comm-cost-model's helpers and
//! arrive wrapped in [`MatchingError::Cost`].

use comm_cost_model::{CostModelError, Shown, check_non_negative, check_positive};
use thiserror::Error;

/// Everything that can go wrong in `colocation-matching`.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum MatchingError {
    /// An input that must hold at least one element is empty.
    #[error("{what} is empty")]
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// A matrix row does not have as many entries as the matrix has rows.
    #[error("{what} must be square: row {row} has {len} entries, expected {expected}")]
    NotSquare {
        /// Which matrix.
        what: &'static str,
        /// The offending row.
        row: usize,
        /// Its length.
        len: usize,
        /// The number of rows.
        expected: usize,
    },
    /// Two inputs that must have the same length (or agree) do not.
    #[error("{what}: expected {expected}, got {actual}")]
    SizeMismatch {
        /// What was compared.
        what: &'static str,
        /// The expected length or value.
        expected: usize,
        /// The length or value received.
        actual: usize,
    },
    /// A value is NaN, infinite or negative.
    #[error("{what}[{index}] = {} is not a finite non-negative number", Shown(*.value))]
    InvalidValue {
        /// Which input.
        what: &'static str,
        /// Flat index of the value in that input.
        index: usize,
        /// The value.
        value: f64,
    },
    /// A value that must be strictly positive (FLOPS, bandwidth) is zero.
    #[error("{what}[{index}] = {} must be positive", Shown(*.value))]
    NotPositive {
        /// Which input.
        what: &'static str,
        /// Index of the value.
        index: usize,
        /// The value.
        value: f64,
    },
    /// An index (for example of a forbidden pair) is out of range.
    #[error("{what}: index {index} is out of range for size {size}")]
    IndexOutOfRange {
        /// Which input.
        what: &'static str,
        /// The index.
        index: usize,
        /// The size it must be below.
        size: usize,
    },
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
    /// The instance is larger than a solver (or the arithmetic) supports.
    #[error("{what} = {value} exceeds the limit {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The limit.
        limit: usize,
        /// The size asked for.
        value: usize,
    },
    /// An external solver (the `good_lp` MILP backend) did not return a solution.
    #[error("{what}: the solver failed ({failure})")]
    Solver {
        /// Which model was being solved.
        what: &'static str,
        /// Why it failed.
        failure: SolverFailure,
    },
    /// A count that must be a multiple of another is not (EPLB's shape rules, expert groups).
    #[error("{what}: {value} is not a multiple of {divisor}")]
    NotDivisible {
        /// What was divided.
        what: &'static str,
        /// The count.
        value: usize,
        /// What it must be a multiple of.
        divisor: usize,
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
    /// A scalar input failed one of comm-cost-model's value checks.
    #[error(transparent)]
    Cost(#[from] CostModelError),
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

/// Checks that entry `index` of the input `what` is finite and non-negative (comm-cost-model's
/// [`check_non_negative`], reported with the entry's index).
pub(crate) fn check_weight(
    what: &'static str,
    index: usize,
    value: f64,
) -> Result<f64, MatchingError> {
    check_non_negative(what, value).map_err(|_| MatchingError::InvalidValue { what, index, value })
}

/// Checks that every entry of `values` is finite and non-negative.
pub(crate) fn check_weights(what: &'static str, values: &[f64]) -> Result<(), MatchingError> {
    values
        .iter()
        .enumerate()
        .try_for_each(|(i, &v)| check_weight(what, i, v).map(|_| ()))
}

/// Checks that every entry of `values` is finite and strictly positive.
pub(crate) fn check_positives(what: &'static str, values: &[f64]) -> Result<(), MatchingError> {
    for (index, &value) in values.iter().enumerate() {
        check_weight(what, index, value)?;
        check_positive(what, value).map_err(|_| MatchingError::NotPositive {
            what,
            index,
            value,
        })?;
    }
    Ok(())
}

/// Checks that a length `actual` equals the `expected` one.
pub(crate) fn check_same_len(
    what: &'static str,
    actual: usize,
    expected: usize,
) -> Result<(), MatchingError> {
    if actual == expected {
        Ok(())
    } else {
        Err(MatchingError::SizeMismatch {
            what,
            expected,
            actual,
        })
    }
}

/// Checks that `value <= limit` for a size-limited solver.
pub(crate) fn check_at_most(
    what: &'static str,
    limit: usize,
    value: usize,
) -> Result<(), MatchingError> {
    if value <= limit {
        Ok(())
    } else {
        Err(MatchingError::TooLarge { what, limit, value })
    }
}

impl From<bipartite::BipartiteError> for MatchingError {
    fn from(e: bipartite::BipartiteError) -> Self {
        use bipartite::BipartiteError;
        match e {
            BipartiteError::IndexOutOfRange { what, index, size } => {
                Self::IndexOutOfRange { what, index, size }
            }
            BipartiteError::NoPerfectMatching { matched, n } => {
                Self::NoPerfectMatching { matched, n }
            }
            BipartiteError::TooLarge { what, limit, value } => {
                Self::TooLarge { what, limit, value }
            }
            BipartiteError::Cost(c) => Self::Cost(c),
            other => Self::Bipartite(other),
        }
    }
}
