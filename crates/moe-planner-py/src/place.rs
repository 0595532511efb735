//! `moe_planner.place`: the placement planner (fresh, robust over windows, or a fewest-move
//! rebalance), its figures as numpy arrays.

use moe_planner::placement::{PlacementPlan, PlacementSpec, plan_placement};
use numpy::ndarray::{Array1, Array2, Array3};
use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::boundary::{parse_option, rows, run_cancellable};

/// Native half of `moe_planner.place`; returns the fields of `PlacementResult` as a dict.
#[pyfunction]
#[pyo3(name = "place")]
#[allow(clippy::too_many_arguments)] // mirrors the keyword arguments of the Python function
pub(crate) fn py_place<'py>(
    py: Python<'py>,
    loads: PyReadonlyArray2<'py, f64>,
    num_gpus: usize,
    slots_per_gpu: usize,
    nodes: usize,
    groups: Option<usize>,
    policy: &str,
    current: Option<PyReadonlyArray2<'py, i64>>,
    tolerance: f64,
    windows: Option<PyReadonlyArray3<'py, f64>>,
    robust_objective: &str,
    gpu_speed: Option<PyReadonlyArray1<'py, f64>>,
    expert_bytes: Option<f64>,
    bandwidth_gbps: f64,
    search_steps: Option<u64>,
    time_budget_s: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut spec = PlacementSpec::new(rows(&loads), num_gpus, slots_per_gpu);
    spec.nodes = nodes;
    spec.groups = groups;
    spec.policy = parse_option("policy", policy)?;
    spec.current = current.map(|c| rows(&c));
    spec.tolerance = tolerance;
    spec.windows = windows.map_or_else(Vec::new, |w| {
        w.as_array()
            .outer_iter()
            .map(|window| {
                window
                    .outer_iter()
                    .map(|row| row.iter().copied().collect())
                    .collect()
            })
            .collect()
    });
    spec.robust_objective = parse_option("robust_objective", robust_objective)?;
    spec.gpu_speed = gpu_speed.map(|s| s.as_array().to_vec());
    spec.expert_bytes = expert_bytes;
    spec.bandwidth_gbps = bandwidth_gbps;
    spec.search_steps = search_steps;
    spec.time_budget_s = time_budget_s;
    let plan = run_cancellable(py, move |cancel| {
        spec.cancel = Some(cancel);
        plan_placement(&spec)
    })?;
    result(py, &plan)
}

/// The plan as the dict `PlacementResult` is built from.
fn result<'py>(py: Python<'py>, plan: &PlacementPlan) -> PyResult<Bound<'py, PyDict>> {
    let layers = &plan.layers;
    let (n, slots) = (layers.len(), plan.gpus * plan.slots_per_gpu);
    let width = layers
        .iter()
        .flat_map(|l| l.replica_count.iter().copied())
        .max()
        .unwrap_or(1);
    let mut p2l = Array2::<i64>::zeros((n, slots));
    let mut l2p = Array3::<i64>::from_elem((n, plan.experts, width), -1);
    let mut count = Array2::<i64>::zeros((n, plan.experts));
    let mut gpu_loads = Array2::<f64>::zeros((n, plan.gpus));
    for (i, l) in layers.iter().enumerate() {
        for (s, &e) in l.physical_to_logical_map.iter().enumerate() {
            p2l[[i, s]] = to_i64(e);
        }
        for (e, row) in l.logical_to_physical_map.iter().enumerate() {
            for (r, &slot) in row.iter().enumerate() {
                l2p[[i, e, r]] = slot;
            }
            count[[i, e]] = to_i64(l.replica_count[e]);
        }
        for (g, &load) in l.gpu_loads.iter().enumerate() {
            gpu_loads[[i, g]] = load;
        }
    }
    let per_layer = |f: &dyn Fn(&moe_planner::placement::LayerPlacement) -> f64| {
        layers
            .iter()
            .map(f)
            .collect::<Array1<f64>>()
            .into_pyarray(py)
    };
    let d = PyDict::new(py);
    d.set_item("policy", &plan.policy)?;
    d.set_item("baseline_policy", &plan.baseline_policy)?;
    d.set_item("lower_bound_kind", &plan.lower_bound_kind)?;
    let termination: Vec<&str> = layers.iter().map(|l| l.termination.as_str()).collect();
    d.set_item("termination", termination)?;
    d.set_item("physical_to_logical_map", p2l.into_pyarray(py))?;
    d.set_item("logical_to_physical_map", l2p.into_pyarray(py))?;
    d.set_item("expert_count", count.into_pyarray(py))?;
    d.set_item("gpu_loads", gpu_loads.into_pyarray(py))?;
    d.set_item("max_gpu_load", per_layer(&|l| l.max_gpu_load))?;
    d.set_item("mean_gpu_load", per_layer(&|l| l.mean_gpu_load))?;
    d.set_item("lower_bound", per_layer(&|l| l.lower_bound))?;
    d.set_item("gap", per_layer(&|l| l.gap))?;
    d.set_item(
        "baseline_max_gpu_load",
        per_layer(&|l| l.baseline_max_gpu_load),
    )?;
    let baseline_duplicates: Array1<i64> = layers
        .iter()
        .map(|l| to_i64(l.baseline_duplicates_on_gpu))
        .collect();
    d.set_item(
        "baseline_duplicates_on_gpu",
        baseline_duplicates.into_pyarray(py),
    )?;
    d.set_item("mean_imbalance", plan.totals.mean_imbalance)?;
    d.set_item(
        "baseline_mean_imbalance",
        plan.totals.baseline_mean_imbalance,
    )?;
    rebalance_fields(py, plan, &d)?;
    Ok(d)
}

