//! Maximum-cardinality bipartite matching by Hopcroft–Karp.

use serde::{Deserialize, Serialize};

use crate::MAX_VERTICES;
use comm_cost_model::{check_at_most, check_index};

use crate::error::BipartiteError;

/// Marks an unmatched vertex in the internal matching arrays.
/// The partner of an unmatched vertex in a [`PartialMatching`].
pub const UNMATCHED: usize = usize::MAX;

/// A bipartite graph in compressed sparse row form: the neighbours of left vertex `u` are
/// `targets[offsets[u]..offsets[u + 1]]`, all below `n_right`.
///
/// It serializes as `{"n_right": .., "adjacency": [[..], ..]}` and deserializes through
/// [`BipartiteGraph::from_adjacency`], so a deserialized graph is valid too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "GraphFields", into = "GraphFields")]
pub struct BipartiteGraph {
    n_right: usize,
    offsets: Vec<usize>,
    targets: Vec<usize>,
}

/// The serialized form of a [`BipartiteGraph`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphFields {
    n_right: usize,
    adjacency: Vec<Vec<usize>>,
}

impl TryFrom<GraphFields> for BipartiteGraph {
    type Error = BipartiteError;

    fn try_from(f: GraphFields) -> Result<Self, Self::Error> {
        Self::from_adjacency(f.n_right, &f.adjacency)
    }
}

impl From<BipartiteGraph> for GraphFields {
    fn from(g: BipartiteGraph) -> Self {
        Self {
            n_right: g.n_right,
            adjacency: (0..g.n_left()).map(|u| g.neighbors(u).to_vec()).collect(),
        }
    }
}

impl BipartiteGraph {
    /// Builds the graph from one neighbour list per left vertex.
    ///
    /// # Errors
    ///
    /// [`BipartiteError::Input`] (`IndexOutOfRange`) when a neighbour is `>= n_right`,
    /// [`BipartiteError::Input`] (`TooLarge`) for more than [`MAX_VERTICES`] vertices on either
    /// side ([`hopcroft_karp`] allocates per vertex: `n_right = usize::MAX` used to abort it).
    ///
    /// # Complexity
    ///
    /// `O(V + E)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bipartite::BipartiteGraph;
    ///
    /// let g = BipartiteGraph::from_adjacency(2, &[vec![0, 1], vec![0]])?;
    /// assert_eq!(g.n_left(), 2);
    /// assert_eq!(g.neighbors(0), &[0, 1]);
    /// # Ok::<(), bipartite::BipartiteError>(())
    /// ```
    pub fn from_adjacency(
        n_right: usize,
        adjacency: &[Vec<usize>],
    ) -> Result<Self, BipartiteError> {
        check_at_most("right vertices", MAX_VERTICES, n_right)?;
        check_at_most("left vertices", MAX_VERTICES, adjacency.len())?;
        let mut graph = Self::with_capacity(n_right, adjacency.len(), 0);
        for neighbors in adjacency {
            for &v in neighbors {
                check_index("bipartite neighbour", v, n_right)?;
            }
            graph.push_row(neighbors.iter().copied());
        }
        Ok(graph)
    }

    /// An empty graph ready for [`BipartiteGraph::push_row`].
    pub(crate) fn with_capacity(n_right: usize, n_left: usize, edges: usize) -> Self {
        let mut offsets = Vec::with_capacity(n_left + 1);
        offsets.push(0);
        Self {
            n_right,
            offsets,
            targets: Vec::with_capacity(edges),
        }
    }

    /// Appends the next left vertex with the given (in-range) neighbours.
    pub(crate) fn push_row(&mut self, neighbors: impl IntoIterator<Item = usize>) {
        self.targets.extend(neighbors);
        self.offsets.push(self.targets.len());
    }

    /// Number of left vertices.
    #[must_use]
    pub fn n_left(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of right vertices.
    #[must_use]
    pub fn n_right(&self) -> usize {
        self.n_right
    }

    /// Number of edges.
    #[must_use]
    pub fn edge_count(&self) -> usize {
        self.targets.len()
    }

    /// Neighbours of left vertex `u` (none for a vertex out of range).
    #[must_use]
    pub fn neighbors(&self, u: usize) -> &[usize] {
        let end = u.checked_add(1).and_then(|v| self.offsets.get(v));
        match (self.offsets.get(u), end) {
            (Some(&a), Some(&b)) => &self.targets[a..b],
            _ => &[],
        }
    }
}

/// A matching of a bipartite graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BipartiteMatching {
    /// `left_to_right[u]` is the right vertex matched to left vertex `u`, if any.
    pub left_to_right: Vec<Option<usize>>,
    /// Number of matched pairs.
    pub size: usize,
}

/// Maximum-cardinality matching of a bipartite graph (Hopcroft and Karp, 1973).
///
/// Aurora §6.2 uses Hopcroft–Karp to test whether a threshold subgraph has a perfect matching;
/// petgraph has no bipartite matching, so this is the crate's own implementation (iterative
/// depth-first search, so deep augmenting paths cannot overflow the stack).
///
/// # Complexity
///
/// `O(E sqrt(V))` time, `O(V + E)` space.
///
/// # Examples
///
/// ```
/// use bipartite::{BipartiteGraph, hopcroft_karp};
///
/// // Left 0 can take right 0 or 1, left 1 only right 0: both get matched.
/// let g = BipartiteGraph::from_adjacency(2, &[vec![0, 1], vec![0]])?;
/// let m = hopcroft_karp(&g);
/// assert_eq!(m.size, 2);
/// assert_eq!(m.left_to_right, vec![Some(1), Some(0)]);
/// # Ok::<(), bipartite::BipartiteError>(())
/// ```
#[must_use]
pub fn hopcroft_karp(graph: &BipartiteGraph) -> BipartiteMatching {
    let mut state = PartialMatching::empty(graph.n_left(), graph.n_right());
    let size = state.maximize(graph);
    BipartiteMatching {
        left_to_right: state
            .left
            .iter()
            .map(|&v| (v != UNMATCHED).then_some(v))
            .collect(),
        size,
    }
}

