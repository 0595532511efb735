//! Maximum flow with integer capacities (Dinic's algorithm), for the per-batch token split.

use std::collections::VecDeque;

/// A flow network with `u64` capacities.
#[derive(Debug, Clone)]
pub(crate) struct FlowNetwork {
    /// Per edge: head node, residual capacity; edge `k ^ 1` is the reverse of edge `k`.
    head: Vec<usize>,
    cap: Vec<u64>,
    /// Outgoing edge ids per node.
    out: Vec<Vec<usize>>,
}

impl FlowNetwork {
    pub(crate) fn new(nodes: usize) -> Self {
        Self {
            head: Vec::new(),
            cap: Vec::new(),
            out: vec![Vec::new(); nodes],
        }
    }

    /// Adds an edge `from -> to` with capacity `cap` and returns its id.
    pub(crate) fn add_edge(&mut self, from: usize, to: usize, cap: u64) -> usize {
        let id = self.head.len();
        self.head.extend([to, from]);
        self.cap.extend([cap, 0]);
        self.out[from].push(id);
        self.out[to].push(id + 1);
        id
    }

    /// Flow on edge `id` (the residual capacity of its reverse).
    pub(crate) fn flow(&self, id: usize) -> u64 {
        self.cap[id ^ 1]
    }

    /// Pushes as much flow as possible from `s` to `t` (on top of the flow already there) and
    /// returns the amount added. `O(V² E)` in general, `O(E sqrt V)` on unit-like bipartite
    /// networks.
    pub(crate) fn max_flow(&mut self, s: usize, t: usize) -> u64 {
        let n = self.out.len();
        let mut total = 0u64;
        loop {
            let mut level = vec![usize::MAX; n];
            level[s] = 0;
            let mut queue = VecDeque::from([s]);
            while let Some(v) = queue.pop_front() {
                for &e in &self.out[v] {
                    let u = self.head[e];
                    if self.cap[e] > 0 && level[u] == usize::MAX {
                        level[u] = level[v] + 1;
                        queue.push_back(u);
                    }
                }
            }
            if level[t] == usize::MAX {
                return total;
            }
            let mut next = vec![0usize; n];
            loop {
                let pushed = self.augment(s, t, u64::MAX, &level, &mut next);
                if pushed == 0 {
                    break;
                }
                total = total.saturating_add(pushed);
            }
        }
    }

    /// One blocking-flow augmentation along level-increasing edges (iterative DFS).
    fn augment(
        &mut self,
        s: usize,
        t: usize,
        limit: u64,
        level: &[usize],
        next: &mut [usize],
    ) -> u64 {
        let mut path: Vec<usize> = Vec::new();
        let mut v = s;
        loop {
            if v == t {
                let pushed = path.iter().map(|&e| self.cap[e]).fold(limit, u64::min);
                for &e in &path {
                    self.cap[e] -= pushed;
                    self.cap[e ^ 1] += pushed;
                }
                return pushed;
            }
            let mut advanced = false;
            while next[v] < self.out[v].len() {
                let e = self.out[v][next[v]];
                let u = self.head[e];
                if self.cap[e] > 0 && level[u] == level[v] + 1 {
                    path.push(e);
                    v = u;
                    advanced = true;
                    break;
                }
                next[v] += 1;
            }
            if !advanced {
                // Dead end: retreat and never try this node's exhausted edge again.
                let Some(e) = path.pop() else {
                    return 0;
                };
                v = self.head[e ^ 1];
                next[v] += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_network() {
        // s=0, t=5; the max flow is 23 (CLRS Figure 26.1).
        let mut f = FlowNetwork::new(6);
        for (a, b, c) in [
            (0, 1, 16),
            (0, 2, 13),
            (1, 3, 12),
            (2, 1, 4),
            (2, 4, 14),
            (3, 2, 9),
            (3, 5, 20),
            (4, 3, 7),
            (4, 5, 4),
        ] {
            f.add_edge(a, b, c);
        }
        assert_eq!(f.max_flow(0, 5), 23);
    }
}
