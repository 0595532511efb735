//! The Aristos objective `T(g)` (Aimuyo, §2.1, Eq. 1–4).

use comm_cost_model::units::{Bytes, Flop, Seconds};
use comm_cost_model::{InputError, check_finite_result, check_non_negative, check_positive};
use serde::{Deserialize, Serialize};

use crate::partition::check_disjoint;
use crate::{Cluster, Partition, TopologyError};
use comm_cost_model::check_count;

/// The training constants of Aristos Eq. 1, which give `gamma(omega)`, the number of times one
/// worker runs the MoE layer in one training iteration.
///
/// `gamma(omega) = (2 + r) · L · B / (i · omega · b)`: `L / i` MoE layers, `B / (omega · b)`
/// mini-batches per worker, and `2 + r` passes over each (forward, backward counted twice, plus
/// `r` recomputed forwards).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrainingConstants {
    /// `r`: activation recomputation amount, in forward passes (0 = none, 1 = full), unitless.
    pub recompute: f64,
    /// `L`: transformer layers of the model.
    pub layers: usize,
    /// `B`: global batch, in sequences per iteration.
    pub global_batch: usize,
    /// `i`: MoE layer frequency (every `i`-th layer is an MoE layer).
    pub moe_every: usize,
    /// `b`: mini-batch, in sequences per worker per step.
    pub micro_batch: usize,
}

impl TrainingConstants {
    /// `gamma(omega)` of Eq. 1 for an effective world of `world` workers (unitless count).
    ///
    /// # Errors
    ///
    /// [`TopologyError::Input`] (`CountTooSmall`) for a zero count; [`TopologyError::Input`] for a negative
    /// or non-finite `recompute`, and (`NonFinite`) if `gamma` itself exceeds the `f64` range
    /// (a `recompute` near `f64::MAX`).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::TrainingConstants;
    /// let c = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 256, moe_every: 2, micro_batch: 8 };
    /// // (2 + 0) · 24 · 256 / (2 · 16 · 8) = 48 MoE-layer runs per worker per iteration.
    /// assert_eq!(c.gamma(16)?, 48.0);
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn gamma(&self, world: usize) -> Result<f64, TopologyError> {
        let r = check_non_negative("recompute amount r", self.recompute)?;
        let layers = check_count("layers L", self.layers, 1)? as f64;
        let batch = check_count("global batch B", self.global_batch, 1)? as f64;
        let every = check_count("MoE layer frequency i", self.moe_every, 1)? as f64;
        let micro = check_count("mini-batch b", self.micro_batch, 1)? as f64;
        let world = check_count("effective world size omega", world, 1)? as f64;
        // The denominator is at most (2^64)^3, so gamma is positive; a huge `r` can make it
        // infinite (found by fuzzing).
        let gamma = (2.0 + r) * layers * batch / (every * world * micro);
        Ok(check_finite_result(
            "gamma(omega) (MoE-layer runs per iteration)",
            gamma,
        )?)
    }
}

/// Most experts [`AristosObjective::uniform`] lists (128 MiB of FLOP counts). A `usize::MAX`
/// count used to panic or abort on allocation (issue 13).
pub const MAX_EXPERTS: usize = 1 << 24;

/// Everything Aristos Eq. 2–4 needs besides the cluster.
///
/// Symbols and units (Aristos Table 1):
///
/// * `expert_flop[x]` is `f_x`, FLOP expert `x` performs per MoE-layer run. Eq. 4 treats the sum
///   as fixed whatever the group, so the group's expert compute time is
///   `pi(g) = sum_x f_x / sum_{j in g} F_j` seconds.
/// * `messages_per_edge` is `eta`, messages each worker sends each peer per MoE-layer run
///   (2 for a dispatch and a combine AlltoAll), unitless.
/// * `all_to_all_bytes` is `d`, the AlltoAll payload of one worker per message round, bytes; a
///   group of `|g|` workers sends `d / |g|` bytes per peer, so worker `i`'s communication cost
///   is `C_i = sum_{j in g, j != i} eta (alpha_ij + d / |g| · beta_ij)` seconds.
/// * `all_reduce_bytes` is `d_ar`, the bytes of the data-parallel AllReduce of expert gradients
///   across the `|G|` groups, costed by the worst-case ring bound
///   `T_rho(|G|) = 2 (|G| - 1) (alpha* + d_ar beta* / |G|)` seconds with `alpha*`, `beta*` the
///   slowest link of the cluster ([`Cluster::worst_link`]).
/// * `training` gives `gamma(omega)` (Eq. 1); `omega` is the number of workers of the cluster.
/// * `inference`: when true, `T_rho = 0` (no gradients to reduce).
///
/// `T(g) = gamma (pi(g) + max_i C_i) + T_rho(|G|)` seconds when the group's slots
/// `sum_j m_j >= |X|` (the number of experts), and infinity otherwise (Eq. 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AristosObjective {
    /// Eq. 1 constants.
    pub training: TrainingConstants,
    /// `f_x`, FLOP per MoE-layer run of each expert; its length is `|X|`.
    pub expert_flop: Vec<Flop>,
    /// `eta`, messages per peer per MoE-layer run (unitless).
    pub messages_per_edge: f64,
    /// `d`, AlltoAll payload per worker, bytes.
    pub all_to_all_bytes: Bytes,
    /// `d_ar`, data-parallel AllReduce size, bytes.
    pub all_reduce_bytes: Bytes,
    /// Inference mode: drop the AllReduce term.
    pub inference: bool,
}

