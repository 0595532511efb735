//! The optimal (preemptive) schedule: makespan equal to the lower bound on every input.

use crate::decompose::{Piece, decompose_after, decompose_seeded};
use crate::first_try::{Interrupted, Lengths, Prefix, greedy_prefix};
use crate::non_preemptive::Start;
use crate::pivot_fill::pivot_fill;
use crate::ticks::Ticks;
use crate::{Bandwidth, ScheduleError, Timetable, TrafficMatrix, Transfer};

/// A contention-free timetable whose makespan equals [`crate::lower_bound_s`].
///
/// Implements Aurora Theorem 4.2 (one bandwidth) and Theorem 5.2 (per-GPU bandwidths, with the
/// `min(B_i, B_j)` normalization of Appendix B) constructively: the matrix of transfer *times*
/// is padded to a regular matrix (the paper's artificial traffic `X`, placed on the diagonal
/// first so it costs no transfers) and decomposed into perfect matchings that run back to back
/// (Birkhoff–von Neumann; Gonzalez and Sahni's preemptive open shop). The paper only shows such
/// an order exists; its Algorithm 1 is [`crate::aurora_greedy()`], which is not always optimal.
///
/// Among the bound-meeting schedules it returns one with few transfers. From 32 GPUs on it first
/// tries a *pivot fill* (issue 24): the busiest line's pairs back to back, every other pair
/// placed once at one end of its ports' free intervals, no event queue; when every pair fits,
/// the result has one piece per pair and ends on the bound (`docs/algorithms.md`). Otherwise, or
/// below 32 GPUs, a greedy one-piece-per-pair list schedule (the scheme of
/// [`crate::non_preemptive()`], with a priority that reads nothing: a freed port takes the idle
/// partner with the largest line sum) runs against the bound, and is returned when it ends
/// exactly on it (in integer ticks), since one piece per non-zero pair is the minimum any
/// schedule can have. When it falls behind in the
/// first half of the bound it runs once more keeping each tight port's next partner free (so a
/// port without slack never waits for a busy partner). A port whose slack is used up and that
/// finds every partner busy takes one anyway, cutting that partner's running transfer short
/// (its rest is sent later: one more piece; issue 24, where this lets near-uniform traffic end
/// on the bound with about one piece per pair). When it still falls behind, its
/// transfers up to the latest tick from which the rest still fits before the bound are kept
/// (those running then are cut there), and only the rest is decomposed, starting with the cut
/// transfers so they continue as one piece (issue 24: the greedy's work is never thrown away).
/// In the decomposition a pair's bytes may be split into several pieces; its matching is
/// repaired incrementally rather than recomputed per phase, so most pairs are still sent in one
/// piece (see `docs/performance.md` for the piece counts).
///
/// Integer matrices with one bandwidth are scheduled in exact integer arithmetic (one tick per
/// byte) and the makespan equals the bound bit for bit. Otherwise times are rounded up to
/// 2^-48 of the bound; the makespan still equals the bound exactly, and each piece's rate is
/// within about `n * 2^-48` of its link's (well inside [`crate::VALIDATION_TOLERANCE`]). With
/// per-GPU bandwidths a split pair's pieces carry fractional byte counts proportional to time.
///
/// # Errors
///
/// [`ScheduleError::Input`] (`SizeMismatch`) / [`ScheduleError::InvalidBandwidth`] for a bad bandwidth
/// model; [`ScheduleError::Input`] (`Overflow`) if integer line sums exceed `u64` or a time exceeds the
/// `f64` range (for example integer bytes over a bandwidth of 5e-324 B/s);
/// [`ScheduleError::Underflow`] if the bound of a non-integer or per-GPU model is below the
/// smallest normal `f64` for non-zero traffic.
///
/// Debug builds (and so the tests) check every result with [`Timetable::validate`].
///
/// # Complexity
///
/// The pivot fill costs `O(n^2)` (a few word operations per pair, and a bucket sort of the
/// starts that is linear unless many start in one tick range, where it falls back to
/// `O(P log P)`). The greedy costs
/// `O(P log n + E * n / 64)` for `P` pairs and `E <= P` decision times (a
/// freed port finds its partner with `n / 64` word operations at most), plus `O(n)` per port
/// it rescues (at most `n` per pass), plus `O(n^2)` set-up
/// (one pass over the matrix; nothing is copied). The
/// decomposition of the rest takes `O(n^2)` phases at most (each exhausts an entry of the
/// padded matrix). A phase with a short
/// repair costs `O(n)` bit tests at most (usually a few) plus `O(log n)` for the finish-time
/// tree; a breadth-first repair costs `O(n^2 / 64)` word operations, and the fallback
/// Hopcroft–Karp (unreachable on regular matrices) `O(n^2.5)`. Memory is `O(n^2)` words (the
/// tick matrix, none for integer bytes with one bandwidth, whose entries are the ticks; the
/// fill's start tick per pair of the matrix and a 4-byte bucket count per start; from
/// 363 GPUs on the greedy's copy of it by rank; the greedy's 16-byte starts; and when it falls
/// behind the residual and the decomposition's state) plus the output, into which the pieces
/// are converted in place.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{optimal, lower_bound_s, Bandwidth, TrafficMatrix};
/// // Aurora Fig. 4: GPUs 1 and 2 each send 1 unit to the two others; GPU 3 receives 2 units.
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let plan = optimal(&d, &b)?;
/// assert_eq!(plan.makespan_s(), 2.0); // not 3: nobody sends to GPU 3 at the same time
/// assert_eq!(plan.makespan_s(), lower_bound_s(&d, &b)?);
/// plan.validate(&d, &b).unwrap();
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn optimal(matrix: &TrafficMatrix, bandwidth: &Bandwidth) -> Result<Timetable, ScheduleError> {
    let ticks = Ticks::new(matrix, bandwidth)?;
    // Fewest transfers first: a one-piece-per-pair schedule on the bound has the minimum
    // possible piece count (one per non-zero pair) and is what a send loop can run unchanged.
    if let Some(timetable) = pivot_fill(&ticks) {
        let timetable = timetable.finite()?;
        debug_assert_eq!(timetable.validate(matrix, bandwidth), Ok(()));
        return Ok(timetable);
    }
    let timetable = match greedy_prefix(&ticks) {
        Prefix::Whole(timetable) => timetable,
        Prefix::Cut {
            starts,
            now,
            interrupted,
        } => {
            let pieces = match continue_from(&ticks, starts, now, &interrupted)? {
                Some(pieces) => pieces,
                None => decompose_seeded(ticks.n, &ticks.q, &ticks.q, &[])?.0,
            };
            pieces_to_timetable(&ticks, pieces)
        }
    }
    .finite()?;
    debug_assert_eq!(timetable.validate(matrix, bandwidth), Ok(()));
    Ok(timetable)
}

