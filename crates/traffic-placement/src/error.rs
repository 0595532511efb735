//! The one error type of the crate.
//!
//! Generic input checks (sizes, values, indices, limits) are comm-cost-model's helpers and
//! arrive as [`TrafficError::Input`]; errors of the placement planners this crate calls arrive
//! unchanged in [`TrafficError::Placement`].

use comm_cost_model::InputError;
use expert_placement::PlacementError;
use thiserror::Error;

/// Everything that can go wrong in `traffic-placement`.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum TrafficError {
    /// An error of the placement planners (`expert-placement`), unchanged.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// Bad input in the workspace's vocabulary (comm-cost-model's [`InputError`]): an empty
    /// list, a size mismatch, a count that is NaN, infinite or negative (with its index), an
    /// expert id out of range, a size above the planner's limit.
    #[error(transparent)]
    Input(#[from] InputError),
}
