//! `optimal`'s cheapest try: the busiest line back to back, every other pair placed once.
//!
//! The pivot is the line (a receiver, or a sender by symmetry) with the largest sum. Its pairs
//! run back to back from tick 0, partners by increasing load, so it is busy until its sum (the
//! bound). Each partner's free time is then two intervals, before and after its pivot slot;
//! every other port's is one interval, `[0, bound]`. The other pairs are visited once each, in
//! rounds (both sides ranked by increasing load; in round `k` partner rank `x` meets other-side
//! rank `(x + k) mod m`, so every port's intervals shrink at about the same pace), and each is
//! placed in `O(1)` at one end of one of its partner's intervals and of its other port's
//! interval: forward (as early as both allow) in the first interval, else forward in the
//! second, else backward (as late as both allow) in the second, else backward in the first,
//! the first of these whose idle gaps fit in both ports' slack (free time beyond the work
//! left). A placement shrinks the intervals from the end it used, so every port's transfers
//! stay outside its free intervals and never overlap, and nothing ends after the bound. The try
//! gives up at the first pair that fits nowhere: a gap beyond a port's slack would leave it
//! less free time than work, so no later choice could have finished it.
//!
//! There is no event queue and no partner search: a few word operations per pair, against
//! several hundred for the dense list schedule of [`crate::first_try`] (issue 24). It succeeds
//! when one line is much busier than most (Zipf traffic: the hot expert's receiver; the
//! DeepSeek-like dispatch from 64 GPUs on) and is not tried where ports are busy for most of
//! the bound on average (uniform traffic: every line nearly tight) or below [`MIN_GPUS`].
//! Its timetables end on the bound like the greedy's, but GPUs can finish later on average
//! (`docs/performance.md`, issue 24 fifth pass).

use crate::non_preemptive::Start;
use crate::ticks::Ticks;

/// A one-piece-per-pair schedule that ends by the bound, as starts in timetable order, or
/// `None` when the try gave up (see the module documentation).
pub(crate) fn pivot_fill(ticks: &Ticks) -> Option<Vec<Start>> {
    let n = ticks.n;
    if n < MIN_GPUS || ticks.line_ticks == 0 || ticks.check_greedy_fits().is_err() {
        return None;
    }
    // Ports busy for most of the bound on average leave no line much less busy than the pivot
    // (uniform traffic: 82–90 %), and the fill gives up there, at 2048 GPUs only after a
    // tenth of a second of cache misses; the Zipf and DeepSeek-like inputs it fills are at
    // 2–55 %.
    let total: u128 = ticks.rows.iter().map(|&r| u128::from(r)).sum();
    if total * 100 >= u128::from(ticks.line_ticks) * (n as u128) * u128::from(BUSY_PERCENT) {
        return None;
    }
    let (row_max, row_at) = max_at(&ticks.rows);
    let (col_max, col_at) = max_at(&ticks.cols);
    if col_max >= row_max {
        fill::<false>(ticks, col_at)
    } else {
        // A sender pivot: the same construction on the transposed matrix.
        fill::<true>(ticks, row_at)
    }
}

/// Below this many GPUs the try is skipped: the list schedule of [`crate::first_try`] costs
/// little there (about 0.45 M instructions at 24 GPUs, some 60 µs), and its GPUs mostly finish
/// earlier (the facade's per-GPU timeline reads each GPU's last transfer; at 8 and 24 GPUs the
/// fill's mean GPU finish was 1.5–11 % later on Zipf 0.8 and DeepSeek-like inputs, up to 7 %
/// earlier on Zipf 1.2). It also keeps the small documented timetables (the CLI's 8-GPU
/// example) as they were.
const MIN_GPUS: usize = 32;

/// Average port load, in per cent of the bound, from which the fill is not tried.
const BUSY_PERCENT: u64 = 75;

/// The largest value and its first index.
fn max_at(sums: &[u64]) -> (u64, usize) {
    let mut best = (0, 0);
    for (k, &v) in sums.iter().enumerate() {
        if v > best.0 {
            best = (v, k);
        }
    }
    best
}

