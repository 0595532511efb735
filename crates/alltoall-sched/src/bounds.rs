//! Lower bounds on the all-to-all completion time (Aurora Thm 4.2 and 5.2).

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use crate::{Bandwidth, ScheduleError, TrafficMatrix};

/// The lower bounds on the completion time of one all-to-all, in seconds.
///
/// With one bandwidth they all equal `b_max` of Aurora Theorem 4.2. With per-GPU bandwidths
/// `port_capacity_s <= one_port_s` and `paper_literal_s <= one_port_s` (the two relaxed bounds
/// are not ordered between themselves), and only `one_port_s` is reachable when a port
/// carries one transfer at a time (see `docs/algorithms.md`, `## alltoall-sched`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LowerBounds {
    /// `max` over GPUs of `sum_j d_ij / min(B_i, B_j)` (sending) or `sum_i d_ij / min(B_i, B_j)`
    /// (receiving): the busy time of the busiest port. Tight: [`crate::optimal()`] reaches it.
    pub one_port_s: f64,
    /// `max(sum_j d_ij / B_i, sum_i d_ij / B_j)`: what each port's capacity alone implies; only
    /// reachable if a fast port could serve several slow peers at once (fluid sharing).
    pub port_capacity_s: f64,
    /// Theorem 5.2 as printed, `max(sum_j d_ij / B_i, sum_i d_ij / B_i)` (the sender's bandwidth
    /// in both sums): a valid but weaker bound.
    pub paper_literal_s: f64,
}

/// The tight lower bound: the busy time of the busiest port, in seconds.
///
/// Aurora Theorem 4.2 (`b_max = max(row or column sum) / B`) for one bandwidth; with per-GPU
/// bandwidths each transfer `i -> j` counts `d_ij / min(B_i, B_j)` on both of its ports (the
/// normalization of Aurora Appendix B). For integer matrices with one bandwidth the value is
/// computed from the exact integer line sums, so [`crate::optimal()`]'s makespan equals it
/// bit for bit.
///
/// # Errors
///
/// [`ScheduleError::Input`] (`SizeMismatch`) / [`ScheduleError::InvalidBandwidth`] for a bad bandwidth
/// model, [`ScheduleError::Input`] (`Overflow`) if an integer line sum exceeds `u64` or a port's busy
/// time exceeds the `f64` range.
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{lower_bound_s, Bandwidth, TrafficMatrix};
/// // Fig. 4 of Aurora: GPUs 1 and 2 each send one unit to the two others; GPU 3 receives 2.
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// assert_eq!(lower_bound_s(&d, &Bandwidth::uniform(1.0)?)?, 2.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn lower_bound_s(matrix: &TrafficMatrix, bandwidth: &Bandwidth) -> Result<f64, ScheduleError> {
    bandwidth.check(matrix.n())?;
    let bound_s =
        if let (Some(entries), Some(b)) = (matrix.integer_entries(), bandwidth.as_uniform()) {
            max_line_sum_u64(entries, matrix.n())? as f64 / b
        } else {
            let rate = |i: usize, j: usize| bandwidth.rate_at(i, j);
            line_times(matrix, rate, rate).max_s()
        };
    if bound_s.is_finite() {
        Ok(bound_s)
    } else {
        Err(ScheduleError::Input(InputError::Overflow {
            what: "a port's busy time in seconds",
        }))
    }
}

/// All three lower bounds (see [`LowerBounds`]).
///
/// # Errors
///
/// As [`lower_bound_s`].
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{lower_bounds, Bandwidth, TrafficMatrix};
/// // GPU 0 (fast, 2 B/s) sends 2 bytes to each of two slow GPUs (1 B/s).
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 2, 2], vec![0, 0, 0], vec![0, 0, 0]])?;
/// let b = lower_bounds(&d, &Bandwidth::per_gpu(vec![2.0, 1.0, 1.0])?)?;
/// assert_eq!(b.one_port_s, 4.0); // one transfer at a time, each at 1 B/s
/// assert_eq!(b.port_capacity_s, 2.0); // 4 bytes through a 2 B/s port
/// assert_eq!(b.paper_literal_s, 2.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn lower_bounds(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
) -> Result<LowerBounds, ScheduleError> {
    let one_port_s = lower_bound_s(matrix, bandwidth)?;
    let port = |i: usize, _: usize| bandwidth.port_at(i);
    // Each term is at most its `one_port_s` term, so the exact sums are too; `min` removes the
    // rounding that put a relaxed bound one ulp above the tight one (found by fuzzing: integer
    // matrices get the tight bound from exact integer sums, the others from `f64` sums).
    let port_capacity_s = line_times(matrix, port, |_, j| bandwidth.port_at(j))
        .max_s()
        .min(one_port_s);
    let paper_literal_s = line_times(matrix, port, port).max_s().min(one_port_s);
    Ok(LowerBounds {
        one_port_s,
        port_capacity_s,
        paper_literal_s,
    })
}

/// Busy time of every send port and every receive port.
pub(crate) struct LineTimes {
    pub send_s: Vec<f64>,
    pub recv_s: Vec<f64>,
}

