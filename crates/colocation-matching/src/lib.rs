//! Expert colocation and GPU assignment for MoE inference, optimal where the theory allows.
//!
//! Two MoE models served on one cluster can share GPUs: pairing an expert of model A with an
//! expert of model B on each GPU changes how many bytes each GPU sends and receives, and hence the
//! all-to-all lower bound. On heterogeneous GPUs, *which* GPU hosts which expert matters too. This
//! crate solves these placement problems with bottleneck bipartite matching (Aurora, Li et al.,
//! Theorems 5.1, 6.1 and 6.2), gives exact and heuristic solvers for the NP-hard colocating plus
//! heterogeneous case (Aurora §7), implements the baselines Aurora compares against (Lina, random
//! colocation, random GPU assignment), and assigns experts to heterogeneous workers with
//! FLOPS-proportional budgets (LysiAssign, Aristos Algorithm 2). It also does the job production
//! engines give DeepSeek's EPLB: how many replicas each expert of a layer gets and which GPU slot
//! holds each, minimizing the busiest GPU's load with a certified lower bound, never two
//! replicas of one expert on a GPU, and rebalancing with the fewest weight transfers.
//!
//! | problem | exact | heuristic / baseline |
//! |---|---|---|
//! | min-max perfect matching | [`bottleneck_matching`] (on [`hopcroft_karp`]), [`min_cost_perfect_matching`] | — |
//! | pair two models' experts (Aurora §6.2) | [`pair_sorted`] (Case I), [`pair_bottleneck`] (Case II) | [`random_colocation`] (REC), [`lina_pairs`] (Lina) |
//! | experts → heterogeneous GPUs (§5.1) | [`assign_gpus_bottleneck`] | [`assign_by_popularity`] (Thm 5.1), [`random_gpu_assignment`] (RGA), [`random_placement`] (RGA + REC) |
//! | colocating + heterogeneous (§7) | [`colocate_exact`], [`colocate_milp`] | [`colocate_decoupled`] (paper), [`colocate_local_search`] (ours) |
//! | experts → workers with FLOPS and slots (Aristos) | [`lysi_assign_milp`], [`lysi_assign_refined`] (≤ 12 experts) | [`lysi_assign`] (Algorithm 2), [`lysi_assign_refined`] (ours); [`lysi_assign_with`] picks by [`LysiAlgorithm`]; bound [`assignment_lower_bound_s`] |
//! | expert replication and placement (EPLB's job) | [`place`] / [`place_layers`] with [`PlacementAlgorithm`] (`Optimal`, `OptimalNodeAware`, `Exact`), bound [`placement_lower_bound`] | [`eplb`], [`rebalance_experts`] (DeepSeek's EPLB) |
//! | rebalancing with fewest moves | [`rebalance`] (trade-off, [`plan_transfers`], [`count_moves`], [`transfer_counts`]) | EPLB's fresh plan |
//! | several load windows / one batch | [`place_robust`], [`split_tokens`] (max-flow token split) | newest window alone / even split |
//! | synthetic expert loads | [`lognormal_loads`], [`zipf_loads`], [`drift_loads`] | — |
//!
//! The papers cited here, with full titles and authors: [docs/references.md](https://github.com/moe-planner/moe-planner/blob/main/docs/references.md).
//!
//! # Example
//!
//! ```
//! use colocation_matching::{ExpertLoads, ExpertPairing, PairingOptions, SquareMatrix, pair_bottleneck, random_colocation};
//!
//! // First all-to-all of two 3-expert models: d[i][j] = bytes from expert i's GPU to expert j's.
//! let a = SquareMatrix::from_rows(&[vec![0.0, 9.0, 1.0], vec![1.0, 0.0, 1.0], vec![4.0, 1.0, 0.0]])?;
//! let b = SquareMatrix::from_rows(&[vec![0.0, 1.0, 1.0], vec![1.0, 0.0, 6.0], vec![1.0, 1.0, 0.0]])?;
//! let (la, lb) = (ExpertLoads::from_traffic(&a)?, ExpertLoads::from_traffic(&b)?);
//! // A sends (10, 2, 5) and receives (5, 10, 2); B sends (2, 7, 2) and receives (2, 2, 7).
//! let best = pair_bottleneck(&la, &lb, &PairingOptions::default())?;
//! // A0's GPU sends at least 10 + 2 whatever B expert joins it, and 12 is reachable, e.g.
//! // A0+B0 (send 12, receive 7), A1+B1 (9, 12), A2+B2 (7, 9).
//! assert_eq!(best.bottleneck_bytes, 12.0);
//! let rec = ExpertPairing::evaluate(&la, &lb, &random_colocation(3, 1)?)?;
//! assert!(rec.bottleneck_bytes >= best.bottleneck_bytes);
//! # Ok::<(), colocation_matching::MatchingError>(())
//! ```

