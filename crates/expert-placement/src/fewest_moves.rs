//! The proven fewest moves of a rebalance on small instances, by exhaustive search.
//!
//! A move is a replica placed on a GPU that did not hold its expert. For a load target `T`, the
//! search enumerates every GPU's expert set (as many distinct experts as the GPU has slots),
//! GPU by GPU, the sets that add the fewest experts first, and keeps the placement with the
//! fewest moves whose maximum GPU load is at most `T`. It prunes a branch whose moves already
//! reach the best found, and one whose remaining slots cannot hold the experts no GPU holds yet.

use crate::model::PlacementCluster;

/// Largest number of expert sets the exhaustive fewest-move search may enumerate: the product
/// over GPUs of `C(E, S_g)` (before pruning); the search also needs at most 20 experts and 64
/// GPUs. Above that, [`crate::rebalance()`] keeps its heuristic answer and says so
/// ([`crate::Rebalance::moves_proved_fewest`] is `false`).
pub const FEWEST_MOVES_EXACT_MAX_SETS: u64 = 1 << 22;

/// Largest expert count of the exhaustive search (expert sets are 64-bit masks; the product
/// above is the real limit).
const MAX_EXPERTS: usize = 20;

/// Largest GPU count of the exhaustive search: it recurses once per GPU, and a GPU whose slots
/// equal the expert count has one possible set, so the product above alone would let
/// thousands of GPUs through.
const MAX_GPUS: usize = 64;

/// The fewest-move placement with maximum load at most `target`, or `None` when the instance is
/// above the limits (or, which cannot happen for a target met by some plan, none meets it).
/// Returns (moves, map).
pub(crate) fn fewest_moves(
    current: &[usize],
    w: &[f64],
    cluster: &PlacementCluster,
    target: f64,
) -> Option<(usize, Vec<usize>)> {
    let experts = w.len();
    let gpus = cluster.gpus();
    if experts > MAX_EXPERTS || experts == 0 || gpus > MAX_GPUS {
        return None;
    }
    let mut sets: u64 = 1;
    for &s in cluster.slots_of_gpu() {
        sets = sets.checked_mul(binomial(experts, s)?)?;
        if sets > FEWEST_MOVES_EXACT_MAX_SETS {
            return None;
        }
    }
    let old: Vec<u64> = (0..gpus)
        .map(|g| cluster.slot_range(g).fold(0u64, |m, s| m | 1 << current[s]))
        .collect();
    // Every GPU's candidate sets, fewest new experts first.
    let choices: Vec<Vec<(u64, usize)>> = (0..gpus)
        .map(|g| {
            let mut c: Vec<(u64, usize)> = subsets(experts, cluster.slots_of_gpu()[g])
                .into_iter()
                .map(|m| (m, (m & !old[g]).count_ones() as usize))
                .collect();
            c.sort_by_key(|&(m, moves)| (moves, m));
            c
        })
        .collect();
    let slots_after: Vec<usize> = (0..gpus)
        .map(|g| cluster.slots_of_gpu()[g + 1..].iter().sum())
        .collect();
    let mut search = Search {
        w,
        speed: cluster.speed_of_gpu(),
        choices: &choices,
        slots_after: &slots_after,
        all: if experts == 64 {
            u64::MAX
        } else {
            (1u64 << experts) - 1
        },
        target,
        chosen: vec![0; gpus],
        best: None,
    };
    search.gpu(0, 0, 0);
    let (moves, masks) = search.best?;
    let mut map = Vec::with_capacity(cluster.total_slots());
    for m in masks {
        map.extend((0..experts).filter(|&e| m >> e & 1 == 1));
    }
    Some((moves, map))
}

struct Search<'a> {
    w: &'a [f64],
    speed: &'a [f64],
    choices: &'a [Vec<(u64, usize)>],
    slots_after: &'a [usize],
    all: u64,
    target: f64,
    chosen: Vec<u64>,
    best: Option<(usize, Vec<u64>)>,
}

impl Search<'_> {
    fn gpu(&mut self, g: usize, moves: usize, covered: u64) {
        if g == self.chosen.len() {
            if covered == self.all && self.meets() {
                self.best = Some((moves, self.chosen.clone()));
            }
            return;
        }
        for &(mask, added) in &self.choices[g] {
            let total = moves + added;
            if self.best.as_ref().is_some_and(|b| total >= b.0) {
                // Sorted by added moves: the rest of this GPU's sets are no better.
                break;
            }
            let now = covered | mask;
            if ((self.all & !now).count_ones() as usize) > self.slots_after[g] {
                continue;
            }
            self.chosen[g] = mask;
            self.gpu(g + 1, total, now);
        }
    }

    /// Whether the chosen sets keep every GPU at or below the target.
    fn meets(&self) -> bool {
        let experts = self.w.len();
        let count: Vec<usize> = (0..experts)
            .map(|e| self.chosen.iter().filter(|&&m| m >> e & 1 == 1).count())
            .collect();
        let limit = self.target * (1.0 + crate::local_search::REL_EPS);
        self.chosen.iter().zip(self.speed).all(|(&m, &v)| {
            let load: f64 = (0..experts)
                .filter(|&e| m >> e & 1 == 1)
                .map(|e| self.w[e] / count[e] as f64)
                .sum();
            load / v <= limit
        })
    }
}

/// `C(n, k)`, `None` on overflow.
fn binomial(n: usize, k: usize) -> Option<u64> {
    if k > n {
        return Some(0);
    }
    let mut r: u64 = 1;
    for i in 0..k.min(n - k) {
        r = r.checked_mul((n - i) as u64)? / (i as u64 + 1);
    }
    Some(r)
}

/// Every `k`-subset of `0..n` as a bitmask (`n <= 64`).
fn subsets(n: usize, k: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut pick = Vec::with_capacity(k);
    fn rec(n: usize, k: usize, start: usize, pick: &mut Vec<usize>, out: &mut Vec<u64>) {
        if pick.len() == k {
            out.push(pick.iter().fold(0u64, |m, &e| m | 1 << e));
            return;
        }
        for e in start..n {
            if n - e < k - pick.len() {
                break;
            }
            pick.push(e);
            rec(n, k, e + 1, pick, out);
            pick.pop();
        }
    }
    rec(n, k, 0, &mut pick, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomials_and_subsets_agree() {
        assert_eq!(binomial(6, 2), Some(15));
        assert_eq!(subsets(6, 2).len(), 15);
        assert_eq!(binomial(3, 5), Some(0));
        assert!(subsets(4, 4) == vec![0b1111]);
    }

    #[test]
    fn many_gpus_with_one_possible_set_each_are_left_to_the_heuristic() {
        // 4 experts on 10,000 GPUs x 4 slots: one set per GPU, a recursion 10,000 deep.
        let c = PlacementCluster::uniform(10_000, 4, 1).unwrap();
        let current: Vec<usize> = (0..40_000).map(|s| s % 4).collect();
        assert_eq!(
            fewest_moves(&current, &[1.0, 2.0, 3.0, 4.0], &c, 10.0),
            None
        );
    }

    #[test]
    fn keeps_a_placement_that_meets_the_target() {
        let c = PlacementCluster::uniform(2, 2, 1).unwrap();
        let current = [0, 1, 2, 0];
        let w = [4.0, 2.0, 2.0];
        let (moves, map) = fewest_moves(&current, &w, &c, 4.0).unwrap();
        assert_eq!(moves, 0);
        assert_eq!(map.len(), 4);
    }
}
