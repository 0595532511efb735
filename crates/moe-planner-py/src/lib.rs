//! Python bindings of moe-planner: the native module `moe_planner._native`.
//!
//! Built with `maturin` into the `moe_planner` package (`pip install ./crates/moe-planner-py`),
//! whose Python layer (`python/moe_planner/`) converts inputs to numpy arrays, documents every
//! function and wraps results in dataclasses. Everything here goes through the facade crate
//! [`moe_planner`]. Every call runs on a worker thread without the GIL while the calling thread
//! answers Ctrl-C (`KeyboardInterrupt` within 50 ms); every planner error reaches Python as a
//! `ValueError` carrying the library's message in Python's argument names (`TooLargeError`, a
//! `ValueError`, for inputs refused for their size before allocation), and a panic as a
//! `RuntimeError`, never an aborted interpreter.
//!
//! | Python | Rust |
//! |---|---|
//! | `moe_planner.eplb.rebalance_experts` | [`eplb::rebalance_experts`] (our optimal planner in EPLB's shapes) |
//! | `moe_planner.advise` | [`moe_planner::placement::advise`] |
//! | `moe_planner.place` | [`moe_planner::placement::plan_placement`] |
//! | `moe_planner.schedule` | [`moe_planner::schedule::plan_schedule`] |
//! | `moe_planner.iteration_search` | [`moe_planner::network::plan_search`] |
//!
//! # Examples
//!
//! ```
//! use _native::eplb::rebalance_experts;
//! // One layer of 4 experts, 6 replicas on 3 GPUs of 2 slots; one group, one node.
//! let t = rebalance_experts(vec![vec![60.0, 20.0, 10.0, 10.0]], 6, 1, 1, 3)?;
//! assert_eq!(t.physical_to_logical_map.dim(), (1, 6));
//! assert_eq!(t.expert_count.row(0).sum(), 6);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

// Issue 13: integer casts that may truncate, lose the sign or wrap are checked or justified
// where they appear, as in the library crates.
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

use pyo3::prelude::*;

mod advise;
mod boundary;
pub mod eplb;
mod place;
mod schedule;
mod search;
mod train;

/// The native module; the public API is the `moe_planner` package around it.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(eplb::py_rebalance_experts, m)?)?;
    m.add_function(wrap_pyfunction!(place::py_place, m)?)?;
    m.add_function(wrap_pyfunction!(schedule::py_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(search::py_iteration_search, m)?)?;
    m.add_function(wrap_pyfunction!(boundary::py_sleep_for_tests, m)?)?;
    m.add(
        "TooLargeError",
        m.py().get_type::<boundary::TooLargeError>(),
    )?;
    m.add_function(wrap_pyfunction!(train::py_train_search, m)?)?;
    m.add_function(wrap_pyfunction!(advise::py_advise, m)?)?;
    Ok(())
}
