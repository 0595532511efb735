//! A cluster of workers joined by alpha-beta links (Aristos Table 1: `W`, `G`, `m_j`, `F_j`).

use comm_cost_model::units::FlopPerSecond;
use comm_cost_model::{AlphaBeta, check_positive};
use ndarray::{Array2, Array3};
use petgraph::graph::UnGraph;
use serde::{Deserialize, Serialize};

use crate::TopologyError;
use comm_cost_model::check_count;

/// One worker (GPU): its compute rate, how many experts its memory holds, and its node.
///
/// `flop_per_s` is `F_j` of Aristos Table 1 (the *actual* FLOP/s the worker sustains),
/// `expert_slots` is `m_j` (expert memory capacity, in experts), and `node` labels the server (or
/// HB domain) the worker sits in, used by the one-group-per-node baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    /// Sustained compute rate `F_j`, FLOP/s (positive).
    pub flop_per_s: FlopPerSecond,
    /// Expert memory capacity `m_j`: how many experts fit in the worker's memory.
    pub expert_slots: usize,
    /// Label of the node (server or HB domain) the worker belongs to.
    pub node: usize,
}

impl Worker {
    /// Builds a validated worker.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Value`] if `flop_per_s` is not a positive finite number.
    pub fn new(
        flop_per_s: FlopPerSecond,
        expert_slots: usize,
        node: usize,
    ) -> Result<Self, TopologyError> {
        Ok(Self {
            flop_per_s: check_positive("worker FLOP/s", flop_per_s)?,
            expert_slots,
            node,
        })
    }
}

/// The raw fields of a [`Cluster`], validated on deserialization.
#[derive(Deserialize)]
struct ClusterFields {
    workers: Vec<Worker>,
    alpha_s: Array2<f64>,
    beta_s_per_byte: Array2<f64>,
}

impl TryFrom<ClusterFields> for Cluster {
    type Error = TopologyError;

    fn try_from(fields: ClusterFields) -> Result<Self, Self::Error> {
        Cluster::new(fields.workers, fields.alpha_s, fields.beta_s_per_byte)
    }
}

/// Workers and the alpha-beta cost of every ordered pair: the graph `G` of Aristos Table 1.
///
/// `alpha_s[[i, j]]` is the start-up latency (s) and `beta_s_per_byte[[i, j]]` the inverse
/// bandwidth (s/byte) of a message from worker `i` to worker `j`. Matrices may be asymmetric
/// (measured links often are); operations that need symmetry say so. Diagonal entries are
/// not checked and are stored as zero (a worker does not message itself).
///
/// # Examples
///
/// ```
/// use topology_partition::Cluster;
/// // Two Perlmutter nodes (4 A100 each) with 32 expert slots per GPU.
/// let cluster = Cluster::perlmutter(2, 32)?;
/// assert_eq!(cluster.len(), 8);
/// let intra = cluster.link(0, 1);
/// let inter = cluster.link(0, 4);
/// assert!(inter.beta_s_per_byte > intra.beta_s_per_byte);
/// assert_eq!(cluster.nodes(), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ClusterFields")]
pub struct Cluster {
    workers: Vec<Worker>,
    alpha_s: Array2<f64>,
    beta_s_per_byte: Array2<f64>,
}

