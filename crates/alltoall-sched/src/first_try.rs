//! `optimal`'s first try: a lean dense list schedule run against the bound.
//!
//! The same scheme as [`crate::non_preemptive()`]'s list scheduler (whenever an idle sender and
//! an idle receiver share a pending pair, one of them starts a transfer; ports relabelled by
//! decreasing load; a tight port's next partner kept free), with a priority that needs no
//! reads: a freed port takes the pending idle partner of highest initial load (its lowest
//! label), ties between the two freed ports of an event broken by remaining work. Nothing of
//! the matrix is copied (durations are read from the tick matrix when a transfer starts), so
//! one decision costs a few word operations and a tournament-tree update, about 100
//! instructions per pair at 64 GPUs against about 800 for the scheduler of `non_preemptive`
//! (issue 24). What it reaches is checked against the bound tick by tick, so the priority
//! only decides how often it ends on the bound, never whether the result is valid.
//!
//! A port without slack (its work left equals the time left) must never idle. When one finds
//! every partner busy, it takes a busy partner anyway and that partner's running transfer is
//! cut short there ([`Board::rescue`]): the pair's rest becomes pending again, so the pass
//! stays contention-free and on the bound at the price of one more piece. Idle ports with
//! little slack are woken when it runs out, for the same. This acts only where the pass would
//! otherwise fall behind, so every pass that ended on the bound without it is unchanged.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::non_preemptive::{Start, whole_pairs_to_timetable};
use crate::pivot_fill;
use crate::ticks::Ticks;
use crate::{Timetable, Transfer};

/// What the greedy reaches within the bound.
pub(crate) enum Prefix {
    /// A one-piece-per-pair timetable ending on the bound.
    Whole(Timetable),
    /// The greedy could not finish by the bound: the transfers it started before tick `now`
    /// (in timetable order), the last decisions before the first port fell behind, and those
    /// of them it cut short ([`Interrupted`], in timetable order).
    Cut {
        starts: Vec<Start>,
        now: u64,
        interrupted: Vec<Interrupted>,
    },
}

/// A transfer the greedy cut short to free its port for a port without slack (see
/// [`Board::rescue`]): its start tick, pair (original labels) and the ticks it ran. The rest
/// of the pair is a later start (or, after a cut, part of the residual).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Interrupted {
    pub start: u64,
    pub src: u32,
    pub dst: u32,
    pub len: u64,
}

/// The ticks and offset of each of a pass's starts, read in timetable order: a whole pair's
/// duration from the tick matrix, and for the pairs the greedy interrupted the piece's own.
pub(crate) struct Lengths<'a> {
    n: usize,
    q: &'a [u64],
    /// Sorted by start, then sender.
    interrupted: &'a [Interrupted],
    next: usize,
    /// The interrupted pairs (`src * n + dst`, sorted) and the ticks of each sent so far.
    split: Vec<(usize, u64)>,
    /// Bitset of the senders of interrupted pairs: one bit test skips the search for nearly
    /// every start (there are few interruptions).
    senders: Vec<u64>,
}

impl<'a> Lengths<'a> {
    /// `interrupted` sorted by start, then sender (timetable order).
    pub(crate) fn new(ticks: &'a Ticks, interrupted: &'a [Interrupted]) -> Self {
        let n = ticks.n;
        let mut split: Vec<(usize, u64)> = interrupted
            .iter()
            .map(|c| (c.src as usize * n + c.dst as usize, 0))
            .collect();
        split.sort_unstable();
        split.dedup();
        let mut senders = vec![0u64; n.div_ceil(WORD)];
        for c in interrupted {
            senders[c.src as usize / WORD] |= 1 << (c.src as usize % WORD);
        }
        Self {
            n,
            q: &ticks.q,
            interrupted,
            next: 0,
            split,
            senders,
        }
    }

    /// Ticks and offset (ticks of the pair sent before it) of start `s`; starts must be read
    /// in timetable order.
    #[inline]
    pub(crate) fn of(&mut self, s: &Start) -> (u64, u64) {
        let (src, dst) = (s.src as usize, s.dst as usize);
        let k = src * self.n + dst;
        if self
            .senders
            .get(src / WORD)
            .is_none_or(|&w| w >> (src % WORD) & 1 == 0)
        {
            return (self.q[k], 0);
        }
        let Ok(at) = self.split.binary_search_by_key(&k, |&(pair, _)| pair) else {
            return (self.q[k], 0);
        };
        let offset = self.split[at].1;
        let len = match self.interrupted.get(self.next) {
            Some(c) if (c.start, c.src, c.dst) == (s.start, s.src, s.dst) => {
                self.next += 1;
                c.len
            }
            _ => self.q[k] - offset,
        };
        self.split[at].1 += len;
        (len, offset)
    }
}

/// A one-piece-per-pair timetable, except for the pairs the greedy interrupted.
fn pieces_of_starts(ticks: &Ticks, starts: &[Start], interrupted: &[Interrupted]) -> Timetable {
    if interrupted.is_empty() {
        return whole_pairs_to_timetable(ticks, starts);
    }
    let mut lengths = Lengths::new(ticks, interrupted);
    let far = beyond_cache(ticks);
    let transfers = if let Some(bandwidth) = ticks.exact_bandwidth() {
        // One tick per byte: `bytes_between` and `time_s` without testing the model per
        // transfer, as in `whole_pairs_to_timetable`.
        starts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if far {
                    fetch_pair_ahead(&ticks.q, ticks.n, starts, i);
                }
                let (len, _) = lengths.of(s);
                Transfer {
                    src: s.src as usize,
                    dst: s.dst as usize,
                    bytes: len as f64,
                    start_s: s.start as f64 / bandwidth,
                    end_s: (s.start + len) as f64 / bandwidth,
                }
            })
            .collect()
    } else {
        starts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if far {
                    fetch_pair_ahead(&ticks.q, ticks.n, starts, i);
                }
                let (src, dst) = (s.src as usize, s.dst as usize);
                let (len, offset) = lengths.of(s);
                Transfer {
                    src,
                    dst,
                    bytes: ticks.bytes_between(src, dst, offset, offset + len),
                    start_s: ticks.time_s(s.start),
                    end_s: ticks.time_s(s.start + len),
                }
            })
            .collect()
    };
    Timetable {
        n: ticks.n,
        transfers,
    }
}

