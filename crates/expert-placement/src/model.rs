//! The validated inputs of expert placement: the cluster (slots, speeds, nodes) and one layer's
//! per-expert loads.

use std::ops::Range;

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use crate::error::PlacementError;
use comm_cost_model::{check_at_most, check_entries, check_positive_entries, check_same_len};

/// Largest number of physical slots (replicas) a [`PlacementCluster`] may have, and of experts
/// a [`LayerLoads`] may have, `2^24`: every algorithm keeps a few words per slot and per expert,
/// and all index arithmetic stays far from overflow. It is the crate's limit on every other
/// expert or GPU count that sizes an allocation too (the random baselines, padding, per-GPU
/// loads, bipartite graphs, synthetic workloads).
pub const MAX_PLACEMENT_SLOTS: usize = 1 << 24;

/// Largest number of entries the multi-layer planners return, `2^28` (2 GiB of words):
/// `layers · R` slot entries of [`crate::place_layers`], [`crate::rebalance_layers`] and
/// [`crate::rebalance_experts`]. Checked before planning: many layers of few experts on a
/// cluster of `2^24` slots would otherwise fill memory.
pub const MAX_PLAN_ENTRIES: usize = 1 << 28;

/// Most entries of padded `logical_to_physical` maps, `layers · E · width` where `width` is the
/// most replicas of one expert: `2^26`, 512 MiB as `i64`. The one limit for every padded map
/// of the workspace ([`crate::rebalance_experts`]' table, the facade's plans, the Python
/// drop-in): a map that would need more is refused with [`crate::PlacementError::Input`] (`TooLarge`)
/// before it is allocated (16,384 experts with one hot expert on 32,768 GPUs would need
/// `2^28`).
pub const MAX_PADDED_MAP_ENTRIES: usize = 1 << 26;

/// Largest `G · E` (GPUs times experts) the planners accept, `2^34`: they keep a GPU × expert
/// membership bitset of `G · E / 8` bytes (2 GiB at the limit).
pub const MAX_GPU_EXPERT_PAIRS: usize = 1 << 34;

/// GPUs that host expert replicas: each GPU's slot count, relative speed and node.
///
/// Slot `s` of a placement (an index into [`crate::Placement::physical_to_logical`]) belongs to
/// the GPU whose [`PlacementCluster::slot_range`] contains it: GPU 0 holds the first
/// `slots_of_gpu[0]` slots, GPU 1 the next `slots_of_gpu[1]`, and so on (SGLang's and EPLB's
/// layout `gpu = s / S` when every GPU has `S` slots). A GPU's load is the sum of its replicas'
/// loads divided by its speed (1.0 for the reference GPU).
///
/// # Examples
///
/// ```
/// use expert_placement::PlacementCluster;
///
/// // 8 GPUs with 2 slots each in 2 nodes of 4.
/// let c = PlacementCluster::uniform(8, 2, 2)?;
/// assert_eq!((c.gpus(), c.total_slots(), c.nodes()), (8, 16, 2));
/// assert_eq!(c.slot_range(3), 6..8);
/// assert_eq!(c.gpu_of_slot(7), Some(3));
/// assert_eq!(c.node_of_gpu()[5], 1);
/// // Heterogeneous: a fast GPU with 3 slots next to a slow one with 1.
/// let h = PlacementCluster::new(vec![3, 1], vec![2.0, 1.0], vec![0, 0])?;
/// assert_eq!(h.uniform_slots(), None);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ClusterFields")]
pub struct PlacementCluster {
    slots_of_gpu: Vec<usize>,
    speed_of_gpu: Vec<f64>,
    node_of_gpu: Vec<usize>,
    #[serde(skip_serializing)]
    first_slot: Vec<usize>,
    #[serde(skip_serializing)]
    nodes: usize,
}

/// The serialized fields of a [`PlacementCluster`]; speeds default to 1 and nodes to one node.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterFields {
    slots_of_gpu: Vec<usize>,
    #[serde(default)]
    speed_of_gpu: Option<Vec<f64>>,
    #[serde(default)]
    node_of_gpu: Option<Vec<usize>>,
}

