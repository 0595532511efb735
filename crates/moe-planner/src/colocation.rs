//! Colocating two MoE models on one homogeneous cluster (Aurora §6): which expert of model B
//! shares a GPU with each expert of model A.
//!
//! # Examples
//!
//! ```
//! use moe_planner::colocation::{ColocationSpec, plan_colocation};
//!
//! // Model A: expert 0 is hot; model B: expert 1 is hot. Pairing hot with cold wins.
//! let spec = ColocationSpec {
//!     model_a_traffic_bytes: vec![vec![0.0, 8.0], vec![2.0, 0.0]],
//!     model_b_traffic_bytes: vec![vec![0.0, 1.0], vec![7.0, 0.0]],
//!     seed: 0,
//! };
//! let plan = plan_colocation(&spec)?;
//! assert_eq!(plan.pairs, vec![[0, 0], [1, 1]]);
//! // GPU 0 sends 8 + 1 and receives 2 + 7; GPU 1 sends 2 + 7, receives 8 + 1.
//! assert_eq!(plan.bottleneck_bytes, 9.0);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use colocation_matching::{
    ExpertLoads, ExpertPairing, PairingOptions, SquareMatrix, pair_bottleneck, random_colocation,
};
use serde::{Deserialize, Serialize};

use crate::PlanError;

/// What to colocate: each model's first all-to-all traffic matrix, expert `i` on GPU `i`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColocationSpec {
    /// `d[i][j]`: bytes model A's expert `i`'s GPU sends to expert `j`'s GPU.
    pub model_a_traffic_bytes: Vec<Vec<f64>>,
    /// The same for model B (same number of experts).
    pub model_b_traffic_bytes: Vec<Vec<f64>>,
    /// Seed of the random-colocation (REC) baseline.
    #[serde(default)]
    pub seed: u64,
}

/// The optimal colocation and the REC baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColocationPlan {
    /// `pairs[g] = [expert_of_a, expert_of_b]` on GPU `g` (GPU `g` keeps A's expert `g`).
    pub pairs: Vec<[usize; 2]>,
    /// Largest per-GPU send or receive total of the combined first all-to-all (bytes): the
    /// aggregated communication lower bound, minimized (Aurora §6.2 Case II).
    pub bottleneck_bytes: f64,
    /// Bytes each GPU sends in the combined all-to-all.
    pub gpu_send_bytes: Vec<f64>,
    /// Bytes each GPU receives.
    pub gpu_recv_bytes: Vec<f64>,
    /// The same bound for random expert colocation (REC) with the spec's seed.
    pub random_bottleneck_bytes: f64,
    /// The REC pairing.
    pub random_pairs: Vec<[usize; 2]>,
}

/// Pairs the experts of two models so the combined all-to-all's busiest GPU carries the least.
///
/// Loads come from row and column sums (diagonal excluded) of each traffic matrix; the pairing is
/// [`pair_bottleneck`] (bottleneck matching, optimal). REC uses [`random_colocation`].
///
/// # Errors
///
/// [`PlanError::Matching`] for empty, non-square, mismatched or invalid (NaN, infinite,
/// negative) traffic matrices.
///
/// # Complexity
///
/// `O(n^2)` to read the matrices, then that of [`pair_bottleneck`] for `n` experts.
///
/// # Examples
///
/// ```
/// use moe_planner::colocation::{plan_colocation, ColocationSpec};
/// use moe_planner::colocation_matching::MatchingError;
/// use moe_planner::PlanError;
/// use moe_planner::comm_cost_model::InputError;
/// let spec = ColocationSpec {
///     model_a_traffic_bytes: vec![vec![0.0, 1.0], vec![1.0, 0.0]],
///     model_b_traffic_bytes: vec![vec![0.0; 3]; 3],
///     seed: 0,
/// };
/// assert!(matches!(
///     plan_colocation(&spec),
///     Err(PlanError::Matching(MatchingError::Input(InputError::SizeMismatch { .. })))
/// ));
/// ```
pub fn plan_colocation(spec: &ColocationSpec) -> Result<ColocationPlan, PlanError> {
    let a = ExpertLoads::from_traffic(&SquareMatrix::from_rows(&spec.model_a_traffic_bytes)?)?;
    let b = ExpertLoads::from_traffic(&SquareMatrix::from_rows(&spec.model_b_traffic_bytes)?)?;
    let best = pair_bottleneck(&a, &b, &PairingOptions::default())?;
    let random = ExpertPairing::evaluate(&a, &b, &random_colocation(a.len(), spec.seed)?)?;
    Ok(ColocationPlan {
        pairs: best.pairs,
        bottleneck_bytes: best.bottleneck_bytes,
        gpu_send_bytes: best.gpu_send_bytes,
        gpu_recv_bytes: best.gpu_recv_bytes,
        random_bottleneck_bytes: random.bottleneck_bytes,
        random_pairs: random.pairs,
    })
}