/// Where a pair may go, in the order tried: (interval of the pivot's partner, forward).
const OPTIONS: [(usize, bool); 4] = [(0, true), (1, true), (1, false), (0, false)];

/// A pivot partner's free time: `[lo[r], hi[r]]` for `r = 0` (before its pivot slot) and `1`
/// (after it), and its slack: free time beyond its work left. A placement leaving an idle gap
/// uses the gap's length of slack (its free time shrinks by the gap and the pair, its work by
/// the pair), and a port whose gaps exceed its slack cannot finish.
#[derive(Clone, Copy)]
struct Partner {
    lo: [u64; 2],
    hi: [u64; 2],
    slack: u64,
    /// Its share of a pair's index in the tick matrix, and its GPU.
    at: usize,
    id: u32,
}

/// Any other port's free time `[lo, hi]` and slack.
#[derive(Clone, Copy)]
struct Other {
    lo: u64,
    hi: u64,
    slack: u64,
    at: usize,
    id: u32,
}

/// The construction with the pivot as receiver `c` of the oriented matrix (`TRANSPOSED`: the
/// pivot is sender `c` of the input, and oriented pair `(i, j)` is input pair `(j, i)`).
fn fill<const TRANSPOSED: bool>(ticks: &Ticks, c: usize) -> Option<Vec<Start>> {
    let (n, line, q) = (ticks.n, ticks.line_ticks, &ticks.q[..]);
    let (partner_sums, other_sums) = if TRANSPOSED {
        (&ticks.cols, &ticks.rows)
    } else {
        (&ticks.rows, &ticks.cols)
    };
    // `n <= MAX_GPUS = 2^13`: every index fits in `u32`.
    #[allow(clippy::cast_possible_truncation)]
    let start = |tick: u64, i: usize, j: usize| {
        let (src, dst) = if TRANSPOSED { (j, i) } else { (i, j) };
        Start {
            start: tick,
            src: src as u32,
            dst: dst as u32,
        }
    };
    let by_load = |sums: &[u64], skip: usize| {
        #[allow(clippy::cast_possible_truncation)]
        let mut idx: Vec<u32> = (0..n as u32).filter(|&g| g as usize != skip).collect();
        idx.sort_unstable_by_key(|&g| sums[g as usize]);
        idx
    };
    let partners = by_load(partner_sums, usize::MAX);
    let others = by_load(other_sums, c);
    // Oriented pair `(i, j)` is `q[i * n + j]` (`q[j * n + i]` transposed): each port's share
    // of that index is kept with its state, so a duration costs one addition and one load.
    let (row, col) = if TRANSPOSED { (1, n) } else { (n, 1) };
    let mut out: Vec<Start> = Vec::with_capacity(n * n);
    // The partners' and the other ports' states, in the order of `partners` and `others`.
    let mut part: Vec<Partner> = partners
        .iter()
        .map(|&i| Partner {
            lo: [0, line],
            hi: [line, line],
            slack: line - partner_sums[i as usize],
            at: i as usize * row,
            id: i,
        })
        .collect();
    // The pivot's pairs back to back.
    let mut t = 0u64;
    for p in &mut part {
        let d = q[p.at + c * col];
        if d > 0 {
            p.hi[0] = t;
            p.lo[1] = t + d;
            out.push(start(t, p.id as usize, c));
            t += d;
        }
    }
    let mut other: Vec<Other> = others
        .iter()
        .map(|&j| Other {
            lo: 0,
            hi: line,
            slack: line - other_sums[j as usize],
            at: j as usize * col,
            id: j,
        })
        .collect();
    let m = other.len();
    for k in 0..m {
        let mut y = k;
        for p in &mut part {
            let o = &mut other[y];
            y = if y + 1 == m { 0 } else { y + 1 };
            let d = q[p.at + o.at];
            if d == 0 {
                continue;
            }
            let (tick, region, forward) = place(p, o, d)?;
            commit(p, o, tick, region, forward, d);
            out.push(start(tick, p.id as usize, o.id as usize));
        }
    }
    Some(time_order(out, line))
}