impl TryFrom<ClusterFields> for PlacementCluster {
    type Error = PlacementError;

    fn try_from(f: ClusterFields) -> Result<Self, Self::Error> {
        let n = f.slots_of_gpu.len();
        Self::new(
            f.slots_of_gpu,
            f.speed_of_gpu.unwrap_or_else(|| vec![1.0; n]),
            f.node_of_gpu.unwrap_or_else(|| vec![0; n]),
        )
    }
}

impl PlacementCluster {
    /// A cluster from each GPU's slot count, relative speed and node id.
    ///
    /// Node ids are labels below the number of GPUs; nodes may have any sizes and need not be
    /// contiguous (only EPLB's hierarchical policy asks for equal contiguous nodes).
    ///
    /// # Errors
    ///
    /// [`PlacementError::Input`] (`Empty`) for no GPU, [`PlacementError::Input`] (`SizeMismatch`) when the three
    /// vectors differ in length, [`PlacementError::Input`] (`InvalidEntry` or `NotPositiveEntry`)
    /// for a speed that is not a positive finite number, [`PlacementError::Input`] (`NotPositiveEntry`) for a GPU
    /// with no slot, [`PlacementError::Input`] (`IndexOutOfRange`) for a node id `>=` the number of GPUs,
    /// [`PlacementError::Input`] (`TooLarge`) above [`MAX_PLACEMENT_SLOTS`] slots in total.
    ///
    /// # Complexity
    ///
    /// `O(G)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::InputError;
    /// use expert_placement::{PlacementError, PlacementCluster};
    ///
    /// let c = PlacementCluster::new(vec![2, 2, 3], vec![1.0, 1.0, 1.5], vec![0, 0, 1])?;
    /// assert_eq!(c.total_slots(), 7);
    /// assert!(matches!(
    ///     PlacementCluster::new(vec![2], vec![0.0], vec![0]),
    ///     Err(PlacementError::Input(InputError::NotPositiveEntry { .. }))
    /// ));
    /// # Ok::<(), PlacementError>(())
    /// ```
    pub fn new(
        slots_of_gpu: Vec<usize>,
        speed_of_gpu: Vec<f64>,
        node_of_gpu: Vec<usize>,
    ) -> Result<Self, PlacementError> {
        let g = slots_of_gpu.len();
        if g == 0 {
            return Err(PlacementError::Input(InputError::Empty { what: "GPUs" }));
        }
        check_same_len("speed_of_gpu vs GPUs", speed_of_gpu.len(), g)?;
        check_same_len("node_of_gpu vs GPUs", node_of_gpu.len(), g)?;
        check_positive_entries("speed_of_gpu", &speed_of_gpu)?;
        let mut first_slot = Vec::with_capacity(g + 1);
        let mut total = 0usize;
        first_slot.push(0);
        for (gpu, &s) in slots_of_gpu.iter().enumerate() {
            if s == 0 {
                return Err(PlacementError::Input(InputError::NotPositiveEntry {
                    what: "slots_of_gpu",
                    index: gpu,
                    value: 0.0,
                }));
            }
            total = total.saturating_add(s);
            check_at_most("total slots", MAX_PLACEMENT_SLOTS, total)?;
            first_slot.push(total);
        }
        let mut seen = vec![false; g];
        for &node in &node_of_gpu {
            let flag =
                seen.get_mut(node)
                    .ok_or(PlacementError::Input(InputError::index_out_of_range(
                        "node_of_gpu",
                        node,
                        g,
                    )))?;
            *flag = true;
        }
        let nodes = seen.iter().filter(|&&s| s).count();
        Ok(Self {
            slots_of_gpu,
            speed_of_gpu,
            node_of_gpu,
            first_slot,
            nodes,
        })
    }

