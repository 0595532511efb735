//! The one error type of the crate.

use comm_cost_model::CostModelError;
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
    /// Two inputs that must have the same length do not.
    #[error("{what}: sizes differ ({left} vs {right})")]
    SizeMismatch {
        /// What was compared.
        what: &'static str,
        /// The first size.
        left: usize,
        /// The second size.
        right: usize,
    },
    /// A value is NaN, infinite or negative.
    #[error("{what}[{index}] = {value} is not a finite non-negative number")]
    InvalidValue {
        /// Which input.
        what: &'static str,
        /// Flat index of the value in that input.
        index: usize,
        /// The value.
        value: f64,
    },
    /// A value that must be strictly positive (FLOPS, bandwidth) is zero.
    #[error("{what}[{index}] = {value} must be positive")]
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
    /// The instance is too large for an exact (exponential or MILP) solver.
    #[error("{what} supports at most {max} (got {got})")]
    TooLarge {
        /// Which solver.
        what: &'static str,
        /// Its limit.
        max: usize,
        /// The size asked for.
        got: usize,
    },
    /// The MILP solver failed.
    #[error("MILP solver failed: {0}")]
    Solver(String),
    /// A value or shape check of the shared vocabulary failed (for example a matrix entry that
    /// is NaN, or a ragged matrix).
    #[error(transparent)]
    Value(#[from] CostModelError),
}

/// Checks that `value` is finite and non-negative.
pub(crate) fn check_weight(
    what: &'static str,
    index: usize,
    value: f64,
) -> Result<f64, MatchingError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(MatchingError::InvalidValue { what, index, value })
    }
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
        if value <= 0.0 {
            return Err(MatchingError::NotPositive { what, index, value });
        }
    }
    Ok(())
}

/// Checks that `left == right`.
pub(crate) fn check_same_len(
    what: &'static str,
    left: usize,
    right: usize,
) -> Result<(), MatchingError> {
    if left == right {
        Ok(())
    } else {
        Err(MatchingError::SizeMismatch { what, left, right })
    }
}

/// Checks that `got <= max` for a size-limited solver.
pub(crate) fn check_at_most(
    what: &'static str,
    max: usize,
    got: usize,
) -> Result<(), MatchingError> {
    if got <= max {
        Ok(())
    } else {
        Err(MatchingError::TooLarge { what, max, got })
    }
}