/// Completes the greedy's transfers with a decomposition of what is left after the latest cut
/// tick `c <= now` at which what is left fits between `c` and the bound; `None` when that
/// tick is 0 (nothing of the greedy is kept).
///
/// Cutting at tick `c` keeps the transfers started before `c` (those still running are cut at
/// `c`); the residual matrix holds their remaining ticks and the unstarted pairs. If its largest
/// line sum is at most `L - c`, its decomposition ends by `L` (the theorem of
/// `docs/algorithms.md`, from `c` on) and nothing of the greedy ends later, so the schedule ends
/// exactly on the bound (no schedule ends earlier). The greedy can stop after the tick at which
/// an idle port fell behind, so the cut moves back: to `L - r` for a port with residual `r`
/// that does not fit, until every port fits (each step moves strictly back; the cut at 0 always
/// fits). The running transfers seed the decomposition's first matching, so they continue as
/// one piece.
///
/// A transfer the greedy cut short ([`Interrupted`]) keeps its own ticks and offset; the rest
/// of its pair is in the residual like any unsent ticks.
fn continue_from(
    ticks: &Ticks,
    starts: Vec<Start>,
    now: u64,
    interrupted: &[Interrupted],
) -> Result<Option<Vec<Piece>>, ScheduleError> {
    let n = ticks.n;
    let (rows, cols) = (&ticks.rows, &ticks.cols);
    let line = ticks.line_ticks;
    let mut cut = now;
    let mut done = vec![0u64; 2 * n];
    loop {
        if cut == 0 {
            return Ok(None);
        }
        // Ticks each port has sent or received by `cut`.
        done.fill(0);
        let mut lengths = Lengths::new(ticks, interrupted);
        for s in starts.iter().take_while(|s| s.start < cut) {
            let (src, dst) = (s.src as usize, s.dst as usize);
            let d = lengths.of(s).0.min(cut - s.start);
            done[src] += d;
            done[n + dst] += d;
        }
        let room = line - cut;
        // The earliest cut any port that does not fit needs (its residual must fit in
        // `L - cut`).
        let needed = rows
            .iter()
            .chain(cols)
            .zip(&done)
            .map(|(&total, &d)| total - d)
            .filter(|&r| r > room)
            .map(|r| line - r)
            .min();
        match needed {
            None => break,
            Some(earlier) => cut = earlier,
        }
    }
    let mut residual = ticks.q.to_vec();
    let kept = starts.partition_point(|s| s.start < cut);
    let mut head = Vec::with_capacity(kept);
    // The transfer of each sender running at `cut`: its receiver and the ticks sent before.
    let mut seeds = vec![usize::MAX; n];
    let mut sent = vec![0u64; n];
    let mut running = vec![usize::MAX; n];
    let mut lengths = Lengths::new(ticks, interrupted);
    for s in &starts[..kept] {
        let (src, dst) = (s.src as usize, s.dst as usize);
        let k = src * n + dst;
        let (len, offset) = lengths.of(s);
        let end = s.start + len;
        let stop = end.min(cut);
        residual[k] -= stop - s.start;
        if end > cut {
            seeds[src] = dst;
            sent[src] = offset + (cut - s.start);
            running[src] = head.len();
        }
        head.push(Piece {
            src,
            dst,
            start: s.start,
            end: stop,
            offset,
        });
    }
    // The ticks sent before the cut of each interrupted pair (sorted), to offset its pieces
    // after the cut; a pair running at the cut is offset by `sent` as any other.
    let mut shift: Vec<(usize, u64)> = interrupted
        .iter()
        .map(|c| {
            let k = c.src as usize * n + c.dst as usize;
            (k, ticks.q[k] - residual[k])
        })
        .collect();
    shift.sort_unstable();
    shift.dedup();
    // The greedy's starts are no longer needed: freed before the decomposition allocates (16
    // bytes per pair, 67 MB at 2048 GPUs).
    drop(starts);
    // The decomposition appends its pieces behind the kept ones, in the same allocation.
    let (mut pieces, _) = decompose_after(n, residual, &seeds, head)?;
    // In place: move the new pieces to the cut, drop the placeholders of runs that carried only
    // padding, and extend each transfer running at the cut by its continuation.
    let mut kept_len = kept;
    for k in kept..pieces.len() {
        let mut p = pieces[k];
        if p.end == p.start {
            continue;
        }
        p.start += cut;
        p.end += cut;
        if seeds[p.src] != p.dst {
            if !shift.is_empty()
                && let Ok(at) = shift.binary_search_by_key(&(p.src * n + p.dst), |&(k, _)| k)
            {
                p.offset += shift[at].1;
            }
        } else {
            p.offset += sent[p.src];
            // The continuation that starts at the cut is the same piece.
            if p.start == cut
                && let Some(prev) = pieces.get_mut(running[p.src])
            {
                prev.end = p.end;
                continue;
            }
        }
        pieces[kept_len] = p;
        kept_len += 1;
    }
    pieces.truncate(kept_len);
    Ok(Some(pieces))
}