/// `T(g)` of one group split into its terms (all in seconds except `gamma`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GroupCost {
    /// `gamma(omega)`, MoE-layer runs per iteration (unitless).
    pub gamma: f64,
    /// `pi(g)`, expert compute time per MoE-layer run, s.
    pub compute_s: Seconds,
    /// `max_i C_i`, the slowest member's AlltoAll time per MoE-layer run, s.
    pub communication_s: Seconds,
    /// `T_rho(|G|)`, data-parallel AllReduce time, s.
    pub all_reduce_s: Seconds,
    /// Whether the group's expert slots hold all experts.
    pub feasible: bool,
    /// `T(g)`, s; infinite when not feasible.
    pub objective_s: Seconds,
}

/// The objective with its cluster-wide constants resolved, used by the algorithms.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved {
    pub gamma: f64,
    pub total_expert_flop: Flop,
    pub experts: u64,
    pub eta: f64,
    pub d: Bytes,
    pub d_ar: Bytes,
    pub alpha_star: Seconds,
    pub beta_star: f64,
    pub inference: bool,
}

impl Resolved {
    /// `T_rho(k)` for `k` groups.
    pub(crate) fn all_reduce_s(&self, groups: usize) -> Seconds {
        if self.inference || groups <= 1 {
            return 0.0;
        }
        let k = groups as f64;
        2.0 * (k - 1.0) * (self.alpha_star + self.d_ar * self.beta_star / k)
    }

    /// `gamma (pi + comm)`: the part of `T` that depends on the group alone.
    pub(crate) fn local_s(&self, flop_per_s: f64, comm_s: Seconds) -> Seconds {
        self.gamma * (self.total_expert_flop / flop_per_s + comm_s)
    }

    /// `C_i` from worker `i`'s summed alphas and betas towards its group of `size`.
    pub(crate) fn member_comm_s(&self, alpha_sum: Seconds, beta_sum: f64, size: usize) -> Seconds {
        // A zero factor gives zero even when the other factor's sum overflowed (0 * inf is
        // NaN); otherwise a non-finite value means the exact one exceeds `f64`.
        if self.eta == 0.0 {
            return 0.0;
        }
        let bytes_s = if self.d == 0.0 {
            0.0
        } else {
            self.d / size as f64 * beta_sum
        };
        self.eta * (alpha_sum + bytes_s)
    }
}

impl AristosObjective {
    /// A training objective with `experts` experts of `flop_per_expert` FLOP each.
    ///
    /// The values are checked where the objective is used (every algorithm resolves it against
    /// a cluster first); only the size of the expert list is checked here, before it is
    /// allocated.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Input`] (`TooLarge`) for more than [`MAX_EXPERTS`] experts.
    ///
    /// # Complexity
    ///
    /// `O(experts)` time and space.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::{AristosObjective, TrainingConstants, MAX_EXPERTS};
    /// let c = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 256, moe_every: 2, micro_batch: 4 };
    /// let objective = AristosObjective::uniform(c, 64, 8.6e9, 2.0, 16.8e6, 67e6)?;
    /// assert_eq!(objective.expert_flop.len(), 64);
    /// assert!(AristosObjective::uniform(c, MAX_EXPERTS + 1, 8.6e9, 2.0, 16.8e6, 67e6).is_err());
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn uniform(
        training: TrainingConstants,
        experts: usize,
        flop_per_expert: Flop,
        messages_per_edge: f64,
        all_to_all_bytes: Bytes,
        all_reduce_bytes: Bytes,
    ) -> Result<Self, TopologyError> {
        comm_cost_model::check_at_most("experts of an objective", MAX_EXPERTS, experts)?;
        Ok(Self {
            training,
            expert_flop: vec![flop_per_expert; experts],
            messages_per_edge,
            all_to_all_bytes,
            all_reduce_bytes,
            inference: false,
        })
    }

