//! The dispatch model: which replica serves which source, what each GPU computes, and how many
//! tokens cross nodes.

use expert_placement::{LayerLoads, Placement, PlacementCluster};
use serde::{Deserialize, Serialize};

use crate::context::{Context, replica_gpus};
use crate::error::TrafficError;
use crate::flow::Network;
use crate::routed::{RoutedTokens, TopKRoutes};

/// What a placement costs one layer under the locality dispatch ([`dispatch`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchReport {
    /// Tokens each GPU computes over its speed, under the most balanced split that respects
    /// locality.
    pub gpu_loads: Vec<f64>,
    /// The busiest GPU of that split (the compute objective).
    pub max_gpu_load: f64,
    /// Mean GPU load.
    pub mean_gpu_load: f64,
    /// The busiest GPU under SGLang's static dispatch with even splits (same locality, no
    /// balancing): an upper bound on [`DispatchReport::max_gpu_load`].
    pub static_max_gpu_load: f64,
    /// Tokens served on the GPU that sent them.
    pub same_gpu_tokens: f64,
    /// Tokens served by another GPU of the sender's node.
    pub same_node_tokens: f64,
    /// Tokens sent to another node (each token-expert pair once).
    pub cross_node_tokens: f64,
    /// All routed tokens (token-expert pairs).
    pub total_tokens: f64,
}

impl DispatchReport {
    /// `cross_node_tokens / total_tokens` (0 for no token): the cross-node ratio of SGLang PR
    /// 19772.
    #[must_use]
    pub fn cross_node_ratio(&self) -> f64 {
        if self.total_tokens > 0.0 {
            self.cross_node_tokens / self.total_tokens
        } else {
            0.0
        }
    }

    /// `max_gpu_load / mean_gpu_load` (1 when idle).
    #[must_use]
    pub fn imbalance(&self) -> f64 {
        if self.mean_gpu_load > 0.0 {
            self.max_gpu_load / self.mean_gpu_load
        } else {
            1.0
        }
    }
}

/// Scores a placement on one layer's routed tokens under the locality dispatch.
///
/// A token from source GPU `s` to expert `e` is served by `s` itself when `s` holds a replica of
/// `e`, otherwise by a replica in `s`'s node when there is one, otherwise by any replica (it
/// crosses nodes): the static dispatch of SGLang (`--ep-dispatch-algorithm static`, PR 9849).
/// Within those rules the tokens of an expert may split over its allowed replicas in any
/// proportion; the split reported is the one that minimizes the busiest GPU (load over speed),
/// found by bisection on the limit `T` with a maximum flow (source -> each (expert, locality
/// class) with its tokens -> each allowed replica GPU -> sink with `T · speed - forced load`).
/// Only experts with several replicas take part in the flow; the rest is forced. Cross-node
/// tokens do not depend on the split.
///
/// # Errors
///
/// [`TrafficError::Input`] (`SizeMismatch`) when the routed tokens do not have one source per GPU of the
/// cluster; the map errors of [`Placement::evaluate`] (one entry per slot, ids below `E`, every
/// expert placed) as [`TrafficError::Placement`].
///
/// # Complexity
///
/// `O(G · E + R)` plus about 60 maximum flows on `O(F + G)` nodes, `F` the (expert, node) pairs
/// of the replicated experts.
///
/// # Examples
///
/// ```
/// use expert_placement::PlacementCluster;
/// use traffic_placement::{RoutedTokens, dispatch};
///
/// // Two nodes of one GPU with 2 slots; expert 0 on both GPUs, expert 1 on GPU 0, 2 on GPU 1.
/// let c = PlacementCluster::uniform(2, 2, 2)?;
/// let t = RoutedTokens::new(vec![vec![4.0, 1.0, 2.0], vec![4.0, 1.0, 0.0]])?;
/// let d = dispatch(&t, &c, &[0, 1, 0, 2])?;
/// // Expert 1 of GPU 1 and expert 2 of GPU 0 cross: 1 + 2 tokens of 12.
/// assert_eq!(d.cross_node_tokens, 3.0);
/// assert_eq!(d.gpu_loads, vec![6.0, 6.0]);
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
pub fn dispatch(
    routed: &RoutedTokens,
    cluster: &PlacementCluster,
    physical_to_logical: &[usize],
) -> Result<DispatchReport, TrafficError> {
    let ctx = Context::new(routed, cluster)?;
    check_map(&ctx, physical_to_logical)?;
    let replicas = replica_gpus(physical_to_logical, cluster, ctx.experts());
    Ok(evaluate(&ctx, &replicas))
}

/// Validates a slot map against the context with `expert-placement`'s checks.
pub(crate) fn check_map(ctx: &Context<'_>, map: &[usize]) -> Result<(), TrafficError> {
    let w = LayerLoads::new(vec![0.0; ctx.experts()])?;
    Placement::evaluate(&w, ctx.cluster, map.to_vec())?;
    Ok(())
}

