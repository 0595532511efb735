//! LysiAssign (Aristos §2.3, Algorithm 2): experts onto workers with FLOPS-proportional budgets,
//! as the paper wrote it, a refined variant, and an exact MILP oracle.
//!
//! | function | what | quality |
//! |---|---|---|
//! | [`lysi_assign`] | Algorithm 2 as written (reproduces the author's published outputs) | heuristic |
//! | [`lysi_assign_refined`] | the better of Algorithm 2 and largest-first, local search, then branch and bound on small instances | exact up to [`REFINED_EXACT_MAX_EXPERTS`] experts |
//! | [`lysi_assign_milp`] | MILP of Aristos Eq. 5–9 | exact, tiny instances |
//!
//! [`lysi_assign_with`] selects one by [`LysiAlgorithm`].

mod milp;
mod paper;
mod refined;

pub use milp::{LYSI_MILP_MAX_VARIABLES, lysi_assign_milp};
pub use paper::lysi_assign;
pub use refined::{REFINED_EXACT_MAX_EXPERTS, lysi_assign_refined};

pub use comm_cost_model::Worker;
use serde::{Deserialize, Serialize};

use comm_cost_model::InputError;

use crate::error::MatchingError;
use comm_cost_model::{check_entries, check_positive_entries};

/// An expert-to-worker assignment with its quality.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerAssignment {
    /// `gpu_of_expert[x]` is the worker hosting expert `x`.
    pub gpu_of_expert: Vec<usize>,
    /// FLOP placed on each worker.
    pub worker_flop: Vec<f64>,
    /// `max_j worker_flop[j] / F_j`: the slowest worker's compute time in seconds (Eq. 5).
    pub makespan_s: f64,
    /// [`assignment_lower_bound_s`] of the instance: no assignment beats it.
    pub lower_bound_s: f64,
}

impl WorkerAssignment {
    fn new(expert_flop: &[f64], workers: &[Worker], gpu_of_expert: Vec<usize>) -> Self {
        let mut worker_flop = vec![0.0; workers.len()];
        for (x, &j) in gpu_of_expert.iter().enumerate() {
            worker_flop[j] += expert_flop[x];
        }
        Self {
            makespan_s: makespan(&worker_flop, workers),
            worker_flop,
            gpu_of_expert,
            lower_bound_s: lower_bound(expert_flop, workers),
        }
    }
}

/// The LysiAssign variants, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LysiAlgorithm {
    /// [`lysi_assign`]: Aristos Algorithm 2 as written.
    Paper,
    /// [`lysi_assign_refined`]: never worse than `Paper`, exact on small instances.
    #[default]
    Refined,
    /// [`lysi_assign_milp`]: the exact MILP, for at most [`LYSI_MILP_MAX_VARIABLES`] binaries.
    Milp,
}

impl LysiAlgorithm {
    /// The kebab-case name (`paper`, `refined`, `milp`), as serialized.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::LysiAlgorithm;
    /// assert_eq!(LysiAlgorithm::default().name(), "refined");
    /// assert_eq!(LysiAlgorithm::Paper.to_string(), "paper");
    /// ```
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Paper => "paper",
            Self::Refined => "refined",
            Self::Milp => "milp",
        }
    }
}

impl std::fmt::Display for LysiAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Runs the LysiAssign variant `algorithm`.
///
/// # Errors
///
/// Those of the variant run (see [`lysi_assign`]; the MILP adds its size limit).
///
/// # Complexity
///
/// That of the variant run.
///
/// # Examples
///
/// ```
/// use colocation_matching::{LysiAlgorithm, Worker, lysi_assign_with};
///
/// let w = |f, m| Worker { flop_per_s: f, expert_slots: m };
/// let workers = [w(4.0, 8), w(2.0, 8), w(1.0, 8), w(1.0, 8)];
/// let costs = [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0];
/// let paper = lysi_assign_with(&costs, &workers, LysiAlgorithm::Paper)?;
/// let refined = lysi_assign_with(&costs, &workers, LysiAlgorithm::Refined)?;
/// assert_eq!(paper.makespan_s, 5.0);
/// // Optimal: integer loads 19, 9, 4, 4 are the most that fit under any makespan below 5.
/// assert_eq!(refined.makespan_s, 4.75);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn lysi_assign_with(
    expert_flop: &[f64],
    workers: &[Worker],
    algorithm: LysiAlgorithm,
) -> Result<WorkerAssignment, MatchingError> {
    match algorithm {
        LysiAlgorithm::Paper => lysi_assign(expert_flop, workers),
        LysiAlgorithm::Refined => lysi_assign_refined(expert_flop, workers),
        LysiAlgorithm::Milp => lysi_assign_milp(expert_flop, workers),
    }
}

