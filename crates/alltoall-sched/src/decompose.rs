//! Decomposition of a regular integer matrix into matchings, as one timeline.
//!
//! The padded matrix `W` has every line summing to `L`. At any time the edges with remaining
//! work form a regular bipartite multigraph, which has a perfect matching (König, 1916); running
//! a perfect matching until its first edge is exhausted therefore never leaves a port idle, and
//! the whole matrix is done at exactly `L` (Birkhoff–von Neumann; the constructive form of Aurora
//! Appendix A, step 2).
//!
//! Instead of recomputing a matching per phase, the matching is kept and only repaired: when
//! edges are exhausted their endpoints are re-matched by the shortest augmenting path, trying a
//! direct edge, then a path of length three, then a breadth-first search (full Hopcroft–Karp
//! only if that fails, which it cannot on a regular matrix). Edges that stay matched keep
//! running, so a pair's consecutive phases form one piece; only the edge a length-three path
//! swaps out is interrupted, and the path is chosen to interrupt a run that carries only padding
//! (a diagonal entry, or a pair with no bytes) when one is adjacent.
//!
//! Data layout, for speed (an `n = 64` phase costs about 100 ns): live edges, free receivers and
//! pure-padding runs are bitsets, so the repairs test a row with a few word operations and the
//! search visits a row per word; the earliest finishing run comes from a tournament tree with one
//! key per sender (no stale events); and each run reserves its output slot when it starts, in
//! start order, so the pieces come out sorted without a final sort.

use crate::ScheduleError;
use crate::bitset::{self, BitRows};
use crate::min_tree::MinTree;
use crate::padding::pad_to_regular;
use bipartite::{BipartiteGraph, PartialMatching as Matching, UNMATCHED as NONE};

/// Pure-padding runs (adjacent to the free sender) tried as the run a repair path interrupts,
/// before settling for any path. Interrupting padding splits no real transfer.
const PADDING_TRIES: usize = 64;

/// A piece of real traffic of pair `(src, dst)` during ticks `[start, end)`; `offset` is how
/// many of the pair's ticks were sent before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    pub src: usize,
    pub dst: usize,
    pub start: u64,
    pub end: u64,
    pub offset: u64,
}

/// Schedules `real` (ticks per pair, zero diagonal) given durations `dur >= real` per pair.
///
/// Returns the pieces (sorted by start, then sender) and the makespan `L`, the largest line
/// sum of `dur`.
pub(crate) fn decompose(
    n: usize,
    real: &[u64],
    dur: &[u64],
) -> Result<(Vec<Piece>, u64), ScheduleError> {
    decompose_seeded(n, real, dur, &[])
}

/// As [`decompose`], with the first matching grown from `seeds` (receiver of each sender,
/// [`NONE`] for none; pairs without remaining ticks are ignored) so that transfers already
/// running when the decomposition takes over keep running: [`crate::optimal()`] continues an
/// interrupted greedy schedule without splitting its running transfers.
pub(crate) fn decompose_seeded(
    n: usize,
    real: &[u64],
    dur: &[u64],
    seeds: &[usize],
) -> Result<(Vec<Piece>, u64), ScheduleError> {
    let mut pieces = Vec::new();
    let Some((mut state, line)) = prepare(n, real, dur, &mut pieces)? else {
        return Ok((pieces, 0));
    };
    state.seed(seeds);
    state.run(line);
    let mut pieces = state.pieces;
    // Runs that carried only padding left empty placeholders.
    pieces.retain(|p| p.end > p.start);
    Ok((pieces, line))
}

/// The state of a decomposition of `real` with durations `dur`, its runs appended to
/// `pieces` (taken); `None` (and `pieces` untouched) when every line is empty.
fn prepare(
    n: usize,
    real: &[u64],
    dur: &[u64],
    pieces: &mut Vec<Piece>,
) -> Result<Option<(State, u64)>, ScheduleError> {
    let (padded, line) = pad_to_regular(dur, n)?;
    if line == 0 {
        return Ok(None);
    }
    Ok(Some((
        State::new(n, real, padded, std::mem::take(pieces)),
        line,
    )))
}

