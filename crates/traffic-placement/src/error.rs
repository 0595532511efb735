//! The one error type of the crate, and the input checks that produce it.
//!
//! The shared shapes (`SizeMismatch { what, expected, actual }`, `TooLarge { what, limit, value }`)
//! mean what they mean in `comm_cost_model::CostModelError` and `expert_placement::PlacementError`;
//! errors of the placement planners this crate calls arrive unchanged in
//! [`TrafficError::Placement`].

use comm_cost_model::{CostModelError, Shown};
use expert_placement::PlacementError;
use thiserror::Error;

/// Everything that can go wrong in `traffic-placement`.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum TrafficError {
    /// An input that must hold at least one element is empty.
    #[error("{what} is empty")]
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// Two inputs that must agree in length do not.
    #[error("{what}: expected {expected}, got {actual}")]
    SizeMismatch {
        /// What was compared.
        what: &'static str,
        /// The expected length.
        expected: usize,
        /// The length received.
        actual: usize,
    },
    /// A value is NaN, infinite or negative.
    #[error("{what}[{index}] = {} is not a finite non-negative number", Shown(*.value))]
    InvalidValue {
        /// Which input.
        what: &'static str,
        /// Flat index of the value in that input (row-major).
        index: usize,
        /// The value.
        value: f64,
    },
    /// An index (an expert id of a top-k list) is out of range.
    #[error("{what}: index {index} is out of range for size {size}")]
    IndexOutOfRange {
        /// Which input.
        what: &'static str,
        /// The index.
        index: usize,
        /// The size it must be below.
        size: usize,
    },
    /// The instance is larger than the planner supports.
    #[error("{what} = {value} exceeds the limit {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The limit.
        limit: usize,
        /// The size asked for.
        value: usize,
    },
    /// An error of the placement planners (`expert-placement`), unchanged.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// A scalar input failed one of comm-cost-model's value checks.
    #[error(transparent)]
    Cost(#[from] CostModelError),
}

/// Checks that `value` (entry `index` of `what`) is finite and non-negative.
pub(crate) fn check_value(
    what: &'static str,
    index: usize,
    value: f64,
) -> Result<(), TrafficError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(TrafficError::InvalidValue { what, index, value })
    }
}

/// Checks that a length `actual` equals `expected`.
pub(crate) fn check_len(
    what: &'static str,
    actual: usize,
    expected: usize,
) -> Result<(), TrafficError> {
    if actual == expected {
        Ok(())
    } else {
        Err(TrafficError::SizeMismatch {
            what,
            expected,
            actual,
        })
    }
}

/// Checks `value <= limit`.
pub(crate) fn check_at_most(
    what: &'static str,
    limit: usize,
    value: usize,
) -> Result<(), TrafficError> {
    if value <= limit {
        Ok(())
    } else {
        Err(TrafficError::TooLarge { what, limit, value })
    }
}
