//! `moe_planner.schedule`: a contention-free all-to-all timetable as numpy arrays.

use moe_planner::schedule::{GbpsSpec, ScheduleSpec, plan_schedule};
use numpy::ndarray::Array1;
use numpy::{IntoPyArray, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::boundary::{parse_option, rows, run};

/// Native half of `moe_planner.schedule`: `bandwidth_gbps` is one float (every GPU) or one per
/// GPU; returns the fields of `Schedule` as a dict.
#[pyfunction]
#[pyo3(name = "schedule")]
pub(crate) fn py_schedule<'py>(
    py: Python<'py>,
    traffic: PyReadonlyArray2<'py, f64>,
    bandwidth_gbps: &Bound<'py, PyAny>,
    algorithm: &str,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let bandwidth_gbps = match bandwidth_gbps.extract::<f64>() {
        Ok(uniform) => GbpsSpec::Uniform(uniform),
        Err(_) => GbpsSpec::PerGpu(bandwidth_gbps.extract::<Vec<f64>>()?),
    };
    let spec = ScheduleSpec {
        traffic: rows(&traffic),
        bandwidth_gbps,
        algorithm: parse_option("algorithm", algorithm)?,
        seed,
    };
    let plan = run(py, move || plan_schedule(&spec))?;
    let column = |f: &dyn Fn(&moe_planner::alltoall_sched::Transfer) -> f64| {
        plan.transfers
            .iter()
            .map(f)
            .collect::<Array1<f64>>()
            .into_pyarray(py)
    };
    let index = |f: &dyn Fn(&moe_planner::alltoall_sched::Transfer) -> usize| {
        plan.transfers
            .iter()
            .map(|t| i64::try_from(f(t)).unwrap_or(i64::MAX))
            .collect::<Array1<i64>>()
            .into_pyarray(py)
    };
    let d = PyDict::new(py);
    d.set_item("algorithm", plan.algorithm.to_string())?;
    d.set_item("src", index(&|t| t.src))?;
    d.set_item("dst", index(&|t| t.dst))?;
    d.set_item("bytes", column(&|t| t.bytes))?;
    d.set_item("start_s", column(&|t| t.start_s))?;
    d.set_item("end_s", column(&|t| t.end_s))?;
    d.set_item("lower_bound_s", plan.lower_bound_s)?;
    d.set_item("makespan_s", plan.makespan_s)?;
    d.set_item("ratio_to_bound", plan.ratio_to_bound)?;
    Ok(d)
}
