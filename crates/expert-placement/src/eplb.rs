//! DeepSeek's expert-parallelism load balancer (EPLB), the baseline every engine runs, written
//! from its published description.
//!
//! `rebalance_experts(weight, num_replicas, num_groups, num_nodes, num_gpus)` of
//! deepseek-ai/EPLB has two policies. The hierarchical one (used when the group count is a
//! multiple of the node count) packs expert groups onto nodes by balanced packing, replicates
//! experts inside each node by the greedy "largest load per replica gets the next replica", and
//! packs each node's replicas onto its GPUs by balanced packing. The global one is the same with
//! one group and one node. Balanced packing sorts items by weight, heaviest first, and gives each
//! to the lightest pack that still has room (every pack takes the same number of items). Nothing
//! stops two replicas of one expert from landing on the same GPU (deepseek-ai/EPLB issue 22).

use comm_cost_model::InputError;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::error::PlacementError;
use crate::model::{LayerLoads, MAX_PADDED_MAP_ENTRIES, MAX_PLAN_ENTRIES, PlacementCluster};
use crate::pack::Load;
use crate::plan::Placement;
use crate::replicate::replicate;
use comm_cost_model::{check_at_most, check_divides};

/// Which of EPLB's two policies to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EplbPolicy {
    /// Groups to nodes, replication inside nodes, replicas to GPUs. Needs `groups` to divide the
    /// expert count, the node count to divide `groups`, and equal contiguous nodes.
    Hierarchical {
        /// Number of expert groups (contiguous experts, as in DeepSeek-V3's group-limited
        /// routing).
        groups: usize,
    },
    /// Replication and packing over the whole cluster.
    Global,
}

impl EplbPolicy {
    /// The policy EPLB's `rebalance_experts` picks: hierarchical when `groups` is a multiple of
    /// `nodes`, global otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use expert_placement::EplbPolicy;
    /// assert_eq!(EplbPolicy::for_shape(4, 2), EplbPolicy::Hierarchical { groups: 4 });
    /// assert_eq!(EplbPolicy::for_shape(3, 2), EplbPolicy::Global);
    /// ```
    #[must_use]
    pub fn for_shape(groups: usize, nodes: usize) -> Self {
        if nodes > 0 && groups % nodes == 0 {
            Self::Hierarchical { groups }
        } else {
            Self::Global
        }
    }
}

/// EPLB's return values for several layers, in its shapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EplbTables {
    /// `[layers][R]`: the logical expert of each physical slot.
    pub physical_to_logical: Vec<Vec<usize>>,
    /// `[layers][E][max replicas]`: the slots of each expert in replica-rank order, `-1` padded.
    pub logical_to_physical: Vec<Vec<Vec<i64>>>,
    /// `[layers][E]`: replica count of each expert.
    pub logical_count: Vec<Vec<usize>>,
}

/// EPLB's placement of one layer (the baseline), scored.
///
/// DeepSeek's EPLB (deepseek-ai/EPLB, `rebalance_experts`) written from its description (module
/// docs); ties go to the lower index, as with Python's `min` and torch's `max`. Speeds are
/// ignored when planning (EPLB has none) but count in the score. The plan may hold two replicas
/// of one expert on a GPU; [`Placement::duplicates_on_gpu`] counts them.
///
/// # Errors
///
/// [`PlacementError::InsufficientCapacity`] for fewer slots than experts,
/// [`PlacementError::NotUniform`] for unequal slot counts (or, hierarchical, nodes that are not
/// equal blocks of consecutive GPUs numbered in order), [`PlacementError::Input`] (`NotDivisible`) when
/// `groups` does not divide the expert count or the node count does not divide `groups`,
/// [`PlacementError::Input`] (`NonFinite`) when a figure of the plan overflows (as
/// [`Placement::evaluate`]).
///
/// # Complexity
///
/// `O(R log R)` time, `O(R)` space.
///
/// # Examples
///
/// ```
/// use expert_placement::{EplbPolicy, LayerLoads, PlacementCluster, eplb};
///
/// let c = PlacementCluster::uniform(8, 2, 1)?;
/// let w = LayerLoads::new(vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0])?;
/// let p = eplb(&w, &c, EplbPolicy::Global)?;
/// // vLLM PR 37656 reports EPLB at 232 here; the optimum is 590 / 3.
/// assert_eq!(p.max_gpu_load, 232.0);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn eplb(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    policy: EplbPolicy,
) -> Result<Placement, PlacementError> {
    let shape = Shape::of(loads.len(), cluster, policy)?;
    let (map, _) = shape.layer(loads.as_slice());
    let value = crate::optimal::max_load(loads.as_slice(), cluster, &map);
    let bound = crate::bound::lower_bound_below(loads, cluster, value);
    Placement::scored(loads.as_slice(), cluster, map, bound)
}