/// As [`decompose_seeded`] with `real` (taken: freed once the state holds it) as its own
/// durations, appending the pieces to `pieces` (whose entries stay in front, untouched) and
/// leaving the empty placeholders (`end == start`) among the new ones for the caller to drop.
///
/// [`crate::optimal()`] passes the greedy's kept pieces, so that its output is built in one
/// allocation: a second list of the decomposition's pieces, copied behind the kept ones, was
/// the peak of its memory at 2048 GPUs (issue 24).
pub(crate) fn decompose_after(
    n: usize,
    real: Vec<u64>,
    seeds: &[usize],
    mut pieces: Vec<Piece>,
) -> Result<(Vec<Piece>, u64), ScheduleError> {
    let prepared = prepare(n, &real, &real, &mut pieces)?;
    drop(real);
    let Some((mut state, line)) = prepared else {
        return Ok((pieces, 0));
    };
    state.seed(seeds);
    state.run(line);
    Ok((state.pieces, line))
}

/// A capacity for the run list: about two runs start per phase, and there is about one phase
/// per non-zero padded entry.
fn runs_estimate(padded: &[u64], n: usize) -> usize {
    let entries = padded.iter().filter(|&&v| v > 0).count();
    entries.saturating_mul(2).saturating_add(n)
}

/// What is left of one pair, its counts side by side: starting a run reads one record of this
/// `n^2` matrix where separate matrices (remaining, remaining real, real sent) cost a cache
/// miss each at 2048 GPUs (issue 24).
#[derive(Debug, Clone, Copy)]
struct Left {
    /// Remaining ticks (as of its run start while matched).
    all: u64,
    /// Remaining real ticks.
    real: u64,
    /// Real ticks sent.
    sent: u64,
}

struct State {
    n: usize,
    /// What is left of each pair.
    left: Vec<Left>,
    /// Bit `(i, j)` is set while pair `(i, j)` has remaining ticks.
    alive: BitRows,
    /// Receivers whose current run carries only padding (bitset).
    padding_runs: Vec<u64>,
    matching: Matching,
    run_start: Vec<u64>,
    /// What was left of each sender's current pair when its run started: read from the `n^2`
    /// matrix when the run starts, so that ending it only writes there (at 2048 GPUs each read
    /// is a cache miss; issue 24).
    run_left: Vec<Left>,
    /// Index in `pieces` of each sender's current run.
    run_piece: Vec<usize>,
    /// Where the runs started in the current repair phase begin in `pieces`.
    phase_begin: usize,
    /// Finish tick of each sender's current run (none while it has no mate).
    finish: MinTree,
    /// One entry per run, in start order (then sender): the run's real part once it ends,
    /// empty (`end == start`) if it had none or was merged into the pair's previous piece.
    pieces: Vec<Piece>,
    /// Index of each sender's latest piece, to merge a pair's touching pieces.
    last_piece: Vec<usize>,
    /// Receiver and end tick of each sender's latest piece: the merge test reads these instead
    /// of the piece, which was written long ago (a cache miss per run at 2048 GPUs).
    last_end: Vec<(usize, u64)>,
    /// Receivers without a mate (bitset), and senders without one.
    free_rights: Vec<u64>,
    free_lefts: Vec<usize>,
    /// Senders the short repairs could not re-match this phase.
    unresolved: Vec<usize>,
    /// BFS scratch: receivers reached (bitset) and the sender each was reached from.
    seen: Vec<u64>,
    via: Vec<usize>,
    queue: Vec<usize>,
}

impl State {
    /// `pieces` holds earlier pieces (kept in front); the runs are appended behind them.
    fn new(n: usize, real: &[u64], padded: Vec<u64>, mut pieces: Vec<Piece>) -> Self {
        let alive = BitRows::nonzero(&padded, n);
        let width = alive.width();
        // Address space only: pages never written are never resident.
        pieces.reserve_exact(runs_estimate(&padded, n));
        let phase_begin = pieces.len();
        let left = padded
            .iter()
            .zip(real)
            .map(|(&all, &real)| Left { all, real, sent: 0 })
            .collect();
        drop(padded);
        Self {
            n,
            left,
            alive,
            padding_runs: vec![0; width],
            matching: Matching::empty(n, n),
            run_start: vec![0; n],
            run_left: vec![
                Left {
                    all: 0,
                    real: 0,
                    sent: 0
                };
                n
            ],
            run_piece: vec![NONE; n],
            phase_begin,
            finish: MinTree::new(n),
            pieces,
            last_piece: vec![NONE; n],
            last_end: vec![(NONE, 0); n],
            free_rights: vec![0; width],
            free_lefts: Vec::with_capacity(n),
            unresolved: Vec::with_capacity(n),
            seen: vec![0; width],
            via: vec![NONE; n],
            queue: Vec::with_capacity(n),
        }
    }