// Issue 13: integer casts that may truncate, lose the sign or wrap are checked (`try_from`) or
// justified with an `allow` where they appear. Set per library crate, not in
// `[workspace.lints]`: the CLI, the Python bindings and the examples still have findings.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

// The README's examples run as doctests, so the crate's front page cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod allowed;
mod bottleneck;
mod dominance;
mod error;
mod hopcroft_karp;
mod hungarian;
mod matching;
mod matrix;

pub use bottleneck::{BottleneckOptions, ThresholdSearch, TieBreak, bottleneck_matching};
pub use error::{MatchingError, SolverFailure};
pub use hopcroft_karp::{BipartiteGraph, BipartiteMatching, hopcroft_karp};
pub use hungarian::min_cost_perfect_matching;
pub use matching::WeightedMatching;
pub use matrix::SquareMatrix;
mod gpu_assignment;
mod hetero;
mod loads;
mod pairing;

pub use gpu_assignment::{
    ExpertDemand, GpuAssignment, GpuSpec, assign_by_popularity, assign_gpus_bottleneck,
    exclusive_time_matrix,
};
pub use hetero::{
    COST_TENSOR_MAX_SIDE, ColocationCostModel, CostTensor, EXACT_MAX_GPUS, HeteroPlacement,
    HyperedgeCost, LOCAL_SEARCH_MAX_ITERATIONS, LocalSearchOptions, MILP_MAX_GPUS,
    colocate_decoupled, colocate_exact, colocate_local_search, colocate_lower_bound_s,
    colocate_milp,
};
pub use loads::ExpertLoads;
pub use pairing::{ExpertPairing, PairingOptions, pair_bottleneck, pair_sorted};
mod baselines;
mod lysi_assign;

pub use baselines::random_slot_placement;
pub use baselines::{lina_pairs, random_colocation, random_gpu_assignment, random_placement};
pub use loads::placement_loads;
pub use lysi_assign::{
    LYSI_MILP_MAX_VARIABLES, LysiAlgorithm, REFINED_EXACT_MAX_EXPERTS, Worker, WorkerAssignment,
    assignment_lower_bound_s, lysi_assign, lysi_assign_milp, lysi_assign_refined, lysi_assign_with,
};
mod load_workloads;
mod placement;

pub use load_workloads::{MAX_WORKLOAD_LOADS, drift_loads, lognormal_loads, zipf_loads};

pub use placement::{
    DEFAULT_EXACT_SEARCH_STEPS, DEFAULT_SEARCH_STEPS, DEFAULT_TIME_BUDGET_S, EplbPolicy,
    EplbTables, ExpertTransfer, LayerLoads, MAX_GPU_EXPERT_PAIRS, MAX_PLACEMENT_SLOTS,
    MAX_PLAN_ENTRIES, MAX_SPLIT_TOKENS, MAX_TRANSFER_MATRIX_GPUS, NODE_BOUND_MAX_GROUPS,
    PLACEMENT_EXACT_MAX_EXPERTS, PLACEMENT_EXACT_MAX_GPUS, PLACEMENT_EXACT_NODE_BUDGET, Placement,
    PlacementAlgorithm, PlacementCluster, PlacementOptions, Rebalance, RobustObjective,
    RobustPlacement, Termination, TokenSplit, TradeoffPoint, count_moves, eplb, place,
    place_layers, place_robust, place_with, placement_lower_bound, plan_transfers, rebalance,
    rebalance_experts, split_tokens, transfer_counts,
};
