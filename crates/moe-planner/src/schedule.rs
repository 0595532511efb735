//! Contention-free all-to-all schedules from a serde spec (Aurora §4.2, §5.2).
//!
//! A [`ScheduleSpec`] names a traffic matrix (bytes), the GPUs' bandwidth in Gbps (one number
//! for all, or one per GPU; 100 Gbps by default, the paper's setting) and an algorithm;
//! [`plan_schedule`] returns the [`SchedulePlan`]: lower bound, makespan, number of pieces and
//! every transfer. Simulated baselines (`sjf`, `random`, `shift`) report simulated starts and
//! ends.
//!
//! # Examples
//!
//! ```
//! use moe_planner::alltoall_sched::Algorithm;
//! use moe_planner::schedule::{plan_schedule, GbpsSpec, ScheduleSpec};
//!
//! // Aurora Fig. 4 with 1 MB per transfer at 8 Gbps (1e9 bytes/s): 1 ms per transfer.
//! let spec = ScheduleSpec {
//!     traffic: vec![vec![0.0, 1e6, 1e6], vec![1e6, 0.0, 1e6], vec![0.0, 0.0, 0.0]],
//!     bandwidth_gbps: GbpsSpec::Uniform(8.0),
//!     algorithm: Algorithm::Optimal,
//!     seed: 0,
//! };
//! let plan = plan_schedule(&spec)?;
//! assert_eq!(plan.lower_bound_s, 2e-3);
//! assert_eq!(plan.makespan_s, 2e-3);
//! assert_eq!(plan.transfers.len(), plan.pieces);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use alltoall_sched::{Algorithm, Bandwidth, ScheduleError, TrafficMatrix, Transfer, schedule};
use comm_cost_model::units;
use serde::{Deserialize, Serialize};

use crate::PlanError;

/// Port bandwidth in Gbps: one number for every GPU, or one per GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GbpsSpec {
    /// Every GPU has this bandwidth (Gbps).
    Uniform(f64),
    /// Bandwidth of each GPU (Gbps).
    PerGpu(Vec<f64>),
}

impl Default for GbpsSpec {
    /// 100 Gbps, Aurora's setting.
    fn default() -> Self {
        Self::Uniform(100.0)
    }
}

impl GbpsSpec {
    /// The bandwidth model in bytes per second.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidBandwidth`] for a value that is not positive and finite, or so
    /// large that it overflows in bytes per second; the error shows the value in Gbps.
    pub fn to_bandwidth(&self) -> Result<Bandwidth, ScheduleError> {
        // Checked in Gbps, so an error shows the value the user wrote.
        let bytes_per_s = |gpu, g| {
            units::checked_gbps("bandwidth (Gbps)", g)
                .map_err(|source| ScheduleError::InvalidBandwidth { gpu, source })
        };
        match self {
            Self::Uniform(g) => Bandwidth::uniform(bytes_per_s(0, *g)?),
            Self::PerGpu(v) => Bandwidth::per_gpu(
                v.iter()
                    .enumerate()
                    .map(|(gpu, &g)| bytes_per_s(gpu, g))
                    .collect::<Result<_, _>>()?,
            ),
        }
    }
}

fn default_algorithm() -> Algorithm {
    Algorithm::Optimal
}

/// What to schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// `traffic[i][j]`: bytes GPU `i` sends to GPU `j` (diagonal ignored).
    pub traffic: Vec<Vec<f64>>,
    /// Bandwidth in Gbps, uniform (`100`) or per GPU (`[100, 200, ...]`); default 100.
    #[serde(default)]
    pub bandwidth_gbps: GbpsSpec,
    /// `optimal` (default), `aurora-greedy`, `non-preemptive`, `sjf`, `random` or `shift`.
    #[serde(default = "default_algorithm")]
    pub algorithm: Algorithm,
    /// Seed of the randomized algorithms (`aurora-greedy`, `random`).
    #[serde(default)]
    pub seed: u64,
}

