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
//!
//! The starts are recorded by pair index and put in timetable order by a counting sort whose
//! buckets follow their density, converted to seconds and bytes as they are inserted
//! ([`sorted_transfers`]; issue 24 sixth pass: with the forward placement options inline this
//! took a call at 64 GPUs from 0.83-0.92 M instructions to 0.71-0.72 M).

use crate::non_preemptive::{Start, whole_pairs_to_timetable};
use crate::ticks::Ticks;
use crate::{Timetable, Transfer};

/// A one-piece-per-pair schedule that ends by the bound, or `None` when the try gave up (see
/// the module documentation).
pub(crate) fn pivot_fill(ticks: &Ticks) -> Option<Timetable> {
    let n = ticks.n;
    if n < MIN_GPUS || ticks.line_ticks == 0 || ticks.check_greedy_fits().is_err() {
        return None;
    }
    // Ports busy for most of the bound on average leave no line much less busy than the pivot
    // (uniform traffic: 82–90 %), and the fill gives up there, at 2048 GPUs only after a
    // tenth of a second of cache misses; the Zipf and DeepSeek-like inputs it fills are at
    // 2–55 %.
    if ticks.mean_load_at_least(BUSY_PERCENT) {
        return None;
    }
    let (row_max, row_at) = max_at(&ticks.rows);
    let (col_max, col_at) = max_at(&ticks.cols);
    let starts = if col_max >= row_max {
        fill::<false>(ticks, col_at)
    } else {
        // A sender pivot: the same construction on the transposed matrix.
        fill::<true>(ticks, row_at)
    }?;
    Some(in_time_order(ticks, &starts))
}

/// The fill's starts: each pair's start tick plus one at its index in the tick matrix (0: no
/// transfer), their number, and how many start in each of [`COARSE`] equal parts of the bound.
struct Starts {
    at_tick: Vec<u64>,
    pairs: usize,
    coarse: [u32; COARSE],
}

/// Below this many GPUs the try is skipped: the list schedule of [`crate::first_try`] costs
/// little there (about 0.45 M instructions at 24 GPUs, some 60 µs), and its GPUs mostly finish
/// earlier (the facade's per-GPU timeline reads each GPU's last transfer; at 8 and 24 GPUs the
/// fill's mean GPU finish was 1.5–11 % later on Zipf 0.8 and DeepSeek-like inputs, up to 7 %
/// earlier on Zipf 1.2). It also keeps the small documented timetables (the CLI's 8-GPU
/// example) as they were.
const MIN_GPUS: usize = 32;

/// Average port load, in per cent of the bound, from which the fill is not tried (and from
/// which the greedy of [`crate::first_try`] rescues ports without slack instead).
pub(crate) const BUSY_PERCENT: u64 = 75;

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
    /// Its share of a pair's index in the tick matrix.
    at: usize,
}

/// Any other port's free time `[lo, hi]` and slack.
#[derive(Clone, Copy)]
struct Other {
    lo: u64,
    hi: u64,
    slack: u64,
    at: usize,
}