    /// Validates the objective and resolves the cluster-wide constants.
    pub(crate) fn resolve(&self, cluster: &Cluster) -> Result<Resolved, TopologyError> {
        if self.expert_flop.is_empty() {
            return Err(TopologyError::Input(InputError::Empty { what: "experts" }));
        }
        let mut total = 0.0;
        for &f in &self.expert_flop {
            total += check_positive("expert FLOP f_x", f)?;
        }
        let worst = cluster.worst_link();
        check_cluster_flop_per_s(cluster)?;
        Ok(Resolved {
            gamma: self.training.gamma(cluster.len())?,
            total_expert_flop: check_positive("total expert FLOP", total)?,
            experts: self.expert_flop.len() as u64,
            eta: check_non_negative("messages per edge eta", self.messages_per_edge)?,
            d: check_non_negative("AlltoAll bytes d", self.all_to_all_bytes)?,
            d_ar: check_non_negative("AllReduce bytes d_ar", self.all_reduce_bytes)?,
            alpha_star: worst.alpha_s,
            beta_star: worst.beta_s_per_byte,
            inference: self.inference,
        })
    }

    /// `T(g)` of Eq. 3–4 for `group` when the partition has `groups` groups, with its terms.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Input`] (`Empty`) for an empty group or no experts; [`TopologyError::BadWorker`]
    /// for an id out of range or listed twice; [`TopologyError::Input`] for a non-positive
    /// expert FLOP or a negative `eta`, `d` or `d_ar`; [`TopologyError::Input`] (`CountTooSmall`) for zero
    /// training constants or `groups == 0`; [`TopologyError::Input`] (`NonFinite`) if a term
    /// of `T` exceeds the `f64` range, or the workers' FLOP/s add up to more than
    /// `f64::MAX / 2`. An infeasible group's `objective_s` is infinite by definition.
    ///
    /// # Complexity
    ///
    /// `O(|g|^2 + n^2)` time (the worst link is found by a scan).
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::{AristosObjective, Cluster, TrainingConstants};
    /// let cluster = Cluster::perlmutter(1, 32)?;
    /// let c = TrainingConstants { recompute: 0.0, layers: 2, global_batch: 4, moe_every: 2, micro_batch: 1 };
    /// let objective = AristosObjective::uniform(c, 64, 312e12, 2.0, 0.0, 0.0)?;
    /// // gamma = 2 · 2 · 4 / (2 · 4 · 1) = 2; pi = 64 · 312e12 / (2 · 312e12) = 32 s.
    /// // eta = 2 messages of 0 bytes to 1 peer: 2 · 9 us.
    /// let cost = objective.group_cost(&cluster, &[0, 1], 1)?;
    /// assert!((cost.objective_s - 2.0 * (32.0 + 2.0 * 9e-6)).abs() < 1e-9);
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn group_cost(
        &self,
        cluster: &Cluster,
        group: &[usize],
        groups: usize,
    ) -> Result<GroupCost, TopologyError> {
        let r = self.resolve(cluster)?;
        check_count("number of groups", groups, 1)?;
        check_disjoint(cluster.len(), std::iter::once(group))?;
        let cost = group_cost_resolved(&r, cluster, group, groups);
        for (what, value) in [
            ("compute time pi(g) (s)", cost.compute_s),
            ("communication time max C_i (s)", cost.communication_s),
            ("AllReduce time T_rho (s)", cost.all_reduce_s),
        ] {
            check_finite_result(what, value)?;
        }
        check_feasible_finite(&cost)?;
        Ok(cost)
    }

    /// Evaluates every group of a partition on `T` (with `|G| = groups.len()`).
    ///
    /// The groups are kept in the order given, each sorted by worker id.
    ///
    /// # Errors
    ///
    /// As [`AristosObjective::group_cost`] (`NonFinite` only for a feasible group's `T`);
    /// [`TopologyError::BadWorker`] if a worker is missing from the partition or appears
    /// twice; [`TopologyError::Input`] (`Empty`) for an empty group.
    ///
    /// # Complexity
    ///
    /// `O(Σ over groups g of |g|^2 + n^2)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use topology_partition::{AristosObjective, Cluster, TrainingConstants};
    /// let cluster = Cluster::perlmutter(2, 32)?;
    /// let c = TrainingConstants { recompute: 0.0, layers: 24, global_batch: 64, moe_every: 2, micro_batch: 4 };
    /// let objective = AristosObjective::uniform(c, 64, 1e12, 2.0, 8e6, 64e6)?;
    /// let p = objective.evaluate(&cluster, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]])?;
    /// assert_eq!(p.objective_s[0], p.objective_s[1]);
    /// # Ok::<(), topology_partition::TopologyError>(())
    /// ```
    pub fn evaluate(
        &self,
        cluster: &Cluster,
        groups: Vec<Vec<usize>>,
    ) -> Result<Partition, TopologyError> {
        let r = self.resolve(cluster)?;
        evaluate_resolved(&r, cluster, groups)
    }
}