/// A schedule and the numbers to judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulePlan {
    /// The algorithm that made it.
    pub algorithm: Algorithm,
    /// Busy time of the busiest port (Aurora Thm 4.2 / 5.2 with `min(B_i, B_j)`), seconds.
    pub lower_bound_s: f64,
    /// Completion time of the schedule (simulated for baselines), seconds.
    pub makespan_s: f64,
    /// `makespan_s / lower_bound_s` (1 for an empty matrix).
    pub ratio_to_bound: f64,
    /// Number of transfers (a pair split into pieces counts each piece).
    pub pieces: usize,
    /// Pairs with traffic, the fewest transfers any schedule can have: `optimal` reaches it
    /// whenever its one-piece-per-pair greedy meets the bound.
    pub nonzero_pairs: usize,
    /// Every transfer: `src`, `dst`, `bytes`, `start_s`, `end_s`, sorted by start.
    pub transfers: Vec<Transfer>,
}

/// Validates a spec and runs its algorithm ([`alltoall_sched::schedule`]).
///
/// # Errors
///
/// [`PlanError::Schedule`] for a bad matrix (empty, not square, NaN, infinite or negative
/// entries), a bad bandwidth (wrong length, zero, negative, non-finite) or integer overflow.
///
/// # Complexity
///
/// That of the algorithm run (see [`Algorithm`]).
///
/// # Examples
///
/// ```
/// use moe_planner::alltoall_sched::{Algorithm, ScheduleError};
/// use moe_planner::schedule::{plan_schedule, GbpsSpec, ScheduleSpec};
/// use moe_planner::PlanError;
/// let spec = ScheduleSpec {
///     traffic: vec![vec![0.0, -1.0], vec![0.0, 0.0]],
///     bandwidth_gbps: GbpsSpec::default(),
///     algorithm: Algorithm::Sjf,
///     seed: 0,
/// };
/// assert!(matches!(
///     plan_schedule(&spec),
///     Err(PlanError::Schedule(ScheduleError::InvalidTraffic { src: 0, dst: 1, .. }))
/// ));
/// ```
pub fn plan_schedule(spec: &ScheduleSpec) -> Result<SchedulePlan, PlanError> {
    let matrix = TrafficMatrix::from_rows(&spec.traffic)?;
    let bandwidth = spec.bandwidth_gbps.to_bandwidth()?;
    let plan = schedule(&matrix, &bandwidth, spec.algorithm, spec.seed)?;
    Ok(SchedulePlan {
        algorithm: plan.algorithm,
        lower_bound_s: plan.lower_bound_s,
        makespan_s: plan.makespan_s,
        ratio_to_bound: plan.ratio_to_bound(),
        pieces: plan.pieces,
        nonzero_pairs: plan.nonzero_pairs,
        transfers: plan.timetable.transfers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::InputError;

    #[test]
    fn defaults_and_errors() {
        let spec = ScheduleSpec {
            traffic: vec![vec![0.0, 1.0], vec![1.0, 0.0]],
            bandwidth_gbps: GbpsSpec::default(),
            algorithm: default_algorithm(),
            seed: 0,
        };
        assert_eq!(spec.bandwidth_gbps, GbpsSpec::Uniform(100.0));
        assert_eq!(spec.algorithm, Algorithm::Optimal);
        // 1 byte at 12.5e9 bytes/s.
        assert_eq!(plan_schedule(&spec).unwrap().lower_bound_s, 1.0 / 12.5e9);
        let bad = ScheduleSpec {
            bandwidth_gbps: GbpsSpec::PerGpu(vec![100.0]),
            ..spec.clone()
        };
        assert!(matches!(
            plan_schedule(&bad),
            Err(PlanError::Schedule(ScheduleError::Input(
                InputError::SizeMismatch {
                    expected: 2,
                    actual: 1,
                    ..
                }
            )))
        ));
        let sjf = ScheduleSpec {
            bandwidth_gbps: GbpsSpec::PerGpu(vec![8.0, 16.0]),
            algorithm: Algorithm::Sjf,
            ..spec.clone()
        };
        assert_eq!(plan_schedule(&sjf).unwrap().pieces, 2);
    }
}
