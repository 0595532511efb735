//! Naive expert-parallel groupings from prior work, evaluated on the same objective.

use crate::lysigroup::resolve_feasible;
use crate::objective::evaluate_resolved;
use crate::{AristosObjective, Cluster, Partition, TopologyError};

/// One group per node (Narayanan et al.'s single-node communication groups; Aristos §3).
///
/// Nodes come from [`Cluster::node_of_worker`]. A node too small for the experts
/// keeps `T = inf`: the baseline is reported as it is, not repaired.
///
/// # Errors
///
/// As [`AristosObjective::evaluate`].
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use topology_partition::{one_group_per_node, AristosObjective, Cluster, TrainingConstants};
/// let cluster = Cluster::perlmutter(2, 32)?;
/// let c = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 64, moe_every: 2, micro_batch: 4 };
/// let objective = AristosObjective::uniform(c, 64, 5e9, 2.0, 16e6, 1e6)?;
/// let p = one_group_per_node(&cluster, &objective)?;
/// assert_eq!(p.groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
pub fn one_group_per_node(
    cluster: &Cluster,
    objective: &AristosObjective,
) -> Result<Partition, TopologyError> {
    objective.evaluate(cluster, Partition::canonical(cluster.nodes()))
}

/// One group of the whole world (Fedus et al., Rajbhandari et al.: EP over all workers).
///
/// # Errors
///
/// As [`AristosObjective::evaluate`].
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use topology_partition::{whole_world, AristosObjective, Cluster, TrainingConstants};
/// let cluster = Cluster::perlmutter(2, 32)?;
/// let c = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 64, moe_every: 2, micro_batch: 4 };
/// let objective = AristosObjective::uniform(c, 64, 5e9, 2.0, 16e6, 1e6)?;
/// assert_eq!(whole_world(&cluster, &objective)?.groups.len(), 1);
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
pub fn whole_world(
    cluster: &Cluster,
    objective: &AristosObjective,
) -> Result<Partition, TopologyError> {
    objective.evaluate(cluster, vec![(0..cluster.len()).collect()])
}

/// The smallest groups that fit the experts (`min |CG|` of Aristos Fig. 3).
///
/// Workers are taken in id order (builders number GPUs node by node, so this follows the
/// topology); each group is the shortest run of consecutive workers whose slots hold all
/// experts. A remainder too small for the experts joins the last group.
///
/// # Errors
///
/// [`TopologyError::NoFeasibleGroup`] if the cluster cannot hold the experts; otherwise as
/// [`AristosObjective::evaluate`].
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use topology_partition::{smallest_fitting_groups, AristosObjective, Cluster, TrainingConstants};
/// let cluster = Cluster::perlmutter(2, 32)?; // 8 GPUs, 32 slots each
/// let c = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 64, moe_every: 2, micro_batch: 4 };
/// let objective = AristosObjective::uniform(c, 64, 5e9, 2.0, 16e6, 1e6)?;
/// let p = smallest_fitting_groups(&cluster, &objective)?;
/// assert_eq!(p.groups, vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
pub fn smallest_fitting_groups(
    cluster: &Cluster,
    objective: &AristosObjective,
) -> Result<Partition, TopologyError> {
    let r = resolve_feasible(cluster, objective)?;
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current = Vec::new();
    let mut slots = 0u64;
    for (id, w) in cluster.workers().iter().enumerate() {
        current.push(id);
        slots = slots.saturating_add(w.expert_slots as u64);
        if slots >= r.experts {
            groups.push(std::mem::take(&mut current));
            slots = 0;
        }
    }
    if !current.is_empty() {
        match groups.last_mut() {
            Some(last) => last.extend(current),
            None => groups.push(current),
        }
    }
    evaluate_resolved(&r, cluster, groups)
}
