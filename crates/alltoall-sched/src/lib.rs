//! Contention-free all-to-all schedules for MoE token dispatch.
//!
//! In an expert-parallel MoE layer every GPU sends tokens to every other GPU twice per layer
//! (dispatch and combine). When two senders target the same receiver at once they share its
//! ingress link and both slow down. This crate decides *in what order* each GPU sends, so that no
//! link is ever contended and the all-to-all finishes at its lower bound: the largest number of
//! bytes any GPU must send or receive, divided by its bandwidth (Aurora, Li et al., Theorem 4.2
//! and 5.2). It also provides the baselines a real system runs (shortest-job-first, random order,
//! pairwise shift) and a flow-level simulator that measures what contention costs them.
//!
//! The problem is the preemptive open shop of Gonzalez and Sahni (1976): senders are jobs,
//! receivers are machines and the traffic matrix entry `d[i][j]` is the work of pair `(i, j)`.
//!
//! | what | items |
//! |---|---|
//! | inputs | [`TrafficMatrix`] (exact `u64` or `f64`), [`Bandwidth`] (uniform or per GPU), [`workload`] generators |
//! | bounds | [`lower_bound_s`] (tight), [`lower_bounds`] (tight, port-capacity, Thm 5.2 as printed) |
//! | schedules | [`optimal()`], [`aurora_greedy()`], [`non_preemptive()`], [`latency_aware`] / [`latency_pareto`], [`schedule`] by [`Algorithm`] |
//! | checking | [`Timetable`], [`validate`] (contention-free), [`validate_simulated`] (shared ingress) |
//! | baselines | [`baselines`]: [`baselines::sjf`], [`baselines::random`], [`baselines::shift`] (orders: [`baselines::sjf_order`], [`baselines::random_order`], [`baselines::shift_order`]); by name through [`Algorithm`] |
//! | simulation | [`simulate`] (max-min fair contention), [`replay()`] (a plan on other traffic) |
//!
//! The papers cited here, with full titles and authors: [docs/references.md](https://github.com/moe-planner/moe-planner/blob/main/docs/references.md).
//!
//! # Examples
//!
//! ```
//! use alltoall_sched::baselines::sjf;
//! use alltoall_sched::{optimal, lower_bound_s, Bandwidth, TrafficMatrix};
//!
//! // Aurora Fig. 4 (GPUs numbered from 0): GPUs 0 and 1 each send one unit to both others.
//! let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
//! let b = Bandwidth::uniform(1.0)?; // one unit per time unit
//! assert_eq!(lower_bound_s(&d, &b)?, 2.0); // GPU 2 must receive 2 units
//!
//! let plan = optimal(&d, &b)?;
//! plan.validate(&d, &b).unwrap(); // every byte once, no port shared, no link too fast
//! assert_eq!(plan.makespan_s(), 2.0);
//!
//! // Shortest-first order, simulated with fair sharing: both senders hit GPU 2 together.
//! assert_eq!(sjf(&d, &b)?.makespan_s(), 3.0);
//! # Ok::<(), alltoall_sched::ScheduleError>(())
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

mod algorithm;
mod aurora_greedy;
mod bandwidth;
pub mod baselines;
mod bitset;
mod bounds;
mod decompose;
mod dispatch;
mod error;
mod first_try;
mod latency;
mod matrix;
mod min_tree;
mod non_preemptive;
mod optimal;
mod padding;
mod pivot_fill;
mod replay;
mod simulator;
mod ticks;
mod timetable;
pub mod workload;

pub use algorithm::{Algorithm, Plan, UnknownAlgorithm, schedule};
pub use aurora_greedy::aurora_greedy;
pub use bandwidth::Bandwidth;
pub use bounds::{LowerBounds, lower_bound_s, lower_bounds};
pub use dispatch::{ExpertDispatch, dispatch_tokens, uniform_sources};
pub use error::{MAX_GPUS, ScheduleError};
pub use latency::{ParetoPoint, latency_aware, latency_pareto, with_latency};
pub use matrix::TrafficMatrix;
pub use non_preemptive::non_preemptive;
pub use optimal::optimal;
pub use replay::{Replay, replay};
pub use simulator::{Flow, simulate, timetable_flows};
pub use timetable::{
    PortSide, Timetable, TimetableViolation, Transfer, VALIDATION_TOLERANCE, validate,
    validate_simulated,
};
