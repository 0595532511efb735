//! Expert replication and placement (EPLB's job): how many replicas each logical expert gets and
//! which GPU slot holds each replica, with a certified lower bound, EPLB as the baseline, and
//! fewest-move rebalancing.

mod algorithm;
mod align;
mod bound;
mod candidates;
mod eplb;
mod exact;
mod excess;
mod flow;
mod local_search;
mod model;
mod node_aware;
mod optimal;
mod options;
mod pack;
mod plan;
mod rebalance;
mod replicate;
mod robust;
mod state;
mod token_split;
mod transfers;

pub use algorithm::{PlacementAlgorithm, place, place_layers, place_with};
pub use bound::placement_lower_bound;
pub use eplb::{EplbPolicy, EplbTables, eplb, rebalance_experts};
pub use exact::{
    PLACEMENT_EXACT_MAX_EXPERTS, PLACEMENT_EXACT_MAX_GPUS, PLACEMENT_EXACT_NODE_BUDGET,
};
pub use model::{
    LayerLoads, MAX_GPU_EXPERT_PAIRS, MAX_PLACEMENT_SLOTS, MAX_PLAN_ENTRIES, PlacementCluster,
};
pub use node_aware::NODE_BOUND_MAX_GROUPS;
pub use options::{
    DEFAULT_EXACT_SEARCH_STEPS, DEFAULT_SEARCH_STEPS, DEFAULT_TIME_BUDGET_S, PlacementOptions,
    Termination,
};
pub use plan::Placement;
pub use rebalance::{Rebalance, TradeoffPoint, rebalance};
pub use robust::{RobustObjective, RobustPlacement, place_robust};
pub use token_split::{MAX_SPLIT_TOKENS, TokenSplit, split_tokens};
pub use transfers::{
    ExpertTransfer, MAX_TRANSFER_MATRIX_GPUS, count_moves, plan_transfers, transfer_counts,
};
