//! The optimal planner under group-to-node constraints: every replica of an expert group stays
//! inside one node (DeepSeek-V3's group-limited routing then sends each token to few nodes).

use super::bound::lower_bound;
use super::model::{LayerLoads, PlacementCluster};
use super::optimal::{Solved, solve};
use crate::error::{MatchingError, check_divides};

/// Above this many groups the group-to-node assignment is not improved (each pass tries every
/// pair of groups).
const IMPROVE_MAX_GROUPS: usize = 32;

/// Places `groups` contiguous expert groups on nodes, then each node's experts on its GPUs.
///
/// Groups go to nodes heaviest first, each to the node where it ends lightest relative to the
/// node's total speed among nodes with room (a node needs at least as many experts as its
/// largest slot count, and at most as many as its slots); then single group moves and pair
/// swaps between nodes run while they lower the largest node bound (up to 32 groups). Each node is solved as its
/// own instance. The plan's lower bound is the unconstrained one (valid for every group
/// assignment), so its gap includes what the constraint costs.
pub(crate) fn solve_node_aware(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    groups: usize,
) -> Result<(Vec<usize>, f64, f64), MatchingError> {
    let w = loads.as_slice();
    if groups == 0 {
        return Err(MatchingError::Empty { what: "groups" });
    }
    check_divides("experts by groups", w.len(), groups)?;
    let nodes = Nodes::of(cluster);
    let size = w.len() / groups;
    let group_load: Vec<f64> = w.chunks(size).map(|c| c.iter().sum()).collect();
    let mut node_of_group = nodes.assign(&group_load, size)?;
    let subs = nodes.sub_clusters(cluster)?;
    improve_assignment(&mut node_of_group, &nodes, &subs, w, size);
    let mut map = vec![0; cluster.total_slots()];
    let mut value = 0.0f64;
    for (n, sub) in subs.iter().enumerate() {
        let experts: Vec<usize> = (0..w.len())
            .filter(|&e| node_of_group[e / size] == n)
            .collect();
        let sub_loads = LayerLoads::new(experts.iter().map(|&e| w[e]).collect())?;
        let solved: Solved = solve(&sub_loads, sub, None);
        value = value.max(solved.value);
        for (g_local, &g) in nodes.gpus[n].iter().enumerate() {
            for (s_local, s) in sub.slot_range(g_local).zip(cluster.slot_range(g)) {
                map[s] = experts[solved.map[s_local]];
            }
        }
    }
    Ok((map, value, lower_bound(loads, cluster)))
}

/// The nodes of a cluster: their GPUs, slots, speed and the fewest experts they can take.
struct Nodes {
    gpus: Vec<Vec<usize>>,
    slots: Vec<usize>,
    speed: Vec<f64>,
    min_experts: Vec<usize>,
}

impl Nodes {
    fn of(cluster: &PlacementCluster) -> Self {
        let mut ids: Vec<usize> = cluster.node_of_gpu().to_vec();
        ids.sort_unstable();
        ids.dedup();
        let gpus: Vec<Vec<usize>> = ids
            .iter()
            .map(|&id| {
                (0..cluster.gpus())
                    .filter(|&g| cluster.node_of_gpu()[g] == id)
                    .collect()
            })
            .collect();
        let sum_of = |f: &dyn Fn(usize) -> f64| -> Vec<f64> {
            gpus.iter()
                .map(|gs| gs.iter().map(|&g| f(g)).sum())
                .collect()
        };
        Self {
            slots: gpus
                .iter()
                .map(|gs| gs.iter().map(|&g| cluster.slots_of_gpu()[g]).sum())
                .collect(),
            speed: sum_of(&|g| cluster.speed_of_gpu()[g]),
            min_experts: gpus
                .iter()
                .map(|gs| {
                    gs.iter()
                        .map(|&g| cluster.slots_of_gpu()[g])
                        .max()
                        .unwrap_or(0)
                })
                .collect(),
            gpus,
        }
    }

