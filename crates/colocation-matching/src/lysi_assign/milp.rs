//! The exact LysiAssign oracle: a MILP of Aristos Eq. 5–9 solved by microlp.

use good_lp::{
    Expression, ProblemVariables, Solution, SolverModel, Variable, constraint, microlp, variable,
};

use super::{Worker, WorkerAssignment, check_instance};
use crate::MatchingError;
use crate::error::check_at_most;

/// Largest `experts × workers` product [`lysi_assign_milp`] accepts.
pub const LYSI_MILP_MAX_VARIABLES: usize = 64;

/// The optimal assignment (minimum makespan under slot limits), from a MILP (Aristos Eq. 5–9
/// with the memory constraint Eq. 6 read as `Σ_x y_xj ≤ m_j`, the min–max objective made
/// linear by `z ≥ Σ_x f_x y_xj / F_j`). An oracle to measure [`lysi_assign`](super::lysi_assign)'s gap.
///
/// # Errors
///
/// As [`lysi_assign`](super::lysi_assign), plus [`MatchingError::TooLarge`] above [`LYSI_MILP_MAX_VARIABLES`] binaries
/// and [`MatchingError::Solver`] if microlp fails. Extreme magnitudes never reach the solver:
/// non-finite times are rejected first and the rest are scaled to `[0, 1]`.
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
    let mut vars = ProblemVariables::new();
    let y: Vec<Variable> = (0..nx * nw)
        .map(|_| vars.add(variable().binary()))
        .collect();
    let z = vars.add(variable().min(0.0));
    // Times relative to the largest one (finite by `check_instance`): the solver sees
    // coefficients in [0, 1] whatever the FLOP and FLOP/s magnitudes.
    let time = |x: usize, w: &Worker| expert_flop[x] / w.flop_per_s;
    let largest = (0..nx)
        .flat_map(|x| workers.iter().map(move |w| time(x, w)))
        .fold(0.0, f64::max);
    // Dividing (not multiplying by `1 / largest`, which overflows for a subnormal largest).
    let norm = if largest > 0.0 { largest } else { 1.0 };
    let mut model = vars.minimise(z).using(microlp);
    for x in 0..nx {
        let placed: Expression = (0..nw).map(|j| y[x * nw + j]).sum();
        model = model.with(constraint!(placed == 1));
    }
    for (j, w) in workers.iter().enumerate() {
        let count: Expression = (0..nx).map(|x| y[x * nw + j]).sum();
        model = model.with(constraint!(count <= w.expert_slots.min(nx) as f64));
        let time: Expression = (0..nx)
            .map(|x| (time(x, w) / norm).min(1.0) * y[x * nw + j])
            .sum();
        model = model.with(constraint!(z >= time));
    }
    let solution = model
        .solve()
        .map_err(|e| MatchingError::solver("LysiAssign MILP", &e))?;
    let gpu_of_expert = (0..nx)
        .map(|x| {
            (0..nw)
                .find(|&j| solution.value(y[x * nw + j]) > 0.5)
                .unwrap_or(0)
        })
        .collect();
    Ok(WorkerAssignment::new(expert_flop, workers, gpu_of_expert))
}
