//! The published topology-aware heuristic, reconstructed from its description, as a baseline.

use comm_cost_model::InputError;
use expert_placement::{LayerLoads, PlacementCluster, PlacementError};

use crate::error::TrafficError;

/// The topology-aware replica placement proposed for SGLang (RFC 19487, PRs 19772 and 19811),
/// reconstructed from the pull requests' descriptions (their code is not reproduced): (1) pack
/// expert groups onto nodes, heaviest group first to the lightest node with room (EPLB's
/// balanced packing, an equal number of groups per node); (2) give each redundant replica to the
/// expert with the largest load per replica and put it on a node that does not host that
/// expert yet (the lightest such node with a free slot; the lightest node with a free slot when
/// every node hosts it), so nodes can reach the expert over NVLink; (3) in each node, pack the
/// replicas (load `w_e / c_e` each) onto its GPUs, heaviest first to the lightest GPU with room
/// that does not hold the expert yet. It uses loads only, no per-source traffic: that is what
/// was published.
///
/// `groups` defaults to one group per expert (experts packed onto nodes individually).
///
/// # Errors
///
/// [`TrafficError::Placement`] with `PlacementError::Input` (`NotDivisible`) when `groups` does not divide
/// the expert count or the node count does not divide `groups`, `PlacementError::NotUniform`
/// unless every node has the same number of GPUs with the same slot count (nodes numbered
/// `0..K` in GPU order, as `PlacementCluster::uniform` makes them),
/// `PlacementError::InsufficientCapacity` for fewer slots than experts or a node that cannot
/// hold its groups, `PlacementError::SlotsExceedExperts` when a GPU cannot be filled with
/// distinct experts.
///
/// # Complexity
///
/// `O(R · (K + G + log E))`.
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementCluster};
/// use traffic_placement::topology_greedy;
///
/// let c = PlacementCluster::uniform(4, 3, 2)?;
/// let w = LayerLoads::new(vec![90.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0])?;
/// let map = topology_greedy(&w, &c, None)?;
/// assert_eq!(map.len(), 12);
/// // The hot expert's redundant replicas: the first went to the node lacking it.
/// let nodes: Vec<usize> = (0..12).filter(|&s| map[s] == 0).map(|s| s / 6).collect();
/// assert!(nodes.contains(&0) && nodes.contains(&1));
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
pub fn topology_greedy(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    groups: Option<usize>,
) -> Result<Vec<usize>, TrafficError> {
    let w = loads.as_slice();
    let e_count = w.len();
    let groups = groups.unwrap_or(e_count);
    let (k, g_count) = (cluster.nodes(), cluster.gpus());
    let per_gpu = cluster.uniform_slots().ok_or(PlacementError::NotUniform {
        what: "slots of every GPU (topology-aware baseline)",
    })?;
    let node_of_gpu = cluster.node_of_gpu();
    if g_count % k != 0 || (0..g_count).any(|g| node_of_gpu[g] != g / (g_count / k)) {
        return Err(PlacementError::NotUniform {
            what: "nodes (equal and contiguous, topology-aware baseline)",
        }
        .into());
    }
    if groups == 0 || e_count % groups != 0 {
        return Err(PlacementError::Input(InputError::not_divisible(
            "experts into groups",
            e_count,
            groups,
        ))
        .into());
    }
    if groups % k != 0 {
        return Err(PlacementError::Input(InputError::not_divisible(
            "groups over nodes",
            groups,
            k,
        ))
        .into());
    }
    let gpn = g_count / k;
    let node_slots = gpn * per_gpu;
    let total_slots = cluster.total_slots();
    if total_slots < e_count {
        return Err(PlacementError::InsufficientCapacity {
            capacity: total_slots,
            experts: e_count,
        }
        .into());
    }
    let size = e_count / groups;
    if size * (groups / k) > node_slots {
        return Err(PlacementError::InsufficientCapacity {
            capacity: node_slots,
            experts: size * (groups / k),
        }
        .into());
    }
    // (1) Groups to nodes.
    let mut order: Vec<usize> = (0..groups).collect();
    let group_load = |x: usize| w[x * size..(x + 1) * size].iter().sum::<f64>();
    order.sort_by(|&a, &b| group_load(b).total_cmp(&group_load(a)).then(a.cmp(&b)));
    let mut node_load = vec![0.0f64; k];
    let mut node_groups = vec![0usize; k];
    let mut used = vec![0usize; k];
    // `hosts[e]`: replicas of e per node.
    let mut hosts = vec![vec![0usize; k]; e_count];
    for x in order {
        let n = (0..k)
            .filter(|&n| node_groups[n] < groups / k)
            .min_by(|&a, &b| node_load[a].total_cmp(&node_load[b]).then(a.cmp(&b)))
            .unwrap_or(0);
        node_groups[n] += 1;
        node_load[n] += group_load(x);
        for h in &mut hosts[x * size..(x + 1) * size] {
            h[n] = 1;
            used[n] += 1;
        }
    }
    // (2) Redundant replicas.
    let mut count = vec![1usize; e_count];
    for _ in 0..total_slots - e_count {
        let Some(e) = (0..e_count)
            .filter(|&e| count[e] < g_count)
            .max_by(|&a, &b| {
                (w[a] / count[a] as f64)
                    .total_cmp(&(w[b] / count[b] as f64))
                    .then(b.cmp(&a))
            })
        else {
            break;
        };
        let room = |n: usize| used[n] < node_slots && hosts[e][n] < gpn;
        let lightest = |fresh: bool| {
            (0..k)
                .filter(|&n| room(n) && (!fresh || hosts[e][n] == 0))
                .min_by(|&a, &b| node_load[a].total_cmp(&node_load[b]).then(a.cmp(&b)))
        };
        let Some(n) = lightest(true).or_else(|| lightest(false)) else {
            break;
        };
        hosts[e][n] += 1;
        used[n] += 1;
        count[e] += 1;
        // The node's share of the expert's load, for the next choices.
        node_load[n] += w[e] / count[e] as f64;
    }
    // Any slot still free (an expert capped at G replicas): fill with the least replicated
    // experts the node can still take.
    for n in 0..k {
        while used[n] < node_slots {
            let Some(e) = (0..e_count)
                .filter(|&e| hosts[e][n] < gpn)
                .max_by(|&a, &b| (w[a] / count[a] as f64).total_cmp(&(w[b] / count[b] as f64)))
            else {
                return Err(PlacementError::SlotsExceedExperts {
                    gpu: n * gpn,
                    slots: per_gpu,
                    experts: e_count,
                }
                .into());
            };
            hosts[e][n] += 1;
            used[n] += 1;
            count[e] += 1;
        }
    }
    // (3) Pack each node's replicas onto its GPUs.
    let mut map = vec![usize::MAX; total_slots];
    #[allow(clippy::needless_range_loop)] // `n` indexes the inner vectors of `hosts`
    for n in 0..k {
        let mut items: Vec<usize> = (0..e_count)
            .flat_map(|e| std::iter::repeat_n(e, hosts[e][n]))
            .collect();
        items.sort_by(|&a, &b| {
            (w[b] / count[b] as f64)
                .total_cmp(&(w[a] / count[a] as f64))
                .then(a.cmp(&b))
        });
        let gpus: Vec<usize> = (n * gpn..(n + 1) * gpn).collect();
        let mut fill = vec![0usize; gpn];
        let mut gload = vec![0.0f64; gpn];
        let mut held: Vec<Vec<usize>> = vec![Vec::new(); gpn];
        for e in items {
            let pick = (0..gpn)
                .filter(|&i| fill[i] < per_gpu && !held[i].contains(&e))
                .min_by(|&a, &b| gload[a].total_cmp(&gload[b]).then(a.cmp(&b)))
                .or_else(|| {
                    (0..gpn)
                        .filter(|&i| fill[i] < per_gpu)
                        .min_by(|&a, &b| gload[a].total_cmp(&gload[b]).then(a.cmp(&b)))
                });
            let Some(i) = pick else { break };
            map[gpus[i] * per_gpu + fill[i]] = e;
            fill[i] += 1;
            gload[i] += w[e] / count[e] as f64;
            held[i].push(e);
        }
    }
    if map.contains(&usize::MAX) {
        return Err(PlacementError::InsufficientCapacity {
            capacity: total_slots,
            experts: e_count,
        }
        .into());
    }
    Ok(map)
}
