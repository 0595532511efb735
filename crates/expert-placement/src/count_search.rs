//! A search over replica-count vectors: on GPUs with two slots each vector is scored by the
//! sorted pairing of its replicas, on other clusters up to [`COUNT_SEARCH_MAX_SLOTS`] slots by
//! packing it.
//!
//! With two slots per GPU a placement is a pairing of the `2G` replicas. For given counts the
//! least possible busiest GPU is the sorted pairing's (the `k`-th lightest replica with the
//! `k`-th heaviest; exchanging partners of two crossing pairs never raises the larger sum), which
//! largest-first packing ([`crate::pack`]) builds, so on these clusters a plan is exactly as good
//! as its counts. The slot-level local search ([`crate::local_search`]) changes a count one
//! replica at a time without re-pairing the others, and the count candidates
//! ([`crate::candidates`]) spend the leftover replicas in a few fixed ways; an independent
//! oracle (`scripts/placement_oracle.py --solver pairs`) found plans of the seeded campaign up
//! to 4.4% above the optimum on 2-slot GPUs with those two alone. The optimum typically gives
//! the hot experts many replicas *and* splits some mid-sized cold experts into many light
//! replicas that partner them: counts no single-replica move reaches from the greedy's.
//!
//! The search: best-improvement descent over one-replica transfers (a donor with at least two
//! replicas gives one to a receiver with fewer than `G`), from each start, then an iterated
//! local search (a fixed pseudo-random schedule of a few transfers, then descent, strict
//! improvements kept). A count vector is scored by its sorted pair sums compared
//! lexicographically from the largest (so a plateau of the busiest GPU is left through the
//! next-busiest), computed in `O(E)` from the experts' runs of equal replicas. It ignores the
//! rule that two replicas of one expert may not share a GPU; the caller packs the counts found
//! with that rule and scores the map itself.
//!
//! With three or more slots the packing of given counts is itself a heuristic (largest first),
//! and no oracle settles those instances, but the same search still finds better counts: on
//! the seeded campaign it lowered 118 of the 447 plans with 3–8 slots (up to 1.1%, median
//! 0.06%) and raised none. There each vector costs a packing, `O(R log R)`, charged `8R`
//! units of the budget, which limits it to clusters of up to 256 slots (the instances the
//! planner's iterated local search also covers; larger ones stop within 0.1% of their bound).

use crate::model::PlacementCluster;
use crate::options::Deadline;

/// Work one search may do, in units of about one comparison: scoring a count vector by its
/// pairing costs `E` units, by its packing `8 R`. A fixed count, not a clock, so the plan is
/// the same on any machine at any load (about 0.1 s on the campaign's largest 2-slot shapes).
pub(crate) const COUNT_SEARCH_WORK: usize = 1 << 22;

/// Kicks in a row without improvement after which the search stops.
const KICK_STALL: u32 = 64;

/// Work of [`count_restarts`] (same units as [`COUNT_SEARCH_WORK`]; about 0.1 s on the
/// campaign's few-expert shapes): a fixed count, so the plan is the same on any machine.
const RESTART_WORK: usize = 1 << 24;

/// Restarts in a row without a better count vector after which [`count_restarts`] stops.
const RESTART_STALL: u32 = 48;

/// Replica transfers per kick.
const TRANSFERS_PER_KICK: u64 = 3;

/// Pair sums (or GPU loads) as `(value, multiplicity)` runs, largest first.
type Sums = Vec<(f64, usize)>;

/// Relative tolerance under which two sums tie.
const TIE: f64 = 1e-12;

/// Largest slot count on which [`count_search`] runs with packing as its score (2-slot
/// clusters of one GPU speed, scored by the cheap pairing, have no limit).
pub(crate) const COUNT_SEARCH_MAX_SLOTS: usize = 256;

/// Whether [`count_search`] applies: 2-slot clusters of one GPU speed (any size), or any
/// cluster up to [`COUNT_SEARCH_MAX_SLOTS`] slots.
pub(crate) fn applies(cluster: &PlacementCluster) -> bool {
    pairing(cluster) || cluster.total_slots() <= COUNT_SEARCH_MAX_SLOTS
}

/// Whether the sorted pairing scores a count vector exactly (up to the one-expert-per-GPU
/// rule): every GPU has two slots and all run at one speed.
pub(crate) fn pairing(cluster: &PlacementCluster) -> bool {
    let speed = cluster.speed_of_gpu();
    cluster.slots_of_gpu().iter().all(|&s| s == 2) && speed.iter().all(|&v| v == speed[0])
}

