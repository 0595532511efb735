//! `moe_planner.iteration_search`: the rail-only paper's parallelization search (App. C).

use moe_planner::network::{SearchSpec, plan_search};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::boundary::run;

/// Native half of `moe_planner.iteration_search`: a `SearchSpec` as JSON in, the `SearchPlan`
/// as JSON out (the Python wrapper builds the one and parses the other).
#[pyfunction]
#[pyo3(name = "iteration_search")]
pub(crate) fn py_iteration_search(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    let spec: SearchSpec = serde_json::from_str(spec_json)
        .map_err(|e| PyValueError::new_err(format!("search spec: {e}")))?;
    let plan = run(py, move || plan_search(&spec))?;
    serde_json::to_string(&plan).map_err(|e| PyValueError::new_err(e.to_string()))
}
