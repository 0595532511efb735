//! The optimal (preemptive) schedule: makespan equal to the lower bound on every input.

use crate::decompose::{Piece, decompose};
use crate::non_preemptive::tight_non_preemptive;
use crate::ticks::Ticks;
use crate::{Bandwidth, ScheduleError, Timetable, TrafficMatrix, Transfer};

/// A contention-free timetable whose makespan equals [`crate::lower_bound_s`].
///
/// Implements Aurora Theorem 4.2 (one bandwidth) and Theorem 5.2 (per-GPU bandwidths, with the
/// `min(B_i, B_j)` normalization of Appendix B) constructively: the matrix of transfer *times*
/// is padded to a regular matrix (the paper's artificial traffic `X`, placed on the diagonal
/// first so it costs no transfers) and decomposed into perfect matchings that run back to back
/// (Birkhoff–von Neumann; Gonzalez and Sahni's preemptive open shop). The paper only shows such
/// an order exists; its Algorithm 1 is [`crate::aurora_greedy`], which is not always optimal.
///
/// Among the bound-meeting schedules it returns the one with the fewest transfers it can find:
/// the greedy one-piece-per-pair schedule of [`crate::non_preemptive`] is tried first and
/// returned when it ends exactly on the bound (in integer ticks), since one piece per non-zero
/// pair is the minimum any schedule can have. Otherwise the decomposition runs and a pair's
/// bytes may be split into several pieces; its matching is repaired incrementally rather than
/// recomputed per phase, so most pairs are still sent in one piece (see `docs/performance.md`
/// for the piece counts on Zipf traffic).
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
/// The greedy first try costs what [`crate::non_preemptive`] costs. Then
/// `O(n^2)` phases at most (each exhausts an entry of the padded matrix). A phase with a short
/// repair costs `O(n)` bit tests at most (usually a few) plus `O(log n)` for the finish-time
/// tree; a breadth-first repair costs `O(n^2 / 64)` word operations, and the fallback
/// Hopcroft–Karp (unreachable on regular matrices) `O(n^2.5)`. Memory is `O(n^2)` plus the
/// output.
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
    let timetable = match tight_non_preemptive(&ticks) {
        Some(timetable) => timetable,
        None => {
            let (pieces, _) = decompose(ticks.n, &ticks.q, &ticks.q)?;
            pieces_to_timetable(&ticks, &pieces)
        }
    }
    .finite()?;
    debug_assert_eq!(timetable.validate(matrix, bandwidth), Ok(()));
    Ok(timetable)
}

/// Turns tick pieces (sorted by start tick, then sender) into a timetable in seconds and bytes.
pub(crate) fn pieces_to_timetable(ticks: &Ticks, pieces: &[Piece]) -> Timetable {
    let transfers = pieces
        .iter()
        .map(|p| Transfer {
            src: p.src,
            dst: p.dst,
            bytes: ticks.bytes_between(p.src, p.dst, p.offset, p.offset + (p.end - p.start)),
            start_s: ticks.time_s(p.start),
            end_s: ticks.time_s(p.end),
        })
        .collect();
    // Pieces come sorted by (start, src, dst) and `time_s` is monotone: already in order.
    Timetable {
        n: ticks.n,
        transfers,
    }
}
