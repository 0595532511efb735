//! The result type shared by the perfect-matching solvers.

use serde::{Deserialize, Serialize};

use comm_cost_model::check_finite_result;

use crate::error::BipartiteError;
use crate::matrix::SquareMatrix;

/// A perfect matching of a square weight matrix with its bottleneck and total weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightedMatching {
    /// `assignment[row] = column`: a permutation of `0..n`.
    pub assignment: Vec<usize>,
    /// The largest weight used (same unit as the matrix).
    pub bottleneck: f64,
    /// The sum of the weights used.
    pub total_weight: f64,
}

impl WeightedMatching {
    /// Scores `assignment` on `weights`; the total of finite weights near `f64::MAX` can
    /// overflow, which is an error rather than an infinite `total_weight`.
    pub(crate) fn new(
        weights: &SquareMatrix,
        assignment: Vec<usize>,
    ) -> Result<Self, BipartiteError> {
        let total_weight = chosen(weights, &assignment).sum();
        Ok(Self {
            bottleneck: chosen(weights, &assignment).fold(0.0, f64::max),
            total_weight: check_finite_result("total weight of the matching", total_weight)?,
            assignment,
        })
    }
}

/// The entries `(i, assignment[i])` (an entry out of range counts as absent).
fn chosen<'a>(
    weights: &'a SquareMatrix,
    assignment: &'a [usize],
) -> impl Iterator<Item = f64> + 'a {
    assignment
        .iter()
        .enumerate()
        .filter_map(|(i, &j)| weights.get(i, j))
}