    /// Matches each sender to its seed receiver where that pair is live and the receiver not
    /// taken yet (runs start in [`State::run`]).
    fn seed(&mut self, seeds: &[usize]) {
        for (i, &j) in seeds.iter().enumerate().take(self.n) {
            if j < self.n && self.matching.right[j] == NONE && self.alive.contains(i, j) {
                self.matching.left[i] = j;
                self.matching.right[j] = i;
            }
        }
    }

    fn run(&mut self, line: u64) {
        // Nothing runs yet: every sender matched now (seeded or found) starts a run at 0.
        self.augment_and_restart(0, vec![NONE; self.n]);
        self.close_phase();
        loop {
            let Some((_, now)) = self.finish.min() else {
                return;
            };
            // Every run that ends now, lowest sender first.
            while let Some((i, t)) = self.finish.min()
                && t == now
            {
                self.exhaust(i, now);
            }
            if now >= line {
                return;
            }
            self.rematch(now);
        }
    }

    fn exhaust(&mut self, i: usize, now: u64) {
        let j = self.matching.left[i];
        self.end_run(i, j, now);
        self.matching.left[i] = NONE;
        self.matching.right[j] = NONE;
        self.finish.set(i, None);
        self.free_lefts.push(i);
        bitset::insert(&mut self.free_rights, j);
        bitset::remove(&mut self.padding_runs, j);
    }

    /// Ends the run of `(i, j)` at `now`: real ticks first, then padding.
    fn end_run(&mut self, i: usize, j: usize, now: u64) {
        debug_assert_eq!(self.matching.left[i], j, "only a sender's current run ends");
        let k = i * self.n + j;
        let start = self.run_start[i];
        let elapsed = now - start;
        let left = self.run_left[i];
        let used = left.real.min(elapsed);
        if used > 0 {
            self.emit(i, j, start, used, left.sent);
        }
        let all = left.all - elapsed;
        self.left[k] = Left {
            all,
            real: left.real - used,
            sent: left.sent + used,
        };
        if all == 0 {
            self.alive.remove(i, j);
        }
    }

    /// Records `used > 0` real ticks of sender `i`'s run to `j` that started at `start`,
    /// `offset` real ticks of the pair having been sent before.
    fn emit(&mut self, i: usize, j: usize, start: u64, used: u64, offset: u64) {
        // A sender's pieces end in time order, so a touching piece of the same pair can only
        // be the sender's latest one.
        let end = start + used;
        if self.last_end[i] == (j, start)
            && let Some(last) = self.pieces.get_mut(self.last_piece[i])
        {
            last.end = end;
            self.last_end[i].1 = end;
            return;
        }
        let run = self.run_piece[i];
        let piece = &mut self.pieces[run];
        piece.end = end;
        piece.offset = offset;
        self.last_piece[i] = run;
        self.last_end[i] = (j, end);
    }

    fn start_run(&mut self, i: usize, j: usize, now: u64) {
        self.matching.left[i] = j;
        self.matching.right[j] = i;
        bitset::remove(&mut self.free_rights, j);
        self.run_start[i] = now;
        let left = self.left[i * self.n + j];
        self.run_left[i] = left;
        if left.real == 0 {
            bitset::insert(&mut self.padding_runs, j);
        } else {
            bitset::remove(&mut self.padding_runs, j);
        }
        self.run_piece[i] = self.pieces.len();
        self.pieces.push(Piece {
            src: i,
            dst: j,
            start: now,
            end: now,
            offset: 0,
        });
        self.finish.set(i, Some(now + left.all));
    }

