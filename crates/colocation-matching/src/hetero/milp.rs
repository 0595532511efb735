//! Exact colocating + heterogeneous placement as a mixed-integer program (`good_lp` + microlp).

use comm_cost_model::InputError;
use good_lp::{
    Expression, ProblemVariables, Solution, SolverModel, Variable, constraint, microlp, variable,
};

use super::{HeteroPlacement, HyperedgeCost, colocate_decoupled};
use crate::error::MatchingError;
use comm_cost_model::{check_at_most, check_entry};

/// Largest instance [`colocate_milp`] accepts (`n³` binaries).
pub const MILP_MAX_GPUS: usize = 6;

/// The optimal colocating + heterogeneous placement from a MILP (an oracle for small instances).
///
/// Binary `x[a][b][g]` puts A's expert `a` and B's expert `b` on GPU `g`; each expert of each
/// model and each GPU is used exactly once (a 3-D assignment), and `z ≥ Σ_ab cost(a,b,g) x[a][b][g]`
/// for every GPU. Minimizes `z`. Solved by the pure-Rust microlp backend.
///
/// # Errors
///
/// [`MatchingError::Input`] (`Empty`) for no GPU, [`MatchingError::Input`] (`TooLarge`) above [`MILP_MAX_GPUS`],
/// [`MatchingError::Input`] (`InvalidEntry`) for a bad cost, those of [`colocate_decoupled`] (its
/// bottleneck bounds the model), [`MatchingError::Solver`] if microlp fails (`Internal` for
/// badly conditioned costs: relevant costs spanning more than about ten orders of magnitude).
/// Extreme magnitudes
/// never reach the solver: hyperedges slower than the decoupled placement are left out and the
/// rest scaled to `[0, 1]` by its bottleneck.
///
/// # Complexity
///
/// Exponential in the worst case (branch and bound over `n³` binaries); meant for `n ≤ 5`.
///
/// # Examples
///
/// ```
/// use colocation_matching::{CostTensor, colocate_milp};
///
/// let load = [1.0, 3.0];
/// let t = CostTensor::from_fn(2, |a, b, g| (load[a] + load[b]) * (1.0 + g as f64))?;
/// assert_eq!(colocate_milp(&t)?.bottleneck_s, 6.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn colocate_milp(cost: &impl HyperedgeCost) -> Result<HeteroPlacement, MatchingError> {
    let n = cost.size();
    if n == 0 {
        return Err(MatchingError::Input(InputError::Empty {
            what: "hyperedge costs",
        }));
    }
    check_at_most("colocating + heterogeneous MILP (GPUs)", MILP_MAX_GPUS, n)?;
    let index = |a: usize, b: usize, g: usize| (a * n + b) * n + g;
    let mut costs = Vec::with_capacity(n * n * n);
    for k in 0..n * n * n {
        let (a, b, g) = (k / (n * n), k / n % n, k % n);
        costs.push(check_entry("hyperedge cost", k, cost.cost_s(a, b, g))?);
    }
    // Numerics: an optimal placement is no slower than the decoupled one, so hyperedges above
    // its bottleneck `U` never help and get no variable, and the rest are scaled by `U` into
    // [0, 1]. Scaling by the largest cost instead lost every cost below 1e-9 of it in the
    // solver's tolerance (wrong optima for costs spanning 10 orders of magnitude, "infeasible"
    // near f64::MAX).
    let upper = colocate_decoupled(cost)?.bottleneck_s;
    let norm = if upper > 0.0 { upper } else { 1.0 };
    let mut vars = ProblemVariables::new();
    let x: Vec<Option<Variable>> = costs
        .iter()
        .map(|&c| (c <= upper).then(|| vars.add(variable().binary())))
        .collect();
    let z = vars.add(variable().min(0.0));
    let mut model = vars.minimise(z).using(microlp);
    let sum = |f: &dyn Fn(usize, usize) -> usize| -> Expression {
        (0..n)
            .flat_map(|p| (0..n).map(move |q| (p, q)))
            .filter_map(|(p, q)| x[f(p, q)])
            .sum()
    };
    for k in 0..n {
        model = model.with(constraint!(sum(&|b, g| index(k, b, g)) == 1));
        model = model.with(constraint!(sum(&|a, g| index(a, k, g)) == 1));
        model = model.with(constraint!(sum(&|a, b| index(a, b, k)) == 1));
        let mut load = Expression::default();
        for a in 0..n {
            for b in 0..n {
                if let Some(v) = x[index(a, b, k)] {
                    load += costs[index(a, b, k)] / norm * v;
                }
            }
        }
        model = model.with(constraint!(z >= load));
    }
    let solution = model
        .solve()
        .map_err(|e| MatchingError::solver("colocating + heterogeneous MILP", &e))?;
    let mut gpu_experts = vec![[0, 0]; n];
    for a in 0..n {
        for b in 0..n {
            for (g, slot) in gpu_experts.iter_mut().enumerate() {
                if x[index(a, b, g)].is_some_and(|v| solution.value(v) > 0.5) {
                    *slot = [a, b];
                }
            }
        }
    }
    HeteroPlacement::scored(cost, gpu_experts)
}
