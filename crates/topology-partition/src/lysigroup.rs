//! LysiGroup: Kruskal-like expert-parallel grouping with the max-min fair merge of
//! Proposition 1 (Aimuyo, Aristos §2.2, Algorithm 1).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use petgraph::unionfind::UnionFind;

use crate::objective::{Resolved, evaluate_resolved};
use crate::{AristosObjective, Cluster, Partition, TopologyError};

/// Cuts the cluster into expert-parallel groups with LysiGroup (Aristos Algorithm 1).
///
/// Every worker starts alone. Edges are visited once in ascending order of weight; an edge
/// joining two different groups `g_u`, `g_v` merges them when Proposition 1's max-min fair rule
/// holds: `T_uv (1 / T_u + 1 / T_v) <= 2` with `T_uv = T(g_u ∪ g_v)`. The choices the paper
/// leaves open are fixed as follows (docs/algorithms.md explains why):
///
/// * **edge weight**: `max(t_uv, t_vu)` with `t_uv = alpha_uv + beta_uv d / 2`, the time of the
///   message the pair exchanges as a group of two (`d` the AlltoAll payload);
/// * **ties**: by `(u, v)` with `u < v`, lexicographically, so the order is total;
/// * **infeasible groups** (too few slots, `T = inf`): `1 / inf = 0`, and two infeasible groups
///   always merge (only a merge can make them feasible);
/// * **AllReduce term while groups form**: `T_u`, `T_v` use the current number of groups `k`,
///   `T_uv` uses `k - 1`, the count after the merge;
/// * **leftovers**: after the pass, each group still infeasible (smallest member first) joins the
///   group that gives the smallest merged `T` (ties to the smallest first member).
///
/// Group costs are incremental: for every group `g` and worker `i` the sums
/// `sum_{j in g} alpha_ij` and `sum_{j in g} beta_ij` are kept, so `T(g_u ∪ g_v)` costs
/// `O(|g_u| + |g_v|)` and is cached per pair of group versions.
///
/// The result is deterministic, every group holds all experts, and the groups partition the
/// workers. The paper only claims local optimality; [`exhaustive_partition`] gives the
/// optimum on small clusters for comparison.
///
/// [`exhaustive_partition`]: crate::exhaustive_partition
///
/// # Errors
///
/// [`TopologyError::NoFeasibleGroup`] if the whole cluster cannot hold the experts; the errors of
/// [`AristosObjective::evaluate`] for a bad objective; [`TopologyError::Input`] (`Overflow`) if the
/// cluster has more than `u32::MAX` workers.
///
/// # Complexity
///
/// `O(n^2 log n)` time for sorting the `n (n - 1) / 2` edges, plus `O(n^2)` for merges and `O(n)` per
/// first evaluation of a pair of groups; `O(n^2)` space.
///
/// # Examples
///
/// ```
/// use topology_partition::{lysi_group, AristosObjective, Cluster, TrainingConstants};
/// // Two Perlmutter nodes; 128 experts need 4 GPUs of 32 slots each.
/// let cluster = Cluster::perlmutter(2, 32)?;
/// let c = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 64, moe_every: 2, micro_batch: 4 };
/// let objective = AristosObjective::uniform(c, 128, 5e9, 2.0, 16e6, 0.0)?;
/// let partition = lysi_group(&cluster, &objective)?;
/// // Each group holds all 128 experts.
/// for g in &partition.groups {
///     assert!(g.len() * 32 >= 128);
/// }
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
pub fn lysi_group(
    cluster: &Cluster,
    objective: &AristosObjective,
) -> Result<Partition, TopologyError> {
    let r = resolve_feasible(cluster, objective)?;
    let n = cluster.len();
    u32::try_from(n).map_err(|_| comm_cost_model::InputError::Overflow {
        what: "worker count",
    })?;
    let mut state = Groups::new(cluster, &r);
    for (u, v) in sorted_edges(cluster, r.d) {
        state.consider(u as usize, v as usize);
    }
    state.absorb_infeasible();
    let groups = Partition::canonical(state.into_groups());
    evaluate_resolved(&r, cluster, groups)
}