/// Starts ahead of the one being converted whose duration is prefetched: the timetable's
/// order visits the tick matrix at random, and at 2048 GPUs (32 MiB of ticks) each read missed
/// the cache.
pub(crate) const FETCH_DISTANCE: usize = 16;

/// Whether the tick matrix is larger than a core's cache ([`RANKED_BYTES`]), so that a
/// conversion of starts should prefetch ([`fetch_pair_ahead`]).
pub(crate) fn beyond_cache(ticks: &Ticks) -> bool {
    std::mem::size_of_val(&ticks.q[..]) > RANKED_BYTES
}

/// Prefetches the duration of start `i + FETCH_DISTANCE`, if any, from the tick matrix `q`.
#[inline]
pub(crate) fn fetch_pair_ahead(q: &[u64], n: usize, starts: &[Start], i: usize) {
    if let Some(s) = starts.get(i + FETCH_DISTANCE) {
        prefetch_index::prefetch_index(q, s.src as usize * n + s.dst as usize);
    }
}

/// The greedy run against the bound (in ticks, so the comparison is exact).
///
/// One piece per non-zero pair is the fewest transfers any schedule can have, so a whole
/// schedule on the bound has the fewest pieces possible. The greedy stops at the first tick at
/// which a port can no longer finish by the bound (a port idle at `t` with `w` ticks left ends
/// after `t + w`); what it started before that tick is kept, and [`crate::optimal()`]
/// decomposes only the rest (issue 24: the greedy's work is never thrown away, so trying it
/// costs little when it fails). A pass that falls behind in the first half of the bound is run
/// again keeping each tight port's next partner free ([`Board::reserve_next`]), and the
/// pass that got further is kept. Both passes' starts are alive at once: `2 * 16` bytes per
/// pair at most.
pub(crate) fn greedy_prefix(ticks: &Ticks) -> Prefix {
    if ticks.check_greedy_fits().is_err() {
        return Prefix::Cut {
            starts: Vec::new(),
            now: 0,
            interrupted: Vec::new(),
        };
    }
    let line = ticks.line_ticks;
    // Ports busy for most of the bound on average leave a tight port's partners busy: keep
    // them free from the start (the plain pass would fall behind early, measured on the
    // DeepSeek-like dispatch at 64 GPUs and on uniform traffic); otherwise the plain pass
    // first, which costs less per decision.
    let total: u128 = ticks.rows.iter().map(|&r| u128::from(r)).sum();
    let busy = total >= u128::from(line) * (ticks.n as u128) * u128::from(BUSY_PERCENT) / 100;
    let first = if busy {
        run::<true>(ticks, line)
    } else {
        run::<false>(ticks, line)
    };
    let (starts, now, interrupted) = match first {
        Outcome::Complete(starts, interrupted) => {
            return Prefix::Whole(pieces_of_starts(ticks, &starts, &interrupted));
        }
        Outcome::Cut {
            starts,
            now,
            interrupted,
        } => (starts, now, interrupted),
    };
    // The plain pass fell behind in the first half: it cost little, and a tight port probably
    // found every partner busy; try again keeping the next partner of each tight port free.
    if !busy && now < line / 2 {
        match run::<true>(ticks, line) {
            Outcome::Complete(starts, interrupted) => {
                return Prefix::Whole(pieces_of_starts(ticks, &starts, &interrupted));
            }
            Outcome::Cut {
                starts: kept,
                now: later,
                interrupted,
            } if later > now => {
                return Prefix::Cut {
                    starts: kept,
                    now: later,
                    interrupted,
                };
            }
            Outcome::Cut { .. } => {}
        }
    }
    Prefix::Cut {
        starts,
        now,
        interrupted,
    }
}

/// Average port load, in per cent of the bound, from which `optimal`'s greedy keeps tight
/// ports' partners free from its first pass (Zipf traffic: 2–12 %, the DeepSeek-like dispatch
/// at 256 GPUs 15 %, at 64 GPUs 44 %, uniform traffic about 95 %).
const BUSY_PERCENT: u64 = 30;

/// How a pass ended.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Every pair started, none ending after the deadline (starts in timetable order, and
    /// those cut short).
    Complete(Vec<Start>, Vec<Interrupted>),
    /// A port could not finish by the deadline at tick `now`; the starts before `now`.
    Cut {
        starts: Vec<Start>,
        now: u64,
        interrupted: Vec<Interrupted>,
    },
}

/// Size of the tick matrix above which the greedy reads durations from a copy by rank and
/// fetches the next ones ahead ([`Board::fetch_ahead`]): about a core's L2 cache (1 MiB: from 363
/// GPUs on). Below it the matrix stays in cache and the copy would only cost its `n^2` writes.
const RANKED_BYTES: usize = 1 << 20;

/// Below this many GPUs ports without slack are not rescued ([`Board::rescue`]). It would cut
/// pieces there too (the facade's pinned DeepSeek-like plan at 32 GPUs: one combine from 1,284
/// to 1,003 pieces), but the facade pins those timetables (`inference_specs_pinned`); the issue's
/// sizes (64, 256, 2048 GPUs) are above it.
const RESCUE_MIN_GPUS: usize = 64;

/// Tight ports whose next partner is kept free for them.
const TIGHT_PORTS: usize = 4;

/// Bits per word of the port sets.
const WORD: usize = 64;

/// Dense list scheduling against `deadline` (see the module documentation); `RESERVE` keeps
/// the next partner of up to [`TIGHT_PORTS`] ports without slack free for them.
fn run<const RESERVE: bool>(ticks: &Ticks, deadline: u64) -> Outcome {
    let ranked = std::mem::size_of_val(&ticks.q[..]) > RANKED_BYTES;
    run_laid_out::<RESERVE>(ticks, deadline, ranked)
}

/// [`run`] with the durations read from the tick matrix as given or (`ranked`) from a copy
/// by rank: the same decisions either way, only the memory layout differs.
fn run_laid_out<const RESERVE: bool>(ticks: &Ticks, deadline: u64, ranked: bool) -> Outcome {
    // Events packed in one `u64` when ticks leave room for the sender (13 bits, `MAX_GPUS`),
    // which halves the cost of the event heap; otherwise in a `u128`.
    if deadline < 1 << (64 - SENDER_BITS) {
        if ranked {
            Board::new(ticks, ranked).run::<RESERVE, true, u64>(deadline)
        } else {
            Board::new(ticks, ranked).run::<RESERVE, false, u64>(deadline)
        }
    } else {
        if ranked {
            Board::new(ticks, ranked).run::<RESERVE, true, u128>(deadline)
        } else {
            Board::new(ticks, ranked).run::<RESERVE, false, u128>(deadline)
        }
    }
}

