//! The optimal planner under group-to-node constraints: every replica of an expert group stays
//! inside one node (DeepSeek-V3's group-limited routing then sends each token to few nodes).

use crate::bound::{basic_bound, lower_bound, quick_bound};
use crate::error::PlacementError;
use crate::model::{LayerLoads, PlacementCluster};
use crate::optimal::{Solved, solve_bounded};
use crate::options::{Budget, Termination};
use comm_cost_model::InputError;
use comm_cost_model::check_divides;

/// Above this many groups the greedy group-to-node assignment is not improved (each pass tries every
/// pair of groups).
const IMPROVE_MAX_GROUPS: usize = 32;

/// Largest group count for which the group-to-node lower bound is exact over all assignments
/// (a dynamic program over subsets of groups, `O(N · 3^groups)`); above it the node-aware plan
/// reports the unconstrained bound, which is valid but weaker.
pub const NODE_BOUND_MAX_GROUPS: usize = 12;

/// Relative gap to a node's own bound at which the node's search stops.
pub(crate) const NODE_GAP: f64 = 1e-3;

/// A node-aware plan: the map, its value, a lower bound valid under the constraint, and how the
/// node searches ended.
pub(crate) struct NodeAwareSolved {
    pub(crate) map: Vec<usize>,
    pub(crate) value: f64,
    pub(crate) lower_bound: f64,
    pub(crate) termination: Termination,
}

/// Places `groups` contiguous expert groups on nodes, then each node's experts on its GPUs.
///
/// **Bound.** A plan that keeps every group in one node assigns the groups to nodes; for a
/// fixed assignment no plan beats the largest per-node lower bound ([`lower_bound`] of the
/// node's experts on the node's GPUs), so the minimum of that over every assignment is a lower
/// bound valid under the constraint. Up to [`NODE_BOUND_MAX_GROUPS`] groups it is computed
/// exactly by a dynamic program over subsets of groups (nodes in order, each taking a subset of
/// the groups left with an expert count it can hold); above, the unconstrained bound stands in.
///
/// **Plan.** Candidate assignments: the dynamic program's minimizer (smallest largest node
/// bound, then smallest sum), and a greedy one (heaviest group first to the relatively lightest
/// node with room, then single moves and pair swaps while the largest node bound drops, up to
/// 32 groups). Each node of each candidate is solved as its own instance by [`solve_bounded`] within
/// `budget`; the better plan wins.
pub(crate) fn solve_node_aware(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    groups: usize,
    budget: &Budget,
) -> Result<NodeAwareSolved, PlacementError> {
    let w = loads.as_slice();
    if groups == 0 {
        return Err(PlacementError::Input(InputError::Empty { what: "groups" }));
    }
    check_divides("experts by groups", w.len() as u64, groups as u64)?;
    let nodes = Nodes::of(cluster);
    // Every node has a GPU with a slot, so it needs at least one group: refused before the
    // per-node tables (one entry per subset of groups and node) are built.
    if nodes.gpus.len() > groups {
        // The error the group assignment gives when it runs out of groups for the nodes.
        return Err(PlacementError::InsufficientCapacity {
            capacity: nodes.slots.iter().sum(),
            experts: w.len(),
        });
    }
    let size = w.len() / groups;
    let group_load: Vec<f64> = w.chunks(size).map(|c| c.iter().sum()).collect();
    let subs = nodes.sub_clusters(cluster)?;
    let mut bound = lower_bound(loads, cluster);
    let mut best: Option<NodeAwareSolved> = None;
    let mut exact_assignment_used: Option<Vec<usize>> = None;
    if groups <= NODE_BOUND_MAX_GROUPS {
        let (b, assign) = exact_assignment(&nodes, &subs, w, size, groups)?;
        bound = bound.max(b);
        best = Some(solve_assignment(
            w, cluster, &nodes, &subs, &assign, size, budget,
        )?);
        exact_assignment_used = Some(assign);
    }
    // The greedy assignment (and its improvement passes, which cost a few hundred node bounds)
    // only when the exact assignment's plan is not already within the nodes' stopping gap.
    let good = |b: &NodeAwareSolved| b.value <= bound * (1.0 + NODE_GAP);
    if !best.as_ref().is_some_and(good) {
        let mut greedy = nodes.assign(&group_load, size)?;
        improve_assignment(&mut greedy, &nodes, &subs, w, size);
        if exact_assignment_used.as_ref() != Some(&greedy) {
            let plan = solve_assignment(w, cluster, &nodes, &subs, &greedy, size, budget)?;
            if best.as_ref().is_none_or(|b| plan.value < b.value) {
                best = Some(plan);
            }
        }
    }
    let mut best = best.ok_or(PlacementError::InsufficientCapacity {
        capacity: cluster.total_slots(),
        experts: w.len(),
    })?;
    best.lower_bound = bound.min(best.value);
    if best.value <= bound * (1.0 + crate::bound::AT_BOUND) && !best.termination.is_optimal() {
        best.termination = Termination::BoundReached;
    }
    Ok(best)
}