/// The construction with the pivot as receiver `c` of the oriented matrix (`TRANSPOSED`: the
/// pivot is sender `c` of the input, and oriented pair `(i, j)` is input pair `(j, i)`).
/// Out of line, as [`sorted_transfers`].
#[inline(never)]
fn fill<const TRANSPOSED: bool>(ticks: &Ticks, c: usize) -> Option<Starts> {
    let (n, line, q) = (ticks.n, ticks.line_ticks, &ticks.q[..]);
    let (partner_sums, other_sums) = if TRANSPOSED {
        (&ticks.cols, &ticks.rows)
    } else {
        (&ticks.rows, &ticks.cols)
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
    // Starts by pair index (row-major in the input's labels), so the sort reads them sender by
    // sender (see [`in_time_order`]).
    let mut at_tick = vec![0u64; n * n];
    let coarse_shift = coarse_shift(line);
    let mut coarse = [0u32; COARSE];
    // The partners' and the other ports' states, in the order of `partners` and `others`.
    let mut part: Vec<Partner> = partners
        .iter()
        .map(|&i| Partner {
            lo: [0, line],
            hi: [line, line],
            slack: line - partner_sums[i as usize],
            at: i as usize * row,
        })
        .collect();
    // The pivot's pairs back to back.
    let mut t = 0u64;
    for p in &mut part {
        let k = p.at + c * col;
        let d = q[k];
        if d > 0 {
            p.hi[0] = t;
            p.lo[1] = t + d;
            at_tick[k] = t + 1;
            // `t <= line`: its part is below `COARSE`.
            #[allow(clippy::cast_possible_truncation)]
            let part = (t >> coarse_shift) as usize;
            coarse[part] += 1;
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
        })
        .collect();
    let m = other.len();
    for k in 0..m {
        // Partner rank `x` meets other rank `(x + k) mod m`: runs of consecutive ranks.
        let (mut x, mut y) = (0, k);
        while x < part.len() {
            let len = (part.len() - x).min(m - y);
            for (p, o) in part[x..x + len].iter_mut().zip(&mut other[y..y + len]) {
                let k = p.at + o.at;
                let d = q[k];
                if d == 0 {
                    continue;
                }
                // The two forward options inline: at 64 GPUs the first takes 70-90 % of the
                // pairs and the second the rest; the backward two out of line leave this loop
                // its registers.
                let tick = match forward(p, o, d, 0) {
                    Some(s) => s,
                    None => match forward(p, o, d, 1) {
                        Some(s) => s,
                        None => place_elsewhere(p, o, d)?,
                    },
                };
                at_tick[k] = tick + 1;
                #[allow(clippy::cast_possible_truncation)]
                let part = (tick >> coarse_shift) as usize & (COARSE - 1);
                coarse[part] += 1;
            }
            (x, y) = (x + len, 0);
        }
    }
    // The pairs, counted once here rather than per pair in the loop above (a register).
    let pairs = coarse.iter().map(|&m| m as usize).sum();
    Some(Starts {
        at_tick,
        pairs,
        coarse,
    })
}

/// Where pair `(p, o)` of `d` ticks goes when the first two of [`OPTIONS`] (tried inline by
/// [`fill`]) failed: its start tick, the partner's interval and whether it was placed forward;
/// `None` when it fits nowhere without a gap beyond a port's slack (such a gap would leave
/// that port unable to finish).
#[inline]
fn place(p: &Partner, o: &Other, d: u64) -> Option<(u64, usize, bool)> {
    for &(region, forward) in &OPTIONS[2..] {
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

/// The first two of [`OPTIONS`], forward in the partner's interval `region`, committed: the
/// start tick, or `None` when the gaps exceed a port's slack or the pair does not fit.
#[inline(always)]
fn forward(p: &mut Partner, o: &mut Other, d: u64, region: usize) -> Option<u64> {
    let (lo, hi) = (p.lo[region], p.hi[region]);
    let s = lo.max(o.lo);
    if s + d <= hi.min(o.hi) && s - lo <= p.slack && s - o.lo <= o.slack {
        commit(p, o, s, region, true, d);
        Some(s)
    } else {
        None
    }
}

/// [`place`] and [`commit`], out of line (see [`fill`]); the start tick.
#[inline(never)]
fn place_elsewhere(p: &mut Partner, o: &mut Other, d: u64) -> Option<u64> {
    let (tick, region, forward) = place(p, o, d)?;
    commit(p, o, tick, region, forward, d);
    Some(tick)
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

/// The fill's timetable: its starts in timetable order (tick, sender, receiver), in seconds
/// and bytes.
fn in_time_order(ticks: &Ticks, starts: &Starts) -> Timetable {
    let transfers = if let Some(bandwidth) = ticks.exact_bandwidth() {
        // One tick per byte, the values of `whole_pairs_to_timetable`. A tick here is at most
        // the bound, at most `u64::MAX / 2` (`check_greedy_fits`), so through `i64` it
        // converts to the same `f64` as directly, in one instruction instead of several.
        #[allow(clippy::cast_possible_wrap)]
        let float = |t: u64| t as i64 as f64;
        sorted_transfers(ticks, starts, |src, dst, _, start, d| Transfer {
            src,
            dst,
            bytes: float(d),
            start_s: float(start) / bandwidth,
            end_s: float(start + d) / bandwidth,
        })
    } else {
        sorted_transfers(ticks, starts, |src, dst, k, start, d| Transfer {
            src,
            dst,
            bytes: ticks.pair_bytes(k),
            start_s: ticks.time_s(start),
            end_s: ticks.time_s(start + d),
        })
    };
    let Some(transfers) = transfers else {
        let mut sorted = Vec::with_capacity(starts.pairs);
        for (src, row) in starts.at_tick.chunks_exact(ticks.n).enumerate() {
            for (dst, &v) in row.iter().enumerate() {
                if v != 0 {
                    // `n <= MAX_GPUS = 2^13`: every index fits in `u32`.
                    #[allow(clippy::cast_possible_truncation)]
                    sorted.push(Start {
                        start: v - 1,
                        src: src as u32,
                        dst: dst as u32,
                    });
                }
            }
        }
        sorted.sort_unstable();
        return whole_pairs_to_timetable(ticks, &sorted);
    };
    Timetable {
        n: ticks.n,
        transfers,
    }
}

/// The transfers in timetable order, by a counting sort whose buckets follow the starts'
/// density, or `None` when the moves of its insertion exceeded their budget; `transfer(src,
/// dst, k, start, d)` is the transfer of pair `k = src * n + dst`, `d` ticks from tick
/// `start`.
///
/// The starts crowd into the first part of the bound (most ports are lightly loaded), so
/// equal-width buckets over `[0, line]` leave many of them in a few crowded buckets. The bound
/// is cut into [`COARSE`] equal parts (the fill counted the starts in each), and a part with
/// `m` starts into between `m / 2` and `m` equal buckets (`m` to `2m` cost 1-2 % more at 64
/// GPUs, the prefix sums over empty buckets more than the moves they save). The scatter converts each start and
/// inserts it into its bucket in start order. It visits the starts sender by sender, so starts
/// on one tick (distinct senders) arrive in sender order and never move; only starts of one
/// bucket that arrive out of order do. If the moves exceed a few per start (ticks crowded into
/// a few buckets even so), the caller sorts by comparison instead.
///
/// Out of line, as [`fill`]: inlined into one function the two loops spill more registers
/// (3 % more instructions at 64 GPUs).
#[inline(never)]
fn sorted_transfers(
    ticks: &Ticks,
    starts: &Starts,
    transfer: impl Fn(usize, usize, usize, u64, u64) -> Transfer,
) -> Option<Vec<Transfer>> {
    let (n, line) = (ticks.n, ticks.line_ticks);
    let coarse_shift = coarse_shift(line);
    let mask = (1u64 << coarse_shift) - 1;
    // Each part's first bucket and the shift from a tick's offset in the part to its bucket.
    let mut parts = [(0u32, 0u32); COARSE];
    let mut buckets = 0u32;
    for (part, &m) in parts.iter_mut().zip(&starts.coarse) {
        if m > 0 {
            let shift = coarse_shift.saturating_sub(u32::BITS - 1 - m.leading_zeros());
            *part = (buckets, shift);
            buckets += 1 << (coarse_shift - shift);
        }
    }
    // A start's bucket: `pairs <= n^2 <= 2^26` and a part of `m` starts has at most `m`
    // buckets, so bucket indices fit in `u32`; a tick is at most `line`, so its part is below
    // `COARSE` (the mask only spares a bounds check).
    #[allow(clippy::cast_possible_truncation)]
    let bucket = |tick: u64| {
        let (first, shift) = parts[(tick >> coarse_shift) as usize & (COARSE - 1)];
        (first + ((tick & mask) >> shift) as u32) as usize
    };
    let mut at = vec![0u32; buckets as usize];
    for &v in &starts.at_tick {
        if v != 0 {
            at[bucket(v - 1)] += 1;
        }
    }
    let mut sum = 0u32;
    for a in &mut at {
        (*a, sum) = (sum, sum + *a);
    }
    let unset = Transfer {
        src: 0,
        dst: 0,
        bytes: 0.0,
        start_s: 0.0,
        end_s: 0.0,
    };
    let mut transfers = vec![unset; starts.pairs];
    // Moves allowed before the caller sorts by comparison instead.
    let mut budget = 4 * starts.pairs + 64;
    let q = &ticks.q[..];
    for (src, (row, q_row)) in starts
        .at_tick
        .chunks_exact(n)
        .zip(q.chunks_exact(n))
        .enumerate()
    {
        for (dst, (&v, &d)) in row.iter().zip(q_row).enumerate() {
            if v == 0 {
                continue;
            }
            let tick = v - 1;
            let t = transfer(src, dst, src * n + dst, tick, d);
            let a = &mut at[bucket(tick)];
            let mut k = *a as usize;
            *a += 1;
            // Seconds are monotone in ticks. Slots left of the bucket hold earlier starts (or
            // 0, not yet written): the moves stop at the bucket's first slot without a test
            // for it.
            while k > 0 && transfers[k - 1].start_s > t.start_s {
                transfers[k] = transfers[k - 1];
                k -= 1;
                budget -= 1;
                if budget == 0 {
                    return None;
                }
            }
            transfers[k] = t;
        }
    }
    Some(transfers)
}

/// Equal parts of `[0, line]` in which the fill counts its starts, for [`in_time_order`].
const COARSE: usize = 256;

/// The shift that takes a tick in `[0, line]` to its part (`line >> shift < COARSE`).
fn coarse_shift(line: u64) -> u32 {
    (u64::BITS - line.leading_zeros()).saturating_sub(COARSE.trailing_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bandwidth;
    use crate::workload::{uniform_traffic, zipf_traffic};

    /// [`sorted_transfers`] keeping only each pair and its start tick (as `start_s`).
    fn starts_in_order(ticks: &Ticks, starts: &Starts) -> Option<Vec<Transfer>> {
        sorted_transfers(ticks, starts, |src, dst, _, start, _| Transfer {
            src,
            dst,
            bytes: 0.0,
            start_s: start as f64,
            end_s: 0.0,
        })
    }

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
                let Some(plan) = pivot_fill(&ticks) else {
                    assert!(!zipf, "gave up on Zipf traffic, seed {seed}");
                    continue;
                };
                assert!(zipf, "filled uniform traffic, seed {seed}");
                filled += 1;
                assert!(
                    plan.transfers
                        .is_sorted_by(|a, b| (a.start_s, a.src) < (b.start_s, b.src))
                );
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
        let mut bt: Vec<Transfer> = pivot_fill(&Ticks::new(&t, &b).unwrap())
            .unwrap()
            .transfers
            .into_iter()
            .map(|s| Transfer {
                src: s.dst,
                dst: s.src,
                ..s
            })
            .collect();
        bt.sort_by(|a, b| (a.start_s, a.src).partial_cmp(&(b.start_s, b.src)).unwrap());
        assert_eq!(a.transfers, bt);
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

    /// The bucket sort gives the plain sort's order and transfers, ties on one tick included,
    /// in exact and scaled ticks, and so does its fallback when ticks crowd into one bucket.
    #[test]
    #[allow(clippy::cast_possible_truncation)]
    fn in_time_order_is_the_timetable_order() {
        let n = 29;
        let d = crate::TrafficMatrix::from_rows_u64(&vec![vec![1_000_000; n]; n]).unwrap();
        let fractional = crate::TrafficMatrix::from_rows(&vec![vec![370_000.5; n]; n]).unwrap();
        let b = Bandwidth::uniform(3.0).unwrap();
        for (d, exact) in [(d, true), (fractional, false)] {
            let ticks = Ticks::new(&d, &b).unwrap();
            assert_eq!(ticks.exact, exact);
            let line = ticks.line_ticks;
            for crowded in [false, true] {
                let mut starts = Starts {
                    at_tick: vec![0u64; n * n],
                    pairs: 0,
                    coarse: [0; COARSE],
                };
                let mut expected = Vec::new();
                for k in 0..(n * n) as u32 {
                    let (src, dst) = (k / n as u32, k % n as u32);
                    if src == dst || k % 5 == 0 {
                        continue;
                    }
                    let slot = u64::from(k.wrapping_mul(2_654_435_761) % 97);
                    let start = if crowded { slot } else { slot * (line / 97) };
                    starts.at_tick[k as usize] = start + 1;
                    starts.pairs += 1;
                    starts.coarse[(start >> coarse_shift(line)) as usize] += 1;
                    expected.push(Start { start, src, dst });
                }
                expected.sort_unstable();
                let moved = starts_in_order(&ticks, &starts);
                assert_eq!(
                    moved.is_none(),
                    crowded,
                    "the fallback runs only when crowded ({exact}, line {line})"
                );
                assert_eq!(
                    in_time_order(&ticks, &starts),
                    whole_pairs_to_timetable(&ticks, &expected)
                );
            }
        }
    }

    /// Pairs of one tick beside a pivot of a million: their starts crowd into one bucket, the
    /// insertion gives up and the comparison sort orders them; `optimal` stays valid, on the
    /// bound, one piece per pair.
    #[test]
    fn crowded_starts_fall_back_to_a_comparison_sort() {
        let n = 40;
        let mut rows = vec![vec![1u64; n]; n];
        for (i, row) in rows.iter_mut().enumerate() {
            row[i] = 0;
            if i > 0 {
                row[0] = 1_000_000;
            }
        }
        let d = crate::TrafficMatrix::from_rows_u64(&rows).unwrap();
        let b = Bandwidth::uniform(1.0).unwrap();
        let ticks = Ticks::new(&d, &b).unwrap();
        let starts = fill::<false>(&ticks, 0).unwrap();
        let moved = starts_in_order(&ticks, &starts);
        assert!(moved.is_none(), "the starts did not crowd");
        let plan = crate::optimal(&d, &b).unwrap();
        plan.validate(&d, &b).unwrap();
        assert_eq!(plan.pieces(), d.nonzeros());
        assert_eq!(plan.makespan_s(), crate::lower_bound_s(&d, &b).unwrap());
        assert_eq!(plan, in_time_order(&ticks, &starts));
    }
}
