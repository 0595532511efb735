//! Topology-aware expert-parallel groups and the traffic of parallel LLM jobs.
//!
//! A GPU cluster is modelled as workers (FLOP/s, expert memory) joined by alpha-beta links. This
//! crate cuts such a cluster into expert-parallel groups that minimize the Aristos objective
//! T(g) (LysiGroup, a Kruskal-like merge over a union-find, Aimuyo, Algorithm 1), compares it with
//! naive groupings, and maps the parallel groups of a PTD-P (+EP/ESP) training job onto
//! high-bandwidth domains and rails to compute the per-GPU-pair traffic of one iteration (Wang et
//! al., rail-only, §3).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
