//! Non-preemptive schedules: every pair sent as one piece.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::ticks::Ticks;
use crate::{Bandwidth, ScheduleError, Timetable, TrafficMatrix, Transfer};

/// A contention-free timetable that sends every pair in one piece, as close to the bound as a
/// greedy can get.
///
/// This is what a plain send/receive loop can execute: one message per pair. The problem is the
/// non-preemptive open shop, NP-hard for three or more machines (Gonzalez and Sahni, 1976), so
/// no polynomial algorithm reaches the bound on every input. The heuristic is dense list
/// scheduling: whenever a send port and a receive port are both idle and the pair has traffic,
/// a transfer starts (no port ever idles while it could work, so the makespan is at most twice
/// the bound). Among the startable pairs it prefers the one whose busier port has the most work
/// left (critical port first), then the longer transfer; a second pass with plain
/// longest-transfer-first is also run and the shorter timetable kept. The gap to
/// [`crate::lower_bound_s`] is reported in `docs/performance.md` (about 1% on Zipf traffic).
///
/// # Errors
///
/// As [`crate::optimal`].
///
/// # Complexity
///
/// `O(P log P + E * s * r)` for `P` pairs, `E <= P` decision times and `s x r` idle ports at a
/// decision time (usually one of each); `O(n^2)` memory.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{non_preemptive, lower_bound_s, Bandwidth, TrafficMatrix};
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let plan = non_preemptive(&d, &b)?;
/// plan.validate(&d, &b).unwrap();
/// assert_eq!(plan.pieces(), 4); // one piece per pair
/// assert_eq!(plan.makespan_s(), lower_bound_s(&d, &b)?); // Fig. 4(c) needs no preemption
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn non_preemptive(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
) -> Result<Timetable, ScheduleError> {
    let ticks = Ticks::new(matrix, bandwidth)?;
    ticks.check_greedy_fits()?;
    starts_to_timetable(&ticks, best_greedy(&ticks)).finite()
}

/// The shorter of the two greedy list schedules.
fn best_greedy(ticks: &Ticks) -> Starts {
    let relabelled = Relabelled::new(ticks);
    let critical = relabelled.schedule(Priority::CriticalPort, u64::MAX);
    let longest = relabelled.schedule(Priority::LongestFirst, u64::MAX);
    match (critical, longest) {
        (Some(critical), Some(longest)) if makespan(&longest) < makespan(&critical) => longest,
        (Some(critical), _) => critical,
        (None, longest) => longest.unwrap_or_default(),
    }
}

/// The greedy one-piece-per-pair timetable when it ends exactly on the bound (in ticks, so the
/// comparison is exact), else `None`.
///
/// One piece per non-zero pair is the fewest transfers any schedule can have, so when this
/// succeeds no bound-meeting schedule has fewer pieces. The same timetable as the shorter of
/// [`best_greedy`]'s two, found for less: the critical-port greedy runs first and the
/// longest-first one only when it misses the bound (the bound is the least makespan, so a
/// tight first schedule is never beaten), and each stops as soon as a port can no longer
/// finish by the bound (issue 24: on uniform traffic both stop early and the decomposition
/// runs at once).
pub(crate) fn tight_non_preemptive(ticks: &Ticks) -> Option<Timetable> {
    ticks.check_greedy_fits().ok()?;
    let relabelled = Relabelled::new(ticks);
    [Priority::CriticalPort, Priority::LongestFirst]
        .into_iter()
        .find_map(|priority| relabelled.schedule(priority, ticks.line_ticks))
        .map(|starts| starts_to_timetable(ticks, starts))
}

/// A tick timetable: `(src, dst, start)` with duration `q[src][dst]`.
pub(crate) type Starts = Vec<(usize, usize, u64, u64)>;

fn makespan(starts: &Starts) -> u64 {
    starts.iter().map(|s| s.3).max().unwrap_or(0)
}

#[derive(Clone, Copy)]
enum Priority {
    CriticalPort,
    LongestFirst,
}

/// At most this many idle partners are compared per decision; ports are relabelled by
/// decreasing load first, so these are the partners with the most work.
const PARTNERS_COMPARED: usize = 16;

/// The durations in a relabelled index space (senders by decreasing load, receivers too), and
/// the initial board: built once for both greedy passes.
struct Relabelled {
    senders: Vec<usize>,
    receivers: Vec<usize>,
    q: Vec<u64>,
}

