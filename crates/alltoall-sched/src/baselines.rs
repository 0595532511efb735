//! The orders real systems use, evaluated in the contention simulator (Aurora §8.1).
//!
//! Each baseline is an order per sender ([`sjf_order`], [`random_order`], [`shift_order`]) and
//! its simulated timetable ([`sjf`], [`random`], [`shift`]). [`crate::schedule`] runs them by
//! name through [`crate::Algorithm`] (`Sjf`, `Random`, `Shift`), next to the optimal
//! schedulers.

use comm_cost_model::seeded_rng;
use rand::seq::SliceRandom;

use crate::{Bandwidth, Flow, ScheduleError, Timetable, TrafficMatrix, simulate};

/// Each sender's flows, shortest first (Aurora §8's SJF baseline).
///
/// # Complexity
///
/// `O(n^2 log n)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// use alltoall_sched::baselines::sjf_order;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 5, 2], vec![0, 0, 0], vec![0, 0, 0]])?;
/// let dsts: Vec<usize> = sjf_order(&d)[0].iter().map(|f| f.dst).collect();
/// assert_eq!(dsts, vec![2, 1]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[must_use]
pub fn sjf_order(matrix: &TrafficMatrix) -> Vec<Vec<Flow>> {
    (0..matrix.n())
        .map(|i| {
            let mut row = row_flows(matrix, i);
            row.sort_by(|a, b| a.bytes.total_cmp(&b.bytes).then(a.dst.cmp(&b.dst)));
            row
        })
        .collect()
}

/// Each sender's flows in a seeded random order (Aurora §8's RCS baseline).
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// use alltoall_sched::baselines::random_order;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 5, 2], vec![1, 0, 0], vec![0, 0, 0]])?;
/// assert_eq!(random_order(&d, 3), random_order(&d, 3));
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[must_use]
pub fn random_order(matrix: &TrafficMatrix, seed: u64) -> Vec<Vec<Flow>> {
    let mut rng = seeded_rng(seed, 0);
    (0..matrix.n())
        .map(|i| {
            let mut row = row_flows(matrix, i);
            row.shuffle(&mut rng);
            row
        })
        .collect()
}

/// Pairwise shift: at step `k = 1..n-1` GPU `i` sends to `(i + k) mod n` (the pairwise
/// exchange of NCCL's all-to-all and FasterMoE). Steps are not synchronized: each sender moves
/// on as soon as its previous flow ends.
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// use alltoall_sched::baselines::shift_order;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![1, 1, 0]])?;
/// let dsts: Vec<usize> = shift_order(&d)[2].iter().map(|f| f.dst).collect();
/// assert_eq!(dsts, vec![0, 1]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[must_use]
pub fn shift_order(matrix: &TrafficMatrix) -> Vec<Vec<Flow>> {
    let n = matrix.n();
    (0..n)
        .map(|i| {
            (1..n)
                .map(|k| (i + k) % n)
                .filter(|&j| matrix.at(i, j) > 0.0)
                .map(|j| Flow::new(j, matrix.at(i, j)))
                .collect()
        })
        .collect()
}

fn row_flows(matrix: &TrafficMatrix, i: usize) -> Vec<Flow> {
    (0..matrix.n())
        .filter(|&j| matrix.at(i, j) > 0.0)
        .map(|j| Flow::new(j, matrix.at(i, j)))
        .collect()
}

/// The SJF baseline's simulated timetable: [`sjf_order`] run through [`simulate`].
///
/// # Errors
///
/// The bandwidth errors of [`Bandwidth::check`].
///
/// # Complexity
///
/// As [`simulate`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{Bandwidth, TrafficMatrix};
/// use alltoall_sched::baselines::sjf;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// // GPU 1 sends 1->2 then 1->3, GPU 2 sends 2->1 then 2->3 (ties by index): Fig. 4(b).
/// assert_eq!(sjf(&d, &Bandwidth::uniform(1.0)?)?.makespan_s(), 3.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn sjf(matrix: &TrafficMatrix, bandwidth: &Bandwidth) -> Result<Timetable, ScheduleError> {
    simulate(&sjf_order(matrix), bandwidth)
}

/// The random-order baseline's simulated timetable (seeded).
///
/// # Errors
///
/// As [`sjf`].
///
/// # Complexity
///
/// As [`simulate`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{Bandwidth, TrafficMatrix};
/// use alltoall_sched::baselines::random;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let t = random(&d, &Bandwidth::uniform(1.0)?, 1)?;
/// assert!(t.makespan_s() >= 2.0 && t.makespan_s() <= 3.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn random(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
    seed: u64,
) -> Result<Timetable, ScheduleError> {
    simulate(&random_order(matrix, seed), bandwidth)
}

/// The pairwise-shift baseline's simulated timetable.
///
/// # Errors
///
/// As [`sjf`].
///
/// # Complexity
///
/// As [`simulate`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{Bandwidth, TrafficMatrix};
/// use alltoall_sched::baselines::shift;
/// // Equal traffic: the shift pattern is a perfect schedule (n - 1 = 2 rounds).
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![1, 1, 0]])?;
/// assert_eq!(shift(&d, &Bandwidth::uniform(1.0)?)?.makespan_s(), 2.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn shift(matrix: &TrafficMatrix, bandwidth: &Bandwidth) -> Result<Timetable, ScheduleError> {
    simulate(&shift_order(matrix), bandwidth)
}