    fn rematch(&mut self, now: u64) {
        let mut lefts = std::mem::take(&mut self.free_lefts);
        let mut unresolved = std::mem::take(&mut self.unresolved);
        for &i in &lefts {
            if !self.direct(i, now) && !self.three_path(i, now) {
                unresolved.push(i);
            }
        }
        lefts.clear();
        self.free_lefts = lefts;
        for &i in &unresolved {
            // A full repair below may already have matched `i`.
            if self.matching.left[i] == NONE && !self.bfs_augment(i, now) {
                // Unreachable for regular matrices (Berge + König); kept total anyway.
                self.rematch_fully(now);
            }
        }
        unresolved.clear();
        self.unresolved = unresolved;
        self.close_phase();
    }

    /// Puts the runs started this phase in sender order (earlier phases started earlier).
    fn close_phase(&mut self) {
        let begin = self.phase_begin;
        self.phase_begin = self.pieces.len();
        let started = &mut self.pieces[begin..];
        if started.is_sorted_by_key(|p| p.src) {
            return; // Usual: a repair starts runs in sender order, or only one.
        }
        // Stable: a sender restarted within the phase keeps its live run last.
        started.sort_by_key(|p| p.src);
        for idx in begin..self.pieces.len() {
            self.run_piece[self.pieces[idx].src] = idx;
        }
    }

    /// Matches free left `i` to a free right by a direct edge.
    fn direct(&mut self, i: usize, now: u64) -> bool {
        match bitset::first_common(self.alive.row(i), &self.free_rights) {
            Some(j) => {
                self.start_run(i, j, now);
                true
            }
            None => false,
        }
    }

    /// Matches free left `i` by a path `i - j1 = i1 - j` with `j` free; swaps out `(i1, j1)`.
    fn three_path(&mut self, i: usize, now: u64) -> bool {
        let single = self.single_free_right();
        let padding = bitset::ones_in_both(self.alive.row(i), &self.padding_runs)
            .take(PADDING_TRIES)
            .find_map(|j1| self.path_via(j1, single));
        // Otherwise the first path found: comparing more (for one whose run's real ticks are
        // all sent) costs more time than it saves pieces.
        let best = padding
            .or_else(|| bitset::ones(self.alive.row(i)).find_map(|j1| self.path_via(j1, single)));
        let Some((j1, i1, j)) = best else {
            return false;
        };
        self.end_run(i1, j1, now);
        self.start_run(i, j1, now);
        self.start_run(i1, j, now);
        true
    }

    /// The repair path `(j1, i1, j)` through receiver `j1`, if its mate `i1` has a live edge
    /// to a free receiver `j` (`single` when there is only one).
    fn path_via(&self, j1: usize, single: Option<usize>) -> Option<(usize, usize, usize)> {
        let i1 = self.matching.right[j1];
        if i1 == NONE {
            return None;
        }
        let j = match single {
            Some(j) => self.alive.contains(i1, j).then_some(j),
            None => bitset::first_common(self.alive.row(i1), &self.free_rights),
        };
        j.map(|j| (j1, i1, j))
    }

    /// The free right when there is exactly one (the usual case: one run ended).
    fn single_free_right(&self) -> Option<usize> {
        let count: u32 = self.free_rights.iter().map(|w| w.count_ones()).sum();
        (count == 1).then(|| bitset::ones(&self.free_rights).next())?
    }

    /// Shortest augmenting path from free left `root` by breadth-first search; flips it.
    ///
    /// Each visited sender's whole row of live partners is scanned word by word.
    fn bfs_augment(&mut self, root: usize, now: u64) -> bool {
        match self.bfs_free_right(root) {
            Some(r) => {
                self.flip(root, r, now);
                true
            }
            None => false,
        }
    }