impl Relabelled {
    fn new(ticks: &Ticks) -> Self {
        let n = ticks.n;
        let (senders, receivers) = load_orders(&ticks.q, n);
        let q: Vec<u64> = (0..n * n)
            .map(|k| ticks.q[senders[k / n] * n + receivers[k % n]])
            .collect();
        Self {
            senders,
            receivers,
            q,
        }
    }

    /// Dense greedy list scheduling with `priority`, in the original labels; `None` as soon
    /// as some port cannot finish by `deadline` (`u64::MAX`: run to the end).
    fn schedule(&self, priority: Priority, deadline: u64) -> Option<Starts> {
        let n = self.senders.len();
        let mut starts = list_schedule_relabelled(&self.q, n, priority, deadline)?;
        for s in &mut starts {
            s.0 = self.senders[s.0];
            s.1 = self.receivers[s.1];
        }
        Some(starts)
    }
}

/// Senders by decreasing row sum and receivers by decreasing column sum (ties by index).
fn load_orders(q: &[u64], n: usize) -> (Vec<usize>, Vec<usize>) {
    let mut rows = vec![0u64; n];
    let mut cols = vec![0u64; n];
    for (k, &v) in q.iter().enumerate() {
        rows[k / n] = rows[k / n].saturating_add(v);
        cols[k % n] = cols[k % n].saturating_add(v);
    }
    let order = |sums: &[u64]| {
        let mut idx: Vec<usize> = (0..n).collect();
        idx.sort_by_key(|&g| (Reverse(sums[g]), g));
        idx
    };
    (order(&rows), order(&cols))
}

/// Dense greedy list scheduling on tick durations; `None` once a port cannot finish by
/// `deadline`.
///
/// After each decision no idle sender has a pending pair with an idle receiver, so the next
/// decision only needs the pairs of the ports that just became free. A sender runs one
/// transfer at a time: the running transfers are `(finish tick, sender)` events, ties popped
/// lowest sender first.
fn list_schedule_relabelled(
    q: &[u64],
    n: usize,
    priority: Priority,
    deadline: u64,
) -> Option<Starts> {
    let mut board = Board::new(n, q);
    let mut events: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::with_capacity(n);
    let mut receiver_of = vec![0; n];
    let mut starts = Vec::with_capacity(board.pairs);
    // Ports that just became free, the most loaded first (all of them at time 0).
    let mut freed: Vec<usize> = (0..2 * n).collect();
    let mut now = 0;
    loop {
        freed.sort_by_key(|&p| Reverse(board.left[p]));
        for &port in &freed {
            if let Some((i, j)) = board.best_partner(port, priority) {
                let dur = q[i * n + j];
                board.start(i, j, dur);
                let end = now + dur;
                // A port busy until `end` with work left after it ends later still.
                if end > deadline
                    || board.left[i] > deadline - end
                    || board.left[n + j] > deadline - end
                {
                    return None;
                }
                starts.push((i, j, now, end));
                events.push(Reverse((end, i)));
                receiver_of[i] = j;
            }
        }
        // A port left idle with work to do ends at least that work after now.
        if freed
            .iter()
            .any(|&p| !board.busy[p] && board.left[p] > deadline - now)
        {
            return None;
        }
        let Some(&Reverse((t, _))) = events.peek() else {
            break;
        };
        now = t;
        freed.clear();
        while let Some(&Reverse((t, i))) = events.peek()
            && t == now
        {
            events.pop();
            let j = receiver_of[i];
            board.free(i, j);
            freed.extend([i, n + j]);
        }
    }
    Some(starts)
}

/// Which ports are busy, which pairs are pending, and what is left per port.
///
/// Ports are numbered `0..n` (send) and `n..2n` (receive). Pending partners and idle ports are
/// bitsets, so finding the idle partners of a port costs `n / 64` word operations.
struct Board<'a> {
    n: usize,
    words: usize,
    q: &'a [u64],
    /// Pairs with traffic.
    pairs: usize,
    busy: Vec<bool>,
    /// Remaining ticks per port.
    left: Vec<u64>,
    /// Pending pairs per port.
    pending_count: Vec<usize>,
    /// Per port, the bitset of partners with a pending pair.
    pending: Vec<u64>,
    /// Per side, the bitset of idle ports that still have pending pairs.
    idle: [Vec<u64>; 2],
}

