//! Groups-in-nodes: which node each expert group goes to, by traffic, within the balance limit.
//!
//! With every replica of a group inside one node, all tokens to the group's experts are served
//! in that node, so a node's load is exactly the sum of its groups' tokens and the cross-node
//! tokens are those its groups receive from other nodes: both depend only on the group-to-node
//! assignment, which is small enough to search (exhaustively up to [`EXHAUSTIVE_ASSIGNMENTS`]).

use comm_cost_model::InputError;
use expert_placement::{
    LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementError, PlacementOptions, place_with,
};

use crate::cap::Cap;
use crate::context::Context;
use crate::error::TrafficError;

/// Largest number of group-to-node assignments searched exhaustively.
const EXHAUSTIVE_ASSIGNMENTS: u64 = 1 << 16;

/// Per-group figures: tokens per node `[K][groups]`, total per group, experts per group.
struct Groups {
    size: usize,
    by_node: Vec<Vec<f64>>,
    total: Vec<f64>,
}

fn groups_of(ctx: &Context<'_>, groups: usize) -> Result<Groups, TrafficError> {
    let e = ctx.experts();
    if groups == 0 || e % groups != 0 {
        return Err(PlacementError::Input(InputError::not_divisible(
            "experts into groups",
            e,
            groups,
        ))
        .into());
    }
    let size = e / groups;
    let k = ctx.nodes();
    let mut by_node = vec![vec![0.0; groups]; k];
    let mut total = vec![0.0; groups];
    for (n, row) in by_node.iter_mut().enumerate() {
        for (x, &t) in ctx.by_node[n].iter().enumerate() {
            row[x / size] += t;
        }
    }
    for (x, &w) in ctx.loads.iter().enumerate() {
        total[x / size] += w;
    }
    Ok(Groups {
        size,
        by_node,
        total,
    })
}

/// Whether an assignment fits the slots (every node can hold its experts without a GPU having
/// more slots than the node has experts) and by how much it overloads nodes.
fn score(ctx: &Context<'_>, g: &Groups, node_of_group: &[usize], limit: f64) -> Option<(f64, f64)> {
    let k = ctx.nodes();
    let mut experts = vec![0usize; k];
    let mut load = vec![0.0; k];
    let mut cross = 0.0;
    for (x, &n) in node_of_group.iter().enumerate() {
        experts[n] += g.size;
        load[n] += g.total[x];
        cross += g.total[x] - g.by_node[n][x];
    }
    let slots = ctx.cluster.slots_of_gpu();
    let mut over = 0.0;
    for n in 0..k {
        let gpus = &ctx.gpus_of_node[n];
        let node_slots: usize = gpus.iter().map(|&gpu| slots[gpu]).sum();
        let widest = gpus.iter().map(|&gpu| slots[gpu]).max().unwrap_or(0);
        if experts[n] == 0 || experts[n] > node_slots || widest > experts[n] {
            return None;
        }
        let speed: f64 = gpus.iter().map(|&gpu| ctx.speed[gpu]).sum();
        over += (load[n] - limit * speed).max(0.0);
    }
    Some((over, cross))
}

/// The best assignment found: exhaustive when small, else a move/swap local search from `start`.
fn assign(ctx: &Context<'_>, g: &Groups, limit: f64, start: Vec<usize>) -> Vec<usize> {
    let (k, groups) = (ctx.nodes(), g.total.len());
    let key = |a: &[usize]| score(ctx, g, a, limit);
    let better = |a: (f64, f64), b: (f64, f64)| {
        a.0 < b.0 - 1e-12 * (1.0 + b.0)
            || (a.0 <= b.0 + 1e-12 * (1.0 + b.0) && a.1 < b.1 - 1e-12 * (1.0 + b.1))
    };
    let count = (k as u64).checked_pow(u32::try_from(groups).unwrap_or(u32::MAX));
    let mut best = start.clone();
    let mut best_key = key(&best).unwrap_or((f64::INFINITY, f64::INFINITY));
    if count.is_some_and(|c| c <= EXHAUSTIVE_ASSIGNMENTS) {
        let mut a = vec![0usize; groups];
        loop {
            if let Some(s) = key(&a) {
                if better(s, best_key) {
                    best_key = s;
                    best.clone_from(&a);
                }
            }
            // Next assignment in base K.
            let mut i = 0;
            while i < groups {
                a[i] += 1;
                if a[i] < k {
                    break;
                }
                a[i] = 0;
                i += 1;
            }
            if i == groups {
                return best;
            }
        }
    }
    let mut improved = true;
    let mut rounds = 0;
    while improved && rounds < 64 {
        improved = false;
        rounds += 1;
        for x in 0..groups {
            for n in 0..k {
                let mut a = best.clone();
                a[x] = n;
                if let Some(s) = key(&a) {
                    if better(s, best_key) {
                        best = a;
                        best_key = s;
                        improved = true;
                    }
                }
            }
            for y in x + 1..groups {
                let mut a = best.clone();
                a.swap(x, y);
                if let Some(s) = key(&a) {
                    if better(s, best_key) {
                        best = a;
                        best_key = s;
                        improved = true;
                    }
                }
            }
        }
    }
    best
}

