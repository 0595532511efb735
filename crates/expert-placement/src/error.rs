//! The one error type of the crate, and the input checks that produce it.
//!
//! Shapes shared with the rest of the workspace (`SizeMismatch { what, expected, actual }`,
//! `TooLarge { what, limit, value }`) mean what `comm_cost_model::CostModelError`'s
//! `SizeMismatch` and `TooLarge` mean; scalar value checks use comm-cost-model's helpers and
//! arrive wrapped in [`PlacementError::Cost`].

use comm_cost_model::{CostModelError, Shown, check_non_negative, check_positive};
use thiserror::Error;

/// Everything that can go wrong in `expert-placement`.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// An input that must hold at least one element is empty.
    #[error("{what} is empty")]
    Empty {
        /// What was empty.
        what: &'static str,
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

/// Checks that entry `index` of the input `what` is finite and non-negative (comm-cost-model's
/// [`check_non_negative`], reported with the entry's index).
pub(crate) fn check_weight(
    what: &'static str,
    index: usize,
    value: f64,
) -> Result<f64, PlacementError> {
    check_non_negative(what, value).map_err(|_| PlacementError::InvalidValue { what, index, value })
}

/// Checks that every entry of `values` is finite and non-negative.
pub(crate) fn check_weights(what: &'static str, values: &[f64]) -> Result<(), PlacementError> {
    values
        .iter()
        .enumerate()
        .try_for_each(|(i, &v)| check_weight(what, i, v).map(|_| ()))
}

/// Checks that every entry of `values` is finite and strictly positive.
pub(crate) fn check_positives(what: &'static str, values: &[f64]) -> Result<(), PlacementError> {
    for (index, &value) in values.iter().enumerate() {
        check_weight(what, index, value)?;
        check_positive(what, value).map_err(|_| PlacementError::NotPositive {
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
) -> Result<(), PlacementError> {
    if actual == expected {
        Ok(())
    } else {
        Err(PlacementError::SizeMismatch {
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
) -> Result<(), PlacementError> {
    if value <= limit {
        Ok(())
    } else {
        Err(PlacementError::TooLarge { what, limit, value })
    }
}

/// Checks that `divisor` is positive and divides `value`.
pub(crate) fn check_divides(
    what: &'static str,
    value: usize,
    divisor: usize,
) -> Result<(), PlacementError> {
    if divisor > 0 && value % divisor == 0 {
        Ok(())
    } else {
        Err(PlacementError::NotDivisible {
            what,
            value,
            divisor,
        })
    }
}

impl From<bipartite::BipartiteError> for PlacementError {
    fn from(e: bipartite::BipartiteError) -> Self {
        use bipartite::BipartiteError;
        match e {
            BipartiteError::IndexOutOfRange { what, index, size } => {
                Self::IndexOutOfRange { what, index, size }
            }
            BipartiteError::TooLarge { what, limit, value } => {
                Self::TooLarge { what, limit, value }
            }
            BipartiteError::Cost(c) => Self::Cost(c),
            other => Self::Bipartite(other),
        }
    }
}
