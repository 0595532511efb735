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
//! The facade composes them into planners that take serde specs and return serde plans; the
//! algorithm crates are re-exported so one dependency gives access to everything.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use alltoall_sched;
pub use colocation_matching;
pub use comm_cost_model;
pub use rail_network;
pub use topology_partition;

pub mod training;
pub mod colocation;
pub mod network;
pub mod grouping;
