//! Example programs for the moe-planner workspace.
//!
//! The programs live in `examples/examples/`; run one with
//! `cargo run --release -p moe-planner-examples --example <name>`. Input files used by the
//! examples and the CLI documentation live in `examples/data/`.

pub mod aristos;
pub mod colocation;
pub mod inference;
pub mod lysi_assign;
pub mod robustness;