/// A (partial) matching as two mirror arrays, which Hopcroft–Karp can extend in place: the
/// warm start that an edge-by-edge decomposition (`alltoall-sched`'s Birkhoff schedules) needs
/// after each phase.
///
/// # Examples
///
/// ```
/// use bipartite::{BipartiteGraph, PartialMatching, UNMATCHED};
///
/// let g = BipartiteGraph::from_adjacency(2, &[vec![0, 1], vec![0]])?;
/// let mut m = PartialMatching::empty(2, 2);
/// m.left[0] = 0; // a matching left over from an earlier phase
/// m.right[0] = 0;
/// assert_eq!(m.augment_to_maximum(&g), 2);
/// assert_eq!((m.left[0], m.left[1]), (1, 0));
/// assert_ne!(m.right[1], UNMATCHED);
/// # Ok::<(), bipartite::BipartiteError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialMatching {
    /// Right partner of each left vertex, or [`UNMATCHED`].
    pub left: Vec<usize>,
    /// Left partner of each right vertex, or [`UNMATCHED`].
    pub right: Vec<usize>,
}

impl PartialMatching {
    /// The empty matching of `n_left` left and `n_right` right vertices.
    #[must_use]
    pub fn empty(n_left: usize, n_right: usize) -> Self {
        Self {
            left: vec![UNMATCHED; n_left],
            right: vec![UNMATCHED; n_right],
        }
    }

    /// Number of matched pairs.
    #[must_use]
    pub fn size(&self) -> usize {
        self.left.iter().filter(|&&v| v != UNMATCHED).count()
    }

    /// Grows the matching to maximum cardinality in `graph`: a greedy pass over the free left
    /// vertices, then [`PartialMatching::augment_to_maximum`]. Every matched edge must be an
    /// edge of `graph` (true when the graph only gained edges since the matching was built).
    ///
    /// # Complexity
    ///
    /// `O(E sqrt(V))`.
    pub fn maximize(&mut self, graph: &BipartiteGraph) -> usize {
        self.greedy(graph);
        self.augment_to_maximum(graph)
    }

    /// Grows the matching to maximum cardinality by Hopcroft–Karp phases alone (shortest
    /// augmenting paths, vertex-disjoint, found in left-vertex and edge order), without the
    /// greedy pass of [`PartialMatching::maximize`]. Same precondition.
    ///
    /// # Complexity
    ///
    /// `O(E sqrt(V))`.
    pub fn augment_to_maximum(&mut self, graph: &BipartiteGraph) -> usize {
        let n = graph.n_left();
        let mut dist = vec![usize::MAX; n];
        let mut queue = Vec::with_capacity(n);
        let mut next = vec![0usize; n];
        while self.layer(graph, &mut dist, &mut queue) {
            for (u, slot) in next.iter_mut().enumerate() {
                *slot = graph.offsets[u];
            }
            for root in 0..n {
                if self.left[root] == UNMATCHED {
                    self.augment_from(graph, root, &mut dist, &mut next);
                }
            }
        }
        self.size()
    }

    fn greedy(&mut self, graph: &BipartiteGraph) {
        for u in 0..graph.n_left() {
            if self.left[u] != UNMATCHED {
                continue;
            }
            if let Some(&v) = graph
                .neighbors(u)
                .iter()
                .find(|&&v| self.right[v] == UNMATCHED)
            {
                self.left[u] = v;
                self.right[v] = u;
            }
        }
    }

    /// Breadth-first layering from the free left vertices; true if some free right vertex is
    /// reachable by an alternating path.
    fn layer(&self, graph: &BipartiteGraph, dist: &mut [usize], queue: &mut Vec<usize>) -> bool {
        queue.clear();
        for (u, d) in dist.iter_mut().enumerate() {
            if self.left[u] == UNMATCHED {
                *d = 0;
                queue.push(u);
            } else {
                *d = usize::MAX;
            }
        }
        let mut found = false;
        let mut head = 0;
        while head < queue.len() {
            let u = queue[head];
            head += 1;
            for &v in graph.neighbors(u) {
                let w = self.right[v];
                if w == UNMATCHED {
                    found = true;
                } else if dist[w] == usize::MAX {
                    dist[w] = dist[u] + 1;
                    queue.push(w);
                }
            }
        }
        found
    }

    /// Iterative depth-first search along the layers from `root`; augments on success.
    fn augment_from(
        &mut self,
        graph: &BipartiteGraph,
        root: usize,
        dist: &mut [usize],
        next: &mut [usize],
    ) {
        let mut stack = vec![root];
        // via[k] is the right vertex used to step from stack[k] to stack[k + 1].
        let mut via: Vec<usize> = Vec::new();
        while let Some(&u) = stack.last() {
            let end = graph.offsets[u + 1];
            if next[u] == end {
                // Dead end: never try u again in this phase.
                dist[u] = usize::MAX;
                stack.pop();
                via.pop();
                continue;
            }
            let v = graph.targets[next[u]];
            next[u] += 1;
            let w = self.right[v];
            if w == UNMATCHED {
                via.push(v);
                for (k, &x) in stack.iter().enumerate() {
                    self.left[x] = via[k];
                    self.right[via[k]] = x;
                }
                return;
            }
            if dist[w] != usize::MAX && dist[w] == dist[u] + 1 {
                stack.push(w);
                via.push(v);
            }
        }
    }
}