/// The `n x n` tick matrix `q` relabelled by rank (`senders[s]` is sender rank `s`'s GPU,
/// `rank_of_receiver[g]` receiver GPU `g`'s rank), each value converted by `narrow`.
fn by_rank_copy<T: Copy + Default>(
    q: &[u64],
    senders: &[u32],
    rank_of_receiver: &[u32],
    narrow: impl Fn(u64) -> T,
) -> Vec<T> {
    let n = senders.len();
    let mut out = vec![T::default(); n * n];
    for (&g, line) in senders.iter().zip(out.chunks_exact_mut(n)) {
        let row = &q[g as usize * n..(g as usize + 1) * n];
        for (&v, &r) in row.iter().zip(rank_of_receiver) {
            line[r as usize] = narrow(v);
        }
    }
    out
}

/// Bits of a packed event that hold the sender (`MAX_GPUS = 2^13`).
const SENDER_BITS: u32 = 13;

/// A finish event `(tick, sender)` packed so that integer order is time order, then sender.
trait Event: Copy + Ord {
    fn pack(tick: u64, sender: usize) -> Self;
    fn tick(self) -> u64;
    fn sender(self) -> usize;
}

impl Event for u64 {
    fn pack(tick: u64, sender: usize) -> Self {
        tick << SENDER_BITS | sender as u64
    }
    fn tick(self) -> u64 {
        self >> SENDER_BITS
    }
    fn sender(self) -> usize {
        // At most `SENDER_BITS` bits.
        #[allow(clippy::cast_possible_truncation)]
        let s = (self & ((1 << SENDER_BITS) - 1)) as usize;
        s
    }
}

impl Event for u128 {
    fn pack(tick: u64, sender: usize) -> Self {
        u128::from(tick) << 64 | sender as u128
    }
    fn tick(self) -> u64 {
        #[allow(clippy::cast_possible_truncation)]
        let tick = (self >> 64) as u64;
        tick
    }
    fn sender(self) -> usize {
        #[allow(clippy::cast_possible_truncation)]
        let s = self as u64 as usize;
        s
    }
}

/// One port's state.
#[derive(Debug, Clone, Copy, Default)]
struct Port {
    /// Remaining ticks.
    left: u64,
    /// Pending pairs.
    count: u32,
    /// The partner (rank) of its running transfer, if busy.
    busy: bool,
    partner: u32,
}

/// The scheduler's state. Each side (0: senders, 1: receivers) numbers its ports by
/// decreasing line sum (a port's label is its rank); a port id is `side * n + rank`.
struct Board<'a> {
    n: usize,
    words: usize,
    /// Ticks of each pair: the tick matrix as given (`labels[0][s] * n + labels[1][r]`), or
    /// when it does not fit in a core's cache ([`RANKED_BYTES`]) a copy by rank
    /// (`s * n + r`), in which a sender's partners of similar rank are neighbours and which
    /// [`Board::fetch_ahead`] can fetch ahead. The copy is `narrow` (below) when every
    /// duration fits in 32 bits, and `q` then stays the matrix as given (unused here).
    q: Cow<'a, [u64]>,
    /// The copy by rank in 32 bits, when every duration fits (uniform traffic at 2048 GPUs:
    /// about 9 million ticks a pair), else empty: half the memory of `q`'s, so more of it stays
    /// in the last-level cache and the TLB.
    narrow: Vec<u32>,
    /// Where the row of sender rank `s` starts in `q`, and the column of receiver rank `r`
    /// (one look-up each and no multiplication per duration, in either layout).
    row_at: Vec<usize>,
    col_at: Vec<usize>,
    /// Rank -> original GPU, per side.
    labels: [Vec<u32>; 2],
    ports: [Vec<Port>; 2],
    /// Per side, per port (`rank * words + w`), the bitset of partners with a pending pair.
    pending: [Vec<u64>; 2],
    /// Per side, the bitset of idle ports with pending pairs.
    idle: [Vec<u64>; 2],
    /// Per side, the bitset of the words of `idle` that are not empty, kept up to date with
    /// the copy by rank (`WIDE`, from 363 GPUs on): most ports are busy on dense traffic, so a
    /// partner scan visits only these words (at 2048 GPUs it read all 32 words of a row, most
    /// of them empty: 14 % fewer instructions on uniform traffic; below, keeping it up to date
    /// cost 10 % more than it saved; issue 24).
    idle_words: [Vec<u64>; 2],
    /// Reservations (see [`Board::reserve_next`]), by port id: the tick each port's transfer
    /// ends, the tick by which it must be free again (`u64::MAX`: none) and the tight port it
    /// is kept for; per side, the bitset of ports kept free; the tight ports and the partner
    /// each keeps.
    busy_until: Vec<u64>,
    reserved_until: Vec<u64>,
    reserved_for: Vec<usize>,
    reserved: [Vec<u64>; 2],
    tight: Vec<(usize, usize)>,
    /// The transfers cut short so far ([`Board::rescue`]), at most `n` per pass.
    interrupted: Vec<Interrupted>,
    /// Idle ports with little slack, each at the tick its slack runs out (then it must start,
    /// or be rescued): `(tick, port id)`.
    wakes: BinaryHeap<Reverse<(u64, usize)>>,
    /// Whether ports without slack are rescued: from [`RESCUE_MIN_GPUS`] on, on dense
    /// matrices only, where the pivot fill is not tried ([`pivot_fill::BUSY_PERCENT`]:
    /// uniform traffic); elsewhere the pass falls behind as before and its rest is decomposed.
    rescue: bool,
}