/// Validates the instance: costs finite and non-negative, FLOPS positive, enough slots.
fn check_instance(expert_flop: &[f64], workers: &[Worker]) -> Result<(), MatchingError> {
    if expert_flop.is_empty() {
        return Err(MatchingError::Input(InputError::Empty { what: "experts" }));
    }
    if workers.is_empty() {
        return Err(MatchingError::Input(InputError::Empty { what: "workers" }));
    }
    check_entries("expert_flop", expert_flop)?;
    let flops: Vec<f64> = workers.iter().map(|w| w.flop_per_s).collect();
    check_positive_entries("worker flop_per_s", &flops)?;
    if capacity(workers) < expert_flop.len() {
        return Err(insufficient(expert_flop, workers));
    }
    check_times_finite(expert_flop, &flops)?;
    Ok(())
}

/// Rejects instances where some assignment's time is not a finite `f64`: every expert on the
/// slowest worker, `Σ f_x / min F_j`. A worker of 1e-320 FLOP/s made every time infinite and
/// the MILP solver panic (issue 13); bounding the worst case keeps every makespan finite.
fn check_times_finite(expert_flop: &[f64], flops: &[f64]) -> Result<(), MatchingError> {
    let total: f64 = expert_flop.iter().sum();
    let slowest = flops.iter().copied().fold(f64::INFINITY, f64::min);
    let worst = total / slowest;
    if worst.is_finite() {
        Ok(())
    } else {
        Err(InputError::NonFinite {
            what: "all experts' FLOP on the slowest worker (s)",
            value: worst,
        }
        .into())
    }
}

/// Total expert slots (saturating: more slots than `usize::MAX` hold every expert anyway).
fn capacity(workers: &[Worker]) -> usize {
    workers
        .iter()
        .fold(0usize, |c, w| c.saturating_add(w.expert_slots))
}

fn insufficient(expert_flop: &[f64], workers: &[Worker]) -> MatchingError {
    MatchingError::InsufficientCapacity {
        capacity: capacity(workers),
        experts: expert_flop.len(),
    }
}

/// `max_j load_j / F_j`.
fn makespan(worker_flop: &[f64], workers: &[Worker]) -> f64 {
    worker_flop
        .iter()
        .zip(workers)
        .map(|(&f, w)| f / w.flop_per_s)
        .fold(0.0, f64::max)
}

/// Lower bound on the makespan of any assignment: `max(Σ f_x / Σ F_j, max_x f_x / max_j F_j)`.
///
/// The first term is perfect FLOPS-proportional balance (Aristos' budget), the second the
/// largest expert on the fastest worker.
///
/// # Errors
///
/// As [`lysi_assign`].
///
/// # Complexity
///
/// `O(|X| + |W|)` time.
///
/// # Examples
///
/// ```
/// use colocation_matching::{Worker, assignment_lower_bound_s};
///
/// let w = [Worker { flop_per_s: 2.0, expert_slots: 4 }, Worker { flop_per_s: 1.0, expert_slots: 4 }];
/// assert_eq!(assignment_lower_bound_s(&[3.0, 3.0, 3.0], &w)?, 9.0 / 3.0);
/// assert_eq!(assignment_lower_bound_s(&[8.0, 1.0], &w)?, 8.0 / 2.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn assignment_lower_bound_s(
    expert_flop: &[f64],
    workers: &[Worker],
) -> Result<f64, MatchingError> {
    check_instance(expert_flop, workers)?;
    Ok(lower_bound(expert_flop, workers))
}