impl Cluster {
    /// Builds a cluster from its workers and the `n x n` alpha (s) and beta (s/byte) matrices.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Empty`] for no workers; [`TopologyError::Shape`] if a matrix is not
    /// `n x n`; [`TopologyError::BadEntry`] for a NaN, infinite or negative off-diagonal entry;
    /// [`TopologyError::Value`] for a worker with non-positive FLOP/s.
    ///
    /// # Complexity
    ///
    /// O(n²).
    pub fn new(
        workers: Vec<Worker>,
        alpha_s: Array2<f64>,
        beta_s_per_byte: Array2<f64>,
    ) -> Result<Self, TopologyError> {
        let n = workers.len();
        if n == 0 {
            return Err(TopologyError::Empty { what: "cluster" });
        }
        for w in &workers {
            check_positive("worker FLOP/s", w.flop_per_s)?;
        }
        check_matrix("alpha (s)", &alpha_s, n)?;
        check_matrix("beta (s/byte)", &beta_s_per_byte, n)?;
        // A worker never messages itself: store zeros so equal clusters compare equal.
        let (mut alpha_s, mut beta_s_per_byte) = (alpha_s, beta_s_per_byte);
        alpha_s.diag_mut().fill(0.0);
        beta_s_per_byte.diag_mut().fill(0.0);
        Ok(Self {
            workers,
            alpha_s,
            beta_s_per_byte,
        })
    }

    /// As [`Cluster::new`], from row vectors (sender by row) instead of ndarray matrices.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Shape`] for a ragged or non-square matrix; as [`Cluster::new`].
    ///
    /// # Complexity
    ///
    /// O(n²).
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::{Cluster, Worker};
    /// let w = Worker::new(1e14, 4, 0)?;
    /// let rows = vec![vec![0.0, 1e-5], vec![1e-5, 0.0]];
    /// let cluster = Cluster::from_rows(vec![w; 2], &rows, &rows)?;
    /// assert_eq!(cluster.link(0, 1).alpha_s, 1e-5);
    /// assert!(Cluster::from_rows(vec![w; 2], &rows, &[vec![0.0]]).is_err());
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn from_rows(
        workers: Vec<Worker>,
        alpha_s: &[Vec<f64>],
        beta_s_per_byte: &[Vec<f64>],
    ) -> Result<Self, TopologyError> {
        let alpha = rows_to_matrix("alpha (s)", alpha_s)?;
        let beta = rows_to_matrix("beta (s/byte)", beta_s_per_byte)?;
        Self::new(workers, alpha, beta)
    }

    /// Number of workers `|W|`.
    pub fn len(&self) -> usize {
        self.workers.len()
    }

    /// Always `false`: a cluster has at least one worker.
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// The workers, indexed by worker id.
    pub fn workers(&self) -> &[Worker] {
        &self.workers
    }