/// Resolves the objective, erroring when even the whole cluster cannot hold every expert.
pub(crate) fn resolve_feasible(
    cluster: &Cluster,
    objective: &AristosObjective,
) -> Result<Resolved, TopologyError> {
    let r = objective.resolve(cluster)?;
    let slots = cluster.total_expert_slots();
    if slots < r.experts {
        return Err(TopologyError::NoFeasibleGroup {
            slots,
            experts: r.experts,
        });
    }
    Ok(r)
}

/// All unordered pairs `(u, v)`, `u < v`, ascending by weight then ids.
///
/// Weights are non-negative finite floats, whose IEEE bits order like the values, so one `u128`
/// key `(weight bits, u, v)` sorts by weight with ties broken by ids.
fn sorted_edges(cluster: &Cluster, d: f64) -> Vec<(u32, u32)> {
    let n = cluster.len();
    let (alpha, beta) = (
        cluster.alpha_s().as_slice(),
        cluster.beta_s_per_byte().as_slice(),
    );
    let half = d / 2.0;
    let mut keys: Vec<u128> = Vec::with_capacity(n * n.saturating_sub(1) / 2);
    for u in 0..n {
        for v in u + 1..n {
            let (uv, vu) = (u * n + v, v * n + u);
            let forward = alpha[uv] + beta[uv] * half;
            let backward = alpha[vu] + beta[vu] * half;
            // + 0.0 turns a possible -0.0 into +0.0 so the bit order matches.
            let weight = forward.max(backward) + 0.0;
            keys.push((u128::from(weight.to_bits()) << 64) | ((u as u128) << 32) | v as u128);
        }
    }
    keys.sort_unstable();
    // Unpacks the two 32-bit ids packed above (`n <= u32::MAX` is checked by `lysi_group`).
    #[allow(clippy::cast_possible_truncation)]
    keys.into_iter()
        .map(|k| ((k >> 32) as u32, k as u32))
        .collect()
}

/// The evolving partition: a union-find plus per-root aggregates.
struct Groups<'a> {
    r: &'a Resolved,
    cluster: &'a Cluster,
    uf: UnionFind<usize>,
    /// Row `root`, column `i` (`n x n`, row-major): sum over members `j` of the root's group of
    /// `alpha_ij` (s). Rows keep merges contiguous (a merge adds one row to another).
    alpha_sum: Vec<f64>,
    /// The same for `beta_ij` (s/byte).
    beta_sum: Vec<f64>,
    members: Vec<Vec<usize>>,
    flop_per_s: Vec<f64>,
    slots: Vec<u64>,
    /// `gamma (pi + max C)` of the group, seconds (valid at roots).
    local_s: Vec<f64>,
    /// A fresh id for every group version, so cached merge costs never go stale.
    version: Vec<u64>,
    next_version: u64,
    count: usize,
    /// Local part of `T(g_u ∪ g_v)` for pairs of versions already evaluated and not merged.
    cache: HashMap<(u64, u64), f64, BuildHasherDefault<PairHasher>>,
}

impl<'a> Groups<'a> {
    fn new(cluster: &'a Cluster, r: &'a Resolved) -> Self {
        let n = cluster.len();
        let (alpha, beta) = (
            cluster.alpha_s().as_slice(),
            cluster.beta_s_per_byte().as_slice(),
        );
        // A singleton {j} contributes alpha_ij to worker i: the transpose, less the diagonal.
        let off = |m: &[f64]| transpose_off_diagonal(m, n);
        let flop_per_s: Vec<f64> = cluster.workers().iter().map(|w| w.flop_per_s).collect();
        Self {
            r,
            cluster,
            uf: UnionFind::new(n),
            alpha_sum: off(alpha),
            beta_sum: off(beta),
            members: (0..n).map(|j| vec![j]).collect(),
            local_s: flop_per_s.iter().map(|&f| r.local_s(f, 0.0)).collect(),
            flop_per_s,
            slots: cluster
                .workers()
                .iter()
                .map(|w| w.expert_slots as u64)
                .collect(),
            version: (0..n as u64).collect(),
            next_version: n as u64,
            count: n,
            cache: HashMap::default(),
        }
    }