fn lower_bound(expert_flop: &[f64], workers: &[Worker]) -> f64 {
    let total_flop: f64 = expert_flop.iter().sum();
    let total_speed: f64 = workers.iter().map(|w| w.flop_per_s).sum();
    let fastest = workers.iter().map(|w| w.flop_per_s).fold(0.0, f64::max);
    let largest = expert_flop.iter().copied().fold(0.0, f64::max);
    (total_flop / total_speed).max(largest / fastest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workers(flops: &[f64], slots: &[usize]) -> Vec<Worker> {
        flops
            .iter()
            .zip(slots)
            .map(|(&f, &m)| Worker {
                flop_per_s: f,
                expert_slots: m,
            })
            .collect()
    }

    const COSTS: [f64; 8] = [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0];

    /// The first published output of the author's implementation of Algorithm 2 (issue text):
    /// F = [4, 2, 1, 1], slots [2, 3, 3, 3].
    #[test]
    fn reproduces_the_published_output_with_tight_slots() {
        let w = workers(&[4.0, 2.0, 1.0, 1.0], &[2, 3, 3, 3]);
        let a = lysi_assign(&COSTS, &w).unwrap();
        assert_eq!(
            crate::gpu_assignment::experts_of_gpu(&a.gpu_of_expert, 4),
            vec![vec![0, 1], vec![2, 3], vec![4, 7], vec![5, 6]]
        );
        assert_eq!(a.makespan_s, 5.5);
        // 5.5 is optimal here: the refined variant and the MILP agree.
        assert_eq!(lysi_assign_refined(&COSTS, &w).unwrap().makespan_s, 5.5);
    }

    /// The second published output: the same instance with 8 slots per worker.
    #[test]
    fn reproduces_the_published_output_with_loose_slots() {
        let w = workers(&[4.0, 2.0, 1.0, 1.0], &[8; 4]);
        let a = lysi_assign(&COSTS, &w).unwrap();
        assert_eq!(
            crate::gpu_assignment::experts_of_gpu(&a.gpu_of_expert, 4),
            vec![vec![0, 1, 5], vec![2, 6, 7], vec![3], vec![4]]
        );
        assert_eq!(a.makespan_s, 5.0);
    }

    #[test]
    fn equal_costs_go_to_the_lowest_index_first() {
        // Budgets 2 and 2: each worker's nearest cost is 2, taken lowest index first.
        let w = workers(&[1.0, 1.0], &[1, 1]);
        let a = lysi_assign(&[2.0, 2.0], &w).unwrap();
        assert_eq!(a.gpu_of_expert, vec![0, 1]);
    }

    #[test]
    fn an_equidistant_tie_takes_the_cost_below_the_budget() {
        // Worker 0's budget is 12 / 2 = 6; 5 and 7 are both 1 away: 5 (below) wins.
        let w = workers(&[1.0, 1.0], &[1, 1]);
        let a = lysi_assign(&[7.0, 5.0], &w).unwrap();
        assert_eq!(a.gpu_of_expert, vec![1, 0]);
    }

    #[test]
    fn slots_exhausted_by_the_last_worker_start_another_pass() {
        // Pass 1: worker 0 (budget ceil(8.5 / 2) = 5) takes 4 and 1, worker 1 (budget 4, one
        // slot) takes 3; the last expert goes round again to worker 0.
        let w = workers(&[1.0, 1.0], &[3, 1]);
        let a = lysi_assign(&[4.0, 3.0, 1.0, 0.5], &w).unwrap();
        assert_eq!(a.gpu_of_expert, vec![0, 1, 0, 0]);
    }

    #[test]
    fn zero_cost_experts_are_placed() {
        let w = workers(&[1.0, 3.0], &[2, 2]);
        for algorithm in [LysiAlgorithm::Paper, LysiAlgorithm::Refined] {
            let a = lysi_assign_with(&[0.0; 4], &w, algorithm).unwrap();
            assert_eq!(a.makespan_s, 0.0);
            assert!(a.gpu_of_expert.iter().all(|&j| j < 2));
        }
    }
}
