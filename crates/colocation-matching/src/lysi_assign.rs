//! LysiAssign (Aristos §2.3, Algorithm 2): FLOPS-proportional best-fit expert assignment.

use std::collections::BTreeSet;

use good_lp::{
    Expression, ProblemVariables, Solution, SolverModel, Variable, constraint, microlp, variable,
};
use serde::{Deserialize, Serialize};

use crate::dominance::order_key;
use crate::error::{MatchingError, check_at_most, check_positives, check_weights};
use crate::gpu_assignment::descending;

/// A worker (GPU) that hosts experts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    /// Sustained compute throughput in FLOP/s (Aristos `F_j`).
    pub flop_per_s: f64,
    /// How many experts fit in its memory (Aristos `m_j`, one unit = one expert's parameters).
    pub expert_slots: usize,
}

/// An expert-to-worker assignment with its quality.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerAssignment {
    /// `worker_of_expert[x]` is the worker hosting expert `x`.
    pub worker_of_expert: Vec<usize>,
    /// FLOP placed on each worker.
    pub worker_flop: Vec<f64>,
    /// `max_j worker_flop[j] / F_j`: the slowest worker's compute time in seconds (Eq. 5).
    pub makespan_s: f64,
    /// [`assignment_lower_bound_s`] of the instance: no assignment beats it.
    pub lower_bound_s: f64,
}

impl WorkerAssignment {
    fn new(expert_flop: &[f64], workers: &[Worker], worker_of_expert: Vec<usize>) -> Self {
        let mut worker_flop = vec![0.0; workers.len()];
        for (x, &j) in worker_of_expert.iter().enumerate() {
            worker_flop[j] += expert_flop[x];
        }
        let makespan_s = worker_flop
            .iter()
            .zip(workers)
            .map(|(&f, w)| f / w.flop_per_s)
            .fold(0.0, f64::max);
        Self {
            worker_of_expert,
            worker_flop,
            makespan_s,
            lower_bound_s: lower_bound(expert_flop, workers),
        }
    }
}

/// Validates the instance: costs finite and non-negative, FLOPS positive, enough slots.
fn check_instance(expert_flop: &[f64], workers: &[Worker]) -> Result<(), MatchingError> {
    if expert_flop.is_empty() {
        return Err(MatchingError::Empty { what: "experts" });
    }
    if workers.is_empty() {
        return Err(MatchingError::Empty { what: "workers" });
    }
    check_weights("expert_flop", expert_flop)?;
    let flops: Vec<f64> = workers.iter().map(|w| w.flop_per_s).collect();
    check_positives("worker flop_per_s", &flops)?;
    let capacity = workers
        .iter()
        .fold(0usize, |c, w| c.saturating_add(w.expert_slots));
    if capacity < expert_flop.len() {
        return Err(MatchingError::InsufficientCapacity {
            capacity,
            experts: expert_flop.len(),
        });
    }
    Ok(())
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
/// `O(|X| + |W|)`.
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

/// LysiAssign: Aristos Algorithm 2, with the decisions the paper leaves open made explicit.
///
/// 1. Workers are visited in descending FLOPS order (ties by index).
/// 2. Worker `j`'s budget is its FLOPS share of the total work, `F_j · Σf / ΣF` (the paper's
///    ceiling only matters for integer costs; costs here are real FLOP counts).
/// 3. `BestFit(budget)` takes the most expensive remaining expert whose cost fits the remaining
///    budget (ties: lowest index), from a balanced search tree; one memory unit = one expert slot.
///    The worker is filled until nothing fits or its slots run out.
/// 4. `Wrap()`: a worker filled once cannot fit anything later (its budget only shrinks and no
///    expert is added), so the round robin is one pass. Experts left over (each too large for
///    every remaining budget) are then placed largest first on the worker with a free slot that
///    would finish it earliest, `(load_j + f_x) / F_j` (ties: faster worker), i.e. budgets are
///    relaxed only for what the first pass could not fit.
///
/// Always returns a complete assignment that respects every slot limit.
///
/// # Errors
///
/// [`MatchingError::Empty`] for no expert or no worker, [`MatchingError::InvalidValue`] for a bad
/// cost, [`MatchingError::NotPositive`] for a zero-FLOPS worker,
/// [`MatchingError::InsufficientCapacity`] when the slots cannot hold every expert.
///
/// # Complexity
///
/// `O(|X| log |X| + |W| log |W| + L·|W|)` where `L` is the number of left-over experts (at most
/// a few per worker in practice).
///
/// # Examples
///
/// ```
/// use colocation_matching::{Worker, lysi_assign};
///
/// // A worker twice as fast gets twice the budget: 12 · 2/3 = 8 and 12 · 1/3 = 4.
/// let workers = [Worker { flop_per_s: 2.0, expert_slots: 8 }, Worker { flop_per_s: 1.0, expert_slots: 8 }];
/// let a = lysi_assign(&[5.0, 3.0, 2.0, 2.0], &workers)?;
/// assert_eq!(a.worker_of_expert, vec![0, 0, 1, 1]);
/// assert_eq!(a.makespan_s, 4.0); // both finish at 8/2 = 4/1 = 4: the lower bound
/// assert_eq!(a.lower_bound_s, 4.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn lysi_assign(
    expert_flop: &[f64],
    workers: &[Worker],
) -> Result<WorkerAssignment, MatchingError> {
    check_instance(expert_flop, workers)?;
    // Keys order like the (finite, non-negative) costs.
    let mut remaining: BTreeSet<(u64, usize)> = expert_flop
        .iter()
        .enumerate()
        .map(|(x, &f)| (order_key(f), x))
        .collect();
    let total_flop: f64 = expert_flop.iter().sum();
    let total_speed: f64 = workers.iter().map(|w| w.flop_per_s).sum();
    let speeds: Vec<f64> = workers.iter().map(|w| w.flop_per_s).collect();
    let mut worker_of_expert = vec![usize::MAX; expert_flop.len()];
    let mut slots: Vec<usize> = workers.iter().map(|w| w.expert_slots).collect();
    let mut load = vec![0.0; workers.len()];
    for j in descending(&speeds) {
        let mut budget = workers[j].flop_per_s * total_flop / total_speed;
        while slots[j] > 0 && budget >= 0.0 {
            let Some(&(key, x)) = remaining
                .range(..=(order_key(budget), usize::MAX))
                .next_back()
            else {
                break;
            };
            remaining.remove(&(key, x));
            worker_of_expert[x] = j;
            budget -= expert_flop[x];
            load[j] += expert_flop[x];
            slots[j] -= 1;
        }
    }
    // Left-overs, largest first, each on the free worker that finishes it earliest.
    while let Some((_, x)) = remaining.pop_last() {
        let best = (0..workers.len())
            .filter(|&j| slots[j] > 0)
            .min_by(|&p, &q| {
                let finish = |j: usize| (load[j] + expert_flop[x]) / workers[j].flop_per_s;
                finish(p)
                    .total_cmp(&finish(q))
                    .then(speeds[q].total_cmp(&speeds[p]))
            });
        // Capacity was checked, so a free worker exists; stay total anyway.
        let Some(j) = best else {
            return Err(MatchingError::InsufficientCapacity {
                capacity: workers.iter().map(|w| w.expert_slots).sum(),
                experts: expert_flop.len(),
            });
        };
        worker_of_expert[x] = j;
        load[j] += expert_flop[x];
        slots[j] -= 1;
    }
    Ok(WorkerAssignment::new(
        expert_flop,
        workers,
        worker_of_expert,
    ))
}

