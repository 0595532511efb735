//! The exact LysiAssign oracle: a MILP of Aristos Eq. 5–9 solved by microlp.

use good_lp::{
    Expression, ProblemVariables, Solution, SolverModel, Variable, constraint, microlp, variable,
};

use super::{Worker, WorkerAssignment, check_instance};
use crate::MatchingError;
use comm_cost_model::check_at_most;

/// Largest `experts × workers` product [`lysi_assign_milp`] accepts.
pub const LYSI_MILP_MAX_VARIABLES: usize = 64;

/// The optimal assignment (minimum makespan under slot limits), from a MILP (Aristos Eq. 5–9
/// with the memory constraint Eq. 6 read as `Σ_x y_xj ≤ m_j`, the min–max objective made
/// linear by `z ≥ Σ_x f_x y_xj / F_j`). An oracle to measure [`lysi_assign`](super::lysi_assign)'s gap.
///
/// # Errors
///
/// As [`lysi_assign`](super::lysi_assign), plus [`MatchingError::Input`] (`TooLarge`) above [`LYSI_MILP_MAX_VARIABLES`] binaries
/// and [`MatchingError::Solver`] if microlp fails. Extreme magnitudes never reach the solver:
/// non-finite times are rejected first, pairs slower than Algorithm 2's makespan are left out
/// and the rest scaled to `[0, 1]` by it.
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
        nx.saturating_mul(nw),
    )?;
    let time = |x: usize, w: &Worker| expert_flop[x] / w.flop_per_s;
    // Numerics: an optimal assignment is no slower than Algorithm 2's, so (expert, worker)
    // pairs above its makespan `U` never help and get no variable, and the rest are scaled by
    // `U` into [0, 1] (finite by `check_instance`). Scaling by the largest time instead lost
    // every time below 1e-9 of it in the solver's tolerance: a 1e-300 FLOP/s worker made the
    // "optimum" 0.3% above the true one.
    let upper = super::lysi_assign(expert_flop, workers)?.makespan_s;
    // Dividing (not multiplying by `1 / upper`, which overflows for a subnormal `upper`).
    let norm = if upper > 0.0 { upper } else { 1.0 };
    let mut vars = ProblemVariables::new();
    let y: Vec<Option<Variable>> = (0..nx * nw)
        .map(|k| (time(k / nw, &workers[k % nw]) <= upper).then(|| vars.add(variable().binary())))
        .collect();
    let z = vars.add(variable().min(0.0));
    let mut model = vars.minimise(z).using(microlp);
    for x in 0..nx {
        let placed: Expression = (0..nw).filter_map(|j| y[x * nw + j]).sum();
        model = model.with(constraint!(placed == 1));
    }
    for (j, w) in workers.iter().enumerate() {
        let count: Expression = (0..nx).filter_map(|x| y[x * nw + j]).sum();
        model = model.with(constraint!(count <= w.expert_slots.min(nx) as f64));
        let mut load = Expression::default();
        for x in 0..nx {
            if let Some(v) = y[x * nw + j] {
                load += time(x, w) / norm * v;
            }
        }
        model = model.with(constraint!(z >= load));
    }
    let solution = model
        .solve()
        .map_err(|e| MatchingError::solver("LysiAssign MILP", &e))?;
    let gpu_of_expert = (0..nx)
        .map(|x| {
            (0..nw)
                .find(|&j| y[x * nw + j].is_some_and(|v| solution.value(v) > 0.5))
                .unwrap_or(0)
        })
        .collect();
    Ok(WorkerAssignment::new(expert_flop, workers, gpu_of_expert))
}