/// EPLB's `rebalance_experts` with its signature and return shapes.
///
/// `weights[layer][e]` are the loads; the policy is [`EplbPolicy::for_shape`]`(num_groups,
/// num_nodes)`, and GPU `g` belongs to node `g / (num_gpus / num_nodes)`. The result equals
/// [`eplb`] layer by layer, with EPLB's replica ranks in `logical_to_physical`.
///
/// # Errors
///
/// [`PlacementError::Input`] (`Empty`) for no layer, no GPU, no group or no node;
/// [`PlacementError::Input`] (`SizeMismatch`) for layers of different lengths; the load errors of
/// [`LayerLoads::new`]; [`PlacementError::Input`] (`NotDivisible`) for `num_replicas % num_gpus != 0` and,
/// hierarchical, `num_gpus % num_nodes != 0` or `E % num_groups != 0`;
/// [`PlacementError::InsufficientCapacity`] for fewer replicas than experts;
/// [`PlacementError::Input`] (`TooLarge`) when `layers · num_replicas` exceeds
/// [`crate::MAX_PLAN_ENTRIES`] or the `logical_to_physical` table (`layers · E · max replicas`)
/// exceeds [`crate::MAX_PADDED_MAP_ENTRIES`] (checked before it is allocated).
///
/// # Complexity
///
/// `O(layers · R log R)` time.
///
/// # Examples
///
/// ```
/// use expert_placement::rebalance_experts;
///
/// // The example of deepseek-ai/EPLB's README.
/// let weights = vec![
///     vec![90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0],
///     vec![20.0, 107.0, 104.0, 64.0, 19.0, 197.0, 187.0, 157.0, 172.0, 86.0, 16.0, 27.0],
/// ];
/// let t = rebalance_experts(&weights, 16, 4, 2, 8)?;
/// assert_eq!(t.physical_to_logical[0], vec![5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1]);
/// assert_eq!(t.logical_count[0][5], 2);
/// assert_eq!(t.logical_to_physical[0][7], vec![3, -1]);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn rebalance_experts(
    weights: &[Vec<f64>],
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
) -> Result<EplbTables, PlacementError> {
    for (what, v) in [
        ("num_gpus", num_gpus),
        ("num_groups", num_groups),
        ("num_nodes", num_nodes),
    ] {
        if v == 0 {
            return Err(PlacementError::Input(InputError::Empty { what }));
        }
    }
    let layers = LayerLoads::layers(weights.to_vec())?;
    check_divides(
        "num_replicas by num_gpus",
        num_replicas as u64,
        num_gpus as u64,
    )?;
    let policy = EplbPolicy::for_shape(num_groups, num_nodes);
    let nodes = match policy {
        EplbPolicy::Hierarchical { .. } => num_nodes,
        EplbPolicy::Global => 1,
    };
    check_divides("num_gpus by num_nodes", num_gpus as u64, nodes as u64)?;
    let cluster = PlacementCluster::uniform(num_gpus, num_replicas / num_gpus, nodes)?;
    let shape = Shape::of(layers[0].len(), &cluster, policy)?;
    check_at_most(
        "layers x replicas",
        MAX_PLAN_ENTRIES,
        layers.len().saturating_mul(num_replicas),
    )?;
    let mut tables = EplbTables {
        physical_to_logical: Vec::new(),
        logical_to_physical: Vec::new(),
        logical_count: Vec::new(),
    };
    let mut ranks = Vec::new();
    for layer in &layers {
        let (map, rank) = shape.layer(layer.as_slice());
        tables
            .logical_count
            .push(crate::plan::counts(&map, layer.len()));
        tables.physical_to_logical.push(map);
        ranks.push(rank);
    }
    let width = tables
        .logical_count
        .iter()
        .flatten()
        .copied()
        .max()
        .unwrap_or(1);
    check_at_most(
        "logical_to_physical entries (layers x experts x replicas)",
        MAX_PADDED_MAP_ENTRIES,
        layers
            .len()
            .saturating_mul(layers[0].len())
            .saturating_mul(width),
    )?;
    for (map, rank) in tables.physical_to_logical.iter().zip(&ranks) {
        let mut l2p = vec![vec![-1i64; width]; layers[0].len()];
        for (slot, (&e, &r)) in map.iter().zip(rank).enumerate() {
            l2p[e][r] = i64::try_from(slot).unwrap_or(i64::MAX);
        }
        tables.logical_to_physical.push(l2p);
    }
    Ok(tables)
}

/// The validated sizes of one EPLB run.
#[derive(Debug, Clone, Copy)]
struct Shape {
    experts: usize,
    groups: usize,
    nodes: usize,
    gpus: usize,
    replicas: usize,
}

