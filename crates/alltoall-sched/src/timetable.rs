//! Timetables (who sends what to whom, when) and the public validator.

use comm_cost_model::InputError;
use comm_cost_model::Shown;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::error::check_gpus;
use crate::{Bandwidth, ScheduleError, TrafficMatrix};
use comm_cost_model::check_same_len;

/// Relative tolerance of the validator on times, rates and byte sums.
pub const VALIDATION_TOLERANCE: f64 = 1e-9;

/// One contiguous transfer of `bytes` bytes from GPU `src` to GPU `dst` during
/// `[start_s, end_s)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Transfer {
    /// Sending GPU.
    pub src: usize,
    /// Receiving GPU.
    pub dst: usize,
    /// Bytes moved by this piece.
    pub bytes: f64,
    /// Start time in seconds from the start of the all-to-all.
    pub start_s: f64,
    /// End time in seconds.
    pub end_s: f64,
}

/// A schedule of one all-to-all: a list of transfers, sorted by start time then sender.
///
/// Each GPU's send order follows from it ([`Timetable::send_orders`]). A pair's bytes may be
/// split into several pieces (preemption); [`Timetable::pieces`] counts them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Timetable {
    /// Number of GPUs.
    pub n: usize,
    /// The transfers.
    pub transfers: Vec<Transfer>,
}

/// Which side of a GPU a port is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PortSide {
    /// The egress (sending) port.
    Send,
    /// The ingress (receiving) port.
    Receive,
}

/// Why a timetable does not implement a traffic matrix on a bandwidth model.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum TimetableViolation {
    /// The matrix or bandwidth model itself is invalid, or sizes differ (named `Schedule`, not
    /// `Input`: in the workspace `Input` always holds comm-cost-model's `InputError`).
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A transfer has an out-of-range or equal `src`/`dst`, a non-finite or negative field, or
    /// ends before it starts.
    #[error("transfer {index} is malformed: {reason}")]
    Malformed {
        /// Index in `transfers`.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A pair received more or fewer bytes than the matrix says.
    #[error("pair {src}->{dst} delivers {} bytes, the matrix says {}", Shown(*.delivered), Shown(*.expected))]
    BytesMismatch {
        /// Sending GPU.
        src: usize,
        /// Receiving GPU.
        dst: usize,
        /// Bytes in the matrix.
        expected: f64,
        /// Bytes in the timetable.
        delivered: f64,
    },
    /// A port is used by two transfers at once.
    #[error("{side:?} port of GPU {gpu} carries transfers {first} and {second} at once")]
    PortConflict {
        /// The GPU.
        gpu: usize,
        /// Send or receive port.
        side: PortSide,
        /// Index of the earlier transfer.
        first: usize,
        /// Index of the overlapping transfer.
        second: usize,
    },
    /// A transfer moves its bytes faster than `min(B_src, B_dst)`.
    #[error(
        "transfer {index} runs at {} bytes/s, above its link's {}",
        Shown(*.rate_bytes_per_s),
        Shown(*.limit_bytes_per_s)
    )]
    TooFast {
        /// Index in `transfers`.
        index: usize,
        /// Its average rate.
        rate_bytes_per_s: f64,
        /// The link's rate.
        limit_bytes_per_s: f64,
    },
}

impl Timetable {
    /// Completion time in seconds (latest end; 0 for an empty timetable).
    #[must_use]
    pub fn makespan_s(&self) -> f64 {
        self.transfers.iter().fold(0.0, |m, t| m.max(t.end_s))
    }

    /// Number of pieces (transfers).
    #[must_use]
    pub fn pieces(&self) -> usize {
        self.transfers.len()
    }

    /// When each GPU's port is done: the latest end of a transfer it sends or receives, per GPU
    /// (`n` entries, 0 for a GPU that moves nothing; transfers naming a GPU `>= n` are ignored).
    ///
    /// This is the per-GPU all-to-all time `|N_i|` of Aurora Eq. 1.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Input`] (`TooLarge`) if `n` exceeds [`crate::MAX_GPUS`] (the fields are public,
    /// so `n` is checked before `n` entries are allocated).
    ///
    /// # Complexity
    ///
    /// `O(n + P)` time for `P` transfers.
    ///
    /// # Examples
    ///
    /// ```
    /// use alltoall_sched::{Timetable, Transfer};
    /// let t = |src, dst, end_s| Transfer { src, dst, bytes: 1.0, start_s: 0.0, end_s };
    /// let plan = Timetable { n: 3, transfers: vec![t(0, 1, 2.0), t(1, 0, 1.0)] };
    /// assert_eq!(plan.port_finish_times()?, vec![2.0, 2.0, 0.0]);
    /// # Ok::<(), alltoall_sched::ScheduleError>(())
    /// ```
    pub fn port_finish_times(&self) -> Result<Vec<f64>, ScheduleError> {
        check_gpus("GPUs of a timetable", self.n)?;
        let mut finish = vec![0.0_f64; self.n];
        for t in &self.transfers {
            for gpu in [t.src, t.dst] {
                if let Some(f) = finish.get_mut(gpu) {
                    *f = f.max(t.end_s);
                }
            }
        }
        Ok(finish)
    }