impl LineTimes {
    pub(crate) fn max_s(&self) -> f64 {
        self.send_s
            .iter()
            .chain(&self.recv_s)
            .fold(0.0, |a, &b| a.max(b))
    }
}

/// Row sums of `d_ij / send_rate(i, j)` and column sums of `d_ij / recv_rate(i, j)`.
pub(crate) fn line_times(
    matrix: &TrafficMatrix,
    send_rate: impl Fn(usize, usize) -> f64,
    recv_rate: impl Fn(usize, usize) -> f64,
) -> LineTimes {
    let n = matrix.n();
    let mut send_s = vec![0.0; n];
    let mut recv_s = vec![0.0; n];
    for (i, j, bytes) in matrix.pairs() {
        send_s[i] += bytes / send_rate(i, j);
        recv_s[j] += bytes / recv_rate(i, j);
    }
    LineTimes { send_s, recv_s }
}

/// Largest row or column sum of a row-major `n x n` matrix, with overflow checks.
pub(crate) fn max_line_sum_u64(entries: &[u64], n: usize) -> Result<u64, ScheduleError> {
    let (rows, cols) = line_sums_u64(entries, n)?;
    Ok(rows.into_iter().chain(cols).max().unwrap_or(0))
}

/// Row and column sums of a row-major `n x n` matrix, with overflow checks.
pub(crate) fn line_sums_u64(
    entries: &[u64],
    n: usize,
) -> Result<(Vec<u64>, Vec<u64>), ScheduleError> {
    let overflow = ScheduleError::Input(InputError::Overflow {
        what: "a row or column sum",
    });
    let mut rows = vec![0u64; n];
    let mut cols = vec![0u64; n];
    // When every entry is below `2^64 / n` (the bits of all entries OR-ed together say so), no
    // sum of `n` entries can overflow: plain additions, which the compiler vectorizes (a
    // quarter of the instructions of the checked loop below; issue 24, sixth pass).
    let all = entries.iter().fold(0u64, |a, &v| a | v);
    let bits = |x: u64| u64::BITS - x.leading_zeros();
    if bits(all) + bits(n as u64) <= u64::BITS {
        for (row, sum) in entries.chunks_exact(n.max(1)).zip(rows.iter_mut()) {
            *sum = row.iter().sum();
            for (&v, col) in row.iter().zip(cols.iter_mut()) {
                *col += v;
            }
        }
        return Ok((rows, cols));
    }
    // Row by row: no division per entry.
    for (row, sum) in entries.chunks_exact(n.max(1)).zip(rows.iter_mut()) {
        for (&v, col) in row.iter().zip(cols.iter_mut()) {
            *sum = sum.checked_add(v).ok_or_else(|| overflow.clone())?;
            *col = col.checked_add(v).ok_or_else(|| overflow.clone())?;
        }
    }
    Ok((rows, cols))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theorem_4_2_is_the_largest_line_sum() {
        // Rows sum to 6, 4, 3; columns to 3, 5, 5. b_max = 6 / B with B = 2.
        let d =
            TrafficMatrix::from_rows_u64(&[vec![0, 4, 2], vec![1, 0, 3], vec![2, 1, 0]]).unwrap();
        assert_eq!(
            lower_bound_s(&d, &Bandwidth::uniform(2.0).unwrap()).unwrap(),
            3.0
        );
    }

    #[test]
    fn heterogeneous_bounds_are_ordered() {
        let d = TrafficMatrix::from_rows(&[
            vec![0.0, 3.0, 1.0],
            vec![2.0, 0.0, 5.0],
            vec![1.0, 1.0, 0.0],
        ])
        .unwrap();
        let b = lower_bounds(&d, &Bandwidth::per_gpu(vec![1.0, 4.0, 2.0]).unwrap()).unwrap();
        assert!(b.paper_literal_s <= b.one_port_s);
        assert!(b.port_capacity_s <= b.one_port_s);
        // Send port of GPU 1: 2/min(4,1) + 5/min(4,2) = 2 + 2.5 = 4.5.
        // Receive port of GPU 2: 1/min(1,2) + 5/min(4,2) = 1 + 2.5 = 3.5. Others are smaller.
        assert_eq!(b.one_port_s, 4.5);
    }

    #[test]
    fn infinite_busy_time_is_an_error() {
        let d = TrafficMatrix::from_rows(&[vec![0.0, 1e300], vec![0.5, 0.0]]).unwrap();
        assert!(matches!(
            lower_bound_s(&d, &Bandwidth::uniform(1e-10).unwrap()),
            Err(ScheduleError::Input(InputError::Overflow { .. }))
        ));
    }

    #[test]
    fn overflow_is_an_error() {
        let d = TrafficMatrix::from_rows_u64(&[vec![0, u64::MAX, 0], vec![0, 0, 0], vec![0, 1, 0]])
            .unwrap();
        assert!(matches!(
            lower_bound_s(&d, &Bandwidth::uniform(1.0).unwrap()),
            Err(ScheduleError::Input(InputError::Overflow { .. }))
        ));
    }
}
