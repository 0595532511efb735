//! Candidate replica-count vectors for the optimal planner.
//!
//! The greedy that minimizes the largest *per-replica* load ([`crate::replicate`]) is blind to
//! packing: with two hot experts on `G` GPUs it happily gives them `G + 1` replicas between
//! them, and then some GPU must carry two hot replicas (the issue-20 case: 18 experts, two of
//! load 1000, on 9 GPUs x 3 slots, greedy 366.7 where 251 is feasible). A placement with
//! maximum load `T` needs at least `m_e(T) = max(1, ceil(w_e / (T · v_max)))` replicas of each
//! expert; the `R - sum m_e` leftover slots are free, and *where they go* is what decides
//! whether hot replicas collide. So the planner tries several targets `T` (the breakpoints
//! `w_e / k` just above the lower bound) and, for each, several ways of spending the leftover:
//! the first `j` leftover replicas by the per-replica greedy and the rest on the coldest
//! experts, for a few `j`.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};

use crate::replicate::replicate;

/// Most targets `T` tried (the lowest feasible breakpoints above the bound).
pub(crate) const MAX_TARGETS: usize = 24;

/// Most leftover replicas handed to the per-replica greedy before the rest go to the coldest
/// experts (`j = 0..=MAX_GREEDY_LEFTOVER`, plus "all of them").
pub(crate) const MAX_GREEDY_LEFTOVER: usize = 6;

/// Distinct replica-count vectors worth packing: the per-replica greedy first (the caller has
/// usually tried it already), then for each target `T` the minimal counts plus the leftover
/// spent in several ways. Every vector has
/// `sum = slots`, `1 <= c_e <= cap`. `max_speed` scales the targets on heterogeneous GPUs.
///
/// `O(MAX_TARGETS · MAX_GREEDY_LEFTOVER · (E + L) log E)` time (`L` leftover replicas).
pub(crate) fn candidate_counts(
    w: &[f64],
    slots: usize,
    cap: usize,
    lower_bound: f64,
    max_speed: f64,
) -> Vec<Vec<usize>> {
    let experts = w.len();
    let extra = slots.saturating_sub(experts);
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut out = Vec::new();
    let mut push = |c: Vec<usize>, out: &mut Vec<Vec<usize>>| {
        if c.iter().sum::<usize>() == slots && seen.insert(c.clone()) {
            out.push(c);
        }
    };
    let (greedy, _) = replicate(experts, extra, cap, |e, c| w[e] / c as f64);
    push(greedy, &mut out);
    for target in targets(w, slots, cap, lower_bound, max_speed) {
        let Some(minimal) = minimal_counts(w, target * max_speed, slots, cap) else {
            continue;
        };
        let leftover = slots - minimal.iter().sum::<usize>();
        let mut js: Vec<usize> = (0..=leftover.min(MAX_GREEDY_LEFTOVER)).collect();
        js.push(leftover);
        for j in js {
            push(spend(w, &minimal, j, leftover - j, cap), &mut out);
        }
    }
    out
}

/// The lowest [`MAX_TARGETS`] breakpoints `w_e / (k · v_max)` at or above `lower_bound` whose
/// minimal counts fit in the slots, ascending.
fn targets(w: &[f64], slots: usize, cap: usize, lower_bound: f64, max_speed: f64) -> Vec<f64> {
    let mut t: Vec<f64> = Vec::new();
    let floor = lower_bound * (1.0 - 1e-12);
    for &we in w {
        if we <= 0.0 || we.is_nan() {
            continue;
        }
        // Replica counts whose per-replica load is at or above the bound: k <= w / floor.
        let per = we / max_speed;
        let most = if floor > 0.0 {
            // Saturating float-to-int conversion; bounded by `cap` right after.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let k = (per / floor).floor() as usize;
            k.min(cap)
        } else {
            cap
        };
        for k in 1..=most.max(1) {
            let v = per / k as f64;
            if v >= floor {
                t.push(v);
            }
        }
    }
    t.sort_by(f64::total_cmp);
    t.dedup_by(|a, b| (*a - *b).abs() <= 1e-12 * b.abs());
    // The minimal counts shrink as the target grows: binary search the first feasible one.
    let first = t.partition_point(|&x| minimal_counts(w, x * max_speed, slots, cap).is_none());
    t.into_iter().skip(first).take(MAX_TARGETS).collect()
}

