//! The demo's plots: every chart on the demo's own workloads, one file each.

use std::fs;
use std::path::{Path, PathBuf};

use moe_planner::alltoall_sched::Algorithm;
use moe_planner::inference::InferencePlan;
use moe_planner::network::{FabricSpec, SearchSpec};
use moe_planner::placement::{PlacementPlan, PlacementSpec};
use moe_planner::schedule::{GbpsSpec, ScheduleSpec, plan_schedule};

use crate::error::CliError;

/// What the demo plots, borrowed from its workload and report.
pub(crate) struct DemoPlots<'a> {
    /// The spec whose first model's first layer is scheduled and drawn as a heatmap.
    pub traffic: &'a [Vec<f64>],
    /// Per-GPU bandwidths of that matrix, Gbps.
    pub bandwidth_gbps: Vec<f64>,
    /// Inference plans with their scenario labels.
    pub inference: Vec<(&'a str, &'a InferencePlan)>,
    /// The placement spec and plan.
    pub placement: (&'a PlacementSpec, &'a PlacementPlan),
    /// The parallelization search swept over the HB-domain size.
    pub search: &'a SearchSpec,
    /// The fabric swept over the HB-domain size.
    pub fabric: &'a FabricSpec,
}

/// Writes every plot into `dir` (created if missing) and returns the files written.
pub(crate) fn write_all(dir: &Path, p: &DemoPlots<'_>) -> Result<Vec<PathBuf>, CliError> {
    fs::create_dir_all(dir)
        .map_err(|e| CliError::input(format!("cannot create {}: {e}", dir.display())))?;
    let file = |name: &str| dir.join(name);
    let mut written = Vec::new();

    let spec = ScheduleSpec {
        traffic: p.traffic.to_vec(),
        bandwidth_gbps: GbpsSpec::PerGpu(p.bandwidth_gbps.clone()),
        algorithm: Algorithm::Optimal,
        seed: 0,
    };
    let plan = plan_schedule(&spec)?;
    let path = file("alltoall-timetable.svg");
    super::gantt::write_with_sjf(
        &path,
        "All-to-all timetable per GPU: model-a layer 0 dispatch (expert i on GPU i)",
        &spec,
        &plan,
    )?;
    written.push(path);

    let path = file("traffic-matrix.svg");
    super::heatmap::write(
        &path,
        "Traffic matrix: model-a layer 0 dispatch (MB per GPU pair)",
        p.traffic,
    )?;
    written.push(path);

    let path = file("expert-placement.svg");
    super::placement::write(&path, p.placement.0, p.placement.1)?;
    written.push(path);

    let path = file("inference-time.svg");
    super::inference::write(&path, &p.inference)?;
    written.push(path);

    let path = file("hb-domain-sweep.svg");
    super::sweep::write_hb_domain_sweep(&path, p.search)?;
    written.push(path);

    let path = file("network-cost.svg");
    super::sweep::write_cost_sweep(&path, p.fabric)?;
    written.push(path);
    Ok(written)
}
