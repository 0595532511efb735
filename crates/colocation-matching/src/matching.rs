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
            bottleneck: weights.bottleneck(&assignment),
            total_weight: weights.total(&assignment),
            assignment,
        }
    }
}