    /// `gpus` GPUs of speed 1 with `slots_per_gpu` slots each, in `nodes` contiguous nodes.
    ///
    /// When `nodes` does not divide `gpus` the first `gpus % nodes` nodes get one GPU more (no
    /// `num_gpus % num_nodes == 0` assert).
    ///
    /// # Errors
    ///
    /// [`PlacementError::Input`] (`Empty`) for no GPU, [`PlacementError::Input`] (`NotPositiveEntry`) for no slot or no
    /// node, [`PlacementError::Input`] (`TooLarge`) for more nodes than GPUs or more than
    /// [`MAX_PLACEMENT_SLOTS`] slots.
    ///
    /// # Complexity
    ///
    /// `O(G)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use expert_placement::PlacementCluster;
    ///
    /// let c = PlacementCluster::uniform(5, 4, 2)?;
    /// assert_eq!(c.node_of_gpu(), &[0, 0, 0, 1, 1]);
    /// assert_eq!(c.uniform_slots(), Some(4));
    /// # Ok::<(), expert_placement::PlacementError>(())
    /// ```
    pub fn uniform(
        gpus: usize,
        slots_per_gpu: usize,
        nodes: usize,
    ) -> Result<Self, PlacementError> {
        if gpus == 0 {
            return Err(PlacementError::Input(InputError::Empty { what: "GPUs" }));
        }
        if nodes == 0 {
            return Err(PlacementError::Input(InputError::NotPositiveEntry {
                what: "nodes",
                index: 0,
                value: 0.0,
            }));
        }
        if slots_per_gpu == 0 {
            return Err(PlacementError::Input(InputError::NotPositiveEntry {
                what: "slots_of_gpu",
                index: 0,
                value: 0.0,
            }));
        }
        check_at_most("nodes (at most one per GPU)", gpus, nodes)?;
        // Sizes before allocating: with no slot per GPU, `usize::MAX` GPUs used to pass this
        // check and abort allocating the node list. Every GPU has a slot, so `gpus` is bounded
        // too.
        check_at_most(
            "total slots",
            MAX_PLACEMENT_SLOTS,
            gpus.saturating_mul(slots_per_gpu),
        )?;
        let (base, extra) = (gpus / nodes, gpus % nodes);
        let node_of_gpu = (0..nodes)
            .flat_map(|n| std::iter::repeat_n(n, base + usize::from(n < extra)))
            .collect();
        Self::new(vec![slots_per_gpu; gpus], vec![1.0; gpus], node_of_gpu)
    }

    /// Number of GPUs `G`.
    #[must_use]
    pub fn gpus(&self) -> usize {
        self.slots_of_gpu.len()
    }

    /// Number of slots `R` (physical experts) over all GPUs.
    #[must_use]
    pub fn total_slots(&self) -> usize {
        self.first_slot[self.gpus()]
    }

    /// Number of distinct nodes.
    #[must_use]
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Slot count of each GPU.
    #[must_use]
    pub fn slots_of_gpu(&self) -> &[usize] {
        &self.slots_of_gpu
    }

    /// Relative speed of each GPU (a GPU's load is divided by it).
    #[must_use]
    pub fn speed_of_gpu(&self) -> &[f64] {
        &self.speed_of_gpu
    }

    /// Node id of each GPU.
    #[must_use]
    pub fn node_of_gpu(&self) -> &[usize] {
        &self.node_of_gpu
    }

    /// The slots of `gpu` (an empty range for a GPU out of range).
    #[must_use]
    pub fn slot_range(&self, gpu: usize) -> Range<usize> {
        let next = gpu.checked_add(1).and_then(|g| self.first_slot.get(g));
        match (self.first_slot.get(gpu), next) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    }

    /// The GPU holding slot `slot`, or `None` past the last slot.
    #[must_use]
    pub fn gpu_of_slot(&self, slot: usize) -> Option<usize> {
        (slot < self.total_slots()).then(|| self.first_slot.partition_point(|&f| f <= slot) - 1)
    }

