//! The one error type of the crate.

use comm_cost_model::CostModelError;
use thiserror::Error;

/// Everything that can go wrong in `bipartite`.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum BipartiteError {
    /// An index (a neighbour, a matched vertex) is outside its range.
    #[error("{what}: index {index} is out of range for size {size}")]
    IndexOutOfRange {
        /// Which index.
        what: &'static str,
        /// The index.
        index: usize,
        /// The size of the range.
        size: usize,
    },
    /// The allowed pairs admit no perfect matching.
    #[error("no perfect matching exists among the allowed pairs ({matched} of {n} rows matched)")]
    NoPerfectMatching {
        /// Rows matched by a maximum matching.
        matched: usize,
        /// Rows in all.
        n: usize,
    },
    /// A size above the crate's limit ([`crate::MAX_VERTICES`]).
    #[error("{what} = {value} exceeds the limit {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The limit.
        limit: usize,
        /// The value.
        value: usize,
    },
    /// A weight or total is not a finite number (from `comm-cost-model`'s checks).
    #[error(transparent)]
    Cost(#[from] CostModelError),
}

/// `value <= limit`, or [`BipartiteError::TooLarge`].
pub(crate) fn check_at_most(
    what: &'static str,
    limit: usize,
    value: usize,
) -> Result<(), BipartiteError> {
    if value <= limit {
        Ok(())
    } else {
        Err(BipartiteError::TooLarge { what, limit, value })
    }
}