impl<'a> Board<'a> {
    fn new(ticks: &'a Ticks, ranked: bool) -> Self {
        let n = ticks.n;
        let words = n.div_ceil(WORD);
        let order = |sums: &[u64]| {
            // `n <= MAX_GPUS = 2^13`: every label fits in `u32`.
            #[allow(clippy::cast_possible_truncation)]
            let mut idx: Vec<u32> = (0..n as u32).collect();
            idx.sort_unstable_by_key(|&g| (Reverse(sums[g as usize]), g));
            idx
        };
        let (senders, receivers) = (order(&ticks.rows), order(&ticks.cols));
        let mut rank_of_receiver = vec![0u32; n];
        for (r, &g) in receivers.iter().enumerate() {
            // As above: `r < n` fits.
            #[allow(clippy::cast_possible_truncation)]
            let rank = r as u32;
            rank_of_receiver[g as usize] = rank;
        }
        let mut send = vec![Port::default(); n];
        let mut recv = vec![Port::default(); n];
        let mut pending_send = vec![0u64; n * words];
        let mut pending_recv = vec![0u64; n * words];
        let q = &ticks.q[..];
        let mut by_rank = Vec::new();
        let mut narrow = Vec::new();
        if ranked {
            if q.iter().all(|&v| u32::try_from(v).is_ok()) {
                // Checked just above.
                #[allow(clippy::cast_possible_truncation)]
                let copy = by_rank_copy(q, &senders, &rank_of_receiver, |v| v as u32);
                narrow = copy;
            } else {
                by_rank = by_rank_copy(q, &senders, &rank_of_receiver, |v| v);
            }
        }
        for ((s, &g), port) in senders.iter().enumerate().zip(&mut send) {
            let row = &q[g as usize * n..(g as usize + 1) * n];
            let mine = &mut pending_send[s * words..(s + 1) * words];
            let (sw, sbit) = (s / WORD, 1u64 << (s % WORD));
            let mut c = 0;
            for (&v, &r) in row.iter().zip(&rank_of_receiver) {
                if v > 0 {
                    let r = r as usize;
                    c += 1;
                    mine[r / WORD] |= 1 << (r % WORD);
                    pending_recv[r * words + sw] |= sbit;
                    recv[r].count += 1;
                }
            }
            port.count = c;
            port.left = ticks.rows[g as usize];
        }
        for (port, &g) in recv.iter_mut().zip(&receivers) {
            port.left = ticks.cols[g as usize];
        }
        let mut idle = [vec![0u64; words], vec![0u64; words]];
        for (side, ports) in [&send, &recv].into_iter().enumerate() {
            for (me, port) in ports.iter().enumerate() {
                if port.count > 0 {
                    idle[side][me / WORD] |= 1 << (me % WORD);
                }
            }
        }
        let idle_words = idle.each_ref().map(|set| {
            let mut summary = vec![0u64; set.len().div_ceil(WORD)];
            for (w, &bits) in set.iter().enumerate() {
                summary[w / WORD] |= u64::from(bits != 0) << (w % WORD);
            }
            summary
        });
        Self {
            n,
            words,
            q: if by_rank.is_empty() {
                Cow::Borrowed(q)
            } else {
                Cow::Owned(by_rank)
            },
            narrow,
            row_at: if ranked {
                (0..n).map(|s| s * n).collect()
            } else {
                senders.iter().map(|&g| g as usize * n).collect()
            },
            col_at: if ranked {
                (0..n).collect()
            } else {
                receivers.iter().map(|&g| g as usize).collect()
            },
            labels: [senders, receivers],
            ports: [send, recv],
            pending: [pending_send, pending_recv],
            idle,
            idle_words,
            busy_until: Vec::new(),
            reserved_until: Vec::new(),
            reserved_for: Vec::new(),
            reserved: [Vec::new(), Vec::new()],
            tight: Vec::new(),
            interrupted: Vec::new(),
            wakes: BinaryHeap::new(),
            rescue: n >= RESCUE_MIN_GPUS && ticks.mean_load_at_least(pivot_fill::BUSY_PERCENT),
        }
    }

    /// Ticks of the pair of sender rank `s` and receiver rank `r` (`WIDE`: the copy by rank
    /// may be `narrow`; without it, it never is).
    #[inline]
    fn dur<const WIDE: bool>(&self, s: usize, r: usize) -> u64 {
        if !WIDE || self.narrow.is_empty() {
            self.q[self.row_at[s] + self.col_at[r]]
        } else {
            u64::from(self.narrow[s * self.n + r])
        }
    }

    /// Sets the pair's remaining ticks (a rescue's rest, shorter than the duration it replaces,
    /// so it fits where that did).
    fn set_dur(&mut self, s: usize, r: usize, ticks: u64) {
        if self.narrow.is_empty() {
            let k = self.row_at[s] + self.col_at[r];
            self.q.to_mut()[k] = ticks;
        } else {
            let k = s * self.n + r;
            debug_assert!(ticks <= u64::from(self.narrow[k]));
            self.narrow[k] = u32::try_from(ticks).unwrap_or(self.narrow[k]);
        }
    }

    /// Prefetches the durations the ports of the next finish event, sender rank `s` and its
    /// receiver, will look up then: each one's idle pending partner of lowest rank *now*, which
    /// is the partner it takes at that event nearly always (99.4–99.9 % on uniform traffic at
    /// 2048 GPUs, where the duration read at each decision missed the cache and stalled the
    /// greedy for about a third of its time; issue 24). One event of warning is enough when the
    /// load does not block: a prefetch instruction (`prefetch-index`), not a read. An earlier
    /// version read ahead each port's lowest *pending* partner when its transfer started; that
    /// partner is nearly always busy by the time the port is free (under 1 % taken).
    #[inline(never)]
    fn fetch_ahead(&self, s: usize) {
        let n = self.n;
        let r = self.ports[0][s].partner as usize;
        let at = |i: usize| {
            if self.narrow.is_empty() {
                prefetch_index::prefetch_index(&self.q[..], i);
            } else {
                prefetch_index::prefetch_index(&self.narrow, i);
            }
        };
        if let Some(x) = self.lowest_idle_pending(0, s) {
            at(s * n + x);
        }
        if let Some(x) = self.lowest_idle_pending(1, r) {
            at(x * n + r);
        }
    }

    /// The idle partner of lowest rank with which port `me` of `side` has a pending pair,
    /// busy or not itself, and whatever the reservations say (for [`Self::fetch_ahead`]: a
    /// guess, never a decision). Scans only the non-empty words of the idle set (`WIDE`).
    #[inline]
    fn lowest_idle_pending(&self, side: usize, me: usize) -> Option<usize> {
        let words = self.words;
        let mine = &self.pending[side][me * words..(me + 1) * words];
        let idle = &self.idle[1 - side];
        for (at, &summary) in self.idle_words[1 - side].iter().enumerate() {
            let mut nonempty = summary;
            while nonempty != 0 {
                let w = at * WORD + nonempty.trailing_zeros() as usize;
                nonempty &= nonempty - 1;
                let bits = mine[w] & idle[w];
                if bits != 0 {
                    return Some(w * WORD + bits.trailing_zeros() as usize);
                }
            }
        }
        None
    }

