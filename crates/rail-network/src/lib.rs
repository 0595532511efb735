//! Rail-only and rail-optimized GPU fabrics, and the LLM iteration-time model that judges them.
//!
//! A rail-optimized network joins every GPU to every other through a full-bisection Clos; a
//! rail-only network (Wang et al.) keeps one Clos per *rail* (the GPUs with the same local rank in
//! every high-bandwidth domain) and drops the spine, forwarding the rare cross-rail message through
//! the NVLink-class HB domain. This crate counts switches, transceivers and cost of both fabrics
//! (Table 2), analyses failures (§4.1), models GPT FLOPs and memory, predicts the iteration time
//! of a PTD-P training job (Eq. 2–7), maps its ranks onto HB domains and rails and computes its
//! per-GPU-pair traffic (§3), searches all valid parallelizations (Appendix C) and sweeps
//! HB-domain size, bandwidth and batch size (Fig. 9–11). Its [`moe`] module extends the same
//! machinery to Mixture-of-Experts training (expert parallelism, Parm's schedules, imbalance).
//!
//! | module | paper | what |
//! |---|---|---|
//! | [`fabric`], [`fabric_graph`] | §2.1, §4, §6.5, Table 2 | tiers, switches, transceivers, cost; petgraph wiring and routes |
//! | [`failures`] | §4.1 | GPUs cut off, recovery and spare GPUs per failure |
//! | [`model`], [`compute`], [`memory`] | App. B; Korthikanti et al.; Narayanan et al. | GPT presets, FLOPs, `t(b)`, memory per GPU |
//! | [`parallel`], [`iteration`] | §5, Eq. 2–7; App. C Eq. 11–18 | a PTD-P configuration (+ EP/ESP) and its iteration time, term by term |
//! | [`mapping`], [`traffic`] | §2.1, §3, Fig. 3–5; Parm §IV-B | ranks on HB domains and rails, per-GPU-pair traffic of one iteration |
//! | [`search`], [`sweeps`] | App. C, §6.2–6.4, App. D | exhaustive parallel search (rayon), Fig. 9–11 sweeps |
//! | [`accuracy`] | §6.1, Table 4 | published measurements, calibration, leave-one-out |
//! | [`moe`] | Parm §IV-V; MoE Parallel Folding; App. C, D | MoE models and presets, TP/CP/PP/EP/ETP mappings, memory, step time term by term, mapping search, held-out validation |
//!
//! The papers cited here, with full titles and authors: [docs/references.md](https://github.com/moe-planner/moe-planner/blob/main/docs/references.md).
//!
//! # Examples
//!
//! ```
//! use rail_network::fabric::{compare_fabrics, FabricParams, PriceModel};
//! use rail_network::{compute::ComputeModel, iteration::IterationModel, model::model_preset};
//! use rail_network::search::{search, SearchOptions};
//! use rail_network::system::system_preset;
//!
//! // Table 2: 65536 GPUs in GH200 domains of 256 on radix-256 switches: rail-only saves 75%.
//! let p = FabricParams::new(65536, 256, 256);
//! let c = compare_fabrics(&p, &PriceModel::default())?;
//! assert_eq!((c.rail_optimized.switches, c.rail_only.switches), (1280, 256));
//! assert_eq!(c.cost_reduction, 0.75);
//!
//! // The fastest way to train GPT-1T on 4096 GH200 GPUs at batch 4096, and its terms.
//! let im = IterationModel::new(model_preset("gpt-1t")?, system_preset("gh200")?, ComputeModel::paper())?;
//! let best = search(&im, 4096, 4096, &SearchOptions::default())?.best;
//! assert!(best.memory.total_bytes <= 96e9);
//! assert!(best.terms.last_stage_compute_s > best.terms.last_stage_tp_comm_s);
//! # Ok::<(), rail_network::RailNetworkError>(())
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

pub mod accuracy;
pub mod compute;
mod divisors;
mod error;
pub mod fabric;
pub mod fabric_graph;
pub mod failures;
pub mod iteration;
pub mod mapping;
pub mod memory;
pub mod model;
pub mod moe;
pub mod parallel;
pub mod search;
pub mod sweeps;
pub mod system;
pub mod traffic;

pub use error::RailNetworkError;