/// Where pair `(p, o)` of `d` ticks goes: its start tick, the partner's interval and whether
/// it was placed forward; `None` when it fits nowhere without a gap beyond a port's slack
/// (such a gap would leave that port unable to finish).
#[inline]
fn place(p: &Partner, o: &Other, d: u64) -> Option<(u64, usize, bool)> {
    for (region, forward) in OPTIONS {
        let (lo, hi) = (p.lo[region], p.hi[region]);
        if forward {
            let s = lo.max(o.lo);
            if s + d <= hi.min(o.hi) && s - lo <= p.slack && s - o.lo <= o.slack {
                return Some((s, region, true));
            }
        } else {
            let e = hi.min(o.hi);
            if e >= d && e - d >= lo.max(o.lo) && hi - e <= p.slack && o.hi - e <= o.slack {
                return Some((e - d, region, false));
            }
        }
    }
    None
}

/// Records a placement: the intervals shrink from the end used, the slack by the gap left.
#[inline]
fn commit(p: &mut Partner, o: &mut Other, tick: u64, region: usize, forward: bool, d: u64) {
    if forward {
        p.slack -= tick - p.lo[region];
        o.slack -= tick - o.lo;
        p.lo[region] = tick + d;
        o.lo = tick + d;
    } else {
        p.slack -= p.hi[region] - (tick + d);
        o.slack -= o.hi - (tick + d);
        p.hi[region] = tick;
        o.hi = tick;
    }
}

