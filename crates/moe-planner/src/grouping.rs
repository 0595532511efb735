//! Expert-parallel grouping of a cluster (Aristos LysiGroup, Aimuyo §2.2) from a serde spec.
//!
//! A [`GroupSpec`] describes the cluster (an explicit alpha-beta matrix, a list of node kinds,
//! or the Perlmutter preset), the experts and the training constants of Aristos Eq. 1;
//! [`plan_groups`] cuts the cluster with LysiGroup and evaluates the naive baselines on the same
//! objective, then places the experts inside every group with LysiAssign: each group holds all
//! experts, spread over its workers in proportion to their FLOP/s within their memory slots.
//! `assign` picks the variant ([`LysiAlgorithm`], default `refined`,
//! [`colocation_matching::lysi_assign_refined`]); Aristos Algorithm 2 as written
//! ([`colocation_matching::lysi_assign`]) is always run too and reported as the baseline. Link costs are given in the units Aristos measures them in: alpha in
//! milliseconds and beta in milliseconds per megabyte; they are converted to SI on entry.
//!
//! # Examples
//!
//! ```
//! use moe_planner::grouping::{plan_groups, ClusterSpec, ExpertsSpec, GroupSpec};
//! use moe_planner::colocation_matching::LysiAlgorithm;
//! use moe_planner::topology_partition::TrainingConstants;
//! let spec = GroupSpec {
//!     cluster: ClusterSpec::Perlmutter { nodes: 2, expert_slots: 32 },
//!     experts: ExpertsSpec { count: 64, flop_per_expert: 8.6e9 },
//!     training: TrainingConstants {
//!         recompute: 0.0, layers: 24, global_batch: 256, moe_every: 2, micro_batch: 4,
//!     },
//!     messages_per_edge: 2.0,
//!     all_to_all_mb: 16.8,
//!     all_reduce_mb: 16.8,
//!     inference: false,
//!     assign: LysiAlgorithm::Refined,
//! };
//! let plan = plan_groups(&spec)?;
//! assert_eq!(plan.partition.groups.iter().map(Vec::len).sum::<usize>(), 8);
//! assert!(plan.baselines.iter().all(|b| b.ratio_to_lysigroup.is_some()));
//! // Every group hosts all 64 experts.
//! for group in &plan.partition.groups {
//!     let hosted: usize = group.iter().map(|&w| plan.experts_of_gpu[w].len()).sum();
//!     assert_eq!(hosted, 64);
//! }
//! // The refined variant is never worse than Algorithm 2 as written.
//! for (refined, paper) in plan.assignment_compute_s.iter().zip(&plan.paper_assignment_compute_s) {
//!     assert!(refined <= paper);
//! }
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use colocation_matching::{LysiAlgorithm, lysi_assign_with};
use comm_cost_model::units::{checked_tflop_per_s, megabytes, millis};
use comm_cost_model::{AlphaBeta, InputError, MAX_MATRIX_SIDE, Worker};
use serde::{Deserialize, Serialize};
use topology_partition::{
    AristosObjective, Cluster, NodeKind, Partition, TopologyError, TrainingConstants, lysi_group,
    one_group_per_node, smallest_fitting_groups, whole_world,
};

use crate::PlanError;

/// One worker of an explicit cluster.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSpec {
    /// Sustained compute rate, TFLOP/s (`tflops` is accepted as an older spelling).
    #[serde(alias = "tflops")]
    pub tflop_per_s: f64,
    /// Experts the worker's memory holds (`m_j`).
    pub expert_slots: usize,
    /// Node label (for the one-group-per-node baseline).
    #[serde(default)]
    pub node: usize,
}

/// A link cost in Aristos' units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Start-up latency, milliseconds.
    pub alpha_ms: f64,
    /// Inverse bandwidth, milliseconds per megabyte (10^6 bytes).
    pub beta_ms_per_mb: f64,
}

/// `count` identical nodes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// How many nodes of this kind (default 1).
    #[serde(default = "one")]
    pub count: usize,
    /// GPUs per node.
    pub gpus: usize,
    /// Sustained TFLOP/s per GPU (`tflops` is accepted as an older spelling).
    #[serde(alias = "tflops")]
    pub tflop_per_s: f64,
    /// Expert slots per GPU.
    pub expert_slots: usize,
    /// Cost between two GPUs of the node.
    pub intra: LinkSpec,
    /// Cost of the node's network interface (a pair of nodes uses the slower of the two).
    pub inter: LinkSpec,
}

fn one() -> usize {
    1
}