    fn feasible(&self, root: usize) -> bool {
        self.slots[root] >= self.r.experts
    }

    /// `T` of the group at `root` when there are `groups` groups.
    fn objective_s(&self, local: f64, slots: u64, groups: usize) -> f64 {
        if slots >= self.r.experts {
            local + self.r.all_reduce_s(groups)
        } else {
            f64::INFINITY
        }
    }

    /// Local part of `T(g_a ∪ g_b)` by one scan over both member lists.
    fn merged_local_s(&self, a: usize, b: usize) -> f64 {
        let size = self.members[a].len() + self.members[b].len();
        let (alpha, beta) = (&self.alpha_sum, &self.beta_sum);
        let n = self.cluster.len();
        let comm = self.members[a]
            .iter()
            .chain(&self.members[b])
            .map(|&i| {
                let alpha_i = alpha[a * n + i] + alpha[b * n + i];
                let beta_i = beta[a * n + i] + beta[b * n + i];
                self.r.member_comm_s(alpha_i, beta_i, size)
            })
            .fold(0.0, f64::max);
        self.r
            .local_s(self.flop_per_s[a] + self.flop_per_s[b], comm)
    }

    fn cached_merged_local_s(&mut self, a: usize, b: usize) -> f64 {
        let (va, vb) = (self.version[a], self.version[b]);
        let key = (va.min(vb), va.max(vb));
        if let Some(&local) = self.cache.get(&key) {
            return local;
        }
        let local = self.merged_local_s(a, b);
        self.cache.insert(key, local);
        local
    }

    /// Visits edge `(u, v)`: merges the two groups if Proposition 1 accepts.
    fn consider(&mut self, u: usize, v: usize) {
        let (a, b) = (self.uf.find_mut(u), self.uf.find_mut(v));
        if a == b {
            return;
        }
        let local_ab = self.cached_merged_local_s(a, b);
        if self.accepts(a, b, local_ab) {
            self.merge(a, b, local_ab);
        }
    }

    /// Proposition 1 with the conventions for infeasible groups.
    fn accepts(&self, a: usize, b: usize, local_ab: f64) -> bool {
        if !self.feasible(a) && !self.feasible(b) {
            return true;
        }
        let k = self.count;
        let t_a = self.objective_s(self.local_s[a], self.slots[a], k);
        let t_b = self.objective_s(self.local_s[b], self.slots[b], k);
        let t_ab = self.objective_s(local_ab, self.slots[a].saturating_add(self.slots[b]), k - 1);
        t_ab * (inverse(t_a) + inverse(t_b)) <= 2.0
    }

    fn merge(&mut self, a: usize, b: usize, local_ab: f64) {
        self.uf.union(a, b);
        let root = self.uf.find_mut(a);
        let other = if root == a { b } else { a };
        let n = self.cluster.len();
        for sums in [&mut self.alpha_sum, &mut self.beta_sum] {
            add_row(sums, root, other, n);
        }
        let mut moved = std::mem::take(&mut self.members[other]);
        if moved.len() > self.members[root].len() {
            std::mem::swap(&mut moved, &mut self.members[root]);
        }
        self.members[root].extend(moved);
        self.flop_per_s[root] += self.flop_per_s[other];
        self.slots[root] = self.slots[root].saturating_add(self.slots[other]);
        self.local_s[root] = local_ab;
        self.version[root] = self.next_version;
        self.next_version += 1;
        self.count -= 1;
    }

    fn roots(&mut self) -> Vec<usize> {
        (0..self.cluster.len())
            .filter(|&w| self.uf.find_mut(w) == w)
            .collect()
    }