    /// Heaviest group first to the relatively lightest node with room, keeping enough groups
    /// for the nodes that still need experts.
    fn assign(&self, group_load: &[f64], size: usize) -> Result<Vec<usize>, MatchingError> {
        let n = self.gpus.len();
        let mut order: Vec<usize> = (0..group_load.len()).collect();
        order.sort_by(|&a, &b| group_load[b].total_cmp(&group_load[a]).then(a.cmp(&b)));
        let mut experts = vec![0usize; n];
        let mut load = vec![0.0; n];
        let mut node_of_group = vec![0; group_load.len()];
        let need = |experts: &[usize], node: usize| {
            self.min_experts[node]
                .saturating_sub(experts[node])
                .div_ceil(size)
        };
        for (placed, &g) in order.iter().enumerate() {
            let left_after = order.len() - placed - 1;
            let candidates = (0..n).filter(|&node| {
                if experts[node] + size > self.slots[node] {
                    return false;
                }
                let mut after = experts.clone();
                after[node] += size;
                (0..n).map(|m| need(&after, m)).sum::<usize>() <= left_after
            });
            let node = candidates
                .min_by(|&a, &b| {
                    ((load[a] + group_load[g]) / self.speed[a])
                        .total_cmp(&((load[b] + group_load[g]) / self.speed[b]))
                })
                .ok_or(MatchingError::InsufficientCapacity {
                    capacity: self.slots.iter().sum(),
                    experts: group_load.len() * size,
                })?;
            node_of_group[g] = node;
            experts[node] += size;
            load[node] += group_load[g];
        }
        Ok(node_of_group)
    }

    /// Each node as a cluster of its own (one node, the GPUs' slots and speeds).
    fn sub_clusters(
        &self,
        cluster: &PlacementCluster,
    ) -> Result<Vec<PlacementCluster>, MatchingError> {
        self.gpus
            .iter()
            .map(|gs| {
                PlacementCluster::new(
                    gs.iter().map(|&g| cluster.slots_of_gpu()[g]).collect(),
                    gs.iter().map(|&g| cluster.speed_of_gpu()[g]).collect(),
                    vec![0; gs.len()],
                )
            })
            .collect()
    }
}

/// Moves and swaps groups between nodes while the largest per-node lower bound drops.
fn improve_assignment(
    node_of_group: &mut [usize],
    nodes: &Nodes,
    subs: &[PlacementCluster],
    w: &[f64],
    size: usize,
) {
    let node_bound = |assign: &[usize], n: usize| -> Option<f64> {
        let loads: Vec<f64> = (0..w.len())
            .filter(|&e| assign[e / size] == n)
            .map(|e| w[e])
            .collect();
        if loads.len() < nodes.min_experts[n] || loads.len() > nodes.slots[n] {
            return None;
        }
        LayerLoads::new(loads)
            .ok()
            .map(|l| lower_bound(&l, &subs[n]))
    };
    let worst = |assign: &[usize]| -> Option<f64> {
        (0..subs.len()).try_fold(0.0f64, |m, n| node_bound(assign, n).map(|b| m.max(b)))
    };
    let groups = node_of_group.len();
    if groups > IMPROVE_MAX_GROUPS {
        return;
    }
    let Some(mut current) = worst(node_of_group) else {
        return;
    };
    // Each accepted change lowers the worst bound; the pass count caps the time.
    for _ in 0..4 * groups {
        let mut best: Option<(f64, Vec<usize>)> = None;
        let mut try_assign = |candidate: Vec<usize>| {
            let Some(v) = worst(&candidate) else { return };
            if v < current * (1.0 - 1e-12) && best.as_ref().is_none_or(|b| v < b.0) {
                best = Some((v, candidate));
            }
        };
        for a in 0..groups {
            for n in 0..subs.len() {
                if n != node_of_group[a] {
                    let mut c = node_of_group.to_vec();
                    c[a] = n;
                    try_assign(c);
                }
            }
            for b in a + 1..groups {
                if node_of_group[a] != node_of_group[b] {
                    let mut c = node_of_group.to_vec();
                    c.swap(a, b);
                    try_assign(c);
                }
            }
        }
        match best {
            Some((v, c)) => {
                current = v;
                node_of_group.copy_from_slice(&c);
            }
            None => break,
        }
    }
}
