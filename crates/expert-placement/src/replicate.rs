//! Greedy replication: hand out extra replicas one at a time to the expert whose per-replica
//! figure is largest.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A heap entry: the larger `value` first, then the lower expert index (EPLB's `argmax`, which
/// returns the first maximum).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    value: f64,
    expert: usize,
}

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.value
            .total_cmp(&other.value)
            .then_with(|| other.expert.cmp(&self.expert))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Replica counts after giving `extra` replicas, one by one, to the expert maximizing
/// `figure(e, c_e)` (ties: lowest index). Experts reaching `cap` replicas stop receiving. Returns
/// the counts and the sequence of experts that received a replica (EPLB numbers its redundant
/// physical experts in this order).
///
/// With `figure(e, c) = w_e / c` this is the greedy that minimizes the largest per-replica load;
/// for any `figure` nonincreasing in `c` it minimizes `max_e figure(e, c_e)` over all count
/// vectors with `sum c_e = E + extra` (the classic result for separable min-max allocation).
///
/// `O((E + extra) log E)` time.
pub(crate) fn replicate(
    experts: usize,
    extra: usize,
    cap: usize,
    figure: impl Fn(usize, usize) -> f64,
) -> (Vec<usize>, Vec<usize>) {
    let mut count = vec![1usize; experts];
    let mut heap: BinaryHeap<Entry> = (0..experts)
        .filter(|_| cap > 1)
        .map(|expert| Entry {
            value: figure(expert, 1),
            expert,
        })
        .collect();
    let mut order = Vec::with_capacity(extra);
    while order.len() < extra {
        let Some(Entry { expert, .. }) = heap.pop() else {
            break;
        };
        count[expert] += 1;
        order.push(expert);
        if count[expert] < cap {
            heap.push(Entry {
                value: figure(expert, count[expert]),
                expert,
            });
        }
    }
    (count, order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_splits_the_hottest_and_breaks_ties_low() {
        let w = [600.0, 560.0, 120.0, 120.0];
        let (count, order) = replicate(4, 4, usize::MAX, |e, c| w[e] / c as f64);
        // 600 -> 300, 560 -> 280, 600 -> 200, 560 -> 186.7.
        assert_eq!(order, vec![0, 1, 0, 1]);
        assert_eq!(count, vec![3, 3, 1, 1]);
        let (_, order) = replicate(2, 2, usize::MAX, |_, c| 1.0 / c as f64);
        assert_eq!(order, vec![0, 1]);
    }

    #[test]
    fn cap_stops_an_expert() {
        let (count, order) = replicate(2, 5, 2, |e, c| [10.0, 1.0][e] / c as f64);
        assert_eq!(count, vec![2, 2]);
        assert_eq!(order.len(), 2);
    }
}