impl<'a> Board<'a> {
    fn new(n: usize, q: &'a [u64]) -> Self {
        let words = n.div_ceil(64);
        let mut board = Self {
            n,
            words,
            q,
            pairs: 0,
            busy: vec![false; 2 * n],
            left: vec![0; 2 * n],
            pending_count: vec![0; 2 * n],
            pending: vec![0; 2 * n * words],
            idle: [vec![0; words], vec![0; words]],
        };
        for (k, &v) in q.iter().enumerate() {
            if v > 0 {
                board.pairs += 1;
                let (i, j) = (k / n, k % n);
                for (port, other) in [(i, j), (n + j, i)] {
                    board.left[port] += v;
                    board.pending_count[port] += 1;
                    set_bit(
                        &mut board.pending[port * words..(port + 1) * words],
                        other,
                        true,
                    );
                }
            }
        }
        for port in 0..2 * n {
            board.refresh_idle(port);
        }
        board
    }

    /// Keeps port `port`'s idle bit equal to "not busy and has pending pairs".
    fn refresh_idle(&mut self, port: usize) {
        let on = !self.busy[port] && self.pending_count[port] > 0;
        set_bit(&mut self.idle[port / self.n], port % self.n, on);
    }

    /// The best pending pair between idle port `port` and an idle port of the other side.
    fn best_partner(&self, port: usize, priority: Priority) -> Option<(usize, usize)> {
        let (n, words) = (self.n, self.words);
        if self.busy[port] || self.pending_count[port] == 0 {
            return None;
        }
        let (side, me) = (port / n, port % n);
        let mine = &self.pending[port * words..(port + 1) * words];
        let mut best: Option<((u64, u64), (usize, usize))> = None;
        let mut compared = 0;
        for (w, (&a, &b)) in mine.iter().zip(&self.idle[1 - side]).enumerate() {
            let mut bits = a & b;
            while bits != 0 && compared < PARTNERS_COMPARED {
                compared += 1;
                let other = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (i, j) = if side == 0 { (me, other) } else { (other, me) };
                let load = self.left[i].max(self.left[n + j]);
                // At most `PARTNERS_COMPARED` reads per decision: a column's stride costs
                // less than transposing `q` for every pass.
                let dur = self.q[i * n + j];
                let key = match priority {
                    Priority::CriticalPort => (load, dur),
                    Priority::LongestFirst => (dur, load),
                };
                if best.is_none_or(|(b, _)| key > b) {
                    best = Some((key, (i, j)));
                }
            }
        }
        best.map(|(_, pair)| pair)
    }

    fn start(&mut self, i: usize, j: usize, dur: u64) {
        let (n, words) = (self.n, self.words);
        for (port, other) in [(i, j), (n + j, i)] {
            self.busy[port] = true;
            self.left[port] -= dur;
            self.pending_count[port] -= 1;
            set_bit(
                &mut self.pending[port * words..(port + 1) * words],
                other,
                false,
            );
            self.refresh_idle(port);
        }
    }

    fn free(&mut self, i: usize, j: usize) {
        for port in [i, self.n + j] {
            self.busy[port] = false;
            self.refresh_idle(port);
        }
    }
}

fn set_bit(bits: &mut [u64], index: usize, on: bool) {
    let mask = 1u64 << (index % 64);
    if on {
        bits[index / 64] |= mask;
    } else {
        bits[index / 64] &= !mask;
    }
}

/// Turns whole-pair tick starts into a timetable.
pub(crate) fn starts_to_timetable(ticks: &Ticks, mut starts: Starts) -> Timetable {
    // The timetable's order (start, sender, receiver) on integer keys, which sort faster than
    // its float ones: ticks map to seconds strictly monotonically (distinct ticks below 2^53
    // stay distinct), so the order is the same. Starts come in time order already; only the
    // starts of one tick need sorting, which a stable sort finds in one pass over the runs.
    starts.sort_by_key(|&(src, dst, start, _)| (start, src, dst));
    Timetable {
        n: ticks.n,
        transfers: starts
            .iter()
            .map(|&(src, dst, start, end)| Transfer {
                src,
                dst,
                bytes: ticks.bytes[src * ticks.n + dst],
                start_s: ticks.time_s(start),
                end_s: ticks.time_s(end),
            })
            .collect(),
    }
}