/// The best count vector the search reaches from `starts` (each `sum = 2G`, `1 <= c_e <= G`;
/// others are skipped), or `None` when no start is valid.
///
/// `O(W log E)` time for the work budget `W` ([`COUNT_SEARCH_WORK`]), `O(E + G)` memory.
pub(crate) fn count_search(
    w: &[f64],
    cluster: &PlacementCluster,
    starts: &[Vec<usize>],
    deadline: &Deadline,
) -> Option<Vec<usize>> {
    let gpus = cluster.gpus();
    let mut scorer = Scorer::new(w, cluster);
    let mut budget = COUNT_SEARCH_WORK;
    let mut best: Option<(Vec<usize>, Sums)> = None;
    for start in starts {
        let valid = start.len() == w.len()
            && start.iter().all(|&c| (1..=gpus).contains(&c))
            && start.iter().sum::<usize>() == cluster.total_slots();
        if !valid || budget == 0 || deadline.passed() {
            continue;
        }
        let found = descend(&mut scorer, start.clone(), &mut budget, deadline);
        if best.as_ref().is_none_or(|b| better(&found.1, &b.1)) {
            best = Some(found);
        }
    }
    let (mut counts, mut sums) = best?;
    let experts = w.len() as u64;
    let mut stall = 0;
    let mut kick = 0u64;
    while budget > 0 && stall < KICK_STALL && !deadline.passed() {
        let mut kicked = counts.clone();
        for k in 0..TRANSFERS_PER_KICK {
            let r = crate::optimal::mix(kick * TRANSFERS_PER_KICK + k);
            // Both remainders are below `experts`, which came from a `usize`.
            #[allow(clippy::cast_possible_truncation)]
            let (d, to) = ((r % experts) as usize, ((r >> 32) % experts) as usize);
            if d != to && kicked[d] >= 2 && kicked[to] < gpus {
                kicked[d] -= 1;
                kicked[to] += 1;
            }
        }
        kick += 1;
        let found = descend(&mut scorer, kicked, &mut budget, deadline);
        stall = if keep_better(&mut counts, &mut sums, found) {
            0
        } else {
            stall + 1
        };
    }
    Some(counts)
}

/// Random restarts of the count search on clusters scored by packing (not 2-slot ones): a
/// descent over transfers of several replicas at once from `from`, then from pseudo-random
/// count vectors, within [`RESTART_WORK`]. Returns the best counts reached (`from` itself
/// when nothing scores better), or `None` when `from` is not a valid count vector.
///
/// The best counts can lie far from every start: on campaign case 396 (8 experts on 27 x 3)
/// the best placement known gives the two hot experts 13 replicas each, never on one GPU, and
/// splits two mid-sized experts 18 and 21 ways to partner them, where the starts give the hot
/// experts 23 and 24 replicas that share 13 GPUs, a basin that one-replica transfers do not
/// leave. Random vectors, each descended with transfers of several replicas, reach it.
///
/// `O(W log E)` time for the work `W` ([`RESTART_WORK`]), `O(E + G)` memory.
pub(crate) fn count_restarts(
    w: &[f64],
    cluster: &PlacementCluster,
    from: &[usize],
    deadline: &Deadline,
) -> Option<Vec<usize>> {
    let gpus = cluster.gpus();
    let slots = cluster.total_slots();
    let valid = from.len() == w.len()
        && from.iter().all(|&c| (1..=gpus).contains(&c))
        && from.iter().sum::<usize>() == slots;
    if !valid {
        return None;
    }
    // One replica each is the only count vector; and where one descent step (every
    // one-replica transfer, `E (E - 1)` packings of `8R` units) costs more than an eighth of
    // the budget, a restart cannot descend far: 48 layers of 64 experts on 16 x 5 took 3.1 s
    // with the restarts and 1.1 s without, for plans 0.006% lower.
    let step_cost = w
        .len()
        .saturating_mul(w.len().saturating_sub(1))
        .saturating_mul(8)
        .saturating_mul(slots);
    if slots == w.len() || step_cost > RESTART_WORK / 8 {
        return Some(from.to_vec());
    }
    let mut scorer = Scorer::new(w, cluster);
    scorer.pairing = false;
    let mut budget = RESTART_WORK;
    let (mut counts, mut sums) = descend_far(&mut scorer, from.to_vec(), &mut budget, deadline);
    let mut seed = 0u64;
    let mut stall = 0;
    while budget > 0 && stall < RESTART_STALL && !deadline.passed() {
        let start = random_counts(w.len(), gpus, slots, seed);
        seed += 1;
        let found = descend_far(&mut scorer, start, &mut budget, deadline);
        stall = if keep_better(&mut counts, &mut sums, found) {
            0
        } else {
            stall + 1
        };
    }
    Some(counts)
}

