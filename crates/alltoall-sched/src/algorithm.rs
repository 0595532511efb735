//! One entry point for every algorithm, and the plan it returns.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::baselines::{nccl, random, shift, sjf};
use crate::{
    Bandwidth, ScheduleError, Timetable, TrafficMatrix, aurora_greedy, lower_bound_s,
    non_preemptive, optimal,
};

/// The scheduling algorithms and baselines, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// [`crate::optimal()`]: reaches the lower bound, with one piece per pair whenever the greedy
    /// finds such a schedule on the bound (pieces are split only otherwise).
    Optimal,
    /// [`crate::aurora_greedy()`]: Aurora's Algorithm 1.
    AuroraGreedy,
    /// [`crate::non_preemptive()`]: one piece per pair.
    NonPreemptive,
    /// [`crate::baselines::sjf`]: shortest flow first per sender, simulated.
    Sjf,
    /// [`crate::baselines::random`]: seeded random order per sender, simulated.
    Random,
    /// [`crate::baselines::shift`]: pairwise shift order, simulated.
    Shift,
    /// [`crate::baselines::nccl`]: NCCL's load-oblivious p2p peer order, simulated, with all GPUs
    /// in one node (for NCCL's node-aware order over several nodes call
    /// [`crate::baselines::nccl`] with the node size).
    Nccl,
}

impl Algorithm {
    /// Every algorithm, the optimal one first.
    pub const ALL: [Algorithm; 7] = [
        Self::Optimal,
        Self::AuroraGreedy,
        Self::NonPreemptive,
        Self::Sjf,
        Self::Random,
        Self::Shift,
        Self::Nccl,
    ];

    /// The kebab-case name (`optimal`, `aurora-greedy`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Optimal => "optimal",
            Self::AuroraGreedy => "aurora-greedy",
            Self::NonPreemptive => "non-preemptive",
            Self::Sjf => "sjf",
            Self::Random => "random",
            Self::Shift => "shift",
            Self::Nccl => "nccl",
        }
    }

    /// Whether the timetable comes from the contention simulator (an order, not a timetable).
    #[must_use]
    pub fn is_simulated(self) -> bool {
        matches!(self, Self::Sjf | Self::Random | Self::Shift | Self::Nccl)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The name given to [`Algorithm::from_str`] is not an algorithm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown algorithm `{0}` (expected optimal, aurora-greedy, non-preemptive, sjf, random, shift or nccl)"
)]
pub struct UnknownAlgorithm(pub String);

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// A schedule with the numbers needed to judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The algorithm that made it.
    pub algorithm: Algorithm,
    /// [`crate::lower_bound_s`] of the input, in seconds.
    pub lower_bound_s: f64,
    /// Completion time in seconds (simulated for the baselines).
    pub makespan_s: f64,
    /// Number of transfers.
    pub pieces: usize,
    /// Number of pairs with traffic: the fewest transfers any schedule can have, so
    /// `pieces / nonzero_pairs` says how much a schedule splits.
    #[serde(default)]
    pub nonzero_pairs: usize,
    /// The transfers.
    pub timetable: Timetable,
}

impl Plan {
    /// `makespan_s / lower_bound_s` (1 when both are 0).
    #[must_use]
    pub fn ratio_to_bound(&self) -> f64 {
        if self.lower_bound_s > 0.0 {
            self.makespan_s / self.lower_bound_s
        } else {
            1.0
        }
    }
}

/// Runs `algorithm` on a matrix; `seed` is used by the randomized ones (Algorithm 1's bottleneck
/// order and the random baseline).
///
/// # Errors
///
/// The errors of the algorithm run (bandwidth model, overflow).
///
/// # Complexity
///
/// That of the algorithm run.
///
/// # Examples
///
/// ```
/// use alltoall_sched::{schedule, Algorithm, Bandwidth, TrafficMatrix};
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let b = Bandwidth::uniform(1.0)?;
/// let best = schedule(&d, &b, Algorithm::Optimal, 0)?;
/// let sjf = schedule(&d, &b, Algorithm::Sjf, 0)?;
/// assert_eq!((best.makespan_s, sjf.makespan_s), (2.0, 3.0));
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn schedule(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
    algorithm: Algorithm,
    seed: u64,
) -> Result<Plan, ScheduleError> {
    let lower_bound_s = lower_bound_s(matrix, bandwidth)?;
    let timetable = match algorithm {
        Algorithm::Optimal => optimal(matrix, bandwidth)?,
        Algorithm::AuroraGreedy => aurora_greedy(matrix, bandwidth, seed)?,
        Algorithm::NonPreemptive => non_preemptive(matrix, bandwidth)?,
        Algorithm::Sjf => sjf(matrix, bandwidth)?,
        Algorithm::Random => random(matrix, bandwidth, seed)?,
        Algorithm::Shift => shift(matrix, bandwidth)?,
        Algorithm::Nccl => nccl(matrix, bandwidth, matrix.n())?,
    };
    Ok(Plan {
        algorithm,
        lower_bound_s,
        makespan_s: timetable.makespan_s(),
        pieces: timetable.pieces(),
        nonzero_pairs: matrix.nonzeros(),
        timetable,
    })
}