/// Evaluates a partition whose constants are already resolved; a feasible group whose `T`
/// exceeds the `f64` range is an error.
pub(crate) fn evaluate_resolved(
    r: &Resolved,
    cluster: &Cluster,
    mut groups: Vec<Vec<usize>>,
) -> Result<Partition, TopologyError> {
    let costs = group_costs(r, cluster, &mut groups)?;
    costs.iter().try_for_each(check_feasible_finite)?;
    Ok(Partition {
        objective_s: costs.iter().map(|c| c.objective_s).collect(),
        groups,
    })
}

/// The cost of every group of a partition (each group sorted in place), checked to cover
/// every worker once. A feasible group's `T` may be infinite when its exact value exceeds
/// `f64` (an overflow, never a NaN: see [`Resolved::member_comm_s`]).
pub(crate) fn group_costs(
    r: &Resolved,
    cluster: &Cluster,
    groups: &mut [Vec<usize>],
) -> Result<Vec<GroupCost>, TopologyError> {
    check_disjoint(cluster.len(), groups.iter().map(Vec::as_slice))?;
    let covered: usize = groups.iter().map(Vec::len).sum();
    if covered != cluster.len() {
        let mut seen = vec![false; cluster.len()];
        groups.iter().flatten().for_each(|&w| seen[w] = true);
        let worker = seen.iter().position(|s| !s).unwrap_or(0);
        return Err(TopologyError::BadWorker {
            worker,
            problem: "missing from the partition",
        });
    }
    for g in groups.iter_mut() {
        g.sort_unstable();
    }
    let k = groups.len();
    Ok(groups
        .iter()
        .map(|g| group_cost_resolved(r, cluster, g, k))
        .collect())
}

/// A feasible group's `T` must be finite (issue 13: an overflow used to be reported as an
/// infinite `T`, which reads as "infeasible"; found by fuzzing).
fn check_feasible_finite(cost: &GroupCost) -> Result<(), TopologyError> {
    if cost.feasible {
        check_finite_result("T(g) of a feasible group (s)", cost.objective_s)?;
    }
    Ok(())
}

/// The workers' FLOP/s must add up to at most `f64::MAX / 2`, so that no group's sum (in any
/// order) overflows: an infinite sum would make the compute time `pi(g)` zero, silently.
fn check_cluster_flop_per_s(cluster: &Cluster) -> Result<(), TopologyError> {
    let total: f64 = cluster.workers().iter().map(|w| w.flop_per_s).sum();
    if total <= f64::MAX / 2.0 {
        Ok(())
    } else {
        Err(InputError::NonFinite {
            what: "total FLOP/s of the cluster (must stay below f64::MAX / 2)",
            value: total,
        }
        .into())
    }
}

/// `T(g)` and its terms, from scratch: `O(|g|^2)`.
pub(crate) fn group_cost_resolved(
    r: &Resolved,
    cluster: &Cluster,
    group: &[usize],
    groups: usize,
) -> GroupCost {
    let (alpha, beta) = (
        cluster.alpha_s().as_slice(),
        cluster.beta_s_per_byte().as_slice(),
    );
    let (workers, n) = (cluster.workers(), cluster.len());
    let flop_per_s: f64 = group.iter().map(|&j| workers[j].flop_per_s).sum();
    // Saturating: any total above `u64::MAX` holds every expert count.
    let slots = group.iter().fold(0u64, |acc, &j| {
        acc.saturating_add(workers[j].expert_slots as u64)
    });
    let communication_s = group
        .iter()
        .map(|&i| {
            let others = group.iter().filter(|&&j| j != i);
            let a: f64 = others.clone().map(|&j| alpha[i * n + j]).sum();
            let b: f64 = others.map(|&j| beta[i * n + j]).sum();
            r.member_comm_s(a, b, group.len())
        })
        .fold(0.0, f64::max);
    let feasible = slots >= r.experts;
    let all_reduce_s = r.all_reduce_s(groups);
    let local = r.local_s(flop_per_s, communication_s);
    GroupCost {
        gamma: r.gamma,
        compute_s: r.total_expert_flop / flop_per_s,
        communication_s,
        all_reduce_s,
        feasible,
        objective_s: if feasible {
            local + all_reduce_s
        } else {
            f64::INFINITY
        },
    }
}
