//! The exact optimum of small instances, by enumerating every set partition.

use crate::lysigroup::resolve_feasible;
use crate::objective::{evaluate_resolved, group_costs};
use crate::{AristosObjective, Cluster, Partition, TopologyError};

/// Largest cluster [`exhaustive_partition`] accepts (Bell(10) = 115 975 partitions).
pub const EXHAUSTIVE_MAX_WORKERS: usize = 10;

/// The partition minimizing the largest `T(g)` over all set partitions of the workers.
///
/// An oracle, not a planner: LysiGroup (Aristos §2.2) is only locally optimal, and this measures
/// how far it is from the optimum on small clusters. Ties keep the partition enumerated first
/// (restricted-growth order), so the result is deterministic.
///
/// # Errors
///
/// [`TopologyError::Input`] (`TooLarge`) if the cluster has more than [`EXHAUSTIVE_MAX_WORKERS`] workers; [`TopologyError::NoFeasibleGroup`] if nothing fits; as
/// [`AristosObjective::evaluate`] otherwise.
///
/// # Complexity
///
/// `O(Bell(n) · n^2)` time.
///
/// # Examples
///
/// ```
/// use topology_partition::{exhaustive_partition, lysi_group, AristosObjective, Cluster, TrainingConstants};
/// let cluster = Cluster::perlmutter(2, 32)?;
/// let c = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 64, moe_every: 2, micro_batch: 4 };
/// let objective = AristosObjective::uniform(c, 64, 5e9, 2.0, 16e6, 1e6)?;
/// let best = exhaustive_partition(&cluster, &objective)?;
/// let lysi = lysi_group(&cluster, &objective)?;
/// assert!(best.max_objective_s() <= lysi.max_objective_s() * (1.0 + 1e-12));
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
pub fn exhaustive_partition(
    cluster: &Cluster,
    objective: &AristosObjective,
) -> Result<Partition, TopologyError> {
    let n = cluster.len();
    comm_cost_model::check_at_most(
        "workers of the exhaustive search",
        EXHAUSTIVE_MAX_WORKERS,
        n,
    )?;
    let r = resolve_feasible(cluster, objective)?;
    // Restricted-growth strings: label[i] <= 1 + max(label[..i]).
    let mut label = vec![0usize; n];
    let mut best: Option<(f64, Vec<Vec<usize>>)> = None;
    loop {
        let mut groups = groups_of(&label);
        let costs = group_costs(&r, cluster, &mut groups)?;
        // Infinite when a group is infeasible, or when a feasible group's exact `T` exceeds
        // `f64`: either way worse than every finite candidate, so never the optimum.
        let score = costs.iter().map(|c| c.objective_s).fold(0.0, f64::max);
        if score.is_finite() && best.as_ref().is_none_or(|(b, _)| score < *b) {
            best = Some((score, groups));
        }
        if !next_labeling(&mut label) {
            break;
        }
    }
    match best {
        Some((_, groups)) => evaluate_resolved(&r, cluster, groups),
        // The whole cluster is feasible (checked above), so its `T` overflowed, and every
        // other feasible grouping's too: the error names the whole cluster's.
        None => evaluate_resolved(&r, cluster, groups_of(&vec![0; n])),
    }
}

fn groups_of(label: &[usize]) -> Vec<Vec<usize>> {
    let k = label.iter().max().map_or(0, |m| m + 1);
    let mut groups = vec![Vec::new(); k];
    for (w, &g) in label.iter().enumerate() {
        groups[g].push(w);
    }
    groups
}

/// Advances a restricted-growth string; false after the last one.
fn next_labeling(label: &mut [usize]) -> bool {
    for i in (1..label.len()).rev() {
        let max_before = label[..i].iter().copied().max().unwrap_or(0);
        if label[i] <= max_before {
            label[i] += 1;
            label[i + 1..].iter_mut().for_each(|l| *l = 0);
            return true;
        }
    }
    false
}