    /// `Some(S)` when every GPU has `S` slots.
    #[must_use]
    pub fn uniform_slots(&self) -> Option<usize> {
        let s = self.slots_of_gpu[0];
        self.slots_of_gpu.iter().all(|&x| x == s).then_some(s)
    }

    /// Whether every GPU has speed 1.
    #[must_use]
    pub fn is_homogeneous(&self) -> bool {
        self.speed_of_gpu.iter().all(|&v| v == 1.0)
    }

    /// The GPU of every slot, in slot order (length [`PlacementCluster::total_slots`]).
    #[must_use]
    pub fn gpu_of_each_slot(&self) -> Vec<usize> {
        (0..self.gpus())
            .flat_map(|g| std::iter::repeat_n(g, self.slots_of_gpu[g]))
            .collect()
    }

    /// Checks that a GPU × expert bitset for `experts` experts stays within
    /// [`MAX_GPU_EXPERT_PAIRS`].
    pub(crate) fn check_pairs(&self, experts: usize) -> Result<(), PlacementError> {
        check_at_most("experts", MAX_PLACEMENT_SLOTS, experts)?;
        Ok(check_at_most(
            "GPUs x experts",
            MAX_GPU_EXPERT_PAIRS,
            self.gpus().saturating_mul(experts),
        )?)
    }

    /// Checks that `experts` logical experts fit: at least one slot each, no GPU with more slots
    /// than distinct experts, and the size limits.
    pub(crate) fn check_experts(&self, experts: usize) -> Result<(), PlacementError> {
        self.check_pairs(experts)?;
        if experts > self.total_slots() {
            return Err(PlacementError::InsufficientCapacity {
                capacity: self.total_slots(),
                experts,
            });
        }
        match self.slots_of_gpu.iter().position(|&s| s > experts) {
            Some(gpu) => Err(PlacementError::SlotsExceedExperts {
                gpu,
                slots: self.slots_of_gpu[gpu],
                experts,
            }),
            None => Ok(()),
        }
    }
}

/// One MoE layer's load per logical expert (tokens routed to it in a window), validated.
///
/// # Examples
///
/// ```
/// use comm_cost_model::InputError;
/// use expert_placement::{LayerLoads, PlacementError};
///
/// let w = LayerLoads::new(vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0])?;
/// assert_eq!((w.len(), w.total()), (8, 1450.0));
/// assert!(matches!(
///     LayerLoads::new(vec![1.0, f64::NAN]),
///     Err(PlacementError::Input(InputError::InvalidEntry { index: 1, .. }))
/// ));
/// # Ok::<(), PlacementError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<f64>", into = "Vec<f64>")]
pub struct LayerLoads {
    loads: Vec<f64>,
    total: f64,
}

impl LayerLoads {
    /// Validates one layer's loads.
    ///
    /// # Errors
    ///
    /// [`PlacementError::Input`] (`Empty`) for no expert, [`PlacementError::Input`] (`InvalidEntry`) for a NaN,
    /// infinite or negative load, [`PlacementError::Input`] when the total overflows to infinity,
    /// [`PlacementError::Input`] (`TooLarge`) above [`MAX_PLACEMENT_SLOTS`] experts.
    ///
    /// # Complexity
    ///
    /// `O(E)`.
    pub fn new(loads: Vec<f64>) -> Result<Self, PlacementError> {
        if loads.is_empty() {
            return Err(PlacementError::Input(InputError::Empty {
                what: "expert loads",
            }));
        }
        check_at_most("experts", MAX_PLACEMENT_SLOTS, loads.len())?;
        check_entries("expert loads", &loads)?;
        let total: f64 = loads.iter().sum();
        if !total.is_finite() {
            return Err(InputError::NonFinite {
                what: "total expert load",
                value: total,
            }
            .into());
        }
        Ok(Self { loads, total })
    }

