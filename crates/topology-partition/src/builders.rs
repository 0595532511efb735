//! Cluster builders: nodes of GPUs with intra- and inter-node alpha-beta, presets, mixes.

use comm_cost_model::units::{FlopPerSecond, megabytes, millis, tflop_per_s};
use comm_cost_model::{AlphaBeta, InputError, SquareMatrix, Worker, check_positive};
use serde::{Deserialize, Serialize};

use crate::cluster::{check_gpus_per_node, check_workers};
use crate::{Cluster, TopologyError};

/// One kind of node in a (possibly heterogeneous) cluster.
///
/// GPUs inside the node talk over `intra`; a message between two different nodes costs the
/// slower of the two nodes' `network` links, component-wise (the larger alpha and the larger
/// beta): a transfer is limited by its slowest endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NodeKind {
    /// GPUs in the node (at least 1).
    pub gpus: usize,
    /// Sustained FLOP/s of each GPU.
    pub flop_per_s: FlopPerSecond,
    /// Expert slots (`m_j`) of each GPU.
    pub expert_slots: usize,
    /// Alpha-beta cost between two GPUs of this node.
    pub intra: AlphaBeta,
    /// Alpha-beta cost of this node's network interface towards other nodes.
    pub network: AlphaBeta,
}

/// Perlmutter NVLink 3 cost: alpha 0.009 ms, beta 0.014 ms/MB. The Aristos text (§3.1, Fig. 3)
/// names NVLink 3.0 but prints no alpha-beta values; these are this crate's stand-ins.
#[must_use]
pub fn perlmutter_intra() -> AlphaBeta {
    AlphaBeta {
        alpha_s: millis(0.009),
        beta_s_per_byte: millis(0.014) / megabytes(1.0),
    }
}

/// Perlmutter inter-node cost: alpha 0.03 ms, beta 0.054 ms/MB (about 18.5 GB/s). Aristos §3.1
/// states 25 GB/s RDMA per GPU (0.04 ms/MB) but prints no measured alpha-beta values.
#[must_use]
pub fn perlmutter_inter() -> AlphaBeta {
    AlphaBeta {
        alpha_s: millis(0.03),
        beta_s_per_byte: millis(0.054) / megabytes(1.0),
    }
}

impl NodeKind {
    /// A Perlmutter GPU node: 4 A100 (312 TFLOP/s dense BF16 peak) with the stand-in links of
    /// [`perlmutter_intra`] and [`perlmutter_inter`], and `expert_slots` experts per GPU
    /// (Aristos §3.2: 32 for GPT-3 350M experts on an 80 GB A100, 16 on a 40 GB one).
    #[must_use]
    pub fn perlmutter(expert_slots: usize) -> Self {
        Self {
            gpus: 4,
            flop_per_s: tflop_per_s(312.0),
            expert_slots,
            intra: perlmutter_intra(),
            network: perlmutter_inter(),
        }
    }

    fn validated(&self) -> Result<Self, TopologyError> {
        check_gpus_per_node(self.gpus)?;
        check_positive("GPU FLOP/s", self.flop_per_s)?;
        AlphaBeta::new(self.intra.alpha_s, self.intra.beta_s_per_byte)?;
        AlphaBeta::new(self.network.alpha_s, self.network.beta_s_per_byte)?;
        Ok(*self)
    }
}

impl Cluster {
    /// A cluster of nodes of possibly different kinds, in order: node `k` holds the next
    /// `nodes[k].gpus` worker ids and carries node label `k`.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Input`] (`Empty`) for no nodes; [`TopologyError::Input`] (`CountTooSmall`) for a node of
    /// zero GPUs; [`TopologyError::Input`] for non-positive FLOP/s or bad link costs;
    /// [`TopologyError::Input`] (`Overflow`) if the worker count overflows, (`TooLarge`) if it
    /// exceeds [`crate::MAX_WORKERS`] (the alpha and beta matrices hold `n²` entries).
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time for n workers.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::{Cluster, NodeKind};
    /// let a100 = NodeKind::perlmutter(32);
    /// let small = NodeKind { gpus: 2, expert_slots: 16, ..a100 };
    /// let cluster = Cluster::heterogeneous(&[a100, small])?;
    /// assert_eq!(cluster.len(), 6);
    /// assert_eq!(cluster.total_expert_slots(), 4 * 32 + 2 * 16);
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn heterogeneous(nodes: &[NodeKind]) -> Result<Self, TopologyError> {
        if nodes.is_empty() {
            return Err(TopologyError::Input(InputError::Empty {
                what: "node list",
            }));
        }
        let kinds = nodes
            .iter()
            .map(NodeKind::validated)
            .collect::<Result<Vec<_>, _>>()?;
        let n = kinds
            .iter()
            .try_fold(0usize, |acc, k| acc.checked_add(k.gpus))
            .ok_or(InputError::Overflow {
                what: "worker count",
            })?;
        check_workers(n)?;
        let (mut workers, mut nodes) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (label, kind) in kinds.iter().enumerate() {
            for _ in 0..kind.gpus {
                workers.push(Worker::new(kind.flop_per_s, kind.expert_slots)?);
                nodes.push(label);
            }
        }
        let link = |i: usize, j: usize| -> AlphaBeta {
            let (a, b) = (&kinds[nodes[i]], &kinds[nodes[j]]);
            if nodes[i] == nodes[j] {
                a.intra
            } else {
                AlphaBeta {
                    alpha_s: a.network.alpha_s.max(b.network.alpha_s),
                    beta_s_per_byte: a.network.beta_s_per_byte.max(b.network.beta_s_per_byte),
                }
            }
        };
        let alpha = SquareMatrix::from_fn(n, |i, j| link(i, j).alpha_s)?;
        let beta = SquareMatrix::from_fn(n, |i, j| link(i, j).beta_s_per_byte)?;
        Cluster::new(workers, nodes, alpha, beta)
    }

    /// `nodes` identical nodes of `kind`.
    ///
    /// # Errors
    ///
    /// As [`Cluster::heterogeneous`]; [`TopologyError::Input`] (`CountTooSmall`) if `nodes == 0`.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time for n workers.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::{Cluster, NodeKind};
    /// let cluster = Cluster::uniform_nodes(3, NodeKind::perlmutter(16))?;
    /// assert_eq!(cluster.nodes().len(), 3);
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn uniform_nodes(nodes: usize, kind: NodeKind) -> Result<Self, TopologyError> {
        comm_cost_model::check_count("nodes", nodes, 1)?;
        // Every node has a GPU: check before allocating one entry per node.
        check_workers(nodes)?;
        Self::heterogeneous(&vec![kind; nodes])
    }

    /// `nodes` Perlmutter GPU nodes ([`NodeKind::perlmutter`]), `expert_slots` per A100.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Input`] (`CountTooSmall`) if `nodes == 0`, (`TooLarge`) beyond
    /// [`crate::MAX_WORKERS`] workers.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time for n = 4 · nodes workers.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::Cluster;
    /// assert_eq!(Cluster::perlmutter(4, 32)?.len(), 16); // Aristos §3.2: 4x4 A100 80 GB
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn perlmutter(nodes: usize, expert_slots: usize) -> Result<Self, TopologyError> {
        Self::uniform_nodes(nodes, NodeKind::perlmutter(expert_slots))
    }
}