/// A pseudo-random count vector (`sum = slots`, `1 <= c_e <= gpus`; needs
/// `experts <= slots <= experts * gpus`): each expert draws a weight in `1..=gpus`, the slots
/// are shared in proportion, and the rounding is settled one replica at a time in a rotating
/// order. Deterministic in `seed`. `O(E + |rounding|)` time.
fn random_counts(experts: usize, gpus: usize, slots: usize, seed: u64) -> Vec<usize> {
    let base = seed.wrapping_mul(experts as u64);
    let raw: Vec<u64> = (0..experts as u64)
        .map(|e| 1 + crate::optimal::mix(base.wrapping_add(e)) % gpus as u64)
        .collect();
    let total: u64 = raw.iter().sum();
    // The scaled count is below `gpus + 1`, so it fits a `usize`.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let mut counts: Vec<usize> = raw
        .iter()
        .map(|&r| ((r as f64 * slots as f64 / total as f64).round() as usize).clamp(1, gpus))
        .collect();
    let mut sum: usize = counts.iter().sum();
    let mut e = usize::try_from(crate::optimal::mix(base) % experts as u64).unwrap_or(0);
    while sum != slots {
        if sum < slots && counts[e] < gpus {
            counts[e] += 1;
            sum += 1;
        } else if sum > slots && counts[e] > 1 {
            counts[e] -= 1;
            sum -= 1;
        }
        e = (e + 1) % experts;
    }
    counts
}

/// Best-improvement descent from `counts` over transfers of `k` replicas from one expert to
/// another, for `k` a power of two or everything the donor can give (down to one replica) or
/// the receiver take (up to `G`): `O(E^2 log G)` scorings a step, charged to `budget`.
fn descend_far(
    scorer: &mut Scorer<'_>,
    counts: Vec<usize>,
    budget: &mut usize,
    deadline: &Deadline,
) -> (Vec<usize>, Sums) {
    descend_by(scorer, counts, usize::MAX, budget, deadline)
}

/// Best-improvement descent from `counts` over transfers of `k <= max_k` replicas (`k` a power
/// of two or the most the donor can give or the receiver take), receivers then donors in
/// index order; each scoring is charged to `budget`.
fn descend_by(
    scorer: &mut Scorer<'_>,
    mut counts: Vec<usize>,
    max_k: usize,
    budget: &mut usize,
    deadline: &Deadline,
) -> (Vec<usize>, Sums) {
    let cap = scorer.gpus;
    let experts = counts.len();
    let mut best = scorer.sums(&counts, budget);
    // The caller's time cap and cancel flag, read once per step (a step scores at most
    // `E^2 log G` vectors).
    while !deadline.passed() {
        let mut step: Option<(usize, usize, usize, Sums)> = None;
        'scan: for r in 0..experts {
            for d in 0..experts {
                let most = counts[d].saturating_sub(1).min(cap - counts[r]).min(max_k);
                if d == r || most == 0 {
                    continue;
                }
                let mut k = 1;
                loop {
                    if *budget == 0 {
                        break 'scan;
                    }
                    counts[d] -= k;
                    counts[r] += k;
                    let cand = scorer.sums(&counts, budget);
                    counts[d] += k;
                    counts[r] -= k;
                    let target = step.as_ref().map_or(&best, |s| &s.3);
                    if better(&cand, target) {
                        step = Some((d, r, k, cand));
                    }
                    if k == most {
                        break;
                    }
                    k = (2 * k).min(most);
                }
            }
        }
        let Some((d, r, k, next)) = step else { break };
        counts[d] -= k;
        counts[r] += k;
        best = next;
    }
    (counts, best)
}

/// Best-improvement descent from `counts` over one-replica transfers; each scoring is charged
/// to `budget` (see [`COUNT_SEARCH_WORK`]).
fn descend(
    scorer: &mut Scorer<'_>,
    counts: Vec<usize>,
    budget: &mut usize,
    deadline: &Deadline,
) -> (Vec<usize>, Sums) {
    descend_by(scorer, counts, 1, budget, deadline)
}

