//! Rebalancing under the node rule: a current placement that keeps every expert group inside
//! one node moves to new loads with few transfers, and every group stays inside one node.

use comm_cost_model::{InputError, check_divides, check_finite_result, check_non_negative};

use crate::algorithm::{PlacementAlgorithm, place_with};
use crate::bound::quick_bound;
use crate::error::PlacementError;
use crate::local_search::REL_EPS;
use crate::model::{LayerLoads, PlacementCluster};
use crate::node_align::align_within_nodes;
use crate::node_aware::{NODE_GAP, Nodes};
use crate::optimal::solve_bounded;
use crate::options::{DEFAULT_SEARCH_STEPS, PlacementOptions, Termination};
use crate::plan::Placement;
use crate::rebalance::{Rebalance, pareto, rebalance_map, termination};
use crate::transfers::{check_current, count_moves, plan_transfers};

/// Rebalances `current` to new `loads` with every group of `groups` contiguous experts inside
/// one node, with few expert transfers, keeping the busiest GPU within `(1 + tolerance)` of the
/// best plan found.
///
/// EPLB's hierarchical policy (and vLLM's default policy with `num_groups` and `num_nodes`)
/// re-plans from scratch under this rule; vLLM then keeps a slot only when its expert stays on
/// the same GPU. Two candidates here:
///
/// * **the fresh node-aware plan** ([`PlacementAlgorithm::OptimalNodeAware`]) with whole nodes
///   and GPUs inside nodes relabeled onto `current` ([`align_within_nodes`]);
/// * **each node rebalanced in place** (when `current` keeps every group inside one node): the
///   group-to-node assignment stays, and each node's experts move among its own GPUs by the
///   fewest-move rebalance of [`crate::rebalance_with`], so no group leaves its node (each node's
///   fresh plan, busiest node first, stops once it is within 0.1% of its bound or below the
///   busiest node, as in the node-aware planner). A node whose best
///   plan is below the target gets the slack (its own tolerance is `target / its best - 1`), so
///   quiet nodes move little.
///
/// The target is `(1 + tolerance)` times the lower of the two candidates' best loads; the
/// answer is the candidate with the fewest moves within it (then the lower load). The lower
/// bound is the node-aware plan's, valid under the rule.
///
/// # Errors
///
/// Those of [`place_with`] with [`PlacementAlgorithm::OptimalNodeAware`] and of
/// [`crate::rebalance_with`]; [`PlacementError::Input`] for a negative or non-finite `tolerance`.
///
/// # Complexity
///
/// One node-aware plan, plus per node one fresh plan and one [`crate::rebalance_with`] of the node's
/// experts on its GPUs (when `current` keeps the groups in nodes).
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementOptions,
///     place, rebalance_node_aware};
///
/// // 8 experts in 4 groups on 2 nodes of 2 GPUs x 3 slots.
/// let c = PlacementCluster::uniform(4, 3, 2)?;
/// let old = LayerLoads::new(vec![9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0])?;
/// let now = place(&old, &c, PlacementAlgorithm::OptimalNodeAware { groups: 4 })?;
/// let new = LayerLoads::new(vec![2.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 9.0])?;
/// let r = rebalance_node_aware(&now.physical_to_logical, &new, &c, 4, 0.0,
///     &PlacementOptions::default())?;
/// assert!(r.placement.max_gpu_load <= r.target_max_gpu_load * (1.0 + 1e-9));
/// assert!(r.moves <= r.fresh_moves);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn rebalance_node_aware(
    current: &[usize],
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    groups: usize,
    tolerance: f64,
    options: &PlacementOptions,
) -> Result<Rebalance, PlacementError> {
    options.validate()?;
    let w = loads.as_slice();
    let experts = w.len();
    cluster.check_experts(experts)?;
    check_current(current, experts, cluster)?;
    let tolerance = check_non_negative("rebalance tolerance", tolerance)?;
    let fresh = place_with(
        loads,
        cluster,
        PlacementAlgorithm::OptimalNodeAware { groups },
        options,
    )?;
    let aligned = align_within_nodes(&fresh.physical_to_logical, current, cluster, experts)?;
    let fresh_moves = count_moves(current, &aligned, cluster, experts)?;
    let mut points = vec![(fresh_moves, fresh.max_gpu_load)];
    let mut best = fresh.max_gpu_load;
    let mut target = check_finite_result("target maximum GPU load", best * (1.0 + tolerance))?;
    let mut pick = (fresh_moves, fresh.max_gpu_load, aligned);
    let mut budget_exhausted = false;
    if let Some(in_place) = in_place(current, loads, cluster, groups, tolerance, options)? {
        budget_exhausted = in_place.budget_exhausted;
        best = best.min(in_place.best);
        target = check_finite_result("target maximum GPU load", best * (1.0 + tolerance))?;
        points.push((in_place.moves, in_place.value));
        let meets = |v: f64| v <= target * (1.0 + REL_EPS);
        let better = (in_place.moves, in_place.value) < (pick.0, pick.1) || !meets(pick.1);
        if meets(in_place.value) && better {
            pick = (in_place.moves, in_place.value, in_place.map);
        }
    }
    options.check_cancelled()?;
    let map = pick.2;
    let transfers = plan_transfers(current, &map, cluster, experts)?;
    let mut placement = Placement::scored(w, cluster, map, fresh.lower_bound)?;
    placement.unconstrained_max_gpu_load = fresh.unconstrained_max_gpu_load;
    placement.termination = termination(
        &placement,
        budget_exhausted || fresh.termination == Termination::TimeCapped,
    );
    Ok(Rebalance {
        moves: transfers.len(),
        moves_proved_fewest: false,
        budget_exhausted,
        transfers,
        placement,
        best_max_gpu_load: best,
        target_max_gpu_load: target,
        fresh_max_gpu_load: fresh.max_gpu_load,
        fresh_moves,
        tradeoff: pareto(points),
    })
}