/// The group of each expert and the node of each group.
pub(crate) type Pins = (Vec<usize>, Vec<usize>);

/// The groups-in-nodes start: groups assigned to nodes by traffic within the limit, each node's
/// experts placed on its GPUs by `expert-placement`'s optimal planner. Returns the slot map and
/// the pins.
pub(crate) fn group_start(
    ctx: &Context<'_>,
    groups: usize,
    limit: f64,
    current: &[usize],
    placement: &PlacementOptions,
    cap: &Cap,
) -> Result<(Vec<usize>, Pins), TrafficError> {
    let g = groups_of(ctx, groups)?;
    // The current plan's node of each group (its first expert's first slot).
    let gpu_of_slot = ctx.cluster.gpu_of_each_slot();
    let mut start = vec![0usize; groups];
    for (s, &e) in current.iter().enumerate() {
        if e % g.size == 0 {
            start[e / g.size] = ctx.node[gpu_of_slot[s]];
        }
    }
    let node_of_group = assign(ctx, &g, limit, start);
    let mut map = vec![0usize; ctx.cluster.total_slots()];
    for (n, gpus) in ctx.gpus_of_node.iter().enumerate() {
        let experts: Vec<usize> = (0..ctx.experts())
            .filter(|&e| node_of_group[e / g.size] == n)
            .collect();
        let sub = PlacementCluster::new(
            gpus.iter()
                .map(|&gpu| ctx.cluster.slots_of_gpu()[gpu])
                .collect(),
            gpus.iter().map(|&gpu| ctx.speed[gpu]).collect(),
            vec![0; gpus.len()],
        )?;
        let loads = LayerLoads::new(experts.iter().map(|&e| ctx.loads[e]).collect())?;
        let p = cap.watch(placement.time_budget_s, || {
            place_with(&loads, &sub, PlacementAlgorithm::Optimal, placement)
        })?;
        for (i, &gpu) in gpus.iter().enumerate() {
            for (sub_slot, slot) in sub.slot_range(i).zip(ctx.cluster.slot_range(gpu)) {
                map[slot] = experts[p.physical_to_logical[sub_slot]];
            }
        }
    }
    let group_of_expert = (0..ctx.experts()).map(|e| e / g.size).collect();
    Ok((map, (group_of_expert, node_of_group)))
}

/// The fewest cross-node tokens over all group-to-node assignments whose node loads fit the
/// limit (a necessary condition of balance), when there are few enough to enumerate: a lower
/// bound for groups-in-nodes plans.
pub(crate) fn group_bound(ctx: &Context<'_>, groups: usize, limit: f64) -> Option<f64> {
    let g = groups_of(ctx, groups).ok()?;
    let (k, n_groups) = (ctx.nodes(), g.total.len());
    let count = (k as u64).checked_pow(u32::try_from(n_groups).ok()?)?;
    if count > EXHAUSTIVE_ASSIGNMENTS {
        return None;
    }
    let mut a = vec![0usize; n_groups];
    let mut best = f64::INFINITY;
    loop {
        if let Some((over, cross)) = score(ctx, &g, &a, limit) {
            if over <= 1e-9 * (1.0 + limit) {
                best = best.min(cross);
            }
        }
        let mut i = 0;
        while i < n_groups {
            a[i] += 1;
            if a[i] < k {
                break;
            }
            a[i] = 0;
            i += 1;
        }
        if i == n_groups {
            break;
        }
    }
    best.is_finite().then_some(best)
}