/// How the cluster is described.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ClusterSpec {
    /// Explicit workers and `n x n` matrices (sender by row).
    Matrix {
        /// The workers.
        workers: Vec<WorkerSpec>,
        /// Alpha of every ordered pair, milliseconds.
        alpha_ms: Vec<Vec<f64>>,
        /// Beta of every ordered pair, milliseconds per megabyte.
        beta_ms_per_mb: Vec<Vec<f64>>,
    },
    /// Nodes of GPUs with intra- and inter-node costs, in order.
    Nodes {
        /// Node kinds, each repeated `count` times.
        nodes: Vec<NodeSpec>,
    },
    /// Perlmutter GPU nodes (4 A100 each; alpha-beta stand-ins, Aristos prints none).
    Perlmutter {
        /// Number of nodes.
        nodes: usize,
        /// Expert slots per A100.
        expert_slots: usize,
    },
}

/// The experts to place: `count` experts of equal cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertsSpec {
    /// Number of experts `|X|`.
    pub count: usize,
    /// FLOP one expert performs per MoE-layer run (`f_x`).
    pub flop_per_expert: f64,
}

/// Input of `moe-planner group`: cluster, experts and the constants of Aristos Eq. 1–4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// The cluster.
    pub cluster: ClusterSpec,
    /// The experts.
    pub experts: ExpertsSpec,
    /// Training constants of Eq. 1 (`r`, `L`, `B`, `i`, `b`).
    pub training: TrainingConstants,
    /// `eta`, messages per peer per MoE-layer run (default 2: dispatch and combine).
    #[serde(default = "two")]
    pub messages_per_edge: f64,
    /// `d`, AlltoAll payload per worker, megabytes.
    pub all_to_all_mb: f64,
    /// `d_ar`, data-parallel AllReduce size, megabytes.
    pub all_reduce_mb: f64,
    /// Inference: no AllReduce term.
    #[serde(default)]
    pub inference: bool,
    /// The LysiAssign variant that places experts inside each group (default `refined`;
    /// `paper` is Aristos Algorithm 2 as written, `milp` the exact MILP for tiny groups).
    #[serde(default)]
    pub assign: LysiAlgorithm,
}

fn two() -> f64 {
    2.0
}

/// The naive groupings LysiGroup is compared with (Aristos §3), by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupingBaseline {
    /// One group per node ([`one_group_per_node`]).
    SingleNode,
    /// The whole cluster as one group ([`whole_world`]).
    WholeWorld,
    /// The smallest groups that hold every expert ([`smallest_fitting_groups`]).
    SmallestFitting,
}

impl GroupingBaseline {
    /// Every baseline, in report order.
    pub const ALL: [Self; 3] = [Self::SingleNode, Self::WholeWorld, Self::SmallestFitting];

    /// The kebab-case name (`single-node`, `whole-world`, `smallest-fitting`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleNode => "single-node",
            Self::WholeWorld => "whole-world",
            Self::SmallestFitting => "smallest-fitting",
        }
    }

    /// The baseline's partition of `cluster` on `objective`.
    ///
    /// # Errors
    ///
    /// As the baseline run ([`TopologyError`]).
    pub fn partition(
        self,
        cluster: &Cluster,
        objective: &AristosObjective,
    ) -> Result<Partition, TopologyError> {
        match self {
            Self::SingleNode => one_group_per_node(cluster, objective),
            Self::WholeWorld => whole_world(cluster, objective),
            Self::SmallestFitting => smallest_fitting_groups(cluster, objective),
        }
    }
}

impl std::fmt::Display for GroupingBaseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// A baseline grouping evaluated on the same objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselinePlan {
    /// Which baseline.
    pub name: GroupingBaseline,
    /// Its groups and their `T(g)`.
    #[serde(flatten)]
    pub partition: Partition,
    /// Its largest `T(g)` divided by LysiGroup's (`null` when the baseline is infeasible).
    pub ratio_to_lysigroup: Option<f64>,
}

/// Output of [`plan_groups`]: LysiGroup's groups (`groups`, `objective_s` per group) and the
/// baselines, and LysiAssign's `experts_of_gpu` inside every group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupPlan {
    /// LysiGroup's partition.
    #[serde(flatten)]
    pub partition: Partition,
    /// The largest `T(g)`, seconds.
    pub max_objective_s: f64,
    /// The naive groupings on the same objective.
    pub baselines: Vec<BaselinePlan>,
    /// The LysiAssign variant behind `experts_of_gpu` and `assignment_compute_s`.
    pub assign: LysiAlgorithm,
    /// LysiAssign inside each group: `experts_of_gpu[w]` are the expert ids worker `w` hosts.
    pub experts_of_gpu: Vec<Vec<usize>>,
    /// Per group (same order as `groups`): the slowest worker's expert compute time under the
    /// assignment (Aristos Eq. 5), seconds.
    pub assignment_compute_s: Vec<f64>,
    /// Per group: the same time under Aristos Algorithm 2 as written (`paper`), the baseline
    /// the chosen variant is measured against, seconds.
    pub paper_assignment_compute_s: Vec<f64>,
    /// Per group: the FLOPS-proportional lower bound `Σ cost / Σ F` no assignment beats, seconds.
    pub assignment_lower_bound_s: Vec<f64>,
}