    /// The first free right reached from `root` along alternating paths (recorded in `via`).
    ///
    /// With one free right `f` (the usual case) each sender is tested for an edge to `f` when
    /// it is queued, one bit, and the search stops at the first that has one. That is the
    /// sender whose row scan would have found `f` (the queue is first in, first out and every
    /// sender queued before it was tested), so the path is the same; what is saved is
    /// scanning the rows of all the senders queued in between, most of a layer on dense
    /// traffic (issue 24).
    fn bfs_free_right(&mut self, root: usize) -> Option<usize> {
        let single = self.single_free_right();
        self.seen.fill(0);
        self.queue.clear();
        if let Some(f) = single
            && self.alive.contains(root, f)
        {
            self.via[f] = root;
            return Some(f);
        }
        self.queue.push(root);
        let mut head = 0;
        while head < self.queue.len() {
            let l = self.queue[head];
            head += 1;
            let row = self.alive.row(l);
            for (w, (&live, seen)) in row.iter().zip(self.seen.iter_mut()).enumerate() {
                let new = live & !*seen;
                *seen |= new;
                for r in bitset::WordBits(new).map(|bit| w * bitset::WORD + bit) {
                    self.via[r] = l;
                    match self.matching.right[r] {
                        NONE => return Some(r),
                        mate => {
                            if let Some(f) = single
                                && self.alive.contains(mate, f)
                            {
                                self.via[f] = mate;
                                return Some(f);
                            }
                            self.queue.push(mate);
                        }
                    }
                }
            }
        }
        None
    }

    /// Flips the augmenting path ending at free right `r`, restarting the runs it changes.
    fn flip(&mut self, root: usize, mut r: usize, now: u64) {
        loop {
            let l = self.via[r];
            let old = self.matching.left[l];
            if old != NONE {
                self.end_run(l, old, now);
            }
            self.start_run(l, r, now);
            if l == root || old == NONE {
                return;
            }
            r = old;
        }
    }

    /// Repairs the matching with Hopcroft–Karp and restarts the runs whose mate changed.
    fn rematch_fully(&mut self, now: u64) {
        let before = self.matching.left.clone();
        self.augment_and_restart(now, before);
    }

    /// Grows the matching to a maximum one and restarts the runs of the senders whose mate
    /// differs from `before`.
    fn augment_and_restart(&mut self, now: u64, before: Vec<usize>) {
        let adj: Vec<Vec<usize>> = (0..self.n)
            .map(|i| bitset::ones(self.alive.row(i)).collect())
            .collect();
        // Every neighbour is a receiver below `n` and `n` is within the crate's GPU limit, far
        // below the matching crate's vertex limit: the graph always builds.
        if let Ok(graph) = BipartiteGraph::from_adjacency(self.n, &adj) {
            self.matching.augment_to_maximum(&graph);
        }
        for (i, &old) in before.iter().enumerate() {
            let new = self.matching.left[i];
            if new != old {
                if old != NONE {
                    self.end_run(i, old, now);
                }
                if new == NONE {
                    self.finish.set(i, None);
                } else {
                    self.start_run(i, new, now);
                }
            }
        }
        debug_assert_eq!(
            self.matching.size(),
            self.n,
            "regular graphs have perfect matchings"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(n: usize, real: &[u64]) {
        let (pieces, line) = decompose(n, real, real).unwrap();
        // Sorted by start, then sender, with no sender starting twice at once.
        assert!(
            pieces
                .windows(2)
                .all(|w| (w[0].start, w[0].src) < (w[1].start, w[1].src))
        );
        let mut sent = vec![0u64; n * n];
        let mut busy: Vec<Vec<(u64, u64)>> = vec![Vec::new(); 2 * n];
        for p in &pieces {
            assert_eq!(p.offset, sent[p.src * n + p.dst]);
            sent[p.src * n + p.dst] += p.end - p.start;
            busy[p.src].push((p.start, p.end));
            busy[n + p.dst].push((p.start, p.end));
            assert!(p.end <= line);
        }
        assert_eq!(sent, real);
        for mut list in busy {
            list.sort();
            assert!(list.windows(2).all(|w| w[0].1 <= w[1].0));
        }
    }

    #[test]
    fn small_matrices_are_delivered_without_conflicts() {
        check(3, &[0, 1, 1, 1, 0, 1, 0, 0, 0]);
        check(3, &[0, 5, 0, 0, 0, 7, 3, 0, 0]);
        check(4, &[0, 3, 1, 4, 1, 0, 5, 9, 2, 6, 0, 5, 3, 5, 8, 0]);
        check(1, &[0]);
        check(2, &[0, 0, 0, 0]);
    }

    /// Issue 13: a line sum of exactly `2^64 - 1` lost the pair finishing at that tick.
    #[test]
    fn a_line_sum_of_u64_max_delivers_every_pair() {
        check(2, &[0, u64::MAX, 0, 0]);
        check(3, &[0, u64::MAX - 5, 5, 0, 0, 0, 0, 0, 0]);
    }
}