/// Largest `experts × workers` product [`lysi_assign_milp`] accepts.
pub const LYSI_MILP_MAX_VARIABLES: usize = 64;

/// The optimal assignment (minimum makespan under slot limits), from a MILP (Aristos Eq. 5–9
/// with the memory constraint Eq. 6 read as `Σ_x y_xj ≤ m_j`, the min–max objective made
/// linear by `z ≥ Σ_x f_x y_xj / F_j`). An oracle to measure [`lysi_assign`]'s gap.
///
/// # Errors
///
/// As [`lysi_assign`], plus [`MatchingError::TooLarge`] above [`LYSI_MILP_MAX_VARIABLES`] binaries
/// and [`MatchingError::Solver`] if microlp fails.
///
/// # Complexity
///
/// Exponential in the worst case; meant for a handful of experts.
///
/// # Examples
///
/// ```
/// use colocation_matching::{Worker, lysi_assign_milp};
///
/// let w = [Worker { flop_per_s: 1.0, expert_slots: 2 }, Worker { flop_per_s: 1.0, expert_slots: 2 }];
/// let a = lysi_assign_milp(&[3.0, 3.0, 2.0, 2.0], &w)?;
/// assert!((a.makespan_s - 5.0).abs() < 1e-9);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn lysi_assign_milp(
    expert_flop: &[f64],
    workers: &[Worker],
) -> Result<WorkerAssignment, MatchingError> {
    check_instance(expert_flop, workers)?;
    let (nx, nw) = (expert_flop.len(), workers.len());
    check_at_most(
        "LysiAssign MILP (experts × workers)",
        LYSI_MILP_MAX_VARIABLES,
        nx * nw,
    )?;
    let mut vars = ProblemVariables::new();
    let y: Vec<Variable> = (0..nx * nw)
        .map(|_| vars.add(variable().binary()))
        .collect();
    let z = vars.add(variable().min(0.0));
    let mut model = vars.minimise(z).using(microlp);
    for x in 0..nx {
        let placed: Expression = (0..nw).map(|j| y[x * nw + j]).sum();
        model = model.with(constraint!(placed == 1));
    }
    for (j, w) in workers.iter().enumerate() {
        let count: Expression = (0..nx).map(|x| y[x * nw + j]).sum();
        model = model.with(constraint!(count <= w.expert_slots.min(nx) as f64));
        let time: Expression = (0..nx)
            .map(|x| (expert_flop[x] / w.flop_per_s) * y[x * nw + j])
            .sum();
        model = model.with(constraint!(z >= time));
    }
    let solution = model
        .solve()
        .map_err(|e| MatchingError::solver("LysiAssign MILP", &e))?;
    let worker_of_expert = (0..nx)
        .map(|x| {
            (0..nw)
                .find(|&j| solution.value(y[x * nw + j]) > 0.5)
                .unwrap_or(0)
        })
        .collect();
    Ok(WorkerAssignment::new(
        expert_flop,
        workers,
        worker_of_expert,
    ))
}
