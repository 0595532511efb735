//! Latency-aware schedules: trading pieces (each paying a start-up cost) against makespan.

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use comm_cost_model::check_non_negative;

use crate::decompose::decompose;
use crate::non_preemptive::non_preemptive;
use crate::optimal::pieces_to_timetable;
use crate::ticks::Ticks;
use crate::{Bandwidth, ScheduleError, Timetable, TrafficMatrix};

/// One schedule of the pieces-versus-makespan trade-off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParetoPoint {
    /// Quantum as a fraction of the bound (0 for the exact decomposition); `None` for the
    /// non-preemptive schedule.
    pub quantum_fraction: Option<f64>,
    /// Number of messages (pieces).
    pub pieces: usize,
    /// Makespan in seconds when every piece pays `alpha` before its bytes flow.
    pub makespan_s: f64,
    /// The timetable with `alpha` included in every transfer.
    pub timetable: Timetable,
}

/// Re-times a timetable when every message pays a start-up cost `alpha_s` (alpha-beta model).
///
/// Each port keeps its order; a transfer starts as soon as both its ports finished their
/// previous transfer and lasts `alpha_s + bytes / min(B_src, B_dst)`. With `alpha_s = 0` this
/// compacts idle time away, so the result is never slower than the input.
///
/// # Errors
///
/// [`ScheduleError::Input`] for a negative or non-finite `alpha_s` or transfer size;
/// [`ScheduleError::Input`] (`TooLarge`) for a timetable of more than [`crate::MAX_GPUS`] GPUs;
/// [`ScheduleError::UnknownGpu`] for a transfer naming a GPU `>= n`;
/// [`ScheduleError::Input`] (`Overflow`) if a re-timed transfer would end beyond the `f64` range;
/// bandwidth errors.
///
/// # Complexity
///
/// `O(n + P log P)` time for `P` transfers.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{optimal, with_latency, Bandwidth, TrafficMatrix};
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let t = with_latency(&optimal(&d, &b)?, &b, 0.5)?;
/// assert_eq!(t.makespan_s(), 3.0); // two rounds of (0.5 + 1)
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn with_latency(
    timetable: &Timetable,
    bandwidth: &Bandwidth,
    alpha_s: f64,
) -> Result<Timetable, ScheduleError> {
    check_alpha(alpha_s)?;
    // The fields are public: check `n` before allocating two ports per GPU.
    crate::error::check_gpus("GPUs of a timetable", timetable.n)?;
    bandwidth.check(timetable.n)?;
    let n = timetable.n;
    let mut order: Vec<usize> = (0..timetable.transfers.len()).collect();
    order.sort_by(|&a, &b| {
        timetable.transfers[a]
            .start_s
            .total_cmp(&timetable.transfers[b].start_s)
    });
    let mut free = vec![0.0f64; 2 * n];
    let mut transfers = timetable.transfers.clone();
    for k in order {
        let t = &mut transfers[k];
        if t.src >= n || t.dst >= n {
            return Err(ScheduleError::UnknownGpu {
                src: t.src,
                dst: t.dst,
                n,
            });
        }
        check_non_negative("transfer size (bytes)", t.bytes)?;
        t.start_s = free[t.src].max(free[n + t.dst]);
        t.end_s = t.start_s + alpha_s + t.bytes / bandwidth.rate_at(t.src, t.dst);
        // Starts are earlier ends, so a finite end keeps every time finite.
        if !t.end_s.is_finite() {
            return Err(ScheduleError::Input(InputError::Overflow {
                what: "a transfer's end time with latency (s)",
            }));
        }
        free[t.src] = t.end_s;
        free[n + t.dst] = t.end_s;
    }
    let mut out = Timetable { n, transfers };
    out.sort();
    Ok(out)
}