    /// Each GPU's transfers in the order it sends them (by start time; `n` lists, transfers
    /// naming a sender `>= n` are left out).
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Input`] (`TooLarge`) if `n` exceeds [`crate::MAX_GPUS`].
    ///
    /// # Complexity
    ///
    /// `O(n + P log P)` time for `P` transfers.
    ///
    /// # Examples
    ///
    /// ```
    /// use alltoall_sched::{Timetable, Transfer};
    /// let t = |src, dst, start_s| Transfer { src, dst, bytes: 1.0, start_s, end_s: start_s + 1.0 };
    /// let plan = Timetable { n: 2, transfers: vec![t(0, 1, 1.0), t(1, 0, 0.0)] };
    /// let orders = plan.send_orders()?;
    /// assert_eq!((orders[0][0].dst, orders[1][0].dst), (1, 0));
    /// # Ok::<(), alltoall_sched::ScheduleError>(())
    /// ```
    pub fn send_orders(&self) -> Result<Vec<Vec<Transfer>>, ScheduleError> {
        check_gpus("GPUs of a timetable", self.n)?;
        let mut orders = vec![Vec::new(); self.n];
        for t in &self.transfers {
            if let Some(list) = orders.get_mut(t.src) {
                list.push(*t);
            }
        }
        for list in &mut orders {
            list.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        }
        Ok(orders)
    }

    /// `self` if every time is finite, else an `Overflow` (a schedule ending beyond the `f64`
    /// range, such as a greedy one ending after twice a bound near `f64::MAX`). Starts are
    /// earlier ends or zero, so checking the ends covers them.
    pub(crate) fn finite(self) -> Result<Self, ScheduleError> {
        if self.transfers.iter().all(|t| t.end_s.is_finite()) {
            Ok(self)
        } else {
            Err(ScheduleError::Input(InputError::Overflow {
                what: "a transfer's end time in seconds",
            }))
        }
    }

    /// Sorts transfers by start time, then sender, then receiver.
    pub(crate) fn sort(&mut self) {
        self.transfers.sort_by(|a, b| {
            a.start_s
                .total_cmp(&b.start_s)
                .then(a.src.cmp(&b.src))
                .then(a.dst.cmp(&b.dst))
        });
    }

    /// Checks this timetable against a matrix and bandwidth model (see [`validate`]).
    ///
    /// # Errors
    ///
    /// The first [`TimetableViolation`] found.
    pub fn validate(
        &self,
        matrix: &TrafficMatrix,
        bandwidth: &Bandwidth,
    ) -> Result<(), TimetableViolation> {
        validate(self, matrix, bandwidth)
    }
}

/// Checks that a timetable delivers a traffic matrix without contention.
///
/// Every off-diagonal pair receives exactly its bytes (relative tolerance
/// [`VALIDATION_TOLERANCE`]; exact sums for integer pieces below 2^53), no send or receive port
/// carries two transfers at once, and no transfer moves bytes faster than `min(B_src, B_dst)`.
/// Times are compared with a tolerance of [`VALIDATION_TOLERANCE`] times the makespan. Any
/// timetable can be checked, not only those this crate builds.
///
/// # Errors
///
/// The first [`TimetableViolation`] found; [`TimetableViolation::Schedule`] if the matrix and
/// bandwidth do not match the timetable's `n`.
///
/// # Complexity
///
/// `O(n^2 + P log P)` time for `P` transfers.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{validate, Bandwidth, Timetable, Transfer, TrafficMatrix, TimetableViolation};
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let t = |src, dst, start_s: f64| Transfer { src, dst, bytes: 1.0, start_s, end_s: start_s + 1.0 };
/// // Aurora Fig. 4(c): GPU 2 sends to GPU 3 first, then to GPU 1 (0-based here).
/// let good = Timetable { n: 3, transfers: vec![t(0, 1, 0.0), t(1, 2, 0.0), t(0, 2, 1.0), t(1, 0, 1.0)] };
/// assert!(validate(&good, &d, &b).is_ok());
/// // Fig. 4(b) without slowing down: both GPUs hit GPU 3 at once.
/// let bad = Timetable { n: 3, transfers: vec![t(0, 1, 0.0), t(1, 0, 0.0), t(0, 2, 1.0), t(1, 2, 1.0)] };
/// assert!(matches!(validate(&bad, &d, &b), Err(TimetableViolation::PortConflict { gpu: 2, .. })));
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn validate(
    timetable: &Timetable,
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
) -> Result<(), TimetableViolation> {
    check_common(timetable, matrix, bandwidth)?;
    let time_tol = time_tolerance(timetable);
    check_ports(timetable, PortSide::Send, time_tol)?;
    check_ports(timetable, PortSide::Receive, time_tol)
}