    #[inline]
    fn left(&self, port: usize) -> u64 {
        let n = self.n;
        if port < n {
            self.ports[0][port].left
        } else {
            self.ports[1][port - n].left
        }
    }

    fn run<const RESERVE: bool, const WIDE: bool, E: Event>(mut self, deadline: u64) -> Outcome {
        let n = self.n;
        // The finish event of each busy sender.
        let mut events: BinaryHeap<Reverse<E>> = BinaryHeap::with_capacity(n);
        if RESERVE {
            self.busy_until = vec![0; 2 * n];
            self.reserved_until = vec![u64::MAX; 2 * n];
            self.reserved_for = vec![usize::MAX; 2 * n];
            self.reserved = [vec![0; self.words], vec![0; self.words]];
            self.tight = (0..2 * n)
                .filter(|&p| self.left(p) == deadline)
                .take(TIGHT_PORTS)
                .map(|p| (p, usize::MAX))
                .collect();
        }
        let pairs: usize = self.ports[0].iter().map(|p| p.count as usize).sum();
        // Each interruption adds a start: room for all of them, so the list never grows.
        let mut starts: Vec<Start> = Vec::with_capacity(pairs + n);
        // Finish events of interrupted transfers, skipped when they come up (there are few).
        let mut stale: Vec<E> = Vec::new();
        // Idle ports whose slack runs out at the current tick.
        let mut woken: Vec<usize> = Vec::new();
        // Ports that just became free, the most loaded first (all of them at time 0).
        let mut freed: Vec<usize> = (0..2 * n).collect();
        freed.sort_by_key(|&p| Reverse(self.left(p)));
        let mut now = 0;
        loop {
            let step_begin = starts.len();
            // Whether a freed port found no partner (it may still be taken by a later one).
            let mut unmatched = false;
            for &port in &freed {
                let (side, me) = if port < n { (0, port) } else { (1, port - n) };
                let Some(other) = self.partner::<RESERVE, WIDE>(side, me, now) else {
                    unmatched = true;
                    continue;
                };
                let (s, r) = if side == 0 { (me, other) } else { (other, me) };
                let dur = self.dur::<WIDE>(s, r);
                let end = now + dur;
                let (left_s, left_r) = self.start::<WIDE>(s, r, dur);
                if RESERVE {
                    self.busy_until[s] = end;
                    self.busy_until[n + r] = end;
                    if !self.tight.is_empty() {
                        self.reserve_next(s, n + r, end);
                    }
                }
                // A port busy until `end` with work left after it ends later still.
                if end > deadline || left_s > deadline - end || left_r > deadline - end {
                    starts.truncate(step_begin);
                    return self.cut(starts, now);
                }
                starts.push(Start {
                    start: now,
                    src: self.labels[0][s],
                    dst: self.labels[1][r],
                });
                events.push(Reverse(E::pack(end, s)));
            }
            // A freed port left idle with more work than time ends late (the pass falls
            // behind); one without slack is rescued (it would fall behind at its next start);
            // one with little slack is woken when its slack runs out.
            for &port in freed.iter().filter(|_| unmatched) {
                let p = if port < n {
                    self.ports[0][port]
                } else {
                    self.ports[1][port - n]
                };
                if p.busy || p.count == 0 {
                    continue;
                }
                let room = deadline - now;
                if p.left > room {
                    starts.truncate(step_begin);
                    return self.cut(starts, now);
                }
                if !self.rescue {
                    continue;
                }
                if p.left < room {
                    self.watch(port, p, now, deadline);
                } else if !self.rescue_at::<RESERVE, WIDE, E>(
                    port,
                    now,
                    deadline,
                    &mut events,
                    &mut stale,
                    &mut starts,
                ) {
                    starts.truncate(step_begin);
                    return self.cut(starts, now);
                }
            }
            // So is an idle port whose slack ran out now.
            if !woken.is_empty()
                && !self.wake_up::<RESERVE, WIDE, E>(
                    &woken,
                    now,
                    deadline,
                    &mut events,
                    &mut stale,
                    &mut starts,
                )
            {
                starts.truncate(step_begin);
                return self.cut(starts, now);
            }
            // The timetable's order within one tick: by sender, then receiver.
            let step = &mut starts[step_begin..];
            if step.len() > 1 {
                step.sort_unstable();
            }
            let Some(&Reverse(top)) = events.peek() else {
                break;
            };
            if WIDE {
                self.fetch_ahead(top.sender());
            }
            now = top.tick();
            if let Some(&Reverse((wake, _))) = self.wakes.peek() {
                now = now.min(wake);
            }
            freed.clear();
            woken.clear();
            while let Some(&Reverse((wake, port))) = self.wakes.peek()
                && wake == now
            {
                self.wakes.pop();
                woken.push(port);
            }
            while let Some(&Reverse(top)) = events.peek()
                && top.tick() == now
            {
                events.pop();
                if !stale.is_empty()
                    && let Some(at) = stale.iter().position(|&e| e == top)
                {
                    stale.swap_remove(at);
                    continue;
                }
                let s = top.sender();
                let r = self.free::<WIDE>(s);
                freed.extend([s, n + r]);
            }
            if let [a, b] = freed[..] {
                if self.left(b) > self.left(a) {
                    freed.swap(0, 1);
                }
            } else {
                freed.sort_by_key(|&p| Reverse(self.left(p)));
            }
        }
        self.interrupted.sort_unstable();
        Outcome::Complete(starts, self.interrupted)
    }

    /// Idle port id `port` (state `p`, work left below the time left) is woken when
    /// its slack runs out, if that is within about one of its transfers (a port with more
    /// slack than that is almost always taken by a partner before; not watching it keeps the
    /// wake queue short).
    #[inline]
    fn watch(&mut self, port: usize, p: Port, now: u64, deadline: u64) {
        let slack = deadline - now - p.left;
        if u128::from(slack) * u128::from(p.count) <= u128::from(p.left) {
            self.wakes.push(Reverse((deadline - p.left, port)));
        }
    }

