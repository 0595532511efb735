//! The one error type of the crate.

use comm_cost_model::InputError;
use thiserror::Error;

/// Everything that can go wrong in `bipartite`.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum BipartiteError {
    /// The allowed pairs admit no perfect matching.
    #[error("no perfect matching exists among the allowed pairs ({matched} of {n} rows matched)")]
    NoPerfectMatching {
        /// Rows matched by a maximum matching.
        matched: usize,
        /// Rows in all.
        n: usize,
    },
    /// Bad input in the workspace's vocabulary: an index out of range (`IndexOutOfRange`), a
    /// size above [`crate::MAX_VERTICES`] (`TooLarge`), a weight or total that is not a finite
    /// number (`NonFinite`).
    #[error(transparent)]
    Input(#[from] InputError),
}
