//! Rail-only and rail-optimized GPU fabrics, and the LLM iteration-time model that judges them.
//!
//! A rail-optimized network joins every GPU to every other through a full-bisection Clos; a
//! rail-only network (Wang et al.) keeps one Clos per *rail* (the GPUs with the same local rank in
//! every high-bandwidth domain) and drops the spine, forwarding the rare cross-rail message through
//! the NVLink-class HB domain. This crate counts switches, transceivers and cost of both fabrics
//! (Table 2), analyses failures (§4.1), models GPT FLOPs and memory, predicts the iteration time
//! of a PTD-P training job (Eq. 2–7), searches all valid parallelizations (Appendix C) and sweeps
//! HB-domain size, bandwidth and batch size (Fig. 9–11).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