    /// The idle ports of `woken` whose slack ran out at `now` take an idle partner, else are
    /// rescued; `false` when a transfer started here falls behind. Out of line: rarely called.
    #[inline(never)]
    fn wake_up<const RESERVE: bool, const WIDE: bool, E: Event>(
        &mut self,
        woken: &[usize],
        now: u64,
        deadline: u64,
        events: &mut BinaryHeap<Reverse<E>>,
        stale: &mut Vec<E>,
        starts: &mut Vec<Start>,
    ) -> bool {
        let n = self.n;
        for &port in woken {
            let (side, me) = if port < n { (0, port) } else { (1, port - n) };
            let p = self.ports[side][me];
            if p.busy || p.count == 0 || p.left != deadline - now {
                continue;
            }
            let started = match self.partner::<RESERVE, WIDE>(side, me, now) {
                Some(other) => {
                    let (s, r) = if side == 0 { (me, other) } else { (other, me) };
                    let d = self.dur::<WIDE>(s, r);
                    self.begin::<RESERVE, WIDE, E>(s, r, d, now, deadline, events, starts)
                }
                None => {
                    self.rescue_at::<RESERVE, WIDE, E>(port, now, deadline, events, stale, starts)
                }
            };
            if !started {
                return false;
            }
        }
        true
    }

    /// [`Board::rescue`] for port id `port`, unless `n` transfers were cut short already.
    #[inline(never)]
    fn rescue_at<const RESERVE: bool, const WIDE: bool, E: Event>(
        &mut self,
        port: usize,
        now: u64,
        deadline: u64,
        events: &mut BinaryHeap<Reverse<E>>,
        stale: &mut Vec<E>,
        starts: &mut Vec<Start>,
    ) -> bool {
        let n = self.n;
        if self.interrupted.len() >= n {
            return true;
        }
        let (side, me) = if port < n { (0, port) } else { (1, port - n) };
        self.rescue::<RESERVE, WIDE, E>(side, me, now, deadline, events, stale, starts)
    }

    /// The pass's outcome when a port falls behind at `now`.
    fn cut(mut self, starts: Vec<Start>, now: u64) -> Outcome {
        self.interrupted.sort_unstable();
        Outcome::Cut {
            starts,
            now,
            interrupted: self.interrupted,
        }
    }

