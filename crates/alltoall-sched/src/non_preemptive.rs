//! Non-preemptive schedules: every pair sent as one piece.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::first_try;
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
/// As [`crate::optimal()`].
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
    whole_pairs_to_timetable(&ticks, &best_greedy(&ticks)).finite()
}

/// The shorter of the two greedy list schedules.
fn best_greedy(ticks: &Ticks) -> Vec<Start> {
    let orders = LoadOrders::new(ticks);
    let critical = orders.schedule(ticks, Priority::CriticalPort, u64::MAX);
    let longest = orders.schedule(ticks, Priority::LongestFirst, u64::MAX);
    let makespan = |starts: &[Start]| {
        starts
            .iter()
            .map(|s| s.start + ticks.q[s.src as usize * ticks.n + s.dst as usize])
            .max()
            .unwrap_or(0)
    };
    match (critical, longest) {
        (Some(critical), Some(longest)) if makespan(&longest) < makespan(&critical) => longest,
        (Some(critical), _) => critical,
        (None, longest) => longest.unwrap_or_default(),
    }
}

/// A tick timetable: `(src, dst, start, end)`.
pub(crate) type Starts = Vec<(usize, usize, u64, u64)>;

/// One whole-pair transfer of the list scheduler, in the original labels; it lasts
/// `q[src][dst]` ticks. 16 bytes, so `n = 2048` (4.2 million pairs) keeps 67 MB of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Start {
    /// Start tick (first, so the derived order is the timetable's).
    pub start: u64,
    pub src: u32,
    pub dst: u32,
}

#[derive(Clone, Copy)]
enum Priority {
    CriticalPort,
    LongestFirst,
}

/// At most this many idle partners are compared per decision; ports are relabelled by
/// decreasing load first, so these are the partners with the most work.
const PARTNERS_COMPARED: usize = 16;

/// Senders by decreasing row sum and receivers by decreasing column sum (ties by index),
/// computed once for both greedy passes.
struct LoadOrders {
    /// Relabelled index -> original GPU, per side.
    senders: Vec<u32>,
    receivers: Vec<u32>,
    /// The line sums (original labels), saturating.
    rows: Vec<u64>,
    cols: Vec<u64>,
    /// Durations in the relabelled labels, sender-major (`i * n + j`) and receiver-major
    /// (`j * n + i`): a freed port reads its candidates along one row, in the order its bitset
    /// visits them. Reading them from `q` instead cost a cache miss per candidate at
    /// `n = 2048` (a receiver's candidates lie in one column), 60 % of the greedy's time.
    by_sender: Vec<u64>,
    by_receiver: Vec<u64>,
}

impl LoadOrders {
    fn new(ticks: &Ticks) -> Self {
        let n = ticks.n;
        let mut rows = vec![0u64; n];
        let mut cols = vec![0u64; n];
        for (row, sum) in ticks.q.chunks_exact(n.max(1)).zip(&mut rows) {
            for (&v, col) in row.iter().zip(&mut cols) {
                *sum = sum.saturating_add(v);
                *col = col.saturating_add(v);
            }
        }
        let order = |sums: &[u64]| {
            // `n <= MAX_GPUS = 2^13`: every index fits in `u32`.
            #[allow(clippy::cast_possible_truncation)]
            let mut idx: Vec<u32> = (0..n as u32).collect();
            idx.sort_unstable_by_key(|&g| (Reverse(sums[g as usize]), g));
            idx
        };
        let (senders, receivers) = (order(&rows), order(&cols));
        let mut by_sender = Vec::with_capacity(n * n);
        for &a in &senders {
            let row = &ticks.q[a as usize * n..(a as usize + 1) * n];
            by_sender.extend(receivers.iter().map(|&b| row[b as usize]));
        }
        let by_receiver = transposed(&by_sender, n);
        Self {
            senders,
            receivers,
            rows,
            cols,
            by_sender,
            by_receiver,
        }
    }

    /// Dense greedy list scheduling with `priority`; `None` as soon as some port cannot finish
    /// by `deadline` (`u64::MAX`: run to the end).
    fn schedule(&self, ticks: &Ticks, priority: Priority, deadline: u64) -> Option<Vec<Start>> {
        ListScheduler::new(ticks, self).run(priority, deadline)
    }
}

/// The transpose of a row-major `n x n` matrix, by 32 x 32 tiles (a column-order gather
/// misses the cache on every entry at large `n`).
fn transposed(m: &[u64], n: usize) -> Vec<u64> {
    const TILE: usize = 32;
    let mut t = vec![0; n * n];
    for i0 in (0..n).step_by(TILE) {
        for j0 in (0..n).step_by(TILE) {
            let j1 = (j0 + TILE).min(n);
            for i in i0..(i0 + TILE).min(n) {
                for (j, &v) in (j0..j1).zip(&m[i * n + j0..i * n + j1]) {
                    t[j * n + i] = v;
                }
            }
        }
    }
    t
}

