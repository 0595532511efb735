//! Exact colocating + heterogeneous placement by branch and bound over expert pairings.

use super::{HeteroPlacement, HyperedgeCost, LocalSearchOptions, colocate_local_search, matrix_of};
use crate::error::MatchingError;
use bipartite::{BottleneckOptions, bottleneck_assignment, chosen_max};
use comm_cost_model::{check_at_most, check_entry};

/// Largest instance [`colocate_exact`] accepts.
pub const EXACT_MAX_GPUS: usize = 9;

/// The optimal colocating + heterogeneous placement, by enumeration (Aurora §8.2 "brute-force").
///
/// Enumerates the `n!` pairings of A's experts with B's; each pairing's best GPU assignment is a
/// bottleneck matching (exact). Branch and bound keeps this fast: the incumbent starts at
/// [`colocate_local_search`]'s value, and a pair `(a, b)` is only tried if some GPU runs it
/// faster than the incumbent.
///
/// # Errors
///
/// [`MatchingError::Input`] (`TooLarge`) for more than [`EXACT_MAX_GPUS`] GPUs,
/// [`MatchingError::Input`] (`InvalidEntry`) if `cost` returns a NaN, infinite or negative value.
///
/// # Complexity
///
/// `O(n! · n^2.5)` in the worst case; pruning usually visits a small fraction.
///
/// # Examples
///
/// ```
/// use colocation_matching::{CostTensor, colocate_exact};
///
/// let load = [1.0, 3.0];
/// let t = CostTensor::from_fn(2, |a, b, g| (load[a] + load[b]) * (1.0 + g as f64))?;
/// assert_eq!(colocate_exact(&t)?.bottleneck_s, 6.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn colocate_exact(cost: &impl HyperedgeCost) -> Result<HeteroPlacement, MatchingError> {
    let n = cost.size();
    check_at_most(
        "exact colocating + heterogeneous solver (GPUs)",
        EXACT_MAX_GPUS,
        n,
    )?;
    // best_gpu[a][b]: the fastest any GPU runs pair (a, b); also validates every cost.
    let mut best_gpu = vec![vec![f64::INFINITY; n]; n];
    for (a, row) in best_gpu.iter_mut().enumerate() {
        for (b, slot) in row.iter_mut().enumerate() {
            for g in 0..n {
                *slot = slot.min(check_entry(
                    "hyperedge cost",
                    (a * n + b) * n + g,
                    cost.cost_s(a, b, g),
                )?);
            }
        }
    }
    let mut incumbent = colocate_local_search(cost, &LocalSearchOptions::default())?;
    let mut bnb = BranchAndBound {
        cost,
        best_gpu: &best_gpu,
        pairs: Vec::with_capacity(n),
        used: vec![false; n],
        incumbent: &mut incumbent,
    };
    bnb.extend()?;
    Ok(incumbent)
}

struct BranchAndBound<'a, C: HyperedgeCost> {
    cost: &'a C,
    best_gpu: &'a [Vec<f64>],
    /// pairs[a] = b for the A experts placed so far.
    pairs: Vec<usize>,
    used: Vec<bool>,
    incumbent: &'a mut HeteroPlacement,
}

impl<C: HyperedgeCost> BranchAndBound<'_, C> {
    fn extend(&mut self) -> Result<(), MatchingError> {
        let n = self.used.len();
        let a = self.pairs.len();
        if a == n {
            return self.evaluate_leaf();
        }
        for b in 0..n {
            if self.used[b] || self.best_gpu[a][b] >= self.incumbent.bottleneck_s {
                continue;
            }
            self.used[b] = true;
            self.pairs.push(b);
            self.extend()?;
            self.pairs.pop();
            self.used[b] = false;
        }
        Ok(())
    }

    fn evaluate_leaf(&mut self) -> Result<(), MatchingError> {
        let n = self.pairs.len();
        let (cost, pairs) = (self.cost, &self.pairs);
        let weights = matrix_of(n, |a, g| cost.cost_s(a, pairs[a], g))?;
        let assignment = bottleneck_assignment(&weights, &BottleneckOptions::default())?;
        if chosen_max(&weights, &assignment) < self.incumbent.bottleneck_s {
            let mut gpu_experts = vec![[0, 0]; n];
            for (a, &g) in assignment.iter().enumerate() {
                gpu_experts[g] = [a, pairs[a]];
            }
            *self.incumbent = HeteroPlacement::scored(cost, gpu_experts)?;
        }
        Ok(())
    }
}
