//! Replaying a plan's send order on a different matrix (Aurora §8, Q4: imprecise inputs).

use serde::{Deserialize, Serialize};

use crate::{Bandwidth, Flow, ScheduleError, Timetable, TrafficMatrix, lower_bound_s, simulate};
use comm_cost_model::check_same_len;

/// What a plan's order costs on traffic it was not made for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The simulated execution.
    pub timetable: Timetable,
    /// Its makespan in seconds.
    pub makespan_s: f64,
    /// The lower bound of the actual matrix, in seconds.
    pub lower_bound_s: f64,
    /// `makespan_s / lower_bound_s` (1 when both are 0).
    pub slowdown: f64,
}

/// Runs the send order of `plan` (made for some matrix) on `actual` and reports the slowdown.
///
/// Aurora plans from historical traffic statistics (§2.4); this measures what that costs when
/// the real matrix differs. Each GPU keeps the plan's order of pieces; a piece carrying a
/// fraction `f` of its pair's planned bytes carries `f` of the pair's actual bytes. Pairs the
/// plan did not have are appended to the sender's list in destination order. The lists are
/// simulated without timing ([`simulate`]), exactly as a system that only fixes the order
/// would run them.
///
/// # Errors
///
/// [`ScheduleError::Input`] (`SizeMismatch`) if `plan.n != actual.n()`, the errors of [`simulate`] and
/// [`crate::lower_bound_s`], and [`ScheduleError::Input`] (`NonFinite`) if the slowdown exceeds
/// the `f64` range.
///
/// # Complexity
///
/// As [`simulate`] on the plan's pieces plus `O(n^2)`.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{optimal, replay, validate_simulated, Bandwidth, TrafficMatrix};
/// let planned = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let plan = optimal(&planned, &b)?;
/// let actual = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 2], vec![0, 0, 0]])?;
/// let r = replay(&plan, &actual, &b)?;
/// assert!(r.slowdown >= 1.0);
/// validate_simulated(&r.timetable, &actual, &b).unwrap();
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn replay(
    plan: &Timetable,
    actual: &TrafficMatrix,
    bandwidth: &Bandwidth,
) -> Result<Replay, ScheduleError> {
    let n = actual.n();
    check_same_len("GPUs of the plan vs the matrix", plan.n, n)?;
    let mut planned = vec![0.0; n * n];
    for t in plan.transfers.iter().filter(|t| t.src < n && t.dst < n) {
        planned[t.src * n + t.dst] += t.bytes;
    }
    let mut orders: Vec<Vec<Flow>> = plan
        .send_orders()?
        .into_iter()
        .map(|list| {
            list.into_iter()
                .filter(|t| t.dst < n && planned[t.src * n + t.dst] > 0.0)
                .map(|t| {
                    let share = t.bytes / planned[t.src * n + t.dst];
                    Flow::new(t.dst, actual.at(t.src, t.dst) * share)
                })
                .collect()
        })
        .collect();
    for (i, list) in orders.iter_mut().enumerate() {
        let unplanned = (0..n).filter(|&j| planned[i * n + j] <= 0.0 && actual.at(i, j) > 0.0);
        list.extend(unplanned.map(|j| Flow::new(j, actual.at(i, j))));
    }
    let timetable = simulate(&orders, bandwidth)?;
    let makespan_s = timetable.makespan_s();
    let lower_bound_s = lower_bound_s(actual, bandwidth)?;
    let slowdown = if lower_bound_s > 0.0 {
        // A subnormal bound can make the ratio overflow.
        comm_cost_model::check_finite_result("replay slowdown", makespan_s / lower_bound_s)?
    } else {
        1.0
    };
    Ok(Replay {
        timetable,
        makespan_s,
        lower_bound_s,
        slowdown,
    })
}