    /// Port `me` of `side` has no slack (its work left is all the time left) and no idle
    /// partner: it takes a busy partner instead, whose running transfer is cut short at `now`
    /// (its rest becomes a pending pair again, so the pair gets one more piece) and whose
    /// other port is freed. The partner is the first by rank whose transfer started before
    /// `now`, whose other port has slack to wait for a new partner, and which can take the
    /// pair and still finish by the deadline (and, with reservations, is kept free for no
    /// other tight port by then). Returns `false` when a transfer started here falls behind
    /// (a cut), `true` otherwise (also when no partner qualified: the port then idles, and the
    /// pass falls behind later, as without this rescue).
    ///
    /// Without it a port without slack that found every partner busy ended the pass: on
    /// uniform traffic at 2048 GPUs the tightest port idled for a few thousand ticks of 18
    /// billion at 18 % of the bound (seed 2), and the rest was decomposed (issue 24). It costs
    /// `O(n)` per call (the busy senders' finish ticks are read from the event queue), at most
    /// `n` calls per pass, and only where the pass would otherwise fall behind.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn rescue<const RESERVE: bool, const WIDE: bool, E: Event>(
        &mut self,
        side: usize,
        me: usize,
        now: u64,
        deadline: u64,
        events: &mut BinaryHeap<Reverse<E>>,
        stale: &mut Vec<E>,
        starts: &mut Vec<Start>,
    ) -> bool {
        let (n, words) = (self.n, self.words);
        // The finish tick of each busy sender's transfer, and each busy receiver's sender.
        let mut end_of = vec![u64::MAX; n];
        for &Reverse(e) in events.iter() {
            if !stale.contains(&e) {
                end_of[e.sender()] = e.tick();
            }
        }
        let mut sender_of = vec![usize::MAX; n];
        if side == 0 {
            for (s, port) in self.ports[0].iter().enumerate() {
                if port.busy {
                    sender_of[port.partner as usize] = s;
                }
            }
        }
        let id = side * n + me;
        let mut found = None;
        'scan: for w in 0..words {
            let mut bits = self.pending[side][me * words + w];
            while bits != 0 {
                let other = w * WORD + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let theirs = self.ports[1 - side][other];
                if !theirs.busy {
                    continue;
                }
                // The running transfer `(s0, r0)`; its port on this side, `x`, is freed.
                let (s0, r0) = if side == 1 {
                    (other, theirs.partner as usize)
                } else {
                    (sender_of[other], other)
                };
                if s0 == usize::MAX || end_of[s0] == u64::MAX {
                    continue;
                }
                let (e0, d0) = (end_of[s0], self.dur::<WIDE>(s0, r0));
                if e0 - d0 >= now {
                    continue;
                }
                let rest = e0 - now;
                let x_left = if side == 1 {
                    self.ports[1][r0].left
                } else {
                    self.ports[0][s0].left
                };
                if x_left + rest >= deadline - now {
                    continue;
                }
                let (s1, r1) = if side == 1 { (other, me) } else { (me, other) };
                let d1 = self.dur::<WIDE>(s1, r1);
                let end = now + d1;
                // The partner's work left after the new transfer (the pair is pending, so
                // counted in its work) must fit after it.
                if end > deadline || theirs.left + rest - d1 > deadline - end {
                    continue;
                }
                let other_id = (1 - side) * n + other;
                if RESERVE
                    && (self.blocked(other_id, id, now, d1) || self.blocked(id, other_id, now, d1))
                {
                    continue;
                }
                found = Some((s0, r0, e0, d0, s1, r1, d1));
                break 'scan;
            }
        }
        let Some((s0, r0, e0, d0, s1, r1, d1)) = found else {
            return true;
        };
        // Cut `(s0, r0)` short: its finish event is void, its rest pending again.
        stale.push(E::pack(e0, s0));
        self.interrupted.push(Interrupted {
            start: e0 - d0,
            src: self.labels[0][s0],
            dst: self.labels[1][r0],
            len: now - (e0 - d0),
        });
        let rest = e0 - now;
        self.set_dur(s0, r0, rest);
        for (sd, rank) in [(0, s0), (1, r0)] {
            let port = &mut self.ports[sd][rank];
            port.busy = false;
            port.left += rest;
            port.count += 1;
            self.idle[sd][rank / WORD] |= 1 << (rank % WORD);
            let w = rank / WORD;
            self.idle_words[sd][w / WORD] |= 1 << (w % WORD);
        }
        self.pending[0][s0 * words + r0 / WORD] |= 1 << (r0 % WORD);
        self.pending[1][r0 * words + s0 / WORD] |= 1 << (s0 % WORD);
        if RESERVE {
            self.busy_until[s0] = now;
            self.busy_until[n + r0] = now;
        }
        if !self.begin::<RESERVE, WIDE, E>(s1, r1, d1, now, deadline, events, starts) {
            return false;
        }
        // The freed port takes an idle partner at once if it has one.
        let (x_side, x) = if side == 1 { (1, r0) } else { (0, s0) };
        if let Some(other) = self.partner::<RESERVE, WIDE>(x_side, x, now) {
            let (s, r) = if x_side == 0 { (x, other) } else { (other, x) };
            let d = self.dur::<WIDE>(s, r);
            return self.begin::<RESERVE, WIDE, E>(s, r, d, now, deadline, events, starts);
        }
        let port = self.ports[x_side][x];
        self.watch(x_side * n + x, port, now, deadline);
        true
    }

    /// Starts the pair of sender rank `s` and receiver rank `r` (`dur` ticks) at `now`, as
    /// the main loop does; `false` when either port could then no longer finish by the
    /// deadline (nothing is recorded). (The main loop keeps its own copy: calling this there
    /// cost 4 % more instructions at 64 GPUs.)
    #[allow(clippy::too_many_arguments)]
    fn begin<const RESERVE: bool, const WIDE: bool, E: Event>(
        &mut self,
        s: usize,
        r: usize,
        dur: u64,
        now: u64,
        deadline: u64,
        events: &mut BinaryHeap<Reverse<E>>,
        starts: &mut Vec<Start>,
    ) -> bool {
        let n = self.n;
        let end = now + dur;
        let (left_s, left_r) = self.start::<WIDE>(s, r, dur);
        if RESERVE {
            self.busy_until[s] = end;
            self.busy_until[n + r] = end;
            if !self.tight.is_empty() {
                self.reserve_next(s, n + r, end);
            }
        }
        if end > deadline || left_s > deadline - end || left_r > deadline - end {
            return false;
        }
        starts.push(Start {
            start: now,
            src: self.labels[0][s],
            dst: self.labels[1][r],
        });
        events.push(Reverse(E::pack(end, s)));
        true
    }

    /// The rank of the idle partner of lowest rank (highest line sum) with which idle port
    /// `me` of `side` has a pending pair.
    #[inline]
    fn partner<const RESERVE: bool, const WIDE: bool>(
        &self,
        side: usize,
        me: usize,
        now: u64,
    ) -> Option<usize> {
        let words = self.words;
        let port = self.ports[side][me];
        if port.busy || port.count == 0 {
            return None;
        }
        let mine = &self.pending[side][me * words..(me + 1) * words];
        let idle = &self.idle[1 - side];
        if WIDE {
            for (at, &summary) in self.idle_words[1 - side].iter().enumerate() {
                let mut nonempty = summary;
                while nonempty != 0 {
                    let w = at * WORD + nonempty.trailing_zeros() as usize;
                    nonempty &= nonempty - 1;
                    if let Some(other) =
                        self.partner_in::<RESERVE, WIDE>(side, me, w, mine[w] & idle[w], now)
                    {
                        return Some(other);
                    }
                }
            }
            return None;
        }
        for (w, (&a, &b)) in mine.iter().zip(idle).enumerate() {
            let mut bits = a & b;
            if RESERVE && bits != 0 {
                let id = side * self.n + me;
                let suspects = if self.reserved_until[id] != u64::MAX {
                    bits
                } else {
                    bits & self.reserved[1 - side][w]
                };
                if suspects != 0 {
                    bits &= !self.blocked_among::<WIDE>(id, w, suspects, now);
                }
            }
            if bits != 0 {
                return Some(w * WORD + bits.trailing_zeros() as usize);
            }
        }
        None
    }

    /// The lowest partner in word `w` of `bits` (pending and idle) that reservations allow.
    #[inline]
    fn partner_in<const RESERVE: bool, const WIDE: bool>(
        &self,
        side: usize,
        me: usize,
        w: usize,
        mut bits: u64,
        now: u64,
    ) -> Option<usize> {
        if RESERVE && bits != 0 {
            let id = side * self.n + me;
            let suspects = if self.reserved_until[id] != u64::MAX {
                bits
            } else {
                bits & self.reserved[1 - side][w]
            };
            if suspects != 0 {
                bits &= !self.blocked_among::<WIDE>(id, w, suspects, now);
            }
        }
        (bits != 0).then(|| w * WORD + bits.trailing_zeros() as usize)
    }

    /// The bits of `suspects` (partners `w * 64 + bit` of port id `port`) that
    /// [`Self::blocked`] rules out; out of line, so the common scan stays small.
    #[inline(never)]
    fn blocked_among<const WIDE: bool>(
        &self,
        port: usize,
        w: usize,
        mut suspects: u64,
        now: u64,
    ) -> u64 {
        let n = self.n;
        let mut out = 0;
        while suspects != 0 {
            let other = w * WORD + suspects.trailing_zeros() as usize;
            let bit = suspects & suspects.wrapping_neg();
            suspects &= suspects - 1;
            let (partner, dur) = if port < n {
                (n + other, self.dur::<WIDE>(port, other))
            } else {
                (other, self.dur::<WIDE>(other, port - n))
            };
            if self.blocked(port, partner, now, dur) || self.blocked(partner, port, now, dur) {
                out |= bit;
            }
        }
        out
    }

    /// Whether port `a`, kept free for a tight port other than `b`, cannot take a transfer of
    /// `dur` ticks with `b` at `now` (it would still run when the tight port needs it).
    fn blocked(&self, a: usize, b: usize, now: u64, dur: u64) -> bool {
        let until = self.reserved_until[a];
        until != u64::MAX && self.reserved_for[a] != b && now.saturating_add(dur) > until
    }

    /// After sender `s` and receiver port id `r` start a transfer ending at `end`: if either
    /// is a tight port, keeps a partner with a pending pair free for it from `end` on (one
    /// idle now, else the one whose transfer ends first, by `end`), as the scheduler of
    /// `non_preemptive` does.
    #[inline(never)]
    fn reserve_next(&mut self, s: usize, r: usize, end: u64) {
        let (n, words) = (self.n, self.words);
        for port in [s, r] {
            let Some(slot) = self.tight.iter().position(|&(t, _)| t == port) else {
                continue;
            };
            let old = self.tight[slot].1;
            if old != usize::MAX {
                self.reserved_until[old] = u64::MAX;
                self.reserved_for[old] = usize::MAX;
                let (side, me) = if old < n { (0, old) } else { (1, old - n) };
                self.reserved[side][me / WORD] &= !(1 << (me % WORD));
            }
            let (side, me) = if port < n { (0, port) } else { (1, port - n) };
            let base = if port < n { n } else { 0 };
            let mut chosen = usize::MAX;
            let mut chosen_until = u64::MAX;
            'scan: for (w, &bits) in self.pending[side][me * words..(me + 1) * words]
                .iter()
                .enumerate()
            {
                let mut bits = bits;
                while bits != 0 {
                    let other = w * WORD + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let p = base + other;
                    if self.reserved_until[p] != u64::MAX {
                        continue;
                    }
                    let until = if self.ports[1 - side][other].busy {
                        self.busy_until[p]
                    } else {
                        0
                    };
                    if until <= end && until < chosen_until {
                        chosen = p;
                        chosen_until = until;
                        if until == 0 {
                            break 'scan;
                        }
                    }
                }
            }
            self.tight[slot].1 = chosen;
            if chosen != usize::MAX {
                self.reserved_until[chosen] = end;
                self.reserved_for[chosen] = port;
                let (side, me) = if chosen < n {
                    (0, chosen)
                } else {
                    (1, chosen - n)
                };
                self.reserved[side][me / WORD] |= 1 << (me % WORD);
            }
        }
    }

    /// Starts the pair of sender rank `s` and receiver rank `r`; returns both ports' work left
    /// after it.
    #[inline]
    fn start<const WIDE: bool>(&mut self, s: usize, r: usize, dur: u64) -> (u64, u64) {
        let words = self.words;
        let [send, recv] = &mut self.ports;
        let (a, b) = (&mut send[s], &mut recv[r]);
        a.busy = true;
        b.busy = true;
        a.left -= dur;
        b.left -= dur;
        a.count -= 1;
        b.count -= 1;
        // `r < n <= 2^13`.
        #[allow(clippy::cast_possible_truncation)]
        let partner = r as u32;
        a.partner = partner;
        let left = (a.left, b.left);
        let [pending_send, pending_recv] = &mut self.pending;
        pending_send[s * words + r / WORD] &= !(1 << (r % WORD));
        pending_recv[r * words + s / WORD] &= !(1 << (s % WORD));
        let [idle_send, idle_recv] = &mut self.idle;
        idle_send[s / WORD] &= !(1 << (s % WORD));
        idle_recv[r / WORD] &= !(1 << (r % WORD));
        if WIDE {
            let (ws, wr) = (s / WORD, r / WORD);
            let (empty_s, empty_r) = (idle_send[ws] == 0, idle_recv[wr] == 0);
            let [words_send, words_recv] = &mut self.idle_words;
            words_send[ws / WORD] &= !(u64::from(empty_s) << (ws % WORD));
            words_recv[wr / WORD] &= !(u64::from(empty_r) << (wr % WORD));
        }
        left
    }

    /// Ends the transfer of sender rank `s`; returns its receiver's rank.
    #[inline]
    fn free<const WIDE: bool>(&mut self, s: usize) -> usize {
        let [send, recv] = &mut self.ports;
        let a = &mut send[s];
        let r = a.partner as usize;
        let b = &mut recv[r];
        a.busy = false;
        b.busy = false;
        let (on_s, on_r) = (a.count > 0, b.count > 0);
        let [idle_send, idle_recv] = &mut self.idle;
        idle_send[s / WORD] |= u64::from(on_s) << (s % WORD);
        idle_recv[r / WORD] |= u64::from(on_r) << (r % WORD);
        if WIDE {
            let (ws, wr) = (s / WORD, r / WORD);
            let [words_send, words_recv] = &mut self.idle_words;
            words_send[ws / WORD] |= u64::from(on_s) << (ws % WORD);
            words_recv[wr / WORD] |= u64::from(on_r) << (wr % WORD);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bandwidth;
    use crate::workload::{uniform_traffic, zipf_traffic};

    /// The copy by rank (used above 1 MiB of ticks, 363 GPUs) changes where durations are
    /// read, never a decision: both layouts give the same passes on small inputs, complete or
    /// cut, with and without reservations, with and without rescues (which write a pair's
    /// rest into the durations).
    #[test]
    fn both_layouts_take_the_same_decisions() {
        let b = Bandwidth::uniform(1.0).unwrap();
        let (mut cut, mut rescued) = (0, 0);
        for seed in 0..12 {
            for d in [
                uniform_traffic(12, 10, seed).unwrap(),
                uniform_traffic(24, 1000, seed).unwrap(),
                uniform_traffic(64, 1000, seed).unwrap(),
                zipf_traffic(40, 0.8, 500, 7, seed).unwrap(),
                zipf_traffic(70, 1.2, 900, 3, seed).unwrap(),
            ] {
                let ticks = Ticks::new(&d, &b).unwrap();
                let line = ticks.line_ticks;
                let plain = run_laid_out::<false>(&ticks, line, false);
                assert_eq!(plain, run_laid_out::<false>(&ticks, line, true));
                let reserving = run_laid_out::<true>(&ticks, line, false);
                assert_eq!(reserving, run_laid_out::<true>(&ticks, line, true));
                cut += usize::from(matches!(reserving, Outcome::Cut { .. }));
                rescued += usize::from(match &reserving {
                    Outcome::Complete(_, interrupted) | Outcome::Cut { interrupted, .. } => {
                        !interrupted.is_empty()
                    }
                });
            }
        }
        assert!(cut > 0, "no pass was cut");
        assert!(rescued > 0, "no pass was rescued");
    }
}