/// Turns tick pieces (sorted by start tick, then sender) into a timetable in seconds and bytes.
///
/// In place: a piece and a transfer have the same size, so the pieces' allocation is reused
/// (at 2048 GPUs both lists alive at once were the peak of `optimal`'s memory).
pub(crate) fn pieces_to_timetable(ticks: &Ticks, pieces: Vec<Piece>) -> Timetable {
    let mut transfers: Vec<Transfer> = pieces
        .into_iter()
        .map(|p| Transfer {
            src: p.src,
            dst: p.dst,
            bytes: ticks.bytes_between(p.src, p.dst, p.offset, p.offset + (p.end - p.start)),
            start_s: ticks.time_s(p.start),
            end_s: ticks.time_s(p.end),
        })
        .collect();
    // The pieces' allocation was reserved for every run the decomposition might start (most
    // carry real ticks and merge, or only padding): return what the timetable does not use.
    transfers.shrink_to_fit();
    // Pieces come sorted by (start, src, dst) and `time_s` is monotone: already in order.
    Timetable {
        n: ticks.n,
        transfers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower_bound_s;
    use crate::workload::{uniform_traffic, zipf_traffic};

    /// Issue 24: when the greedy falls behind, its transfers before the cut are kept and the
    /// rest is decomposed; the result is valid, on the bound, and keeps the greedy's pairs whole
    /// (also those it cut short to rescue a port without slack, whose rest is decomposed).
    #[test]
    fn an_interrupted_greedy_is_completed_on_the_bound() {
        let b = Bandwidth::uniform(1.0).unwrap();
        let (mut continued, mut with_rescues) = (0, 0);
        for seed in 0..16 {
            for d in [
                uniform_traffic(6, 1000, seed).unwrap(),
                uniform_traffic(12, 10, seed).unwrap(),
                zipf_traffic(6, 0.3, 500, 1, seed).unwrap(),
                // Rescued, then cut (seeds 11, 12, 14 when written).
                uniform_traffic(64, 100, seed).unwrap(),
            ] {
                let ticks = Ticks::new(&d, &b).unwrap();
                let Prefix::Cut {
                    starts,
                    now,
                    interrupted,
                } = greedy_prefix(&ticks)
                else {
                    continue;
                };
                let Some(pieces) = continue_from(&ticks, starts, now, &interrupted).unwrap() else {
                    continue;
                };
                continued += 1;
                with_rescues += usize::from(!interrupted.is_empty());
                let plan = pieces_to_timetable(&ticks, pieces);
                plan.validate(&d, &b).unwrap();
                assert_eq!(plan.makespan_s(), lower_bound_s(&d, &b).unwrap());
                assert_eq!(plan, optimal(&d, &b).unwrap());
            }
        }
        assert!(continued > 0, "no input exercised the continuation");
        assert!(with_rescues > 0, "no continuation had a transfer cut short");
    }

    /// Issue 24: a port without slack that finds every partner busy takes one, cutting its
    /// running transfer short; a greedy that completes that way is valid, on the bound, with
    /// one more piece per interruption (near-uniform traffic, where this happens most).
    #[test]
    fn rescued_greedy_schedules_are_valid_and_on_the_bound() {
        let b = Bandwidth::uniform(1.0).unwrap();
        let mut rescued = 0;
        for seed in 0..10 {
            for d in [
                uniform_traffic(64, 1000, seed).unwrap(),
                uniform_traffic(64, 1 << 24, seed).unwrap(),
            ] {
                let ticks = Ticks::new(&d, &b).unwrap();
                let Prefix::Whole(plan) = greedy_prefix(&ticks) else {
                    continue;
                };
                plan.validate(&d, &b).unwrap();
                assert_eq!(plan.makespan_s(), lower_bound_s(&d, &b).unwrap());
                rescued += usize::from(plan.pieces() > d.nonzeros());
            }
        }
        assert!(rescued > 5, "{rescued} rescued schedules");
    }

    /// Issue 24: on uniform traffic every port is nearly tight and the plain greedy falls
    /// behind at once; keeping the tight port's next partner free lets it end on the bound with
    /// one piece per pair on some inputs (3 of these 8 when written).
    #[test]
    fn keeping_the_tight_ports_partner_free_gives_one_piece_schedules() {
        let b = Bandwidth::uniform(1.0).unwrap();
        let mut whole = 0;
        for seed in 1..=8 {
            let d = uniform_traffic(64, 1 << 24, seed).unwrap();
            let plan = optimal(&d, &b).unwrap();
            assert_eq!(plan.makespan_s(), lower_bound_s(&d, &b).unwrap());
            if plan.pieces() == d.nonzeros() {
                whole += 1;
            }
        }
        assert!(whole >= 2, "{whole} of 8 one-piece schedules");
    }
}
