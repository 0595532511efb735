//! Expert replication and placement for MoE serving (the job DeepSeek's EPLB does inside vLLM
//! and SGLang): how many replicas each logical expert of a layer gets and which GPU slot holds
//! each, minimizing the busiest GPU's load, never two replicas of one expert on a GPU, with a
//! certified lower bound on every plan, a visible search budget and the reason each search
//! ended; and how to move a running placement to new loads with the fewest weight transfers.
//!
//! | problem | ours | baseline |
//! |---|---|---|
//! | replication and placement | [`place`] / [`place_with`] / [`place_layers`] with [`PlacementAlgorithm`] (`Optimal`, `OptimalNodeAware`, `Exact`), budget [`PlacementOptions`], [`Termination`], bound [`placement_lower_bound`] | [`eplb()`], [`rebalance_experts`] (DeepSeek's EPLB, both policies) |
//! | rebalancing with fewest moves | [`rebalance()`] (trade-off, [`plan_transfers`], [`count_moves`], [`transfer_counts`]), [`rebalance_within`] (a cap on moves) | EPLB's fresh plan |
//! | migration in engine-sized steps | [`transfer_rounds()`] (every GPU sends to and receives from at most `peer_limit` per round; König-optimal) | everything at once |
//! | several load windows / one batch | [`place_robust`], [`split_tokens`] (max-flow token split) | newest window alone / even split |
//! | load-oblivious placement | — | [`random_slot_placement`] |
//! | synthetic expert loads | [`lognormal_loads`], [`zipf_loads`], [`zipf_shares`], [`drift_loads`] | — |
//!
//! Sources: deepseek-ai/EPLB (the baseline's published policy), vLLM's and SGLang's EPLB
//! integrations (the slot layout and map formats); the algorithms are ours and are documented in
//! `docs/algorithms.md`, their evidence (an exact oracle, a seeded campaign) in
//! `docs/reproduction.md`.
//!
//! # Example
//!
//! ```
//! use expert_placement::{EplbPolicy, LayerLoads, PlacementAlgorithm, PlacementCluster, place};
//!
//! // vLLM PR 37656: 8 GPUs with 2 slots each.
//! let c = PlacementCluster::uniform(8, 2, 1)?;
//! let w = LayerLoads::new(vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0])?;
//! let best = place(&w, &c, PlacementAlgorithm::Optimal)?;
//! assert!((best.max_gpu_load - 590.0 / 3.0).abs() < 1e-9);
//! assert!(best.termination.is_optimal());
//! let base = place(&w, &c, PlacementAlgorithm::Eplb(EplbPolicy::Global))?;
//! assert_eq!(base.max_gpu_load, 232.0);
//! # Ok::<(), expert_placement::PlacementError>(())
//! ```

#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

// The README's examples run as doctests, so the crate's front page cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod baselines;
mod bisection;
mod error;
mod word_hash;
mod workloads;

mod algorithm;
mod align;
mod bound;
mod candidates;
mod capped_rebalance;
mod cardinality_bound;
mod count_search;
mod eplb;
mod exact;
mod excess;
mod fewest_moves;
mod flow;
mod local_search;
mod model;
mod node_align;
mod node_aware;
mod node_rebalance;
mod optimal;
mod options;
mod pack;
mod pair_exact;
mod partner_bound;
mod plan;
mod rebalance;
mod replicate;
mod robust;
mod slot_exact;
mod state;
mod target_partner_bound;
mod token_split;
mod tolerance;
mod transfer_rounds;
mod transfers;

pub use algorithm::{PlacementAlgorithm, place, place_layers, place_with, place_within};
pub use baselines::random_slot_placement;
pub use bound::placement_lower_bound;
pub use capped_rebalance::rebalance_within;
pub use eplb::{EplbPolicy, EplbTables, eplb, rebalance_experts};
pub use error::PlacementError;
pub use exact::{
    PLACEMENT_EXACT_MAX_EXPERTS, PLACEMENT_EXACT_MAX_GPUS, PLACEMENT_EXACT_NODE_BUDGET,
};
pub use fewest_moves::FEWEST_MOVES_EXACT_MAX_SETS;
pub use model::{
    LayerLoads, MAX_GPU_EXPERT_PAIRS, MAX_PADDED_MAP_ENTRIES, MAX_PLACEMENT_SLOTS,
    MAX_PLAN_ENTRIES, PlacementCluster,
};
pub use node_align::align_within_nodes;
pub use node_aware::NODE_BOUND_MAX_GROUPS;
pub use node_rebalance::rebalance_node_aware;
pub use options::{
    CancelFlag, DEFAULT_EXACT_SEARCH_STEPS, DEFAULT_PAIR_SEARCH_STEPS, DEFAULT_SEARCH_STEPS,
    DEFAULT_TIME_BUDGET_S, PlacementOptions, Termination,
};
pub use plan::Placement;
pub use rebalance::{Rebalance, TradeoffPoint, rebalance, rebalance_layers, rebalance_with};
pub use robust::{RobustObjective, RobustPlacement, place_robust};
pub use token_split::{MAX_SPLIT_TOKENS, TokenSplit, split_tokens};
pub use transfer_rounds::{MAX_ROUND_TABLE_ENTRIES, TransferRounds, transfer_rounds};
pub use transfers::{
    ExpertTransfer, MAX_TRANSFER_MATRIX_GPUS, count_moves, plan_transfers, transfer_counts,
};
pub use workloads::{MAX_WORKLOAD_LOADS, drift_loads, lognormal_loads, zipf_loads, zipf_shares};
