//! Maximum flow (Dinic) on real capacities, for the balanced dispatch split.
//!
//! `expert-placement` has its own integral max flow for whole-token splits, but does not export
//! it; routed tokens here are real numbers (window averages), so this one works in `f64` with an
//! absolute tolerance below which a residual counts as empty.

/// A flow network with `f64` capacities.
pub(crate) struct Network {
    head: Vec<usize>,
    to: Vec<usize>,
    cap: Vec<f64>,
    next: Vec<usize>,
    eps: f64,
}

const NONE: usize = usize::MAX;

impl Network {
    /// `nodes` nodes and no edge; residuals at most `eps` count as empty.
    pub(crate) fn new(nodes: usize, eps: f64) -> Self {
        Self {
            head: vec![NONE; nodes],
            to: Vec::new(),
            cap: Vec::new(),
            next: Vec::new(),
            eps,
        }
    }

    /// Adds `u -> v` with capacity `c`; returns the edge id (its reverse is `id ^ 1`).
    pub(crate) fn add_edge(&mut self, u: usize, v: usize, c: f64) -> usize {
        let id = self.to.len();
        for (a, b, cc) in [(u, v, c.max(0.0)), (v, u, 0.0)] {
            self.to.push(b);
            self.cap.push(cc);
            self.next.push(self.head[a]);
            self.head[a] = self.to.len() - 1;
        }
        id
    }

    /// Sets the capacity of edge `id` (and empties its reverse): for re-solving with new limits.
    pub(crate) fn reset_edge(&mut self, id: usize, c: f64) {
        self.cap[id] = c.max(0.0);
        self.cap[id ^ 1] = 0.0;
    }

    /// Flow currently on edge `id` (the residual of its reverse).
    pub(crate) fn flow(&self, id: usize) -> f64 {
        self.cap[id ^ 1]
    }

    /// Pushes the maximum flow from `s` to `t`; returns its value.
    pub(crate) fn max_flow(&mut self, s: usize, t: usize) -> f64 {
        let n = self.head.len();
        let mut total = 0.0;
        let mut level = vec![0usize; n];
        let mut it = vec![NONE; n];
        // The BFS queue and the DFS path, reused by every round and path.
        let (mut queue, mut path) = (Vec::with_capacity(n), Vec::new());
        loop {
            // BFS levels.
            level.iter_mut().for_each(|l| *l = usize::MAX);
            level[s] = 0;
            queue.clear();
            queue.push(s);
            let mut qi = 0;
            while qi < queue.len() {
                let u = queue[qi];
                qi += 1;
                let mut e = self.head[u];
                while e != NONE {
                    let v = self.to[e];
                    if self.cap[e] > self.eps && level[v] == usize::MAX {
                        level[v] = level[u] + 1;
                        queue.push(v);
                    }
                    e = self.next[e];
                }
            }
            if level[t] == usize::MAX {
                return total;
            }
            it.copy_from_slice(&self.head);
            loop {
                let pushed = self.augment(s, t, &level, &mut it, &mut path);
                if pushed <= self.eps {
                    break;
                }
                total += pushed;
            }
        }
    }

    /// One blocking-flow path by an explicit-stack DFS (no recursion: deep networks cannot
    /// overflow the stack); `path` is scratch.
    fn augment(
        &mut self,
        s: usize,
        t: usize,
        level: &[usize],
        it: &mut [usize],
        path: &mut Vec<usize>,
    ) -> f64 {
        path.clear();
        let mut u = s;
        loop {
            if u == t {
                let f = path
                    .iter()
                    .map(|&e| self.cap[e])
                    .fold(f64::INFINITY, f64::min);
                for &e in path.iter() {
                    self.cap[e] -= f;
                    self.cap[e ^ 1] += f;
                }
                return f;
            }
            let mut advanced = false;
            while it[u] != NONE {
                let e = it[u];
                let v = self.to[e];
                if self.cap[e] > self.eps && level[v] == level[u].wrapping_add(1) {
                    path.push(e);
                    u = v;
                    advanced = true;
                    break;
                }
                it[u] = self.next[e];
            }
            if !advanced {
                // Dead end: retreat and skip the edge that led here.
                match path.pop() {
                    Some(e) => {
                        u = self.to[e ^ 1];
                        it[u] = self.next[it[u]];
                    }
                    None => return 0.0,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diamond() {
        let mut n = Network::new(4, 1e-12);
        n.add_edge(0, 1, 3.0);
        n.add_edge(0, 2, 2.0);
        n.add_edge(1, 2, 1.0);
        n.add_edge(1, 3, 2.0);
        n.add_edge(2, 3, 3.0);
        assert!((n.max_flow(0, 3) - 5.0).abs() < 1e-12);
    }
}
