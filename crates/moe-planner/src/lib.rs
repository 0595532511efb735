//! End-to-end planners for MoE inference, MoE training and LLM cluster networks.
//!
//! `moe-planner` is the thin facade over the five algorithm crates of the workspace:
//!
//! | crate | what it answers |
//! |---|---|
//! | [`comm_cost_model`] | how long a collective, an MoE layer or a Parm schedule takes |
//! | [`alltoall_sched`] | in what order all-to-all traffic should flow so no link is contended |
//! | [`colocation_matching`] | which experts share a GPU and which GPU hosts which expert |
//! | [`expert_placement`] | how many replicas each expert gets and which GPU holds each (EPLB's job), fewest-move rebalancing |
//! | [`traffic_placement`] | where replicas go so the fewest routed tokens cross nodes at a given balance |
//! | [`topology_partition`] | how a heterogeneous cluster is cut into expert-parallel groups |
//! | [`rail_network`] | what fabric to build and what an LLM training iteration costs on it |
//!
//! The facade composes them into planners. Every planner has the same shape,
//! `plan_*(&Spec) -> Result<Plan, PlanError>`: a serde spec (vendor units such as Gbps and
//! TFLOP/s allowed, converted to SI on entry), one call per algorithm crate, and a serde plan the
//! facade owns (its JSON is the CLI's `--json` output; see `docs/ARCHITECTURE.md`). Every
//! algorithm crate's error, and the spec's own, is a [`PlanError`]. The algorithm crates are
//! re-exported so one dependency gives access to everything.
//!
//! | module | planner | papers |
//! |---|---|---|
//! | [`inference`] | [`inference::plan_inference`]: placement + all-to-all order + inference time of one or two MoE models | Aurora §4–8 |
//! | [`schedule`] | [`schedule::plan_schedule`]: one all-to-all schedule from a traffic matrix | Aurora §4–5 |
//! | [`colocation`] | [`colocation::plan_colocation`]: pairing two models' experts on shared GPUs | Aurora §6 |
//! | [`training`] | [`training::plan_training`]: Parm's S1/S2 choice for an MoE layer | Parm §IV–V |
//! | [`fitting`] | [`fitting::plan_fit`]: alpha-beta fit of collective measurements | Parm §V-A |
//! | [`fitting`] | [`fitting::plan_collective_fits`]: piecewise fits per collective and GPU count, the link constants `train`, `infer` and `iteration` accept | Parm §V-A, ours |
//! | [`nccl_tests`] | [`nccl_tests::parse_nccl_tests`]: nccl-tests' output table | — |
//! | [`measured`] | [`measured::plan_nccl_validation`], [`measured::plan_deepep_validation`]: held-out validation on measured NCCL and DeepEP tables | ours |
//! | [`grouping`] | [`grouping::plan_groups`]: expert-parallel groups and expert placement | Aristos Alg. 1–2 |
//! | [`placement`] | [`placement::plan_placement`]: expert replication and placement with fewest-move rebalancing, EPLB beside it | EPLB (DeepSeek), ours |
//! | [`traffic`] | [`traffic::plan_traffic`]: traffic-aware expert placement (fewest tokens across nodes within a balance limit, with a bound) beside EPLB, the compute-only plan and SGLang's topology-aware heuristic | ours; SGLang PR 19772 |
//! | [`network`] | [`network::plan_fabrics`], [`network::plan_iteration`], [`network::plan_search`]: fabric cost, iteration time, parallelization search | rail-only §4–6, App. C |
//!
//! The papers cited here, with full titles and authors: [docs/references.md](https://github.com/moe-planner/moe-planner/blob/main/docs/references.md).
//!
//! # Examples
//!
//! ```
//! use moe_planner::network::{plan_fabrics, FabricSpec};
//! // Rail-only vs rail-optimized for 65,536 GPUs in HB domains of 256 (rail-only Table 2).
//! let cmp = plan_fabrics(&FabricSpec::new(65536, 256, 64))?;
//! assert!((cmp.cost_reduction - 0.375).abs() < 1e-12);
//! # Ok::<(), moe_planner::PlanError>(())
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

pub use alltoall_sched;
pub use colocation_matching;
pub use comm_cost_model;
pub use expert_placement;
pub use rail_network;
pub use topology_partition;
pub use traffic_placement;

mod error;

pub use error::PlanError;

pub mod colocation;
pub mod fitting;
pub mod grouping;
pub mod inference;
pub mod measured;
pub mod nccl_tests;
pub mod network;
pub mod placement;
pub mod schedule;
pub mod traffic;
pub mod training;
