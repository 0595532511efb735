//! A cluster of workers joined by alpha-beta links (Aristos Table 1: `W`, `G`, `m_j`, `F_j`).

use comm_cost_model::InputError;
use comm_cost_model::{AlphaBeta, SquareMatrix, Worker, check_non_negative, check_positive};
use petgraph::graph::UnGraph;
use serde::{Deserialize, Serialize};

use crate::TopologyError;
use comm_cost_model::{check_at_most, check_count, check_same_len};

/// The raw fields of a [`Cluster`], validated on deserialization.
#[derive(Deserialize)]
struct ClusterFields {
    workers: Vec<Worker>,
    node_of_worker: Vec<usize>,
    alpha_s: SquareMatrix,
    beta_s_per_byte: SquareMatrix,
}

impl TryFrom<ClusterFields> for Cluster {
    type Error = TopologyError;

    fn try_from(f: ClusterFields) -> Result<Self, Self::Error> {
        Cluster::new(f.workers, f.node_of_worker, f.alpha_s, f.beta_s_per_byte)
    }
}

/// Workers, the node each sits in, and the alpha-beta cost of every ordered pair: the graph `G`
/// of Aristos Table 1.
///
/// Worker `j` ([`Worker`]: FLOP/s `F_j`, expert slots `m_j`) sits in node `node_of_worker[j]`
/// (a server or HB domain label, used by the one-group-per-node baseline). `alpha_s` entry
/// `(i, j)` is the start-up latency (s) and `beta_s_per_byte` entry `(i, j)` the inverse
/// bandwidth (s/byte) of a message from worker `i` to worker `j`. Matrices may be asymmetric
/// (measured links often are); operations that need symmetry say so. Diagonal entries are stored
/// as zero (a worker does not message itself). Serializes as
/// `{"workers": [...], "node_of_worker": [...], "alpha_s": [[...]], "beta_s_per_byte": [[...]]}`
/// (matrices as rows) and deserializes through [`Cluster::new`].
///
/// # Examples
///
/// ```
/// use topology_partition::Cluster;
/// // Two Perlmutter nodes (4 A100 each) with 32 expert slots per GPU.
/// let cluster = Cluster::perlmutter(2, 32)?;
/// assert_eq!(cluster.len(), 8);
/// let (intra, inter) = (cluster.link(0, 1).unwrap(), cluster.link(0, 4).unwrap());
/// assert!(inter.beta_s_per_byte > intra.beta_s_per_byte);
/// assert_eq!(cluster.link(0, 8), None);
/// assert_eq!(cluster.nodes(), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ClusterFields")]
pub struct Cluster {
    workers: Vec<Worker>,
    node_of_worker: Vec<usize>,
    alpha_s: SquareMatrix,
    beta_s_per_byte: SquareMatrix,
}

