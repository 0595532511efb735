//! A lower bound from how many heavy replicas fit on one GPU: at most `k` replicas heavier than
//! a `1 / (k + 1)` share of the maximum load share a GPU.

use crate::model::{LayerLoads, PlacementCluster};

/// Classes tried: replicas heavier than `T / 2`, `T / 3` and `T / 4` of a maximum load `T`.
const CLASSES: usize = 3;

/// Relative width of the interval the bisection stops at (the bound returned is its lower,
/// infeasible end, so it stays valid).
const PRECISION: f64 = 1e-9;

/// Largest `E · sum_g min(k, S_g)` a feasibility check runs for (about a millisecond).
const CARDINALITY_MAX_WORK: usize = 1 << 20;

/// Bisection steps at most (the interval halves each step: 60 steps shrink any start below
/// [`PRECISION`]).
const MAX_STEPS: usize = 80;

/// The smallest maximum load `T >= from` that passes [`Problem::feasible`] for every class, less a
/// relative [`PRECISION`]; `from` itself when it passes.
///
/// Why it is a lower bound: a placement whose busiest GPU carries at most `T` (speed `v_max` or
/// slower) gives each expert `c_e >= ceil(w_e / (T v_max))` replicas on distinct GPUs
/// (`c_e <= G`) using `sum c_e <= R` slots, and a GPU holds at most `k` replicas heavier than
/// `T v_max / (k + 1)` (`k + 1` of them would exceed `T`), so at most `sum_g min(k, S_g)` such
/// replicas exist. If no counts meet all of that, no placement reaches `T`. Hot experts on few
/// slots are where it bites: two experts of 1000 among cold ones on 9 GPUs of 3 slots need 5
/// replicas each below 250, ten replicas above 120 for 9 GPUs, so the bound is 250 where the
/// average and replication bounds say 233.
///
/// `O(CLASSES · steps · E · G)` time, `O(G)` space (only experts with a choice enter the
/// dynamic program; the others add fixed slots).
pub(crate) fn cardinality_bound(loads: &LayerLoads, cluster: &PlacementCluster, from: f64) -> f64 {
    let w = loads.as_slice();
    let v_max = cluster.speed_of_gpu().iter().copied().fold(0.0, f64::max);
    if !(from > 0.0 && from.is_finite() && v_max > 0.0 && v_max.is_finite()) {
        return from;
    }
    let problem = Problem {
        w,
        v_max,
        gpus: cluster.gpus(),
        slots: cluster.total_slots(),
        slots_of_gpu: cluster.slots_of_gpu(),
    };
    let passes = |t: f64| (1..=CLASSES).all(|k| problem.feasible(t, k));
    if passes(from) {
        return from;
    }
    // Grow an upper end that passes: every replica alone at `T = sum w / v_max` fits.
    let (mut lo, mut hi) = (from, from);
    for _ in 0..MAX_STEPS {
        hi *= 2.0;
        if !hi.is_finite() {
            return from;
        }
        if passes(hi) {
            break;
        }
        lo = hi;
    }
    if !passes(hi) {
        return lo;
    }
    for _ in 0..MAX_STEPS {
        if hi - lo <= hi * PRECISION {
            break;
        }
        let mid = lo + (hi - lo) / 2.0;
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

/// One instance of the counting relaxation.
struct Problem<'a> {
    w: &'a [f64],
    v_max: f64,
    gpus: usize,
    slots: usize,
    slots_of_gpu: &'a [usize],
}

impl Problem<'_> {
    /// Whether replica counts exist with every replica at most `T v_max`, at most `G` replicas
    /// an expert, at most `R` in all, and at most `sum_g min(k, S_g)` replicas heavier than
    /// `T v_max / (k + 1)`.
    ///
    /// An expert is either kept in the heavy class with its fewest replicas `m` (more would
    /// use more slots and more class room) or given the fewest that leave it, `t`: a
    /// knapsack over the class room minimising slots.
    fn feasible(&self, t: f64, k: usize) -> bool {
        let cap: usize = self.slots_of_gpu.iter().map(|&s| s.min(k)).sum();
        // Past this much work a check says "feasible" (the class adds nothing to the bound,
        // which stays valid): thousands of experts on thousands of GPUs would cost seconds.
        if self.w.len().saturating_mul(cap) > CARDINALITY_MAX_WORK {
            return true;
        }
        let limit = t * self.v_max;
        let mut fixed = 0usize;
        // `best[u]`: fewest slots for the experts with a choice so far, using `u` class room.
        let mut best = vec![usize::MAX; cap + 1];
        let mut next = vec![usize::MAX; cap + 1];
        best[0] = 0;
        let mut any_choice = false;
        for &we in self.w {
            let Some(m) = replicas_needed(we, limit) else {
                return false;
            };
            if m > self.gpus {
                return false;
            }
            let Some(leave) = replicas_needed(we * (k + 1) as f64, limit) else {
                return false;
            };
            if leave <= m {
                fixed = fixed.saturating_add(m);
                continue;
            }
            any_choice = true;
            let out = (leave <= self.gpus).then_some(leave);
            next.fill(usize::MAX);
            for (u, &b) in best.iter().enumerate() {
                if b == usize::MAX {
                    continue;
                }
                if let Some(c) = out {
                    next[u] = next[u].min(b.saturating_add(c));
                }
                if u + m <= cap {
                    next[u + m] = next[u + m].min(b.saturating_add(m));
                }
            }
            std::mem::swap(&mut best, &mut next);
        }
        let choice = if any_choice {
            best.iter().copied().min().unwrap_or(usize::MAX)
        } else {
            0
        };
        fixed.saturating_add(choice) <= self.slots
    }
}

/// `max(1, ceil(w / limit))`, or `None` when it does not fit a `usize` (no placement reaches
/// that limit).
pub(crate) fn replicas_needed(w: f64, limit: f64) -> Option<usize> {
    let q = (w / limit).ceil();
    // `q` is finite, non-negative and below `usize::MAX`: the cast is exact.
    if !(q.is_finite() && q >= 0.0 && q < usize::MAX as f64) {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let q = q as usize;
    Some(q.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_hot_experts_on_nine_gpus_of_three_slots() {
        let w = [
            0.0, 1.0, 5.0, 0.0, 1.0, 1000.0, 20.0, 0.0, 0.0, 5.0, 20.0, 0.0, 1000.0, 5.0, 5.0,
            20.0, 1.0, 5.0,
        ];
        let loads = LayerLoads::new(w.to_vec()).unwrap();
        let c = PlacementCluster::uniform(9, 3, 1).unwrap();
        let b = cardinality_bound(&loads, &c, 233.0);
        // Nine replicas of at most T > 125 fit only at T >= 250 (4 + 4 replicas of 250).
        assert!((b - 250.0).abs() < 1e-6, "{b}");
    }

    #[test]
    fn no_heavy_replicas_leave_the_start() {
        let loads = LayerLoads::new(vec![1.0; 16]).unwrap();
        let c = PlacementCluster::uniform(4, 4, 1).unwrap();
        assert_eq!(cardinality_bound(&loads, &c, 4.0), 4.0);
    }
}
