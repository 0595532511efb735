//! `optimal`'s cheapest try: the busiest line back to back, every other pair placed once.
//!
//! Let the pivot be the line (a receiver, or a sender by symmetry) with the largest sum. Its
//! pairs run back to back from tick 0, one slot per partner, so the pivot is busy until its sum
//! (the bound, when it is the tight line). Each partner then has its time before its slot and
//! its time after it; every other pair is placed once, in `O(1)`, either forward (as early as
//! both ports' forward frontiers allow, ending before the partner's slot) or backward (as late
//! as both ports' backward frontiers allow, starting after the slot), whichever leaves the
//! smaller idle gap. Each port's forward placements lie below its forward frontier and its
//! backward ones above its backward frontier, and the frontiers never cross, so no two
//! transfers of a port overlap and nothing ends after the bound.
//!
//! No event queue and no partner search: one decision per pair at a few word operations,
//! against several hundred for the dense list schedule of [`crate::first_try`]. It succeeds when
//! one line is much busier than the others (Zipf traffic: the hot expert's receiver), and
//! gives up at the first pair that fits on neither side (then `optimal` runs the list schedule).

use crate::non_preemptive::Start;
use crate::ticks::Ticks;

/// The starts of a one-piece-per-pair schedule within the bound, in timetable order, or `None`
/// when a pair fit on neither side.
pub(crate) fn pivot_fill(ticks: &Ticks) -> Option<Vec<Start>> {
    let n = ticks.n;
    let line = ticks.line_ticks;
    if n < 2 || line == 0 || ticks.check_greedy_fits().is_err() {
        return None;
    }
    let (row_max, row_at) = max_at(&ticks.rows);
    let (col_max, col_at) = max_at(&ticks.cols);
    // The pivot as a receiver `c`: for a sender pivot the matrix is read transposed.
    if col_max >= row_max {
        Fill::new(ticks, false, col_at).run()
    } else {
        Fill::new(ticks, true, row_at).run()
    }
}

const OPTIONS: [(usize, bool); 4] = [(0, true), (1, true), (1, false), (0, false)];

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

/// One placement problem, oriented so that the pivot is a receiver: "senders" are the pivot's
/// partners (the rows of the oriented matrix), "receivers" the other side.
struct Fill<'a> {
    n: usize,
    q: &'a [u64],
    /// Whether the oriented matrix is the transpose (the pivot is a sender).
    transposed: bool,
    pivot: usize,
    line: u64,
    /// Line sums of the oriented senders and receivers.
    send_sums: &'a [u64],
    recv_sums: &'a [u64],
}

impl<'a> Fill<'a> {
    fn new(ticks: &'a Ticks, transposed: bool, pivot: usize) -> Self {
        let (send_sums, recv_sums) = if transposed {
            (&ticks.cols[..], &ticks.rows[..])
        } else {
            (&ticks.rows[..], &ticks.cols[..])
        };
        Self {
            n: ticks.n,
            q: &ticks.q,
            transposed,
            pivot,
            line: ticks.line_ticks,
            send_sums,
            recv_sums,
        }
    }

    /// Ticks of oriented pair `(i, j)`.
    #[inline]
    fn dur(&self, i: usize, j: usize) -> u64 {
        if self.transposed {
            self.q[j * self.n + i]
        } else {
            self.q[i * self.n + j]
        }
    }