/// `max(1, ceil(w_e / per_replica))` for every expert, or `None` when they exceed the slots or
/// an expert would need more than `cap` replicas.
fn minimal_counts(w: &[f64], per_replica: f64, slots: usize, cap: usize) -> Option<Vec<usize>> {
    if per_replica <= 0.0 || per_replica.is_nan() {
        return None;
    }
    let mut total = 0usize;
    let mut out = Vec::with_capacity(w.len());
    for &we in w {
        let q = we / per_replica;
        // A relative slack keeps `w / (w / k)` at `k`, not `k + 1`.
        let q = q * (1.0 - 1e-12);
        if q > cap as f64 {
            return None;
        }
        // `0 <= q <= cap`, so the conversion is exact enough and in range.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let c = (q.ceil() as usize).max(1);
        total = total.checked_add(c)?;
        out.push(c);
    }
    (total <= slots).then_some(out)
}

/// `minimal` plus `greedy` replicas by the per-replica greedy, then `cold` replicas on the
/// coldest experts (one each in ascending load order, round after round, up to `cap`).
fn spend(w: &[f64], minimal: &[usize], greedy: usize, cold: usize, cap: usize) -> Vec<usize> {
    let mut count = minimal.to_vec();
    // The greedy continues from the minimal counts: a heap of per-replica loads, the largest
    // first (ties: the lower expert), `O((E + greedy) log E)`.
    let mut heap: BinaryHeap<(Share, Reverse<usize>)> = (0..w.len())
        .filter(|&e| count[e] < cap)
        .map(|e| (Share(w[e] / count[e] as f64), Reverse(e)))
        .collect();
    let mut given = 0;
    while given < greedy {
        let Some((_, Reverse(e))) = heap.pop() else {
            break;
        };
        count[e] += 1;
        given += 1;
        if count[e] < cap {
            heap.push((Share(w[e] / count[e] as f64), Reverse(e)));
        }
    }
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by(|&a, &b| w[a].total_cmp(&w[b]).then(a.cmp(&b)));
    let mut left = cold + (greedy - given);
    while left > 0 {
        let before = left;
        for &e in &order {
            if left == 0 {
                break;
            }
            if count[e] < cap {
                count[e] += 1;
                left -= 1;
            }
        }
        if left == before {
            break;
        }
    }
    count
}

/// A per-replica load as a heap key (finite, so `total_cmp` is its order).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Share(f64);

impl Eq for Share {}

impl PartialOrd for Share {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Share {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_hot_experts_get_a_split_that_fits_the_gpus() {
        let w = [
            0.0, 1.0, 5.0, 0.0, 1.0, 1000.0, 20.0, 0.0, 0.0, 5.0, 20.0, 0.0, 1000.0, 5.0, 5.0,
            20.0, 1.0, 5.0,
        ];
        let c = candidate_counts(&w, 27, 9, 2128.0 / 9.0, 1.0);
        // Some candidate gives the hot experts 4 and 5 replicas (9 GPUs, one hot replica each).
        assert!(c.iter().any(|c| c[5] + c[12] == 9));
        assert!(c.iter().all(|c| c.iter().sum::<usize>() == 27));
    }

    #[test]
    fn minimal_counts_keep_exact_quotients() {
        assert_eq!(minimal_counts(&[1000.0], 250.0, 10, 10), Some(vec![4]));
        assert_eq!(minimal_counts(&[1000.0], 249.0, 10, 10), Some(vec![5]));
        assert_eq!(minimal_counts(&[1000.0, 1.0], 100.0, 10, 10), None);
    }
}