/// Sorts starts into timetable order (tick, sender, receiver): a counting sort on the high
/// bits of the tick (about one bucket per start over `[0, line]`), then each bucket by the
/// whole key. (A sort of packed integer keys, a bucket sort that recurses into crowded buckets,
/// and insertion sorts inside the buckets all cost more instructions at 64 GPUs.)
fn time_order(mut starts: Vec<Start>, line: u64) -> Vec<Start> {
    let len = starts.len();
    if len < 2 {
        return starts;
    }
    let shift =
        (u64::BITS - line.leading_zeros()).saturating_sub(usize::BITS - len.leading_zeros());
    let Ok(top) = usize::try_from(line >> shift) else {
        starts.sort_unstable();
        return starts;
    };
    // `line >> shift < 2 * len`: a bucket index per start, its tick's high bits.
    let bucket = |s: &Start| usize::try_from(s.start >> shift).unwrap_or(top);
    // Bucket sizes, then where each bucket starts; the scatter moves each start on to where
    // its bucket ends.
    let mut at = vec![0usize; top + 1];
    for s in &starts {
        at[bucket(s)] += 1;
    }
    let mut sum = 0;
    for a in &mut at {
        (*a, sum) = (sum, sum + *a);
    }
    let mut sorted = vec![
        Start {
            start: 0,
            src: 0,
            dst: 0
        };
        len
    ];
    for s in &starts {
        let a = &mut at[bucket(s)];
        sorted[*a] = *s;
        *a += 1;
    }
    let mut from = 0;
    for &to in &at {
        if to - from > 1 {
            sorted[from..to].sort_unstable();
        }
        from = to;
    }
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bandwidth;
    use crate::workload::{uniform_traffic, zipf_traffic};

    /// Every schedule the try returns is contention-free, one piece per pair, within the
    /// bound, in timetable order; it succeeds on Zipf traffic and gives up on uniform traffic.
    #[test]
    fn fills_zipf_traffic_and_gives_up_on_uniform_traffic() {
        let b = Bandwidth::uniform(1.0).unwrap();
        let mut filled = 0;
        for seed in 1..=4 {
            for (d, zipf) in [
                (zipf_traffic(MIN_GPUS, 0.8, 500, 7, seed).unwrap(), true),
                (zipf_traffic(40, 1.2, 900, 3, seed).unwrap(), true),
                (uniform_traffic(MIN_GPUS, 1000, seed).unwrap(), false),
            ] {
                let ticks = Ticks::new(&d, &b).unwrap();
                let Some(starts) = pivot_fill(&ticks) else {
                    assert!(!zipf, "gave up on Zipf traffic, seed {seed}");
                    continue;
                };
                assert!(zipf, "filled uniform traffic, seed {seed}");
                filled += 1;
                assert!(starts.is_sorted());
                let plan = crate::non_preemptive::whole_pairs_to_timetable(&ticks, &starts);
                plan.validate(&d, &b).unwrap();
                assert_eq!(plan.pieces(), d.nonzeros());
                assert_eq!(plan.makespan_s(), crate::lower_bound_s(&d, &b).unwrap());
            }
        }
        assert_eq!(filled, 8);
    }

    /// A sender pivot (the transpose of a receiver pivot) gives the transposed schedule.
    #[test]
    fn a_sender_pivot_is_the_transposed_construction() {
        let b = Bandwidth::uniform(1.0).unwrap();
        let d = zipf_traffic(MIN_GPUS + 3, 1.0, 400, 5, 3).unwrap();
        let t = d.transposed();
        let a = pivot_fill(&Ticks::new(&d, &b).unwrap()).unwrap();
        let mut bt: Vec<Start> = pivot_fill(&Ticks::new(&t, &b).unwrap())
            .unwrap()
            .into_iter()
            .map(|s| Start {
                start: s.start,
                src: s.dst,
                dst: s.src,
            })
            .collect();
        bt.sort_unstable();
        assert_eq!(a, bt);
    }

    /// `optimal` through the fill on a seeded campaign from 32 to 80 GPUs: Zipf traffic of
    /// several skews and its transpose (a sender pivot), in integer bytes, in fractional bytes
    /// (scaled ticks) and with per-GPU bandwidths. Every schedule is valid (checked by `optimal`
    /// in debug builds, and here), on the bound, one piece per pair whenever the fill succeeded.
    #[test]
    fn optimal_through_the_fill_is_valid_and_on_the_bound() {
        let mut filled = 0;
        let mut cases = 0;
        for (k, n) in [32usize, 33, 47, 64, 80].into_iter().enumerate() {
            for (e, exponent) in [0.5, 0.9, 1.3].into_iter().enumerate() {
                let seed = 10 * k as u64 + e as u64;
                let d = zipf_traffic(n, exponent, 700, 3, seed).unwrap();
                let fractional = crate::TrafficMatrix::from_rows(
                    &d.to_rows()
                        .iter()
                        .map(|r| r.iter().map(|&x| x * 0.37).collect())
                        .collect::<Vec<Vec<f64>>>(),
                )
                .unwrap();
                let per_gpu =
                    Bandwidth::per_gpu((0..n).map(|g| 1.0 + (g % 3) as f64).collect()).unwrap();
                for (d, b) in [
                    (d.clone(), Bandwidth::uniform(2.0).unwrap()),
                    (d.transposed(), Bandwidth::uniform(2.0).unwrap()),
                    (fractional, Bandwidth::uniform(3.0).unwrap()),
                    (d, per_gpu),
                ] {
                    cases += 1;
                    let ticks = Ticks::new(&d, &b).unwrap();
                    let fill = pivot_fill(&ticks).is_some();
                    filled += usize::from(fill);
                    let plan = crate::optimal(&d, &b).unwrap();
                    plan.validate(&d, &b).unwrap();
                    if fill {
                        assert_eq!(plan.pieces(), d.nonzeros());
                    }
                    assert_eq!(plan.makespan_s(), crate::lower_bound_s(&d, &b).unwrap());
                }
            }
        }
        assert!(filled * 4 >= cases * 3, "filled {filled} of {cases}");
    }

    /// The bucket sort gives the plain sort's order, ties on one tick included.
    #[test]
    fn time_order_is_the_timetable_order() {
        let mut v = Vec::new();
        for k in 0..500u32 {
            v.push(Start {
                start: u64::from(k.wrapping_mul(2_654_435_761) % 97) * 1_000_003,
                src: k % 13,
                dst: k % 7,
            });
        }
        let mut expected = v.clone();
        expected.sort_unstable();
        assert_eq!(time_order(v, 97 * 1_000_003), expected);
    }
}
