//! Hopcroft–Karp maximum bipartite matching, grown from a partial matching.
//!
//! Written here (rather than shared with `colocation-matching`) because the decomposition needs
//! to resume from the matching left over after the previous phase; algorithm crates do not
//! depend on each other.

use std::collections::VecDeque;

/// Marks an unmatched vertex.
pub(crate) const NONE: usize = usize::MAX;

/// A matching between `left` and `right` vertices: `left[l]` is the right mate of `l`.
#[derive(Debug, Clone)]
pub(crate) struct Matching {
    pub left: Vec<usize>,
    pub right: Vec<usize>,
}

impl Matching {
    pub(crate) fn empty(n_left: usize, n_right: usize) -> Self {
        Self {
            left: vec![NONE; n_left],
            right: vec![NONE; n_right],
        }
    }

    pub(crate) fn size(&self) -> usize {
        self.left.iter().filter(|&&r| r != NONE).count()
    }
}

/// Grows `matching` to a maximum matching of the graph `adj` (left `l` -> rights `adj[l]`).
///
/// Every edge of `matching` must be an edge of `adj`. Returns the final size.
/// `O(E sqrt(V))` (Hopcroft and Karp, 1973).
pub(crate) fn maximum_matching(adj: &[Vec<usize>], matching: &mut Matching) -> usize {
    let n_left = adj.len();
    let mut dist = vec![usize::MAX; n_left];
    let mut next_edge = vec![0usize; n_left];
    while layer(adj, matching, &mut dist) {
        next_edge.iter_mut().for_each(|e| *e = 0);
        for l in 0..n_left {
            if matching.left[l] == NONE {
                augment(l, adj, matching, &mut dist, &mut next_edge);
            }
        }
    }
    matching.size()
}

/// BFS from all free left vertices; returns whether a free right vertex is reachable.
fn layer(adj: &[Vec<usize>], matching: &Matching, dist: &mut [usize]) -> bool {
    let mut queue = VecDeque::new();
    for (l, d) in dist.iter_mut().enumerate() {
        if matching.left[l] == NONE {
            *d = 0;
            queue.push_back(l);
        } else {
            *d = usize::MAX;
        }
    }
    let mut found = false;
    while let Some(l) = queue.pop_front() {
        for &r in &adj[l] {
            let mate = matching.right[r];
            if mate == NONE {
                found = true;
            } else if dist[mate] == usize::MAX {
                dist[mate] = dist[l] + 1;
                queue.push_back(mate);
            }
        }
    }
    found
}

/// Iterative DFS along the BFS layers from free left `root`; flips one augmenting path.
fn augment(
    root: usize,
    adj: &[Vec<usize>],
    matching: &mut Matching,
    dist: &mut [usize],
    next_edge: &mut [usize],
) -> bool {
    // Stack of left vertices on the current alternating path.
    let mut stack = vec![root];
    while let Some(&l) = stack.last() {
        if next_edge[l] >= adj[l].len() {
            dist[l] = usize::MAX; // Dead end: never revisit in this phase.
            stack.pop();
            continue;
        }
        let r = adj[l][next_edge[l]];
        next_edge[l] += 1;
        let mate = matching.right[r];
        if mate == NONE {
            // Flip the path: each left on the stack takes the right it last explored.
            for &pl in stack.iter().rev() {
                let pr = adj[pl][next_edge[pl] - 1];
                matching.right[pr] = pl;
                matching.left[pl] = pr;
            }
            return true;
        }
        if dist[mate] == dist[l].wrapping_add(1) {
            stack.push(mate);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_perfect_matching_needing_augmentation() {
        // Greedy would match 0-0 and get stuck; the maximum matching is perfect.
        let adj = vec![vec![0, 1], vec![0], vec![1, 2]];
        let mut m = Matching::empty(3, 3);
        assert_eq!(maximum_matching(&adj, &mut m), 3);
        assert_eq!(m.left, vec![1, 0, 2]);
    }

    #[test]
    fn resumes_from_partial_matching() {
        let adj = vec![vec![0, 1], vec![0, 1]];
        let mut m = Matching::empty(2, 2);
        m.left[0] = 0;
        m.right[0] = 0;
        assert_eq!(maximum_matching(&adj, &mut m), 2);
        assert_eq!(m.right[m.left[1]], 1);
    }

    #[test]
    fn maximum_but_not_perfect() {
        let adj = vec![vec![0], vec![0], vec![]];
        let mut m = Matching::empty(3, 1);
        assert_eq!(maximum_matching(&adj, &mut m), 1);
    }
}
