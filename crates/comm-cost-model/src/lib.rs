//! The shared vocabulary of moe-planner: units, alpha-beta costs and collective times.
//!
//! Every other crate of the workspace speaks in the terms this crate defines:
//!
//! * [`units`]: seconds, bytes, bytes per second, FLOP and FLOP/s as `f64` quantities with
//!   suffixed names, and the conversions from Gbps, GB/s and TFLOP/s that belong at the edges.
//! * [`AlphaBeta`]: the cost `t(x) = alpha + beta * x` of one message of `x` bytes.
//! * [`collectives`]: ring, pairwise and hierarchical collective times (AllGather,
//!   ReduceScatter, AllReduce, AlltoAll), including the two-tier AllGather `AGtime` of the
//!   rail-only paper (Wang et al., Eq. 1) and the rail-only all-to-all slowdown (Appendix D).
//! * [`fit`]: least-squares and two-point alpha-beta fits with R² and residuals (Parm §V-A).
//! * [`piecewise`], [`gpu_scaling`], [`held_out`]: piecewise alpha-beta fits with breakpoints
//!   found from the data, one collective's model across GPU counts, held-out error summaries.
//! * [`deepep`]: DeepEP dispatch and combine times from the bytes they move.
//! * [`allgather_bound`]: the exact bandwidth-optimal AllGather bound of rail-only App. A
//!   (Eq. 8–9) on small grids.
//! * [`parm`]: Parm's baseline, S1 and S2 schedules, Algorithm 1, the SAA phase schedule, and
//!   the two testbeds with a check of the paper's claims over Table III.
//! * [`Worker`] (a GPU's FLOP/s and expert slots) and [`SquareMatrix`] (validated, serialized as
//!   rows): shared by the placement and grouping crates. [`gcd`] and [`checked_product`] for
//!   parallel degrees.
//! * [`InputError`] and its check helpers ([`check_positive`], [`check_same_len`],
//!   [`check_at_most`], [`check_entries`], ...): the workspace's one vocabulary for bad input,
//!   which every crate's error embeds as its `Input` variant.
//! * [`seeded_rng`]: the portable seeded generator (ChaCha8) every randomized routine of the
//!   workspace draws from, so published seeded numbers stay reproducible.
//! * [`timeline`]: Aurora's exclusive (Eq. 1–3) and colocated (Table 2, Eq. 4) MoE-layer
//!   timelines and GPU utilization (§8.1).
//!
//! The papers cited here, with full titles and authors: [docs/references.md](https://github.com/moe-planner/moe-planner/blob/main/docs/references.md).
//!
//! # Examples
//!
//! ```
//! use comm_cost_model::{units, AlphaBeta, collectives};
//!
//! // 10 us start-up, 100 Gbps: one 1 MB message costs 10 us + 80 us.
//! let link = AlphaBeta::from_latency_bandwidth(10e-6, units::gbps(100.0))?;
//! assert!((link.time_s(1e6) - 90e-6).abs() < 1e-12);
//!
//! // Ring AllGather of 8 MB (the gathered size) over 8 GPUs on that link.
//! let t = collectives::ring_all_gather_time_s(8e6, 8, &link)?;
//! assert!((t - 7.0 * link.time_s(1e6)).abs() < 1e-12);
//! # Ok::<(), comm_cost_model::InputError>(())
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

// First: the macro it defines is used by the modules below.
#[macro_use]
mod validated;

pub mod allgather_bound;
mod alpha_beta;
pub mod collectives;
mod count;
pub mod deepep;
mod error;
pub mod fit;
pub mod gpu_scaling;
pub mod held_out;
mod matrix;
pub mod parm;
pub mod piecewise;
mod rng;
mod scale;
mod segments;
mod shown;
pub mod timeline;
pub mod units;
mod validate;
pub mod validation;
mod worker;

pub use alpha_beta::AlphaBeta;
pub use count::{checked_product, gcd};
pub use error::InputError;
pub use matrix::{MAX_MATRIX_SIDE, SquareMatrix};
pub use rng::{SeededRng, seeded_rng};
pub use shown::Shown;
pub use validate::{
    check_at_most, check_count, check_count_u64, check_divides, check_entries, check_entry,
    check_finite_result, check_index, check_non_negative, check_positive, check_positive_entries,
    check_same_len,
};
pub use worker::Worker;