/// Every node of `current` rebalanced in place.
struct InPlace {
    map: Vec<usize>,
    moves: usize,
    value: f64,
    /// The largest of the nodes' fresh plans: the best this group-to-node assignment reached.
    best: f64,
    budget_exhausted: bool,
}

/// The nodes of `current` rebalanced one by one, or `None` when `current` has a group on two
/// nodes (then the assignment must change, and only the fresh plan can do that).
fn in_place(
    current: &[usize],
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    groups: usize,
    tolerance: f64,
    options: &PlacementOptions,
) -> Result<Option<InPlace>, PlacementError> {
    let w = loads.as_slice();
    let experts = w.len();
    if groups == 0 {
        return Err(PlacementError::Input(InputError::Empty { what: "groups" }));
    }
    check_divides("experts by groups", experts as u64, groups as u64)?;
    let size = experts / groups;
    let nodes = Nodes::of(cluster);
    let mut node_of_gpu = vec![0; cluster.gpus()];
    for (n, gpus) in nodes.gpus.iter().enumerate() {
        for &g in gpus {
            node_of_gpu[g] = n;
        }
    }
    let mut node_of_group: Vec<Option<usize>> = vec![None; groups];
    for (slot, &e) in current.iter().enumerate() {
        let g = cluster.gpu_of_slot(slot).unwrap_or(0);
        let n = node_of_gpu[g];
        match node_of_group[e / size] {
            Some(m) if m != n => return Ok(None),
            _ => node_of_group[e / size] = Some(n),
        }
    }
    let subs = nodes.sub_clusters(cluster)?;
    // Per node: its experts (global ids), loads, current sub-map and bound.
    let mut parts = Vec::with_capacity(subs.len());
    for (n, sub) in subs.iter().enumerate() {
        let members: Vec<usize> = (0..experts)
            .filter(|&e| node_of_group[e / size] == Some(n))
            .collect();
        let mut local = vec![usize::MAX; experts];
        for (i, &e) in members.iter().enumerate() {
            local[e] = i;
        }
        let sub_current: Vec<usize> = nodes.gpus[n]
            .iter()
            .flat_map(|&g| cluster.slot_range(g))
            .map(|s| local[current[s]])
            .collect();
        let sub_loads = LayerLoads::new(members.iter().map(|&e| w[e]).collect())?;
        // The cheap bound: `solve_bounded` raises it where the node's plan stays above it.
        let bound = quick_bound(&sub_loads, sub);
        parts.push((n, members, sub_current, sub_loads, bound));
    }
    // Fresh plans, busiest node (by bound) first: once it is planned the others only need to
    // stay below it, as in the node-aware planner (searching further costs time for nothing).
    parts.sort_by(|a, b| b.4.total_cmp(&a.4).then(a.0.cmp(&b.0)));
    let budget = options.budget(DEFAULT_SEARCH_STEPS);
    let mut best = 0.0f64;
    let mut solved = Vec::with_capacity(parts.len());
    for (n, members, sub_current, sub_loads, bound) in parts {
        let fresh = solve_bounded(
            &sub_loads,
            &subs[n],
            &budget,
            best.max(bound * (1.0 + NODE_GAP)),
            bound,
        );
        best = best.max(fresh.value);
        solved.push((n, members, sub_current, sub_loads, fresh));
    }
    let target = best * (1.0 + tolerance);
    let mut map = vec![0; current.len()];
    let mut budget_exhausted = false;
    for (n, members, sub_current, sub_loads, fresh) in solved {
        // A node below the target may use the slack: its tolerance is relative to its own best.
        let slack = if fresh.value > 0.0 {
            (target / fresh.value - 1.0).max(tolerance)
        } else {
            tolerance
        };
        // Only the node's map is needed: its transfers and figures are computed once for the
        // whole layer below (they were computed per node too, then dropped).
        let r = rebalance_map(&sub_current, &sub_loads, &subs[n], slack, options, fresh)?;
        budget_exhausted |= r.budget_exhausted;
        let slots = nodes.gpus[n].iter().flat_map(|&g| cluster.slot_range(g));
        for (s, &e_local) in slots.zip(&r.map) {
            map[s] = members[e_local];
        }
    }
    let moves = count_moves(current, &map, cluster, experts)?;
    let value = Placement::evaluate(loads, cluster, map.clone())?.max_gpu_load;
    Ok(Some(InPlace {
        map,
        moves,
        value,
        best,
        budget_exhausted,
    }))
}
