//! Aurora §7.2: pair experts first, then assign the pairs to GPUs.

use super::{HeteroPlacement, HyperedgeCost, matrix_of};
use crate::error::MatchingError;
use bipartite::{BottleneckOptions, bottleneck_assignment};

/// Aurora's decoupled two-stage heuristic for colocating + heterogeneous placement (§7.2).
///
/// Stage 1 pairs A's and B's experts by a [`crate::bottleneck_matching`] on
/// [`HyperedgeCost::pair_weight`] (Case II's aggregated bytes), ignoring GPUs. Stage 2 assigns the
/// pairs to GPUs by a bottleneck matching on the pair's time on each GPU. Each stage is optimal
/// on its own; together they are not (the problem is NP-hard, §7.1). The paper reports 1.07× the
/// optimum on average; see `docs/reproduction.md` for this crate's measurement.
///
/// # Errors
///
/// [`MatchingError::Input`] (a bad matrix entry) if `cost` returns a NaN, infinite or negative
/// value it uses, or (`TooLarge`) above [`comm_cost_model::MAX_MATRIX_SIDE`] GPUs;
/// [`MatchingError::Input`] (`InvalidEntry`) if the final placement's costs are not finite and
/// non-negative.
///
/// # Complexity
///
/// Two bottleneck matchings on `n × n` matrices.
///
/// # Examples
///
/// ```
/// use colocation_matching::{CostTensor, colocate_decoupled};
///
/// // GPU 1 is twice as slow; A1 and B1 are heavy.
/// let load = [1.0, 3.0];
/// let t = CostTensor::from_fn(2, |a, b, g| (load[a] + load[b]) * (1.0 + g as f64))?;
/// let p = colocate_decoupled(&t)?;
/// // Stage 1 pairs heavy with light: sums 4 and 4; stage 2 then has 4 and 8 whatever it does.
/// assert_eq!(p.bottleneck_s, 8.0);
/// // The optimum pairs A1 with B1 (sum 6) on the fast GPU and A0 with B0 (2 · 2 = 4) on the slow
/// // one: 6. Decoupling cannot see that.
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn colocate_decoupled(cost: &impl HyperedgeCost) -> Result<HeteroPlacement, MatchingError> {
    let n = cost.size();
    let options = BottleneckOptions::default();
    let pairs = bottleneck_assignment(&matrix_of(n, |a, b| cost.pair_weight(a, b))?, &options)?;
    let gpu_of =
        bottleneck_assignment(&matrix_of(n, |a, g| cost.cost_s(a, pairs[a], g))?, &options)?;
    let mut gpu_experts = vec![[0, 0]; n];
    for a in 0..n {
        gpu_experts[gpu_of[a]] = [a, pairs[a]];
    }
    HeteroPlacement::scored(cost, gpu_experts)
}