impl Cluster {
    /// Builds a cluster from its workers, their node labels and the `n x n` alpha (s) and beta
    /// (s/byte) matrices (diagonals are replaced by zero).
    ///
    /// # Errors
    ///
    /// [`TopologyError::Input`] (`Empty`) for no workers; [`TopologyError::Input`] with
    /// `SizeMismatch` if `node_of_worker` or a matrix does not have `n` entries (rows),
    /// `NotPositive`/`NonFinite` for a worker with bad FLOP/s, `TooLarge` for more than
    /// [`MAX_WORKERS`] workers.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    pub fn new(
        workers: Vec<Worker>,
        node_of_worker: Vec<usize>,
        alpha_s: SquareMatrix,
        beta_s_per_byte: SquareMatrix,
    ) -> Result<Self, TopologyError> {
        let n = workers.len();
        if n == 0 {
            return Err(TopologyError::Input(InputError::Empty { what: "cluster" }));
        }
        check_workers(n)?;
        for w in &workers {
            check_positive("worker FLOP/s", w.flop_per_s)?;
        }
        check_same_len("node labels", node_of_worker.len(), n)?;
        check_same_len("alpha (s) matrix side", alpha_s.n(), n)?;
        check_same_len("beta (s/byte) matrix side", beta_s_per_byte.n(), n)?;
        Ok(Self {
            workers,
            node_of_worker,
            alpha_s: alpha_s.with_zero_diagonal(),
            beta_s_per_byte: beta_s_per_byte.with_zero_diagonal(),
        })
    }

    /// As [`Cluster::new`], from row vectors (sender by row).
    ///
    /// # Errors
    ///
    /// [`TopologyError::Input`] for a ragged, non-square or empty matrix or a NaN, infinite or
    /// negative entry (`BadEntry`); as [`Cluster::new`].
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::Worker;
    /// use topology_partition::Cluster;
    /// let w = Worker::new(1e14, 4)?;
    /// let rows = vec![vec![0.0, 1e-5], vec![1e-5, 0.0]];
    /// let cluster = Cluster::from_rows(vec![w; 2], vec![0, 0], &rows, &rows)?;
    /// assert_eq!(cluster.link(0, 1).map(|l| l.alpha_s), Some(1e-5));
    /// assert!(Cluster::from_rows(vec![w; 2], vec![0, 0], &rows, &[vec![0.0]]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_rows(
        workers: Vec<Worker>,
        node_of_worker: Vec<usize>,
        alpha_s: &[Vec<f64>],
        beta_s_per_byte: &[Vec<f64>],
    ) -> Result<Self, TopologyError> {
        let alpha = SquareMatrix::from_rows(alpha_s)?;
        let beta = SquareMatrix::from_rows(beta_s_per_byte)?;
        Self::new(workers, node_of_worker, alpha, beta)
    }

    /// Number of workers `|W|`.
    #[must_use]
    pub fn len(&self) -> usize {
        self.workers.len()
    }

    /// Always `false`: a cluster has at least one worker.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// The workers, indexed by worker id.
    #[must_use]
    pub fn workers(&self) -> &[Worker] {
        &self.workers
    }

    /// The sub-cluster of the workers `ids`, in that order (renumbered `0..ids.len()`).
    ///
    /// # Errors
    ///
    /// [`TopologyError::Input`] (`Empty`) for no ids; [`TopologyError::BadWorker`] for an id out of range
    /// or listed twice.
    ///
    /// # Complexity
    ///
    /// `O(k^2)` time for k ids.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::Cluster;
    /// let node = Cluster::perlmutter(2, 32)?.restrict(&[4, 5, 6, 7])?;
    /// assert_eq!(node, Cluster::perlmutter(1, 32)?.relabel_nodes(1));
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn restrict(&self, ids: &[usize]) -> Result<Self, TopologyError> {
        crate::partition::check_disjoint(self.len(), std::iter::once(ids))?;
        let workers = ids.iter().map(|&i| self.workers[i]).collect();
        let nodes = ids.iter().map(|&i| self.node_of_worker[i]).collect();
        let n = self.len();
        let pick = |m: &SquareMatrix| {
            let flat = m.as_slice();
            SquareMatrix::from_fn(ids.len(), |a, b| flat[ids[a] * n + ids[b]])
        };
        Self::new(
            workers,
            nodes,
            pick(&self.alpha_s)?,
            pick(&self.beta_s_per_byte)?,
        )
    }

    /// The same cluster with every worker's node label shifted by `offset`.
    #[must_use]
    pub fn relabel_nodes(mut self, offset: usize) -> Self {
        for node in &mut self.node_of_worker {
            *node = node.saturating_add(offset);
        }
        self
    }

    /// The node label of every worker.
    #[must_use]
    pub fn node_of_worker(&self) -> &[usize] {
        &self.node_of_worker
    }

    /// Start-up latencies `alpha_ij`, seconds (`n x n`, sender by row).
    #[must_use]
    pub fn alpha_s(&self) -> &SquareMatrix {
        &self.alpha_s
    }

    /// Inverse bandwidths `beta_ij`, seconds per byte (`n x n`, sender by row).
    #[must_use]
    pub fn beta_s_per_byte(&self) -> &SquareMatrix {
        &self.beta_s_per_byte
    }

    /// The alpha-beta cost of a message from worker `i` to worker `j`; `None` out of range.
    #[must_use]
    pub fn link(&self, i: usize, j: usize) -> Option<AlphaBeta> {
        Some(AlphaBeta {
            alpha_s: self.alpha_s.get(i, j)?,
            beta_s_per_byte: self.beta_s_per_byte.get(i, j)?,
        })
    }

    /// Total expert slots `sum_j m_j` of the cluster, saturating at `u64::MAX` (more slots than
    /// that hold any expert count anyway).
    #[must_use]
    pub fn total_expert_slots(&self) -> u64 {
        self.workers
            .iter()
            .fold(0u64, |acc, w| acc.saturating_add(w.expert_slots as u64))
    }

    /// Worker ids grouped by node label, nodes in order of first appearance.
    ///
    /// # Complexity
    ///
    /// `O(n log n)` time.
    #[must_use]
    pub fn nodes(&self) -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = Vec::new();
        let mut members: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (id, &node) in self.node_of_worker.iter().enumerate() {
            let list = members.entry(node).or_default();
            if list.is_empty() {
                order.push(node);
            }
            list.push(id);
        }
        order
            .iter()
            .filter_map(|node| members.remove(node))
            .collect()
    }

    /// The slowest link of the cluster: the largest off-diagonal alpha and the largest beta
    /// (`alpha*`, `beta*` of Aristos Eq. 4, the worst case Rabenseifner's bound uses).
    ///
    /// A one-worker cluster has no link and returns zero costs.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    #[must_use]
    pub fn worst_link(&self) -> AlphaBeta {
        let mut worst = AlphaBeta {
            alpha_s: 0.0,
            beta_s_per_byte: 0.0,
        };
        // Diagonals are zero, so including them changes no maximum.
        for (&a, &b) in self
            .alpha_s
            .as_slice()
            .iter()
            .zip(self.beta_s_per_byte.as_slice())
        {
            worst.alpha_s = worst.alpha_s.max(a);
            worst.beta_s_per_byte = worst.beta_s_per_byte.max(b);
        }
        worst
    }

    /// Checks that both matrices are symmetric within a relative tolerance `rel_tol`.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Asymmetric`] naming the first asymmetric entry;
    /// [`TopologyError::Input`] for a negative or non-finite `rel_tol` (a NaN tolerance used
    /// to accept every matrix).
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    pub fn check_symmetric(&self, rel_tol: f64) -> Result<(), TopologyError> {
        check_non_negative("relative tolerance", rel_tol)?;
        let n = self.len();
        for (what, m) in [
            ("alpha (s)", &self.alpha_s),
            ("beta (s/byte)", &self.beta_s_per_byte),
        ] {
            let flat = m.as_slice();
            for i in 0..n {
                for j in i + 1..n {
                    let (forward, backward) = (flat[i * n + j], flat[j * n + i]);
                    if (forward - backward).abs() > rel_tol * forward.max(backward) {
                        return Err(TopologyError::Asymmetric {
                            what,
                            row: i,
                            col: j,
                            forward,
                            backward,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The cluster as an undirected petgraph graph: one node per worker (weight: the
    /// [`Worker`]), one edge per unordered pair (weight: its [`AlphaBeta`]).
    ///
    /// # Errors
    ///
    /// [`TopologyError::Asymmetric`] if the matrices are not symmetric (relative tolerance
    /// `1e-9`): an undirected edge needs one cost.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::Cluster;
    /// let graph = Cluster::perlmutter(1, 32)?.to_graph()?;
    /// assert_eq!((graph.node_count(), graph.edge_count()), (4, 6));
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn to_graph(&self) -> Result<UnGraph<Worker, AlphaBeta>, TopologyError> {
        self.check_symmetric(1e-9)?;
        let n = self.len();
        let mut graph = UnGraph::with_capacity(n, n * n.saturating_sub(1) / 2);
        let ids: Vec<_> = self.workers.iter().map(|w| graph.add_node(*w)).collect();
        for i in 0..n {
            for j in i + 1..n {
                if let Some(link) = self.link(i, j) {
                    graph.add_edge(ids[i], ids[j], link);
                }
            }
        }
        Ok(graph)
    }
}

/// Largest number of workers a cluster may have: its two `n x n` link matrices then hold at
/// most 512 MiB each, and [`crate::lysi_group`] sorts at most 2^25 edges.
///
/// Every constructor checks it before allocating (issue 13). It was `2^15`
/// (`comm_cost_model::MAX_MATRIX_SIDE`), but a cluster at that size needs two 8 GiB matrices
/// (and LysiGroup 2^29 edges), beyond the fuzz tests' time bound and 8 GB address space, which
/// pass sizes at the old limit. `2^13` still holds all of Perlmutter (7,168 GPUs).
pub const MAX_WORKERS: usize = 1 << 13;

/// Rejects a worker count above [`MAX_WORKERS`] (before allocating anything of that size).
pub(crate) fn check_workers(n: usize) -> Result<(), TopologyError> {
    Ok(check_at_most("workers in the cluster", MAX_WORKERS, n)?)
}

/// Checks a node size is at least one GPU.
pub(crate) fn check_gpus_per_node(gpus: usize) -> Result<usize, TopologyError> {
    Ok(check_count("GPUs per node", gpus, 1)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_validates() {
        let cluster = Cluster::perlmutter(1, 16).unwrap();
        let text = serde_json::to_string(&cluster).unwrap();
        let back: Cluster = serde_json::from_str(&text).unwrap();
        assert_eq!(back, cluster);
        let broken = text.replace("\"flop_per_s\":312000000000000.0", "\"flop_per_s\":-1.0");
        assert_ne!(broken, text);
        assert!(serde_json::from_str::<Cluster>(&broken).is_err());
    }

    #[test]
    fn json_is_rows_and_worst_link_is_the_network() {
        let cluster = Cluster::perlmutter(2, 16).unwrap();
        let text = serde_json::to_string(&cluster).unwrap();
        assert!(text.contains("\"alpha_s\":[[0.0,"), "{text}");
        assert!(!text.contains("\"dim\""));
        assert_eq!(cluster.worst_link(), crate::perlmutter_inter());
    }
}