/// Solves every node of one group-to-node assignment.
fn solve_assignment(
    w: &[f64],
    cluster: &PlacementCluster,
    nodes: &Nodes,
    subs: &[PlacementCluster],
    node_of_group: &[usize],
    size: usize,
    budget: &Budget,
) -> Result<NodeAwareSolved, PlacementError> {
    let mut map = vec![0; cluster.total_slots()];
    let mut value = 0.0f64;
    let mut termination = Termination::ProvedOptimal;
    // Nodes with the largest bound first: once the busiest node is planned, the others only
    // need to stay below it.
    let mut work: Vec<(usize, LayerLoads, Vec<usize>, f64)> = Vec::with_capacity(subs.len());
    for (n, sub) in subs.iter().enumerate() {
        let experts: Vec<usize> = (0..w.len())
            .filter(|&e| node_of_group[e / size] == n)
            .collect();
        let sub_loads = LayerLoads::new(experts.iter().map(|&e| w[e]).collect())?;
        sub.check_experts(experts.len())?;
        // The cheap bound: `solve_bounded` raises it where the node's plan stays above it.
        let b = quick_bound(&sub_loads, sub);
        work.push((n, sub_loads, experts, b));
    }
    work.sort_by(|a, b| b.3.total_cmp(&a.3).then(a.0.cmp(&b.0)));
    for (n, sub_loads, experts, b) in work {
        let sub = &subs[n];
        // Within 0.1% of the node's bound is good enough (the bound of the whole plan is the
        // largest node bound of the best assignment, so the plan's certified gap stays small);
        // searching on costs tens of milliseconds per layer for nothing a user would see.
        let good_enough = value.max(b * (1.0 + NODE_GAP));
        let solved: Solved = solve_bounded(&sub_loads, sub, budget, good_enough, b);
        value = value.max(solved.value);
        termination = termination.weakest(solved.termination);
        for (g_local, &g) in nodes.gpus[n].iter().enumerate() {
            for (s_local, s) in sub.slot_range(g_local).zip(cluster.slot_range(g)) {
                map[s] = experts[solved.map[s_local]];
            }
        }
    }
    // A node proved optimal does not prove the whole plan optimal under the constraint: only
    // the best assignment's nodes would.
    if termination == Termination::ProvedOptimal {
        termination = Termination::Heuristic;
    }
    Ok(NodeAwareSolved {
        map,
        value,
        lower_bound: 0.0,
        termination,
    })
}

