//! End-to-end planners for MoE inference, MoE training and LLM cluster networks.
//!
//! `moe-planner` is the thin facade over the five algorithm crates of the workspace:
//!
//! | crate | what it answers |
//! |---|---|
//! | [`comm_cost_model`] | how long a collective, an MoE layer or a Parm schedule takes |
//! | [`alltoall_sched`] | in what order all-to-all traffic should flow so no link is contended |
//! | [`colocation_matching`] | which experts share a GPU and which GPU hosts which expert |
//! | [`topology_partition`] | how a heterogeneous cluster is cut into expert-parallel groups |
//! | [`rail_network`] | what fabric to build and what an LLM training iteration costs on it |
//!
//! The facade composes them into planners that take serde specs (vendor units such as Gbps and
//! TFLOP/s allowed, converted on entry) and return serde plans; the algorithm crates are
//! re-exported so one dependency gives access to everything.
//!
//! | module | planner | papers |
//! |---|---|---|
//! | [`inference`] | placement + all-to-all order + inference time of one or two MoE models | Aurora §4–8 |
//! | [`schedule`] | one all-to-all schedule from a traffic matrix | Aurora §4–5 |
//! | [`colocation`] | pairing two models' experts on shared GPUs | Aurora §6 |
//! | [`training`] | Parm's S1/S2 choice for an MoE layer; alpha-beta fits | Parm §IV–V |
//! | [`grouping`] | expert-parallel groups and expert placement | Aristos Alg. 1–2 |
//! | [`network`] | fabric cost, iteration time, parallelization search | rail-only §4–6, App. C |
//!
//! # Examples
//!
//! ```
//! use moe_planner::network::{NetworkPlanner, NetworkSpec};
//! // Rail-only vs rail-optimized for 65,536 GPUs in HB domains of 256 (rail-only Table 2).
//! let cmp = NetworkPlanner::default().compare_fabrics(&NetworkSpec::new(65536, 256, 64))?;
//! assert!((cmp.cost_reduction - 0.375).abs() < 1e-12);
//! # Ok::<(), moe_planner::network::NetworkPlanError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use alltoall_sched;
pub use colocation_matching;
pub use comm_cost_model;
pub use rail_network;
pub use topology_partition;

pub mod colocation;
pub mod grouping;
pub mod inference;
pub mod network;
pub mod schedule;
pub mod training;