fn link(spec: &LinkSpec) -> Result<AlphaBeta, TopologyError> {
    Ok(AlphaBeta::new(
        millis(spec.alpha_ms),
        millis(spec.beta_ms_per_mb) / megabytes(1.0),
    )?)
}

fn scaled(rows: &[Vec<f64>], scale: f64) -> Vec<Vec<f64>> {
    rows.iter()
        .map(|row| row.iter().map(|v| v * scale).collect())
        .collect()
}

impl ClusterSpec {
    /// Builds the cluster, converting vendor units to SI.
    ///
    /// # Errors
    ///
    /// [`TopologyError`] for empty clusters, ragged or non-square matrices, negative costs or
    /// non-positive FLOP/s.
    pub fn build(&self) -> Result<Cluster, TopologyError> {
        match self {
            ClusterSpec::Matrix {
                workers,
                alpha_ms,
                beta_ms_per_mb,
            } => {
                let nodes = workers.iter().map(|w| w.node).collect();
                let workers = workers
                    .iter()
                    .map(|w| {
                        let flop_per_s = checked_tflop_per_s("worker TFLOP/s", w.tflop_per_s)?;
                        Worker::new(flop_per_s, w.expert_slots)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let alpha = scaled(alpha_ms, millis(1.0));
                let beta = scaled(beta_ms_per_mb, millis(1.0) / megabytes(1.0));
                Cluster::from_rows(workers, nodes, &alpha, &beta)
            }
            ClusterSpec::Nodes { nodes } => {
                let mut kinds = Vec::new();
                for n in nodes {
                    // One entry per node: bound their number before repeating any.
                    let total = kinds.len().saturating_add(n.count);
                    if total > MAX_MATRIX_SIDE {
                        return Err(InputError::too_large(
                            "nodes of the cluster",
                            MAX_MATRIX_SIDE,
                            total,
                        )
                        .into());
                    }
                    let kind = NodeKind {
                        gpus: n.gpus,
                        flop_per_s: checked_tflop_per_s("node TFLOP/s", n.tflop_per_s)?,
                        expert_slots: n.expert_slots,
                        intra: link(&n.intra)?,
                        network: link(&n.inter)?,
                    };
                    kinds.extend(std::iter::repeat_n(kind, n.count));
                }
                Cluster::heterogeneous(&kinds)
            }
            ClusterSpec::Perlmutter {
                nodes,
                expert_slots,
            } => Cluster::perlmutter(*nodes, *expert_slots),
        }
    }
}

impl GroupSpec {
    /// The Aristos objective of the spec, in SI units.
    ///
    /// # Errors
    ///
    /// [`PlanError::Topology`] (`TooLarge`) for more experts than
    /// [`topology_partition::MAX_EXPERTS`], checked before the per-expert list is allocated.
    pub fn objective(&self) -> Result<AristosObjective, PlanError> {
        let objective = AristosObjective::uniform(
            self.training,
            self.experts.count,
            self.experts.flop_per_expert,
            self.messages_per_edge,
            megabytes(self.all_to_all_mb),
            megabytes(self.all_reduce_mb),
        )?;
        Ok(AristosObjective {
            inference: self.inference,
            ..objective
        })
    }
}

/// Cuts the spec's cluster into expert-parallel groups with LysiGroup and compares the
/// baselines (one group per node, the whole world, the smallest groups that fit).
///
/// # Errors
///
/// [`PlanError::Topology`] for an invalid cluster or objective, or when the cluster cannot
/// hold the experts at all; [`PlanError::Matching`] if LysiAssign rejects a group (for
/// `milp`, a group too large for the MILP).
///
/// # Complexity
///
/// `O(n^2 log n)` time for `n` workers (see [`lysi_group`]), plus two LysiAssign runs per group
/// (see [`colocation_matching::lysi_assign_refined`]).
///
/// # Examples
///
/// See the [module documentation](self).
pub fn plan_groups(spec: &GroupSpec) -> Result<GroupPlan, PlanError> {
    let cluster = spec.cluster.build()?;
    let objective = spec.objective()?;
    let partition = lysi_group(&cluster, &objective)?;
    let best = partition.max_objective_s();
    let mut baselines = Vec::new();
    for name in GroupingBaseline::ALL {
        let p = name.partition(&cluster, &objective)?;
        let ratio = p.max_objective_s() / best;
        baselines.push(BaselinePlan {
            name,
            ratio_to_lysigroup: ratio.is_finite().then_some(ratio),
            partition: p,
        });
    }
    let assigned = assign_experts(&cluster, &partition, &spec.experts, spec.assign)?;
    let paper = match spec.assign {
        LysiAlgorithm::Paper => assigned.compute_s.clone(),
        _ => assign_experts(&cluster, &partition, &spec.experts, LysiAlgorithm::Paper)?.compute_s,
    };
    Ok(GroupPlan {
        max_objective_s: best,
        partition,
        baselines,
        assign: spec.assign,
        experts_of_gpu: assigned.experts_of_gpu,
        assignment_compute_s: assigned.compute_s,
        paper_assignment_compute_s: paper,
        assignment_lower_bound_s: assigned.lower_bound_s,
    })
}

struct Assigned {
    experts_of_gpu: Vec<Vec<usize>>,
    compute_s: Vec<f64>,
    lower_bound_s: Vec<f64>,
}

/// LysiAssign (variant `algorithm`) every expert onto the workers of each group (each group is
/// one EP group and holds a full copy of the experts).
fn assign_experts(
    cluster: &Cluster,
    partition: &Partition,
    experts: &ExpertsSpec,
    algorithm: LysiAlgorithm,
) -> Result<Assigned, PlanError> {
    let costs = vec![experts.flop_per_expert; experts.count];
    let mut out = Assigned {
        experts_of_gpu: vec![Vec::new(); cluster.len()],
        compute_s: Vec::with_capacity(partition.groups.len()),
        lower_bound_s: Vec::with_capacity(partition.groups.len()),
    };
    for group in &partition.groups {
        let workers: Vec<Worker> = group.iter().map(|&w| cluster.workers()[w]).collect();
        let a = lysi_assign_with(&costs, &workers, algorithm)?;
        for (expert, &local) in a.gpu_of_expert.iter().enumerate() {
            out.experts_of_gpu[group[local]].push(expert);
        }
        out.compute_s.push(a.makespan_s);
        out.lower_bound_s.push(a.lower_bound_s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(ms: f64) -> LinkSpec {
        LinkSpec {
            alpha_ms: ms,
            beta_ms_per_mb: ms,
        }
    }

    fn node(tflop_per_s: f64) -> NodeSpec {
        NodeSpec {
            count: 1,
            gpus: 2,
            tflop_per_s,
            expert_slots: 8,
            intra: link(0.01),
            inter: link(0.1),
        }
    }

    /// Two nodes of unequal GPUs (3 and 1 TFLOP/s, 8 slots each), 10 equal experts.
    fn spec(assign: LysiAlgorithm) -> GroupSpec {
        GroupSpec {
            cluster: ClusterSpec::Nodes {
                nodes: vec![node(3.0), node(1.0)],
            },
            experts: ExpertsSpec {
                count: 10,
                flop_per_expert: 1e12,
            },
            training: TrainingConstants {
                recompute: 0.0,
                layers: 2,
                global_batch: 8,
                moe_every: 1,
                micro_batch: 1,
            },
            messages_per_edge: 2.0,
            all_to_all_mb: 1.0,
            all_reduce_mb: 1.0,
            inference: false,
            assign,
        }
    }

    #[test]
    fn refined_is_reported_next_to_the_paper_baseline() {
        let plan = plan_groups(&spec(LysiAlgorithm::Refined)).expect("plans");
        assert_eq!(plan.assign, LysiAlgorithm::Refined);
        assert_eq!(
            plan.assignment_compute_s.len(),
            plan.paper_assignment_compute_s.len()
        );
        for ((refined, paper), bound) in plan
            .assignment_compute_s
            .iter()
            .zip(&plan.paper_assignment_compute_s)
            .zip(&plan.assignment_lower_bound_s)
        {
            assert!(
                bound <= refined && refined <= paper,
                "{bound} {refined} {paper}"
            );
        }
    }

    #[test]
    fn paper_is_its_own_baseline() {
        let plan = plan_groups(&spec(LysiAlgorithm::Paper)).expect("plans");
        assert_eq!(plan.assign, LysiAlgorithm::Paper);
        assert_eq!(plan.assignment_compute_s, plan.paper_assignment_compute_s);
    }
}