    /// Validates several layers (or windows) at once.
    ///
    /// # Errors
    ///
    /// As [`LayerLoads::new`] for each row, [`PlacementError::Input`] (`Empty`) for no row and
    /// [`PlacementError::Input`] (`SizeMismatch`) when rows have different expert counts.
    ///
    /// # Complexity
    ///
    /// `O(total entries)`.
    pub fn layers(rows: Vec<Vec<f64>>) -> Result<Vec<Self>, PlacementError> {
        let first = rows
            .first()
            .ok_or(PlacementError::Input(InputError::Empty { what: "layers" }))?
            .len();
        rows.into_iter()
            .map(|row| {
                check_same_len("experts of a layer", row.len(), first)?;
                Self::new(row)
            })
            .collect()
    }

    /// Number of logical experts `E`.
    #[must_use]
    pub fn len(&self) -> usize {
        self.loads.len()
    }

    /// Always false (a validated layer has at least one expert).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.loads.is_empty()
    }

    /// The loads.
    #[must_use]
    pub fn as_slice(&self) -> &[f64] {
        &self.loads
    }

    /// Sum of the loads.
    #[must_use]
    pub fn total(&self) -> f64 {
        self.total
    }
}

impl TryFrom<Vec<f64>> for LayerLoads {
    type Error = PlacementError;

    fn try_from(loads: Vec<f64>) -> Result<Self, Self::Error> {
        Self::new(loads)
    }
}

impl From<LayerLoads> for Vec<f64> {
    fn from(l: LayerLoads) -> Self {
        l.loads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_ranges_follow_gpu_order() {
        let c = PlacementCluster::new(vec![2, 3, 1], vec![1.0; 3], vec![0, 1, 1]).unwrap();
        assert_eq!(c.total_slots(), 6);
        assert_eq!(c.gpu_of_each_slot(), vec![0, 0, 1, 1, 1, 2]);
        for s in 0..6 {
            let g = c.gpu_of_slot(s).unwrap();
            assert!(c.slot_range(g).contains(&s));
        }
        assert_eq!(c.gpu_of_slot(6), None);
        assert_eq!(c.slot_range(9), 0..0);
        assert_eq!(c.nodes(), 2);
    }

    #[test]
    fn bad_clusters_are_typed_errors() {
        assert!(matches!(
            PlacementCluster::new(vec![], vec![], vec![]),
            Err(PlacementError::Input(InputError::Empty { .. }))
        ));
        assert!(matches!(
            PlacementCluster::new(vec![1, 0], vec![1.0; 2], vec![0; 2]),
            Err(PlacementError::Input(InputError::NotPositiveEntry {
                index: 1,
                ..
            }))
        ));
        assert!(matches!(
            PlacementCluster::new(vec![1], vec![1.0; 2], vec![0]),
            Err(PlacementError::Input(InputError::SizeMismatch { .. }))
        ));
        assert!(matches!(
            PlacementCluster::new(vec![1], vec![f64::INFINITY], vec![0]),
            Err(PlacementError::Input(InputError::InvalidEntry { .. }))
        ));
        assert!(matches!(
            PlacementCluster::new(vec![1], vec![1.0], vec![1]),
            Err(PlacementError::Input(InputError::IndexOutOfRange {
                index: 1,
                ..
            }))
        ));
        assert!(matches!(
            PlacementCluster::uniform(1 << 20, 1 << 10, 1),
            Err(PlacementError::Input(InputError::TooLarge { .. }))
        ));
        assert!(matches!(
            PlacementCluster::uniform(2, 1, 3),
            Err(PlacementError::Input(InputError::TooLarge { .. }))
        ));
        assert!(matches!(
            LayerLoads::new(vec![f64::MAX, f64::MAX]),
            Err(PlacementError::Input(InputError::NonFinite { .. }))
        ));
    }

    #[test]
    fn uniform_spreads_uneven_nodes() {
        let c = PlacementCluster::uniform(7, 1, 3).unwrap();
        assert_eq!(c.node_of_gpu(), &[0, 0, 0, 1, 1, 2, 2]);
    }
}
