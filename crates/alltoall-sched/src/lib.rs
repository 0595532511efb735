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
#![forbid(unsafe_code)]
#![deny(missing_docs)]