/// A group of tokens with a choice of replicas.
struct Flexible {
    tokens: f64,
    gpus: Vec<usize>,
}

/// [`dispatch`] on validated input.
pub(crate) fn evaluate(ctx: &Context<'_>, replicas: &[Vec<usize>]) -> DispatchReport {
    let g_count = ctx.gpus();
    let r = ctx.routed;
    let mut forced = vec![0.0; g_count];
    let mut proxy = vec![0.0; g_count];
    let mut flexible: Vec<Flexible> = Vec::new();
    let (mut same_gpu, mut same_node, mut cross) = (0.0, 0.0, 0.0);
    for (e, gpus) in replicas.iter().enumerate() {
        cross += ctx.proxy_contribution(e, gpus, |g, t| proxy[g] += t);
        if gpus.is_empty() {
            continue;
        }
        let mut remote = 0.0;
        let mut hosted_nodes: Vec<usize> = gpus.iter().map(|&g| ctx.node[g]).collect();
        hosted_nodes.sort_unstable();
        hosted_nodes.dedup();
        for (n, members) in ctx.gpus_of_node.iter().enumerate() {
            if hosted_nodes.binary_search(&n).is_err() {
                remote += ctx.by_node[n][e];
                continue;
            }
            let here: Vec<usize> = gpus.iter().copied().filter(|&g| ctx.node[g] == n).collect();
            let mut in_node = 0.0;
            for &s in members {
                let t = r.get(s, e);
                if here.contains(&s) {
                    forced[s] += t;
                    same_gpu += t;
                } else {
                    in_node += t;
                }
            }
            same_node += in_node;
            route(&mut forced, &mut flexible, in_node, here);
        }
        route(&mut forced, &mut flexible, remote, gpus.clone());
    }
    let speed = &ctx.speed;
    let static_max = max_over_speed(&proxy, speed);
    let total_speed: f64 = speed.iter().sum();
    let total = ctx.routed.total();
    let gpu_tokens =
        balance(&forced, &flexible, speed, static_max, total / total_speed).unwrap_or(proxy);
    let gpu_loads: Vec<f64> = gpu_tokens.iter().zip(speed).map(|(t, v)| t / v).collect();
    let max_gpu_load = gpu_loads.iter().copied().fold(0.0, f64::max);
    let mean_gpu_load = gpu_loads.iter().sum::<f64>() / g_count.max(1) as f64;
    DispatchReport {
        gpu_loads,
        max_gpu_load,
        mean_gpu_load,
        static_max_gpu_load: static_max,
        same_gpu_tokens: same_gpu,
        same_node_tokens: same_node,
        cross_node_tokens: cross,
        total_tokens: total,
    }
}

fn route(forced: &mut [f64], flexible: &mut Vec<Flexible>, tokens: f64, gpus: Vec<usize>) {
    if tokens <= 0.0 || gpus.is_empty() {
        return;
    }
    if gpus.len() == 1 {
        forced[gpus[0]] += tokens;
    } else {
        flexible.push(Flexible { tokens, gpus });
    }
}

fn max_over_speed(tokens: &[f64], speed: &[f64]) -> f64 {
    tokens
        .iter()
        .zip(speed)
        .map(|(t, v)| t / v)
        .fold(0.0, f64::max)
}

