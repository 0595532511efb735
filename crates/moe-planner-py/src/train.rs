//! `moe_planner.train_search`: end-to-end MoE training plans (issue 21).

use moe_planner::training::{MoeTrainingSpec, plan_moe_training};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::boundary::run;

/// Native half of `moe_planner.train_search`: a `MoeTrainingSpec` as JSON in, the
/// `MoeTrainingPlan` as JSON out (the Python wrapper builds the one and parses the other).
#[pyfunction]
#[pyo3(name = "train_search")]
pub(crate) fn py_train_search(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    let spec: MoeTrainingSpec = serde_json::from_str(spec_json)
        .map_err(|e| PyValueError::new_err(format!("train spec: {e}")))?;
    let plan = run(py, move || plan_moe_training(&spec))?;
    serde_json::to_string(&plan).map_err(|e| PyValueError::new_err(e.to_string()))
}