/// The exact minimum over group-to-node assignments of the largest per-node lower bound, and an
/// assignment attaining it (ties: smallest sum of node bounds). Nodes in order each take a
/// subset of the groups left; `f[mask]` is the best (largest, sum) over the nodes so far
/// covering exactly `mask`.
fn exact_assignment(
    nodes: &Nodes,
    subs: &[PlacementCluster],
    w: &[f64],
    size: usize,
    groups: usize,
) -> Result<(f64, Vec<usize>), PlacementError> {
    let full = (1usize << groups) - 1;
    let n_nodes = subs.len();
    // Per node, the bound of each subset it can hold (`None`: too many or too few experts).
    // Nodes with the same slots and speeds share their table.
    let mut tables: Vec<std::rc::Rc<Vec<Option<f64>>>> = Vec::with_capacity(n_nodes);
    for n in 0..n_nodes {
        if let Some(m) = (0..n).find(|&m| subs[m] == subs[n]) {
            tables.push(tables[m].clone());
            continue;
        }
        let mut table = vec![None; full + 1];
        for (mask, slot) in table.iter_mut().enumerate().skip(1) {
            let experts = mask.count_ones() as usize * size;
            if experts < nodes.min_experts[n] || experts > nodes.slots[n] {
                continue;
            }
            let loads: Vec<f64> = (0..groups)
                .filter(|g| mask >> g & 1 == 1)
                .flat_map(|g| w[g * size..(g + 1) * size].iter().copied())
                .collect();
            // The cheap relaxations: thousands of subsets are bounded here (the heavy-replica
            // and partner bounds cost more than the rest of the node-aware plan).
            *slot = Some(basic_bound(&LayerLoads::new(loads)?, &subs[n]));
        }
        tables.push(std::rc::Rc::new(table));
    }
    type Cell = Option<(f64, f64)>;
    let mut f: Vec<Cell> = vec![None; full + 1];
    f[0] = Some((0.0, 0.0));
    // choice[n][mask]: the subset node n took in the best way to cover `mask` with nodes 0..=n.
    let mut choice: Vec<Vec<usize>> = Vec::with_capacity(n_nodes);
    for table in &tables {
        let mut next: Vec<Cell> = vec![None; full + 1];
        let mut took = vec![0usize; full + 1];
        for mask in 1..=full {
            let mut s = mask;
            while s > 0 {
                if let (Some(b), Some((m, sum))) = (table[s], f[mask ^ s]) {
                    let cand = (m.max(b), sum + b);
                    let better = next[mask]
                        .is_none_or(|(bm, bs)| cand.0 < bm || (cand.0 == bm && cand.1 < bs));
                    if better {
                        next[mask] = Some(cand);
                        took[mask] = s;
                    }
                }
                s = (s - 1) & mask;
            }
        }
        f = next;
        choice.push(took);
    }
    let (value, _) = f[full].ok_or(PlacementError::InsufficientCapacity {
        capacity: nodes.slots.iter().sum(),
        experts: w.len(),
    })?;
    let mut node_of_group = vec![0; groups];
    let mut mask = full;
    for n in (0..n_nodes).rev() {
        let s = choice[n][mask];
        for (g, node) in node_of_group.iter_mut().enumerate() {
            if s >> g & 1 == 1 {
                *node = n;
            }
        }
        mask ^= s;
    }
    Ok((value, node_of_group))
}

/// The nodes of a cluster: their GPUs, slots, speed and the fewest experts they can take.
pub(crate) struct Nodes {
    /// The GPUs of each node, nodes in order of their ids.
    pub(crate) gpus: Vec<Vec<usize>>,
    slots: Vec<usize>,
    speed: Vec<f64>,
    min_experts: Vec<usize>,
}

impl Nodes {
    pub(crate) fn of(cluster: &PlacementCluster) -> Self {
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
    fn assign(&self, group_load: &[f64], size: usize) -> Result<Vec<usize>, PlacementError> {
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
                .ok_or(PlacementError::InsufficientCapacity {
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
    pub(crate) fn sub_clusters(
        &self,
        cluster: &PlacementCluster,
    ) -> Result<Vec<PlacementCluster>, PlacementError> {
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
            .map(|l| basic_bound(&l, &subs[n]))
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
