//! Traffic-aware expert placement for MoE serving: where to put expert replicas so that the
//! fewest routed tokens cross the slow scale-out network between nodes, with the busiest GPU
//! kept within `(1 + eps)` of the best compute-only plan, and a certified lower bound on the
//! cross-node tokens at that balance.
//!
//! Engines place experts to balance compute (DeepSeek's EPLB, `expert-placement`); in wide
//! expert parallelism the dispatch and combine all-to-alls then cross nodes whenever a token's
//! expert has no replica in the sender's node. This crate takes per-source routing
//! ([`RoutedTokens`], optionally per-token [`TopKRoutes`]), models the locality dispatch
//! SGLang's static dispatch uses ([`dispatch()`]: same GPU, then same node, then remote, with the
//! most balanced split), and plans placements that trade compute balance against cross-node
//! traffic explicitly.
//!
//! | problem | ours | baseline |
//! |---|---|---|
//! | fewest cross-node tokens within a balance limit | [`place_traffic_aware`], [`tradeoff_curve`], options [`TrafficOptions`] (groups-in-nodes optional) | `expert_placement`'s compute-only plan, EPLB hierarchical and global, [`topology_greedy`] (SGLang PR 19772 / 19811) |
//! | the same from a current placement with at most a number of slot changes | [`place_traffic_aware_with_moves`] ([`MoveBudgetPlacement`]) | the current placement |
//! | certified bound | [`traffic_lower_bound`] ([`TrafficBound`]) | — |
//! | scoring a placement | [`dispatch()`] ([`DispatchReport`]), [`cross_node_sends`] (DeepEP's per-node dedup) | — |
//! | router traces with locality | [`locality_trace`] ([`LocalityTrace`]) | no-locality control (`locality = 0`) |
//!
//! Sources: SGLang PR 9849 (the static dispatch's locality order), RFC 19487 and PRs 19772 /
//! 19811 (the topology-aware heuristic, reconstructed as the baseline from its description),
//! DeepEP (one copy per remote node). The algorithms are ours and documented in
//! `docs/algorithms.md`; the evidence in `docs/reproduction.md`.
//!
//! # Example
//!
//! ```
//! use expert_placement::PlacementCluster;
//! use traffic_placement::{LocalityTrace, TrafficOptions, locality_trace, place_traffic_aware};
//!
//! let layer = &locality_trace(&LocalityTrace::deepseek_like(1, 16, 2, 0.5), 1)?[0];
//! let cluster = PlacementCluster::uniform(16, 18, 2)?; // 288 slots
//! let plan = place_traffic_aware(layer, &cluster, &TrafficOptions::default())?;
//! assert!(plan.balance_met);
//! assert!(plan.dispatch.max_gpu_load <= 1.01 * plan.compute_only_max_gpu_load * (1.0 + 1e-9));
//! assert!(plan.dispatch.cross_node_tokens < 0.8 * plan.compute_only.cross_node_tokens);
//! assert!(plan.dispatch.cross_node_tokens >= plan.bound.cross_node_tokens);
//! # Ok::<(), traffic_placement::TrafficError>(())
//! ```

#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

// The README's example runs as a doctest, so the crate's front page cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod baselines;
mod bound;
mod bound_flow;
mod cap;
mod construct;
mod context;
mod dispatch;
mod error;
mod exchange;
mod flow;
mod groups;
mod lagrange;
mod moves;
mod options;
mod planner;
mod routed;
mod search;
mod termination;
mod workload;

pub use baselines::topology_greedy;
pub use bound::{DEFAULT_BOUND_ROUNDS, TrafficBound};
pub use dispatch::{DispatchReport, cross_node_sends, dispatch};
pub use error::TrafficError;
pub use moves::{MoveBudgetPlacement, place_traffic_aware_with_moves};
pub use options::{
    DEFAULT_TRAFFIC_SEARCH_STEPS, DEFAULT_TRAFFIC_TIME_BUDGET_S, DEFAULT_TRAFFIC_TOLERANCE,
    TrafficOptions,
};
pub use planner::{
    CurvePoint, TrafficPlacement, place_traffic_aware, tradeoff_curve, traffic_lower_bound,
};
pub use routed::{MAX_ROUTED_PAIRS, MAX_TOPK_ENTRIES, RoutedTokens, TopKRoutes};
pub use termination::TrafficTermination;
pub use workload::{LocalityTrace, locality_trace};