/// Dense greedy list scheduling on tick durations.
///
/// Ports are numbered `0..n` (send) and `n..2n` (receive), in the load order of
/// [`LoadOrders`]. Pending partners and idle ports are bitsets, so finding the idle partners of
/// a port costs `n / 64` word operations. After each decision no idle sender has a pending
/// pair with an idle receiver, so the next decision only needs the pairs of the ports that
/// just became free. A sender runs one transfer at a time: the running transfers are
/// `(finish tick, sender)` events, ties popped lowest sender first.
struct ListScheduler<'a> {
    n: usize,
    words: usize,
    orders: &'a LoadOrders,
    /// Pairs with traffic.
    pairs: usize,
    busy: Vec<bool>,
    /// Remaining ticks per port.
    left: Vec<u64>,
    /// Pending pairs per port.
    pending_count: Vec<u32>,
    /// Per port, the bitset of partners with a pending pair.
    pending: Vec<u64>,
    /// Per side, the bitset of idle ports that still have pending pairs.
    idle: [Vec<u64>; 2],
    /// Each busy sender's receiver.
    receiver_of: Vec<usize>,
}

impl<'a> ListScheduler<'a> {
    fn new(ticks: &'a Ticks, orders: &'a LoadOrders) -> Self {
        let n = ticks.n;
        let words = n.div_ceil(64);
        let mut sched = Self {
            n,
            words,
            orders,
            pairs: 0,
            busy: vec![false; 2 * n],
            left: vec![0; 2 * n],
            pending_count: vec![0; 2 * n],
            pending: vec![0; 2 * n * words],
            idle: [vec![0; words], vec![0; words]],
            receiver_of: vec![0; n],
        };
        for (i, row) in orders.by_sender.chunks_exact(n.max(1)).enumerate() {
            let mut count = 0;
            for (j, &v) in row.iter().enumerate() {
                if v > 0 {
                    count += 1;
                    set_bit(&mut sched.pending[i * words..], j, true);
                    set_bit(&mut sched.pending[(n + j) * words..], i, true);
                    sched.pending_count[n + j] += 1;
                }
            }
            sched.pending_count[i] = count;
            sched.pairs += count as usize;
        }
        for (r, &g) in orders.senders.iter().enumerate() {
            sched.left[r] = orders.rows[g as usize];
        }
        for (r, &g) in orders.receivers.iter().enumerate() {
            sched.left[n + r] = orders.cols[g as usize];
        }
        for port in 0..2 * n {
            sched.refresh_idle(port);
        }
        sched
    }

    /// Duration of relabelled pair `(i, j)`, read along sender `i`'s row.
    fn dur(&self, i: usize, j: usize) -> u64 {
        self.orders.by_sender[i * self.n + j]
    }

    /// The schedule, `None` as soon as some port cannot finish by `deadline`.
    fn run(mut self, priority: Priority, deadline: u64) -> Option<Vec<Start>> {
        let n = self.n;
        let mut events: BinaryHeap<Reverse<u128>> = BinaryHeap::with_capacity(n);
        let mut starts: Vec<Start> = Vec::with_capacity(self.pairs);
        // Ports that just became free, the most loaded first (all of them at time 0).
        let mut freed: Vec<usize> = (0..2 * n).collect();
        let mut now = 0;
        loop {
            sort_freed(&mut freed, &self.left);
            let step_begin = starts.len();
            for &port in &freed {
                if let Some((i, j)) = self.best_partner(port, priority) {
                    let dur = self.dur(i, j);
                    self.start(i, j, dur);
                    let end = now + dur;
                    // A port busy until `end` with work left after it ends later still.
                    if end > deadline
                        || self.left[i] > deadline - end
                        || self.left[n + j] > deadline - end
                    {
                        return None;
                    }
                    // `n <= MAX_GPUS = 2^13`: labels fit in `u32`.
                    starts.push(Start {
                        start: now,
                        src: self.orders.senders[i],
                        dst: self.orders.receivers[j],
                    });
                    events.push(Reverse(u128::from(end) << 64 | i as u128));
                    self.receiver_of[i] = j;
                }
            }
            // The timetable's order within one tick: by sender, then receiver.
            let step = &mut starts[step_begin..];
            if step.len() > 1 {
                step.sort_unstable();
            }
            // A port left idle with work to do ends at least that work after now.
            if freed
                .iter()
                .any(|&p| !self.busy[p] && self.left[p] > deadline - now)
            {
                return None;
            }
            let Some(&Reverse(top)) = events.peek() else {
                break;
            };
            now = event_tick(top);
            freed.clear();
            while let Some(&Reverse(top)) = events.peek()
                && event_tick(top) == now
            {
                events.pop();
                #[allow(clippy::cast_possible_truncation)]
                let i = top as u64 as usize;
                let j = self.receiver_of[i];
                self.free(i, j);
                freed.extend([i, n + j]);
            }
        }
        Some(starts)
    }

    /// Keeps port `port`'s idle bit equal to "not busy and has pending pairs".
    fn refresh_idle(&mut self, port: usize) {
        let on = !self.busy[port] && self.pending_count[port] > 0;
        let (side, me) = if port < self.n {
            (0, port)
        } else {
            (1, port - self.n)
        };
        set_bit(&mut self.idle[side], me, on);
    }