impl Shape {
    fn of(
        experts: usize,
        cluster: &PlacementCluster,
        policy: EplbPolicy,
    ) -> Result<Self, PlacementError> {
        if experts > cluster.total_slots() {
            return Err(PlacementError::InsufficientCapacity {
                capacity: cluster.total_slots(),
                experts,
            });
        }
        if cluster.uniform_slots().is_none() {
            return Err(PlacementError::NotUniform {
                what: "slots per GPU (EPLB)",
            });
        }
        let (groups, nodes) = match policy {
            EplbPolicy::Global => (1, 1),
            EplbPolicy::Hierarchical { groups } => {
                if groups == 0 {
                    return Err(PlacementError::Input(InputError::Empty { what: "groups" }));
                }
                let nodes = cluster.nodes();
                check_divides("experts by groups", experts as u64, groups as u64)?;
                check_divides("groups by nodes", groups as u64, nodes as u64)?;
                let per = cluster.gpus() / nodes;
                let contiguous = cluster.gpus() % nodes == 0
                    && cluster
                        .node_of_gpu()
                        .iter()
                        .enumerate()
                        .all(|(g, &n)| n == g / per);
                if !contiguous {
                    return Err(PlacementError::NotUniform {
                        what: "nodes (EPLB's hierarchical policy needs equal blocks of consecutive GPUs)",
                    });
                }
                (groups, nodes)
            }
        };
        Ok(Self {
            experts,
            groups,
            nodes,
            gpus: cluster.gpus(),
            replicas: cluster.total_slots(),
        })
    }

    /// One layer: the slot-to-expert map and each slot's replica rank.
    fn layer(&self, w: &[f64]) -> (Vec<usize>, Vec<usize>) {
        let group_size = self.experts / self.groups;
        let groups_per_node = self.groups / self.nodes;
        let per_node = self.experts / self.nodes;
        let replicas_per_node = self.replicas / self.nodes;
        let gpus_per_node = self.gpus / self.nodes;
        let slots_per_gpu = self.replicas / self.gpus;
        // Step 1: groups onto nodes; "middle" ids number experts node by node.
        let group_load: Vec<f64> = w.chunks(group_size).map(|c| c.iter().sum()).collect();
        let (pack, rank) = balanced_packing(&group_load, self.nodes);
        let mut middle_to_logical = vec![0; self.experts];
        for e in 0..self.experts {
            let g = e / group_size;
            let middle = (pack[g] * groups_per_node + rank[g]) * group_size + e % group_size;
            middle_to_logical[middle] = e;
        }
        let mut map = vec![0; self.replicas];
        let mut ranks = vec![0; self.replicas];
        for node in 0..self.nodes {
            let local: Vec<f64> = (0..per_node)
                .map(|m| w[middle_to_logical[node * per_node + m]])
                .collect();
            // Step 2: replicate inside the node.
            let (count, order) = replicate(
                per_node,
                replicas_per_node - per_node,
                usize::MAX,
                |m, c| local[m] / c as f64,
            );
            let mut seen = vec![0; per_node];
            let physical: Vec<(usize, usize)> = (0..per_node)
                .chain(order)
                .map(|m| {
                    seen[m] += 1;
                    (m, seen[m] - 1)
                })
                .collect();
            // Step 3: replicas onto the node's GPUs.
            let replica_load: Vec<f64> = physical
                .iter()
                .map(|&(m, _)| local[m] / count[m] as f64)
                .collect();
            let (gpu, pos) = balanced_packing(&replica_load, gpus_per_node);
            for (p, &(m, r)) in physical.iter().enumerate() {
                let slot = node * replicas_per_node + gpu[p] * slots_per_gpu + pos[p];
                map[slot] = middle_to_logical[node * per_node + m];
                ranks[slot] = r;
            }
        }
        (map, ranks)
    }
}

/// EPLB's balanced packing of `weight.len()` items into `packs` packs of equal item counts:
/// heaviest item first (ties: lower index), each to the lightest pack with room (ties: lower
/// pack). Returns each item's pack and its position in the pack. With one item per pack, item
/// `i` goes to pack `i`. `O(n log n)` time: the packs with room sit in a heap of
/// `(load, pack)`, which picks what EPLB's scan of every pack picks.
fn balanced_packing(weight: &[f64], packs: usize) -> (Vec<usize>, Vec<usize>) {
    let n = weight.len();
    let per = n / packs;
    if per == 1 {
        return ((0..n).collect(), vec![0; n]);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| weight[b].total_cmp(&weight[a]).then(a.cmp(&b)));
    let (mut load, mut items) = (vec![0.0f64; packs], vec![0usize; packs]);
    let (mut pack, mut rank) = (vec![0; n], vec![0; n]);
    let mut open: BinaryHeap<Reverse<(Load, usize)>> =
        (0..packs).map(|p| Reverse((Load(0.0), p))).collect();
    for i in order {
        // `n = packs * per`, so a pack with room is left for every item.
        let p = open.pop().map_or(0, |Reverse((_, p))| p);
        pack[i] = p;
        rank[i] = items[p];
        load[p] += weight[i];
        items[p] += 1;
        if items[p] < per {
            open.push(Reverse((Load(load[p]), p)));
        }
    }
    (pack, rank)
}