    /// The sub-cluster of the workers `ids`, in that order (renumbered `0..ids.len()`).
    ///
    /// # Errors
    ///
    /// [`TopologyError::Empty`] for no ids; [`TopologyError::BadWorker`] for an id out of range
    /// or listed twice.
    ///
    /// # Complexity
    ///
    /// O(k²) for k ids.
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
        let pick = |m: &Array2<f64>| {
            Array2::from_shape_fn((ids.len(), ids.len()), |(a, b)| m[[ids[a], ids[b]]])
        };
        Self::new(workers, pick(&self.alpha_s), pick(&self.beta_s_per_byte))
    }

    /// The same cluster with every worker's node label shifted by `offset`.
    pub fn relabel_nodes(mut self, offset: usize) -> Self {
        for w in &mut self.workers {
            w.node += offset;
        }
        self
    }

    /// Start-up latencies `alpha_ij`, seconds (`n x n`, sender by row).
    pub fn alpha_s(&self) -> &Array2<f64> {
        &self.alpha_s
    }

    /// Inverse bandwidths `beta_ij`, seconds per byte (`n x n`, sender by row).
    pub fn beta_s_per_byte(&self) -> &Array2<f64> {
        &self.beta_s_per_byte
    }

    /// The alpha-beta cost of a message from worker `i` to worker `j`.
    ///
    /// Indices out of range return a zero-cost link rather than panicking; callers iterate over
    /// `0..len()`.
    pub fn link(&self, i: usize, j: usize) -> AlphaBeta {
        AlphaBeta {
            alpha_s: self.alpha_s.get((i, j)).copied().unwrap_or(0.0),
            beta_s_per_byte: self.beta_s_per_byte.get((i, j)).copied().unwrap_or(0.0),
        }
    }

    /// The `n x n x 2` tensor `G[i, j] = (alpha_ij, beta_ij)` of Aristos Table 1.
    ///
    /// # Complexity
    ///
    /// O(n²) time and memory.
    pub fn to_array3(&self) -> Array3<f64> {
        let n = self.len();
        Array3::from_shape_fn((n, n, 2), |(i, j, k)| {
            if k == 0 {
                self.alpha_s[[i, j]]
            } else {
                self.beta_s_per_byte[[i, j]]
            }
        })
    }

    /// Total expert slots `sum_j m_j` of the cluster.
    pub fn total_expert_slots(&self) -> u64 {
        self.workers.iter().map(|w| w.expert_slots as u64).sum()
    }

    /// Worker ids grouped by node label, nodes in order of first appearance.
    ///
    /// # Complexity
    ///
    /// O(n log n).
    pub fn nodes(&self) -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = Vec::new();
        let mut members: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (id, w) in self.workers.iter().enumerate() {
            let list = members.entry(w.node).or_default();
            if list.is_empty() {
                order.push(w.node);
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
    /// O(n²).
    pub fn worst_link(&self) -> AlphaBeta {
        let mut worst = AlphaBeta {
            alpha_s: 0.0,
            beta_s_per_byte: 0.0,
        };
        for ((i, j), &a) in self.alpha_s.indexed_iter() {
            if i != j {
                worst.alpha_s = worst.alpha_s.max(a);
                worst.beta_s_per_byte = worst.beta_s_per_byte.max(self.beta_s_per_byte[[i, j]]);
            }
        }
        worst
    }

    /// Checks that both matrices are symmetric within a relative tolerance `rel_tol`.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Asymmetric`] naming the first asymmetric entry.
    ///
    /// # Complexity
    ///
    /// O(n²).
    pub fn check_symmetric(&self, rel_tol: f64) -> Result<(), TopologyError> {
        for (what, m) in [
            ("alpha (s)", &self.alpha_s),
            ("beta (s/byte)", &self.beta_s_per_byte),
        ] {
            for ((i, j), &forward) in m.indexed_iter() {
                let backward = m[[j, i]];
                if i < j && (forward - backward).abs() > rel_tol * forward.max(backward) {
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
    /// O(n²).
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
                graph.add_edge(ids[i], ids[j], self.link(i, j));
            }
        }
        Ok(graph)
    }
}

/// A square matrix from rows, or a shape error for ragged or non-square input.
fn rows_to_matrix(what: &'static str, rows: &[Vec<f64>]) -> Result<Array2<f64>, TopologyError> {
    let n = rows.len();
    if let Some((i, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != n) {
        return Err(TopologyError::Shape {
            what,
            expected: format!("{n}x{n}"),
            got: format!("{} columns in row {i}", row.len()),
        });
    }
    Ok(Array2::from_shape_fn((n, n), |(i, j)| rows[i][j]))
}

/// Checks an alpha or beta matrix: `n x n`, finite and non-negative off the diagonal.
fn check_matrix(what: &'static str, m: &Array2<f64>, n: usize) -> Result<(), TopologyError> {
    if m.dim() != (n, n) {
        return Err(TopologyError::Shape {
            what,
            expected: format!("{n}x{n}"),
            got: format!("{}x{}", m.nrows(), m.ncols()),
        });
    }
    for ((row, col), &value) in m.indexed_iter() {
        if row != col && !(value.is_finite() && value >= 0.0) {
            return Err(TopologyError::BadEntry {
                what,
                row,
                col,
                value,
            });
        }
    }
    Ok(())
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
    fn array3_and_worst_link() {
        let cluster = Cluster::perlmutter(2, 16).unwrap();
        let g = cluster.to_array3();
        assert_eq!(g.dim(), (8, 8, 2));
        assert_eq!(g[[0, 5, 1]], cluster.link(0, 5).beta_s_per_byte);
        assert_eq!(cluster.worst_link(), crate::perlmutter_inter());
    }
}