/// The per-GPU tokens of the most balanced split, by bisection on the limit between `average`
/// (or the forced maximum) and `upper` (a feasible limit); `None` if the flow fails even at
/// `upper` (rounding), so the caller keeps the static split.
fn balance(
    forced: &[f64],
    flexible: &[Flexible],
    speed: &[f64],
    upper: f64,
    average: f64,
) -> Option<Vec<f64>> {
    let g = forced.len();
    if flexible.is_empty() {
        return Some(forced.to_vec());
    }
    let demand: f64 = flexible.iter().map(|f| f.tokens).sum();
    let scale = demand + forced.iter().sum::<f64>();
    let eps = scale * 1e-13 + f64::MIN_POSITIVE;
    let (src, sink) = (0, 1);
    let first_gpu = 2 + flexible.len();
    let mut net = Network::new(first_gpu + g, eps);
    let mut group_edges = Vec::with_capacity(flexible.len());
    let mut pair_edges = Vec::new();
    for (i, f) in flexible.iter().enumerate() {
        group_edges.push(net.add_edge(src, 2 + i, f.tokens));
        for &gpu in &f.gpus {
            pair_edges.push((i, gpu, net.add_edge(2 + i, first_gpu + gpu, f.tokens)));
        }
    }
    let gpu_edges: Vec<usize> = (0..g)
        .map(|gpu| net.add_edge(first_gpu + gpu, sink, 0.0))
        .collect();
    let forced_max = max_over_speed(forced, speed);
    let solve = |limit: f64, net: &mut Network| -> bool {
        for (i, f) in flexible.iter().enumerate() {
            net.reset_edge(group_edges[i], f.tokens);
        }
        for &(i, _, id) in &pair_edges {
            net.reset_edge(id, flexible[i].tokens);
        }
        for gpu in 0..g {
            net.reset_edge(gpu_edges[gpu], limit * speed[gpu] - forced[gpu]);
        }
        net.max_flow(src, sink) >= demand - demand * 1e-12 - eps
    };
    let mut hi = upper * (1.0 + 1e-12);
    if !solve(hi, &mut net) {
        return None;
    }
    let mut lo = average.max(forced_max) * (1.0 - 1e-12);
    let mut best_hi = hi;
    for _ in 0..60 {
        if hi - lo <= hi * 1e-9 {
            break;
        }
        let mid = lo + (hi - lo) / 2.0;
        if solve(mid, &mut net) {
            hi = mid;
            best_hi = mid;
        } else {
            lo = mid;
        }
    }
    solve(best_hi, &mut net);
    let mut tokens = forced.to_vec();
    for &(_, gpu, id) in &pair_edges {
        tokens[gpu] += net.flow(id);
    }
    // Flow lost to the tolerance goes back evenly over its group's replicas, so every token is
    // served (the loads may exceed the limit by about `eps`).
    for (i, f) in flexible.iter().enumerate() {
        let routed: f64 = pair_edges
            .iter()
            .filter(|(j, _, _)| *j == i)
            .map(|&(_, _, id)| net.flow(id))
            .sum();
        let missing = (f.tokens - routed).max(0.0);
        if missing > 0.0 {
            for &gpu in &f.gpus {
                tokens[gpu] += missing / f.gpus.len() as f64;
            }
        }
    }
    Some(tokens)
}

/// Token sends that cross nodes when a token sent to several experts on one remote node counts
/// once per node (DeepEP's normal dispatch forwards one copy per node over the scale-out
/// network): for each token, the remote nodes it must reach, its experts without a replica in
/// its own node covered greedily by the node that hosts most of the still uncovered ones (lowest
/// node id on ties).
///
/// # Errors
///
/// [`TrafficError::Input`] (`SizeMismatch`) unless there is one source per GPU, the map errors of
/// [`dispatch`].
///
/// # Complexity
///
/// `O(R + tokens · k · K)` for `K` nodes.
///
/// # Examples
///
/// ```
/// use expert_placement::PlacementCluster;
/// use traffic_placement::{TopKRoutes, cross_node_sends};
///
/// // Two nodes of one GPU; experts 0 and 1 on GPU 0, 2 and 3 on GPU 1.
/// let c = PlacementCluster::uniform(2, 2, 2)?;
/// let r = TopKRoutes::new(vec![vec![vec![2, 3], vec![0, 2]], vec![vec![2, 3]]], 4)?;
/// // GPU 0's first token reaches node 1 once for experts 2 and 3; its second once for 2.
/// assert_eq!(cross_node_sends(&r, &c, &[0, 1, 2, 3])?, 2.0);
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
pub fn cross_node_sends(
    routes: &TopKRoutes,
    cluster: &PlacementCluster,
    physical_to_logical: &[usize],
) -> Result<f64, TrafficError> {
    let routed = routes.routed_tokens()?;
    let ctx = Context::new(&routed, cluster)?;
    check_map(&ctx, physical_to_logical)?;
    let replicas = replica_gpus(physical_to_logical, cluster, ctx.experts());
    let nodes_of: Vec<Vec<usize>> = replicas
        .iter()
        .map(|gpus| {
            let mut n: Vec<usize> = gpus.iter().map(|&g| ctx.node[g]).collect();
            n.sort_unstable();
            n.dedup();
            n
        })
        .collect();
    let mut sends = 0u64;
    let mut count = vec![0usize; ctx.nodes()];
    for (src, tokens) in routes.topk_ids().iter().enumerate() {
        let home = ctx.node[src];
        for token in tokens {
            let mut open: Vec<usize> = token
                .iter()
                .copied()
                .filter(|&e| nodes_of[e].binary_search(&home).is_err())
                .collect();
            open.sort_unstable();
            open.dedup();
            while !open.is_empty() {
                count.iter_mut().for_each(|c| *c = 0);
                for &e in &open {
                    for &n in &nodes_of[e] {
                        count[n] += 1;
                    }
                }
                let best = (0..count.len()).max_by_key(|&n| (count[n], std::cmp::Reverse(n)));
                let Some(best) = best else { break };
                open.retain(|&e| nodes_of[e].binary_search(&best).is_err());
                sends += 1;
            }
        }
    }
    Ok(sends as f64)
}