/// The fields that exist only with a current placement or windows (`None` otherwise).
fn rebalance_fields(py: Python<'_>, plan: &PlacementPlan, d: &Bound<'_, PyDict>) -> PyResult<()> {
    let layers = &plan.layers;
    let moves: Option<Array1<i64>> = layers.iter().map(|l| l.moves.map(to_i64)).collect();
    let baseline_moves: Option<Array1<i64>> = layers
        .iter()
        .map(|l| l.baseline_moves.map(to_i64))
        .collect();
    let transfer_time: Option<Array1<f64>> = layers
        .iter()
        .map(|l| l.transfer_schedule.as_ref().map(|t| t.makespan_s))
        .collect();
    d.set_item("moves", moves.map(|m| m.into_pyarray(py)))?;
    d.set_item("baseline_moves", baseline_moves.map(|m| m.into_pyarray(py)))?;
    d.set_item("transfer_time_s", transfer_time.map(|t| t.into_pyarray(py)))?;
    let transfers: Vec<[i64; 4]> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, l)| {
            l.transfers
                .iter()
                .map(move |t| [i, t.expert, t.src_gpu, t.dst_gpu].map(to_i64))
        })
        .collect();
    let mut table = Array2::<i64>::zeros((transfers.len(), 4));
    for (row, t) in transfers.iter().enumerate() {
        for (col, &v) in t.iter().enumerate() {
            table[[row, col]] = v;
        }
    }
    d.set_item("transfers", table.into_pyarray(py))?;
    let tradeoff: Vec<Vec<(usize, f64)>> = layers.iter().map(|l| l.tradeoff.clone()).collect();
    d.set_item("tradeoff", tradeoff)?;
    let windows = layers.first().map_or(0, |l| l.windows.len());
    let (mut ours, mut newest) = (
        Array2::<f64>::zeros((layers.len(), windows)),
        Array2::<f64>::zeros((layers.len(), windows)),
    );
    for (i, l) in layers.iter().enumerate() {
        for (w, f) in l.windows.iter().enumerate().take(windows) {
            ours[[i, w]] = f.max_gpu_load;
            newest[[i, w]] = f.newest_only_max_gpu_load;
        }
    }
    let some = |a: Array2<f64>| (windows > 0).then(|| a.into_pyarray(py));
    d.set_item("window_max_gpu_load", some(ours))?;
    d.set_item("window_newest_only_max_gpu_load", some(newest))?;
    Ok(())
}

/// An index or count as numpy's `int64` (all are far below `i64::MAX`).
fn to_i64(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