/// Scores count vectors by their sorted pairing (by their packing when the pairing would put
/// two replicas of one expert on a GPU).
struct Scorer<'w> {
    w: &'w [f64],
    cluster: &'w PlacementCluster,
    gpus: usize,
    /// Score by the sorted pairing (else by packing).
    pairing: bool,
    /// Experts by replica load, lightest first (reused buffer).
    order: Vec<usize>,
}

impl<'w> Scorer<'w> {
    fn new(w: &'w [f64], cluster: &'w PlacementCluster) -> Self {
        Self {
            w,
            cluster,
            gpus: cluster.gpus(),
            pairing: pairing(cluster),
            order: (0..w.len()).collect(),
        }
    }

    /// The sorted pairing's pair sums as `(sum, how many pairs)`, largest sum first; the work
    /// is taken from `budget`.
    fn sums(&mut self, counts: &[usize], budget: &mut usize) -> Sums {
        let w = self.w;
        if !self.pairing {
            *budget = budget.saturating_sub(8 * self.cluster.total_slots());
            return self.packed(counts);
        }
        *budget = budget.saturating_sub(w.len());
        let share = |e: usize| w[e] / counts[e] as f64;
        self.order
            .sort_by(|&a, &b| share(a).total_cmp(&share(b)).then(a.cmp(&b)));
        let order = &self.order;
        let mut rem: Vec<usize> = order.iter().map(|&e| counts[e]).collect();
        let (mut lo, mut hi) = (0, order.len().saturating_sub(1));
        let mut left = self.gpus;
        let mut out: Sums = Vec::with_capacity(2 * order.len());
        while left > 0 && lo <= hi {
            if lo == hi {
                // The middle run would pair with itself, which a GPU cannot hold: score the
                // conflict-free packing instead (`O(R log R)`, only on such counts).
                *budget = budget.saturating_sub(8 * self.cluster.total_slots());
                return self.packed(counts);
            }
            let take = rem[lo].min(rem[hi]).min(left);
            out.push((share(order[lo]) + share(order[hi]), take));
            rem[lo] -= take;
            rem[hi] -= take;
            left -= take;
            if rem[lo] == 0 {
                lo += 1;
            }
            if rem[hi] == 0 {
                hi = hi.saturating_sub(1);
            }
        }
        out.sort_by(|a, b| b.0.total_cmp(&a.0));
        out
    }
}

impl Scorer<'_> {
    /// The GPU loads of the conflict-free packing of `counts`, largest first, as runs of one;
    /// one infinite load when it does not pack.
    fn packed(&self, counts: &[usize]) -> Sums {
        let Some(map) = crate::pack::pack(self.w, counts, self.cluster) else {
            return vec![(f64::INFINITY, self.gpus)];
        };
        let mut loads = crate::plan::gpu_loads(self.w, counts, self.cluster, &map);
        loads.sort_by(|a, b| b.total_cmp(a));
        loads.into_iter().map(|l| (l, 1)).collect()
    }
}

/// Replaces `counts` and `sums` by `found` when its sums are [`better`]; says whether it did.
fn keep_better(counts: &mut Vec<usize>, sums: &mut Sums, found: (Vec<usize>, Sums)) -> bool {
    if better(&found.1, sums) {
        (*counts, *sums) = found;
        true
    } else {
        false
    }
}