/// The Pareto list of schedules trading pieces against makespan under start-up cost `alpha_s`.
///
/// Aurora ignores the per-message cost; real collectives pay it for every message, so the
/// optimal decomposition's extra pieces are not free. The knob is a *quantum* `Q`: every pair's
/// transfer time is rounded up to a multiple of `Q` before the decomposition, so every phase
/// lasts a multiple of `Q` and each port sees at most `L/Q + n` phases, while the bound grows by
/// at most `n Q` (`L` the bound). `Q = 0` is [`crate::optimal()`]; large `Q` approaches one piece
/// per pair, and [`crate::non_preemptive()`] is the fewest-pieces end. Each candidate is re-timed
/// with [`with_latency`]; the list keeps the candidates that no other beats on both pieces and
/// makespan, sorted by pieces.
///
/// # Errors
///
/// As [`with_latency`] and [`crate::optimal()`].
///
/// # Complexity
///
/// About ten runs of [`crate::optimal()`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{latency_pareto, workload::zipf_traffic, Bandwidth};
/// let d = zipf_traffic(8, 1.0, 4096, 4096, 1)?;
/// let b = Bandwidth::uniform(12.5e9)?;
/// let front = latency_pareto(&d, &b, 20e-6)?;
/// assert!(front.windows(2).all(|w| w[0].pieces < w[1].pieces && w[0].makespan_s > w[1].makespan_s));
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn latency_pareto(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
    alpha_s: f64,
) -> Result<Vec<ParetoPoint>, ScheduleError> {
    check_alpha(alpha_s)?;
    let ticks = Ticks::new(matrix, bandwidth)?;
    let mut points = Vec::new();
    let mut push = |fraction: Option<f64>, t: Timetable| -> Result<(), ScheduleError> {
        let timetable = with_latency(&t, bandwidth, alpha_s)?;
        points.push(ParetoPoint {
            quantum_fraction: fraction,
            pieces: timetable.pieces(),
            makespan_s: timetable.makespan_s(),
            timetable,
        });
        Ok(())
    };
    push(None, non_preemptive(matrix, bandwidth)?)?;
    // `None` is the exact decomposition (quantum one tick); `Some(k)` uses quantum `L / k`.
    let divisors = [
        None,
        Some(1u64 << 12),
        Some(1 << 10),
        Some(1 << 8),
        Some(1 << 6),
        Some(1 << 4),
        Some(1 << 2),
        Some(1),
    ];
    for divisor in divisors {
        let quantum = divisor.map_or(1, |k| (ticks.line_ticks / k).max(1));
        let dur: Vec<u64> = ticks
            .q
            .iter()
            .map(|&v| v.div_ceil(quantum).saturating_mul(quantum))
            .collect();
        let (pieces, _) = decompose(ticks.n, &ticks.q, &dur)?;
        let fraction = divisor.map_or(0.0, |k| 1.0 / k as f64);
        push(Some(fraction), pieces_to_timetable(&ticks, pieces))?;
    }
    Ok(pareto_front(points))
}

/// The latency-aware schedule: the point of [`latency_pareto`] with the smallest makespan.
///
/// # Errors
///
/// As [`latency_pareto`].
///
/// # Complexity
///
/// As [`latency_pareto`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{latency_aware, optimal, with_latency, workload::zipf_traffic, Bandwidth};
/// let d = zipf_traffic(8, 1.0, 4096, 4096, 1)?;
/// let b = Bandwidth::uniform(12.5e9)?;
/// let best = latency_aware(&d, &b, 20e-6)?;
/// let exact = with_latency(&optimal(&d, &b)?, &b, 20e-6)?;
/// assert!(best.makespan_s <= exact.makespan_s());
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn latency_aware(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
    alpha_s: f64,
) -> Result<ParetoPoint, ScheduleError> {
    let front = latency_pareto(matrix, bandwidth, alpha_s)?;
    // The front is sorted by pieces with makespan decreasing: the last point is the fastest.
    front.into_iter().last().ok_or(ScheduleError::EMPTY)
}

fn pareto_front(mut points: Vec<ParetoPoint>) -> Vec<ParetoPoint> {
    points.sort_by(|a, b| {
        a.pieces
            .cmp(&b.pieces)
            .then(a.makespan_s.total_cmp(&b.makespan_s))
    });
    let mut front: Vec<ParetoPoint> = Vec::new();
    for p in points {
        // Sorted by pieces: keep a point only if it is faster than every point with fewer.
        if front
            .last()
            .is_none_or(|last| p.makespan_s < last.makespan_s)
        {
            front.push(p);
        }
    }
    front
}

fn check_alpha(alpha_s: f64) -> Result<(), ScheduleError> {
    check_non_negative("alpha (s)", alpha_s)?;
    Ok(())
}