    fn run(&self) -> Option<Vec<Start>> {
        let (n, c, line) = (self.n, self.pivot, self.line);
        // Pivot slots, senders by decreasing load.
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by_key(|&i| std::cmp::Reverse(self.send_sums[i as usize]));
        // Each sender's free time is two intervals, before and after its pivot slot, each
        // filled from both ends: `[lo[0], hi[0]]` and `[lo[1], hi[1]]`. Each receiver's is one.
        let mut lo = vec![[0u64, line]; n];
        let mut hi = vec![[line, line]; n];
        let mut rlo = vec![0u64; n];
        let mut rhi = vec![line; n];
        let mut out: Vec<(u64, u32, u32)> = Vec::with_capacity(n * n);
        // Work left per sender and receiver, outside the pivot.
        let mut srem: Vec<u64> = (0..n).map(|i| self.send_sums[i] - self.dur(i, c)).collect();
        let mut rrem: Vec<u64> = self.recv_sums.to_vec();
        let mut t = 0u64;
        for &i in &order {
            let i = i as usize;
            let d = self.dur(i, c);
            if d == 0 {
                continue;
            }
            hi[i][0] = t;
            lo[i][1] = t + d;
            out.push((t, i as u32, c as u32));
            t += d;
        }
        rlo[c] = t;
        rhi[c] = t;
        let recv: Vec<u32> = {
            let mut r: Vec<u32> = (0..n as u32).filter(|&j| j as usize != c).collect();
            r.sort_unstable_by_key(|&j| std::cmp::Reverse(self.recv_sums[j as usize]));
            r
        };
        // Rounds: in round `k` the sender of slot rank `x` meets receiver `recv[(x + k) % m]`,
        // so every line's frontiers advance together.
        let m = recv.len();
        for k in 0..m {
            for (x, &i32_) in order.iter().enumerate() {
                let i = i32_ as usize;
                let j = recv[(x + k) % m] as usize;
                let d = self.dur(i, j);
                if d == 0 {
                    continue;
                }
                let (rf, rg) = (rlo[j], rhi[j]);
                // Forward in the first interval, backward in the second (the usual two), else
                // the other two, whichever fits and leaves the smaller gap.
                // Free time left beyond the work left; a port without enough free time
                // cannot finish (checked here, so a hopeless try stops early).
                let sslack = ((hi[i][0] - lo[i][0]) + (hi[i][1] - lo[i][1])).checked_sub(srem[i])?;
                let rslack = (rg - rf).checked_sub(rrem[j])?;
                let mut best: Option<(u64, usize, bool, u64)> = None;
                let mut safe = false;
                for (region, forward) in OPTIONS {
                    let (f, g) = (lo[i][region], hi[i][region]);
                    let (start, sgap, rgap) = if forward {
                        let s = f.max(rf);
                        if s + d > g.min(rg) {
                            continue;
                        }
                        (s, s - f, s - rf)
                    } else {
                        let e = g.min(rg);
                        if e < d || e - d < f.max(rf) {
                            continue;
                        }
                        (e - d, g - e, rg - e)
                    };
                    let ok = sgap <= sslack && rgap <= rslack;
                    if best.is_none() || (ok && !safe) {
                        best = Some((start, region, forward, 0));
                        safe = ok;
                        if ok {
                            break;
                        }
                    }
                }
                let Some((start, region, forward, _)) = best else {
                    if std::env::var_os("PIVOT_DEBUG").is_some() {
                        eprintln!("fail tr={} pivot={c} i={i} R={:.3} {:?} {:?} j={j} C={:.3} F={:.3} G={:.3} d={:.3} placed={}", self.transposed,
                        self.send_sums[i] as f64/line as f64, lo[i].map(|v| v as f64/line as f64), hi[i].map(|v| v as f64/line as f64), self.recv_sums[j] as f64/line as f64, rf as f64/line as f64, rg as f64/line as f64, d as f64/line as f64, out.len());
                    }
                    return None;
                };
                srem[i] -= d;
                rrem[j] -= d;
                if forward {
                    lo[i][region] = start + d;
                    rlo[j] = start + d;
                } else {
                    hi[i][region] = start;
                    rhi[j] = start;
                }
                out.push((start, i as u32, j as u32));
            }
        }
        let mut starts: Vec<Start> = out
            .into_iter()
            .map(|(start, i, j)| {
                let (src, dst) = if self.transposed { (j, i) } else { (i, j) };
                Start { start, src, dst }
            })
            .collect();
        starts.sort_unstable();
        Some(starts)
    }
}
