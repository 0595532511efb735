//! The result type shared by the perfect-matching solvers.

use serde::{Deserialize, Serialize};

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
    /// Scores `assignment` on `weights`.
    pub(crate) fn new(weights: &SquareMatrix, assignment: Vec<usize>) -> Self {
        Self {
            bottleneck: chosen(weights, &assignment).fold(0.0, f64::max),
            total_weight: chosen(weights, &assignment).sum(),
            assignment,
        }
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
