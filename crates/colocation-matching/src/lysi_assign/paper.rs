//! Aristos Algorithm 2 as written: round-robin best fit with budgets recomputed per visit.

use std::collections::BTreeSet;
use std::ops::Bound::{Excluded, Unbounded};

use super::{Worker, WorkerAssignment, check_instance, insufficient};
use crate::MatchingError;
use crate::dominance::order_key;
use crate::gpu_assignment::descending;

/// LysiAssign: Aristos Algorithm 2 as the paper wrote it.
///
/// 1. The rotation `W'` holds the workers, fastest first (ties: lower index).
/// 2. Visiting worker `j`, its budget is `⌈F_j · Σ f_x / Σ_{i ∈ W'} F_i⌉` (line 6): the
///    *remaining* experts' FLOP shared among the workers still in the rotation, so a later
///    worker's budget grows when earlier ones took less than their share.
/// 3. `BestFit(budget)` takes the remaining expert whose cost is nearest the budget, above or
///    below it; when one cost below and one above are equally near, the one below (it fits);
///    among equal costs, the lowest expert index. The worker takes experts until its budget is
///    spent (`≤ 0`), its slots `m_j` are full or no expert remains.
/// 4. After its visit the worker leaves the rotation (lines 14–15: its slots are full, or it
///    took its share and the round robin does not wrap back to it). The paper leaves open what
///    happens when the rotation empties with experts left, which the slot limits can cause:
///    here the workers with free slots form a new rotation and the round robin wraps around.
///
/// This reproduces both outputs of the author's implementation quoted in the issue (unit tests
/// pin them). The ceiling of line 6 assumes integer costs; with real costs below 1 FLOP it
/// rounds budgets up noticeably (FLOP counts of real experts are far above 1). For a better
/// assignment use [`lysi_assign_refined`](super::lysi_assign_refined).
///
/// # Errors
///
/// [`MatchingError::Input`] (`Empty`) for no expert or no worker, [`MatchingError::Input`] (`InvalidEntry`) for a bad
/// cost, [`MatchingError::Input`] (`NotPositiveEntry`) for a zero-FLOPS worker,
/// [`MatchingError::InsufficientCapacity`] when the slots cannot hold every expert,
/// [`MatchingError::Input`] (`NonFinite`) when all experts on the slowest worker would take a
/// non-finite time (e.g. a subnormal FLOP/s).
///
/// # Complexity
///
/// `O(|X| log |X| + P·|W|)` time for `P` rotations: each rotation but the last fills its last
/// worker's slots (that worker's budget covers all remaining work), so `P ≤ |W|`. `O(|X| + |W|)`
/// space.
///
/// # Examples
///
/// ```
/// use colocation_matching::{Worker, lysi_assign};
///
/// // A worker twice as fast gets twice the budget: 12 · 2/3 = 8, then the rest, 4.
/// let workers = [Worker { flop_per_s: 2.0, expert_slots: 8 }, Worker { flop_per_s: 1.0, expert_slots: 8 }];
/// let a = lysi_assign(&[5.0, 3.0, 2.0, 2.0], &workers)?;
/// assert_eq!(a.gpu_of_expert, vec![0, 0, 1, 1]);
/// assert_eq!(a.makespan_s, 4.0); // both finish at 8/2 = 4/1 = 4: the lower bound
/// assert_eq!(a.lower_bound_s, 4.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn lysi_assign(
    expert_flop: &[f64],
    workers: &[Worker],
) -> Result<WorkerAssignment, MatchingError> {
    check_instance(expert_flop, workers)?;
    let mut pool = Pool::new(expert_flop);
    let speeds: Vec<f64> = workers.iter().map(|w| w.flop_per_s).collect();
    let order = descending(&speeds);
    let mut slots: Vec<usize> = workers.iter().map(|w| w.expert_slots).collect();
    let mut gpu_of_expert = vec![usize::MAX; expert_flop.len()];
    while !pool.is_empty() {
        let rotation: Vec<usize> = order.iter().copied().filter(|&j| slots[j] > 0).collect();
        if rotation.is_empty() {
            // Capacity was checked, so this cannot happen; stay total anyway.
            return Err(insufficient(expert_flop, workers));
        }
        // FLOPS of the workers still in the rotation when each is visited (suffix sums).
        let mut in_rotation: Vec<f64> = rotation.iter().rev().map(|&j| speeds[j]).collect();
        for k in 1..in_rotation.len() {
            in_rotation[k] += in_rotation[k - 1];
        }
        in_rotation.reverse();
        for (&j, &share) in rotation.iter().zip(&in_rotation) {
            let mut budget = (speeds[j] * pool.remaining_flop() / share).ceil();
            // Every visit takes at least one expert (only matters when all remaining costs
            // are 0 and the budget is 0), so the loop always progresses.
            while let Some(x) = pool.take_nearest(budget) {
                gpu_of_expert[x] = j;
                budget -= expert_flop[x];
                slots[j] -= 1;
                if budget <= 0.0 || slots[j] == 0 {
                    break;
                }
            }
        }
    }
    Ok(WorkerAssignment::new(expert_flop, workers, gpu_of_expert))
}

/// The remaining experts ordered by cost (`B` of Algorithm 2), with their total FLOP.
struct Pool<'a> {
    cost: &'a [f64],
    /// `(order_key(cost), expert)`: keys order like the finite non-negative costs.
    set: BTreeSet<(u64, usize)>,
    remaining: f64,
}

impl<'a> Pool<'a> {
    fn new(cost: &'a [f64]) -> Self {
        Self {
            cost,
            set: cost
                .iter()
                .enumerate()
                .map(|(x, &f)| (order_key(f), x))
                .collect(),
            remaining: cost.iter().sum(),
        }
    }

    fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// FLOP of the remaining experts (never negative despite rounding).
    fn remaining_flop(&self) -> f64 {
        self.remaining.max(0.0)
    }

    /// Removes and returns `BestFit(budget)`: the expert whose cost is nearest `budget`.
    fn take_nearest(&mut self, budget: f64) -> Option<usize> {
        let key = order_key(budget.max(0.0));
        // Largest cost at or below the budget, then the lowest index with that cost.
        let below = self
            .set
            .range(..=(key, usize::MAX))
            .next_back()
            .and_then(|&(k, _)| self.set.range((k, 0)..).next())
            .copied();
        let above = self
            .set
            .range((Excluded((key, usize::MAX)), Unbounded))
            .next()
            .copied();
        let pick = match (below, above) {
            (Some(b), Some(a)) => {
                let (fb, fa) = (self.cost[b.1], self.cost[a.1]);
                if budget - fb <= fa - budget { b } else { a }
            }
            (b, a) => b.or(a)?,
        };
        self.set.remove(&pick);
        self.remaining -= self.cost[pick.1];
        if self.set.is_empty() {
            self.remaining = 0.0;
        }
        Some(pick.1)
    }
}