/// Checks a timetable produced by the contention simulator ([`crate::simulate`]).
///
/// Like [`validate`], except that receive ports may carry several transfers at once: that
/// sharing is what the simulator models (each shares the ingress max-min fairly, so it is
/// slower than its link). Send ports still carry one transfer at a time.
///
/// # Errors
///
/// The first [`TimetableViolation`] found.
///
/// # Complexity
///
/// `O(n^2 + P log P)` time for `P` transfers.
///
/// # Examples
///
/// ```
/// use alltoall_sched::baselines::sjf;
/// use alltoall_sched::{validate, validate_simulated, Bandwidth, TimetableViolation, TrafficMatrix};
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let shared = sjf(&d, &b)?; // GPUs 0 and 1 share GPU 2's ingress during [1, 3)
/// assert!(validate_simulated(&shared, &d, &b).is_ok());
/// assert!(matches!(
///     validate(&shared, &d, &b),
///     Err(TimetableViolation::PortConflict { gpu: 2, .. })
/// ));
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn validate_simulated(
    timetable: &Timetable,
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
) -> Result<(), TimetableViolation> {
    check_common(timetable, matrix, bandwidth)?;
    check_ports(timetable, PortSide::Send, time_tolerance(timetable))
}

fn time_tolerance(timetable: &Timetable) -> f64 {
    VALIDATION_TOLERANCE * timetable.makespan_s().max(f64::MIN_POSITIVE)
}

/// Shapes, fields, byte sums and link rates.
fn check_common(
    timetable: &Timetable,
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
) -> Result<(), TimetableViolation> {
    let n = matrix.n();
    bandwidth.check(n)?;
    check_same_len("GPUs of the timetable vs the matrix", timetable.n, n)
        .map_err(ScheduleError::from)?;
    let time_tol = time_tolerance(timetable);
    let mut delivered = vec![0.0; n * n];
    for (index, t) in timetable.transfers.iter().enumerate() {
        check_transfer(index, t, n)?;
        let limit = bandwidth.rate_at(t.src, t.dst);
        let min_time = t.bytes / limit;
        if t.end_s - t.start_s < min_time * (1.0 - VALIDATION_TOLERANCE) - time_tol {
            return Err(TimetableViolation::TooFast {
                index,
                rate_bytes_per_s: t.bytes / (t.end_s - t.start_s),
                limit_bytes_per_s: limit,
            });
        }
        delivered[t.src * n + t.dst] += t.bytes;
    }
    check_bytes(matrix, &delivered)
}

fn check_transfer(index: usize, t: &Transfer, n: usize) -> Result<(), TimetableViolation> {
    let reason = if t.src >= n || t.dst >= n {
        Some("GPU index out of range")
    } else if t.src == t.dst {
        Some("a GPU sends to itself")
    } else if !(t.bytes.is_finite() && t.start_s.is_finite() && t.end_s.is_finite()) {
        Some("non-finite field")
    } else if t.bytes < 0.0 || t.start_s < 0.0 {
        Some("negative bytes or start")
    } else if t.end_s < t.start_s {
        Some("ends before it starts")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(TimetableViolation::Malformed { index, reason }),
        None => Ok(()),
    }
}

fn check_bytes(matrix: &TrafficMatrix, delivered: &[f64]) -> Result<(), TimetableViolation> {
    let n = matrix.n();
    for (k, &got) in delivered.iter().enumerate() {
        let (src, dst) = (k / n, k % n);
        let expected = matrix.at(src, dst);
        if (got - expected).abs() > VALIDATION_TOLERANCE * expected.max(1.0) {
            return Err(TimetableViolation::BytesMismatch {
                src,
                dst,
                expected,
                delivered: got,
            });
        }
    }
    Ok(())
}

fn check_ports(
    timetable: &Timetable,
    side: PortSide,
    time_tol: f64,
) -> Result<(), TimetableViolation> {
    let port = |t: &Transfer| match side {
        PortSide::Send => t.src,
        PortSide::Receive => t.dst,
    };
    let mut order: Vec<usize> = (0..timetable.transfers.len())
        .filter(|&k| timetable.transfers[k].end_s > timetable.transfers[k].start_s)
        .collect();
    order.sort_by(|&a, &b| {
        let (ta, tb) = (&timetable.transfers[a], &timetable.transfers[b]);
        port(ta)
            .cmp(&port(tb))
            .then(ta.start_s.total_cmp(&tb.start_s))
    });
    for pair in order.windows(2) {
        let (a, b) = (&timetable.transfers[pair[0]], &timetable.transfers[pair[1]]);
        if port(a) == port(b) && b.start_s < a.end_s - time_tol {
            return Err(TimetableViolation::PortConflict {
                gpu: port(a),
                side,
                first: pair[0],
                second: pair[1],
            });
        }
    }
    Ok(())
}