    /// Merges every still-infeasible group into the partner minimizing the merged `T`.
    fn absorb_infeasible(&mut self) {
        // Each pass merges one group, so at most n - 1 passes.
        while self.count > 1 {
            let roots = self.roots();
            let first_member = |g: &Self, r: usize| g.members[r].iter().min().copied();
            let Some(&weak) = roots
                .iter()
                .filter(|&&r| !self.feasible(r))
                .min_by_key(|&&r| first_member(self, r))
            else {
                return;
            };
            let best = roots
                .iter()
                .filter(|&&r| r != weak)
                .map(|&r| {
                    let infeasible =
                        self.slots[weak].saturating_add(self.slots[r]) < self.r.experts;
                    (
                        infeasible,
                        self.merged_local_s(weak, r),
                        first_member(self, r),
                        r,
                    )
                })
                .min_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)).then(x.2.cmp(&y.2)));
            let Some((_, local, _, partner)) = best else {
                return;
            };
            self.merge(weak, partner, local);
        }
    }

    fn into_groups(self) -> Vec<Vec<usize>> {
        self.members.into_iter().filter(|m| !m.is_empty()).collect()
    }
}

/// Adds row `from` of an `n x n` row-major matrix to row `to` (`to != from`).
fn add_row(flat: &mut [f64], to: usize, from: usize, n: usize) {
    let (lo, hi) = flat.split_at_mut(to.max(from) * n);
    let (low_row, high_row) = (&mut lo[to.min(from) * n..][..n], &mut hi[..n]);
    let (dst, src) = if to < from {
        (low_row, &*high_row)
    } else {
        (high_row, &*low_row)
    };
    dst.iter_mut().zip(src).for_each(|(d, s)| *d += s);
}

/// The transpose of a square matrix with a zero diagonal, copied tile by tile so both the
/// reads and the writes stay in cache.
fn transpose_off_diagonal(m: &[f64], n: usize) -> Vec<f64> {
    const TILE: usize = 64;
    let mut out = vec![0.0; n * n];
    for i0 in (0..n).step_by(TILE) {
        for j0 in (0..n).step_by(TILE) {
            for i in i0..(i0 + TILE).min(n) {
                for j in j0..(j0 + TILE).min(n) {
                    if i != j {
                        out[j * n + i] = m[i * n + j];
                    }
                }
            }
        }
    }
    out
}

/// A multiply-rotate hasher for the cache's integer keys (SipHash's DoS resistance buys
/// nothing here and costs a third of the run time on large clusters).
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// `1 / t`, with `1 / inf = 0`.
fn inverse(t: f64) -> f64 {
    if t.is_infinite() { 0.0 } else { 1.0 / t }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::group_cost_resolved;
    use crate::{TrainingConstants, random_cluster};

    #[test]
    fn incremental_costs_match_from_scratch() {
        let training = TrainingConstants {
            recompute: 1.0,
            layers: 24,
            global_batch: 512,
            moe_every: 2,
            micro_batch: 4,
        };
        for seed in 0..20 {
            let cluster = random_cluster(3, 0.3, seed).unwrap();
            let obj = AristosObjective::uniform(training, 24, 5e10, 2.0, 16e6, 64e6).unwrap();
            let r = obj.resolve(&cluster).unwrap();
            let mut groups = Groups::new(&cluster, &r);
            for (u, v) in sorted_edges(&cluster, r.d) {
                groups.consider(u as usize, v as usize);
            }
            groups.absorb_infeasible();
            for root in groups.roots() {
                let cost = group_cost_resolved(&r, &cluster, &groups.members[root], 1);
                let scratch = r.gamma * (cost.compute_s + cost.communication_s);
                assert!((groups.local_s[root] - scratch).abs() <= 1e-9 * scratch);
            }
        }
    }

    #[test]
    fn edges_are_sorted_with_ties_by_ids() {
        let cluster = Cluster::perlmutter(2, 32).unwrap();
        let edges = sorted_edges(&cluster, 1e6);
        assert_eq!(edges.len(), 28);
        // The 12 intra-node pairs come first, in (u, v) order.
        assert_eq!(edges[0], (0, 1));
        assert_eq!(edges[6], (4, 5));
        let weight =
            |&(u, v): &(u32, u32)| cluster.link(u as usize, v as usize).unwrap().time_s(5e5);
        assert!(edges.windows(2).all(|w| weight(&w[0]) <= weight(&w[1])));
    }
}
