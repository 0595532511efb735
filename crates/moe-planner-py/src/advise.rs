//! `moe_planner.advise`: the EPLB advisor (redundant experts, rebalance now or not).

use moe_planner::placement::{AdviseSpec, advise};
use numpy::PyReadonlyArray2;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::boundary::{rows, run_cancellable};

/// Native half of `moe_planner.advise`: the advice as JSON (the Python wrapper parses it).
#[pyfunction]
#[pyo3(name = "advise")]
#[allow(clippy::too_many_arguments)] // mirrors the keyword arguments of the Python function
pub(crate) fn py_advise(
    py: Python<'_>,
    loads: PyReadonlyArray2<'_, f64>,
    num_gpus: usize,
    nodes: usize,
    groups: Option<usize>,
    max_redundant: Option<usize>,
    target_imbalance: f64,
    current: Option<PyReadonlyArray2<'_, i64>>,
    min_gain: f64,
    tolerance: f64,
    expert_bytes: Option<f64>,
    bandwidth_gbps: f64,
    peer_limit: usize,
    search_steps: Option<u64>,
) -> PyResult<String> {
    let mut spec = AdviseSpec::new(rows(&loads), num_gpus);
    spec.nodes = nodes;
    spec.groups = groups;
    spec.max_redundant = max_redundant;
    spec.target_imbalance = target_imbalance;
    spec.current = current.map(|c| rows(&c));
    spec.min_gain = min_gain;
    spec.tolerance = tolerance;
    spec.expert_bytes = expert_bytes;
    spec.bandwidth_gbps = bandwidth_gbps;
    spec.transfer_peer_limit = peer_limit;
    spec.search_steps = search_steps;
    let advice = run_cancellable(py, move |cancel| {
        spec.cancel = Some(cancel);
        advise(&spec)
    })?;
    serde_json::to_string(&advice).map_err(|e| PyValueError::new_err(e.to_string()))
}
