//! One layer's routed tokens seen through a cluster: nodes renumbered `0..K`, tokens per node and
//! expert, and each expert's proxy dispatch contribution for a given set of replica GPUs.

use expert_placement::PlacementCluster;

use crate::error::TrafficError;
use crate::routed::RoutedTokens;
use comm_cost_model::check_same_len;

/// The routed tokens of a layer on a cluster, with the per-node sums every planner needs.
pub(crate) struct Context<'a> {
    pub(crate) routed: &'a RoutedTokens,
    pub(crate) cluster: &'a PlacementCluster,
    /// Compact node id `0..K` of each GPU.
    pub(crate) node: Vec<usize>,
    /// GPUs of each compact node.
    pub(crate) gpus_of_node: Vec<Vec<usize>>,
    /// `[K][E]`: tokens the sources of a node send to each expert.
    pub(crate) by_node: Vec<Vec<f64>>,
    /// Tokens of each expert.
    pub(crate) loads: Vec<f64>,
    pub(crate) speed: Vec<f64>,
}

impl<'a> Context<'a> {
    pub(crate) fn new(
        routed: &'a RoutedTokens,
        cluster: &'a PlacementCluster,
    ) -> Result<Self, TrafficError> {
        check_same_len(
            "routed_tokens source GPUs vs cluster GPUs",
            routed.sources(),
            cluster.gpus(),
        )?;
        let (node, gpus_of_node) = compact_nodes(cluster.node_of_gpu());
        let by_node = routed.by_node(&node, gpus_of_node.len());
        Ok(Self {
            routed,
            cluster,
            node,
            gpus_of_node,
            by_node,
            loads: routed.expert_loads(),
            speed: cluster.speed_of_gpu().to_vec(),
        })
    }

    pub(crate) fn nodes(&self) -> usize {
        self.gpus_of_node.len()
    }

    pub(crate) fn experts(&self) -> usize {
        self.loads.len()
    }

    pub(crate) fn gpus(&self) -> usize {
        self.node.len()
    }

    /// The static dispatch of SGLang (`--ep-dispatch-algorithm static`, PR 9849) with even
    /// splits: a source holding a replica serves itself; other sources of a node with replicas
    /// split evenly over that node's replicas; sources of nodes without one split evenly over
    /// all replicas. Calls `add(gpu, tokens)` for each replica GPU (each once) and returns the
    /// cross-node tokens. Any split the planners compare against is at least as balanced
    /// ([`crate::dispatch()`] finds the best), so loads from this one are upper bounds.
    pub(crate) fn proxy_contribution(
        &self,
        e: usize,
        replicas: &[usize],
        mut add: impl FnMut(usize, f64),
    ) -> f64 {
        if replicas.is_empty() {
            return self.loads[e];
        }
        let r = self.routed;
        let mut remote = self.loads[e];
        // Replicas per node, and the node's own replicas' self-served tokens: on the stack for
        // the usual few replicas (this runs for every move the local search scores).
        let mut stack = [(0usize, 0usize, 0.0f64); 8];
        let mut heap = Vec::new();
        let room: &mut [(usize, usize, f64)] = if replicas.len() <= stack.len() {
            &mut stack
        } else {
            heap.resize(replicas.len(), (0, 0, 0.0));
            &mut heap
        };
        let mut len = 0;
        for &g in replicas {
            let n = self.node[g];
            let own = r.get(g, e);
            match room[..len].iter_mut().find(|(m, _, _)| *m == n) {
                Some(entry) => {
                    entry.1 += 1;
                    entry.2 += own;
                }
                None => {
                    room[len] = (n, 1, own);
                    len += 1;
                }
            }
        }
        let per_node = &room[..len];
        for &(n, _, _) in per_node {
            remote -= self.by_node[n][e];
        }
        let remote = remote.max(0.0);
        let remote_share = remote / replicas.len() as f64;
        for &g in replicas {
            let n = self.node[g];
            let (count, own) = per_node
                .iter()
                .find(|(m, _, _)| *m == n)
                .map_or((1, 0.0), |&(_, c, o)| (c, o));
            let in_node = (self.by_node[n][e] - own).max(0.0) / count as f64;
            add(g, r.get(g, e) + in_node + remote_share);
        }
        remote
    }
}

/// Renumbers node labels `0..K` in order of first appearance.
fn compact_nodes(labels: &[usize]) -> (Vec<usize>, Vec<Vec<usize>>) {
    // Labels are below the GPU count (`PlacementCluster::new` checks it).
    let mut id_of_label = vec![usize::MAX; labels.len()];
    let mut node = Vec::with_capacity(labels.len());
    let mut gpus_of_node: Vec<Vec<usize>> = Vec::new();
    for (g, &l) in labels.iter().enumerate() {
        let slot = id_of_label.get_mut(l);
        let id = match slot {
            Some(id) if *id != usize::MAX => *id,
            Some(id) => {
                *id = gpus_of_node.len();
                gpus_of_node.push(Vec::new());
                *id
            }
            None => {
                gpus_of_node.push(Vec::new());
                gpus_of_node.len() - 1
            }
        };
        node.push(id);
        gpus_of_node[id].push(g);
    }
    (node, gpus_of_node)
}

/// The distinct GPUs holding each expert under a slot map (EPLB's duplicates on one GPU count
/// once), for a map already validated against the cluster.
pub(crate) fn replica_gpus(
    physical_to_logical: &[usize],
    cluster: &PlacementCluster,
    experts: usize,
) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); experts];
    for (s, &e) in physical_to_logical.iter().enumerate() {
        if let (Some(g), Some(list)) = (cluster.gpu_of_slot(s), out.get_mut(e)) {
            if !list.contains(&g) {
                list.push(g);
            }
        }
    }
    out
}

/// A DeepSeek-like layer for the diagnostics: layer `layer` of `layers` locality traces on `g`
/// GPUs in `k` nodes with `s` slots each, and the balance limit the planner uses by default
/// (1% above the compute-only optimal plan).
#[cfg(test)]
pub(crate) fn deepseek_case(
    layers: usize,
    layer: usize,
    (g, k, s): (usize, usize, usize),
    locality: f64,
) -> (RoutedTokens, PlacementCluster, f64) {
    use crate::workload::{LocalityTrace, locality_trace};
    use expert_placement::{LayerLoads, PlacementAlgorithm, place};
    let mut traces = locality_trace(&LocalityTrace::deepseek_like(layers, g, k, locality), 1)
        .unwrap_or_else(|e| panic!("{e}"));
    let t = traces.swap_remove(layer);
    let c = PlacementCluster::uniform(g, s, k).unwrap_or_else(|e| panic!("{e}"));
    let limit = {
        let ctx = Context::new(&t, &c).unwrap_or_else(|e| panic!("{e}"));
        let w = LayerLoads::new(ctx.loads.clone()).unwrap_or_else(|e| panic!("{e}"));
        place(&w, &c, PlacementAlgorithm::Optimal)
            .unwrap_or_else(|e| panic!("{e}"))
            .max_gpu_load
            * 1.01
    };
    (t, c, limit)
}