/// Whether pair sums `a` are lexicographically smaller than `b` (both largest first, as
/// `(sum, multiplicity)` runs, the same total multiplicity).
fn better(a: &[(f64, usize)], b: &[(f64, usize)]) -> bool {
    let (mut i, mut j) = (0, 0);
    let (mut ra, mut rb) = (a.first().map_or(0, |x| x.1), b.first().map_or(0, |x| x.1));
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i].0, b[j].0);
        if x < y - TIE * y.abs() {
            return true;
        }
        if x > y + TIE * y.abs() {
            return false;
        }
        let take = ra.min(rb);
        ra -= take;
        rb -= take;
        if ra == 0 {
            i += 1;
            ra = a.get(i).map_or(0, |x| x.1);
        }
        if rb == 0 {
            j += 1;
            rb = b.get(j).map_or(0, |x| x.1);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Campaign case 382 (16 experts, two hot, on 25 GPUs x 2 slots): the planner gave 16.157
    /// before this search; the pairing oracle's optimum is 15.5 (`tests/placement_trust.rs`).
    #[test]
    fn improves_the_two_slot_case_the_slot_search_missed() {
        let w = [
            111.0, 2.0, 14.0, 15.0, 10.0, 19.0, 19.0, 17.0, 112.0, 7.0, 7.0, 12.0, 5.0, 3.0, 16.0,
            15.0,
        ];
        let cluster = PlacementCluster::uniform(25, 2, 1).unwrap_or_else(|e| panic!("{e}"));
        assert!(applies(&cluster));
        let starts = crate::candidates::candidate_counts(&w, 50, 25, 0.0, 1.0);
        let counts = count_search(&w, &cluster, &starts, &Deadline::never())
            .unwrap_or_else(|| panic!("a start"));
        assert_eq!(counts.iter().sum::<usize>(), 50);
        let map = crate::pack::pack(&w, &counts, &cluster).unwrap_or_else(|| panic!("packs"));
        let max = crate::optimal::max_load(&w, &cluster, &map);
        // From the candidate counts alone (the planner also starts from its plan's counts).
        assert!(max < 16.0, "{max}");
    }

    /// Random count vectors are valid on every shape, from one replica each to every expert on
    /// every GPU, and depend only on the seed.
    #[test]
    fn random_counts_are_valid_count_vectors() {
        for (experts, gpus, slots) in [
            (8, 27, 81),
            (5, 3, 5),
            (5, 3, 15),
            (64, 16, 80),
            (7, 22, 66),
        ] {
            for seed in 0..200 {
                let c = random_counts(experts, gpus, slots, seed);
                assert_eq!(c.len(), experts);
                assert_eq!(
                    c.iter().sum::<usize>(),
                    slots,
                    "{experts} {gpus} {slots} {seed}"
                );
                assert!(c.iter().all(|&x| (1..=gpus).contains(&x)), "{c:?}");
                assert_eq!(c, random_counts(experts, gpus, slots, seed));
            }
        }
    }

    /// Campaign case 396 (8 experts, two hot, on 27 x 3): the count search's starts and kicks
    /// stop at 15.98; the restarts reach the configuration oracle's 15.8626
    /// (`scripts/placement_oracle.py --solver configs`), and never return a worse vector than
    /// their start.
    #[test]
    fn restarts_reach_the_configuration_oracles_plan_on_few_experts() {
        let w = [9.0, 4.0, 182.0, 183.0, 6.0, 9.0, 15.0, 20.0];
        let cluster = PlacementCluster::uniform(27, 3, 1).unwrap_or_else(|e| panic!("{e}"));
        let value = |c: &[usize]| {
            let map = crate::pack::pack(&w, c, &cluster).unwrap_or_else(|| panic!("packs"));
            crate::optimal::max_load(&w, &cluster, &map)
        };
        let start = [3, 9, 23, 24, 14, 3, 1, 4];
        assert!(value(&start) >= 15.98);
        let counts = count_restarts(&w, &cluster, &start, &Deadline::never())
            .unwrap_or_else(|| panic!("a valid start"));
        assert_eq!(counts.iter().sum::<usize>(), 81);
        assert!(value(&counts) <= 15.8627, "{}", value(&counts));
        assert!(count_restarts(&w, &cluster, &[1, 2, 3], &Deadline::never()).is_none());
    }

    /// The run-based pair sums equal a direct sorted pairing of the replicas.
    #[test]
    fn pair_sums_match_a_direct_pairing() {
        let w = [9.0, 4.0, 4.0, 1.0, 6.0];
        let counts = [3, 1, 2, 2, 2];
        let cluster = PlacementCluster::uniform(5, 2, 1).unwrap_or_else(|e| panic!("{e}"));
        let mut scorer = Scorer::new(&w, &cluster);
        let runs = scorer.sums(&counts, &mut usize::MAX.clone());
        let mut items: Vec<f64> = (0..5)
            .flat_map(|e| std::iter::repeat_n(w[e] / counts[e] as f64, counts[e]))
            .collect();
        items.sort_by(f64::total_cmp);
        let mut direct: Vec<f64> = (0..5).map(|k| items[k] + items[9 - k]).collect();
        direct.sort_by(|a, b| b.total_cmp(a));
        let expanded: Vec<f64> = runs
            .iter()
            .flat_map(|&(s, m)| std::iter::repeat_n(s, m))
            .collect();
        assert_eq!(expanded.len(), 5);
        for (a, b) in expanded.iter().zip(&direct) {
            assert!((a - b).abs() < 1e-12, "{expanded:?} vs {direct:?}");
        }
    }
}