    /// The best pending pair between idle port `port` and an idle port of the other side.
    fn best_partner(&self, port: usize, priority: Priority) -> Option<(usize, usize)> {
        let (n, words) = (self.n, self.words);
        if self.busy[port] || self.pending_count[port] == 0 {
            return None;
        }
        let (side, me) = if port < n { (0, port) } else { (1, port - n) };
        // Along the freed port's own row (see `LoadOrders::by_receiver`).
        let durations = if side == 0 {
            &self.orders.by_sender[me * n..(me + 1) * n]
        } else {
            &self.orders.by_receiver[me * n..(me + 1) * n]
        };
        let mine = &self.pending[port * words..(port + 1) * words];
        // The best candidate: its partner, its load and (read only when needed) its duration.
        let mut best: Option<(usize, u64, Option<u64>)> = None;
        let mut compared = 0;
        for (w, (&a, &b)) in mine.iter().zip(&self.idle[1 - side]).enumerate() {
            let mut bits = a & b;
            while bits != 0 && compared < PARTNERS_COMPARED {
                compared += 1;
                let other = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let partner = if side == 0 { n + other } else { other };
                let load = self.left[port].max(self.left[partner]);
                let Some((best_other, best_load, best_dur)) = best else {
                    best = Some((other, load, None));
                    continue;
                };
                // Keys compared as `(load, duration)` or `(duration, load)`, greatest first;
                // a candidate's duration is read only when the loads do not decide (a
                // duration read is a cache miss at large `n`).
                let better = match priority {
                    Priority::CriticalPort if load != best_load => load > best_load,
                    _ => {
                        let known = best_dur.unwrap_or(durations[best_other]);
                        let dur = durations[other];
                        let better = match priority {
                            Priority::CriticalPort => dur > known,
                            Priority::LongestFirst => (dur, load) > (known, best_load),
                        };
                        best = Some((best_other, best_load, Some(known)));
                        if better {
                            best = Some((other, load, Some(dur)));
                        }
                        continue;
                    }
                };
                if better {
                    best = Some((other, load, None));
                }
            }
            if compared == PARTNERS_COMPARED {
                break;
            }
        }
        best.map(|(other, ..)| if side == 0 { (me, other) } else { (other, me) })
    }

    fn start(&mut self, i: usize, j: usize, dur: u64) {
        let (n, words) = (self.n, self.words);
        for (port, other) in [(i, j), (n + j, i)] {
            self.busy[port] = true;
            self.left[port] -= dur;
            self.pending_count[port] -= 1;
            set_bit(&mut self.pending[port * words..], other, false);
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

/// The tick of a packed `(tick << 64 | sender)` event.
fn event_tick(packed: u128) -> u64 {
    #[allow(clippy::cast_possible_truncation)]
    let tick = (packed >> 64) as u64;
    tick
}

/// Orders freed ports by decreasing remaining work, keeping the order of ties (usually two
/// ports: one sender and one receiver).
fn sort_freed(freed: &mut [usize], left: &[u64]) {
    match freed {
        [a, b] => {
            if left[*b] > left[*a] {
                std::mem::swap(a, b);
            }
        }
        _ => freed.sort_by_key(|&p| Reverse(left[p])),
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

/// Turns list-scheduler starts (in timetable order already) into a timetable.
pub(crate) fn whole_pairs_to_timetable(ticks: &Ticks, starts: &[Start]) -> Timetable {
    let n = ticks.n;
    let far = first_try::beyond_cache(ticks);
    if let Some(bandwidth) = ticks.exact_bandwidth() {
        // One tick per byte: the same values as below, with the model tested once, not per
        // transfer (a sixth of `optimal`'s instructions at 64 GPUs went to this conversion).
        let q = &ticks.q[..];
        return Timetable {
            n,
            transfers: starts
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    if far {
                        first_try::fetch_pair_ahead(q, n, starts, i);
                    }
                    let (src, dst) = (s.src as usize, s.dst as usize);
                    let d = q[src * n + dst];
                    Transfer {
                        src,
                        dst,
                        bytes: d as f64,
                        start_s: s.start as f64 / bandwidth,
                        end_s: (s.start + d) as f64 / bandwidth,
                    }
                })
                .collect(),
        };
    }
    Timetable {
        n,
        transfers: starts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if far {
                    first_try::fetch_pair_ahead(&ticks.q, n, starts, i);
                }
                let (src, dst) = (s.src as usize, s.dst as usize);
                let k = src * n + dst;
                Transfer {
                    src,
                    dst,
                    bytes: ticks.pair_bytes(k),
                    start_s: ticks.time_s(s.start),
                    end_s: ticks.time_s(s.start + ticks.q[k]),
                }
            })
            .collect(),
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
                bytes: ticks.pair_bytes(src * ticks.n + dst),
                start_s: ticks.time_s(start),
                end_s: ticks.time_s(end),
            })
            .collect(),
    }
}
