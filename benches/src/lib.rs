//! Criterion benchmarks for the moe-planner workspace.
//!
//! The benchmarks live in `benches/benches/`, one file per algorithm crate; run them all with
//! `cargo bench -p moe-planner-benches`, or one with `cargo bench -p moe-planner-benches --bench <name>`.
//! Results are recorded in `docs/performance.md`.
