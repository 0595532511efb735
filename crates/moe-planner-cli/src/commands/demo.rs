//! `moe-planner demo`: every planner on the embedded default workload.
//!
//! The workload (`src/demo_workload.json`, compiled into the binary) has one spec per planner:
//! two 8-expert Zipf MoE models on 8 GPUs (Aurora), a Parm training layer, an Aristos grouping
//! of 128 experts on 16 Perlmutter GPUs, and a rail-only fabric plus a parallelization search for
//! GPT-1T on GH200. `--workload FILE` runs the same report on your own file of that shape.

use std::path::PathBuf;

use moe_planner::grouping::{GroupPlan, GroupSpec, plan_groups};
use moe_planner::inference::{InferencePlan, InferenceSpec, plan_inference};
use moe_planner::network::{
    FabricPlan, FabricSpec, SearchPlan, SearchSpec, plan_fabrics, plan_search,
};
use moe_planner::training::{TrainingPlan, TrainingSpec, plan_training};
use serde::{Deserialize, Serialize};

use crate::error::CliError;
use crate::input::read_json;
use crate::output::{Context, print_json};

/// The workload compiled into the binary.
const EMBEDDED_WORKLOAD: &str = include_str!("../demo_workload.json");

/// Arguments of `moe-planner demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Run on this workload file instead of the embedded one (same JSON shape).
    #[arg(long)]
    pub workload: Option<PathBuf>,
}

/// One spec per planner.
#[derive(Debug, Deserialize)]
struct Workload {
    description: String,
    inference: InferenceSpec,
    training: TrainingSpec,
    grouping: GroupSpec,
    network: NetworkWorkload,
}

#[derive(Debug, Deserialize)]
struct NetworkWorkload {
    fabric: FabricSpec,
    search: SearchSpec,
}

/// Everything the demo computes.
#[derive(Debug, Serialize)]
struct DemoReport {
    description: String,
    exclusive_inference: InferencePlan,
    colocated_inference: InferencePlan,
    training: TrainingPlan,
    grouping: GroupPlan,
    fabric: FabricPlan,
    parallelization: SearchPlan,
}

/// Runs every planner and prints the report.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let workload: Workload = match &args.workload {
        Some(path) => read_json(path)?,
        None => serde_json::from_str(EMBEDDED_WORKLOAD)
            .map_err(|e| CliError::input(format!("embedded demo workload: {e}")))?,
    };
    let report = plan_all(workload)?;
    if ctx.json {
        return print_json(&report);
    }
    print_report(&report);
    Ok(())
}

fn plan_all(workload: Workload) -> Result<DemoReport, CliError> {
    // The first model alone shows the exclusive scenario; both together the colocated one.
    let mut exclusive = workload.inference.clone();
    exclusive.models.truncate(1);
    Ok(DemoReport {
        description: workload.description,
        exclusive_inference: plan_inference(&exclusive)?,
        colocated_inference: plan_inference(&workload.inference)?,
        training: plan_training(&workload.training)?,
        grouping: plan_groups(&workload.grouping)?,
        fabric: plan_fabrics(&workload.network.fabric)?,
        parallelization: plan_search(&workload.network.search)?,
    })
}

fn heading(title: &str) {
    println!("\n== {title} ==");
}

fn print_report(r: &DemoReport) {
    println!("{}", r.description);
    heading("MoE inference, one model (Aurora §4)");
    print_inference(&r.exclusive_inference);
    heading("MoE inference, two colocated models (Aurora §6)");
    print_inference(&r.colocated_inference);
    heading("MoE training layer (Parm Algorithm 1)");
    let t = &r.training;
    println!(
        "baseline {:.3} ms, S1 {:.3} ms, S2 {:.3} ms -> run {:?} ({:.2}x over the baseline)",
        t.baseline_s * 1e3,
        t.s1_s * 1e3,
        t.s2_s * 1e3,
        t.choice,
        t.speedup
    );
    heading("Expert-parallel groups (Aristos LysiGroup)");
    let g = &r.grouping;
    println!(
        "{} groups, largest T(g) {:.4} s",
        g.partition.groups.len(),
        g.max_objective_s
    );
    for b in &g.baselines {
        match b.ratio_to_lysigroup {
            Some(ratio) => println!("  {:<17} {ratio:.3}x LysiGroup", b.name),
            None => println!("  {:<17} infeasible", b.name),
        }
    }
    heading("Network (rail-only, Table 2 and Appendix C)");
    let f = &r.fabric;
    println!(
        "{} GPUs, HB domain {}: rail-optimized ${:.0}M vs rail-only ${:.0}M ({:.1}% cheaper)",
        f.params.gpus,
        f.params.hb_domain,
        f.rail_optimized.cost_usd / 1e6,
        f.rail_only.cost_usd / 1e6,
        f.cost_reduction * 100.0
    );
    let best = &r.parallelization.best;
    let p = &best.parallelization;
    println!(
        "best of {} parallelizations: t = {}, p = {}, d = {}, b = {}, v = {} -> {:.2} s per iteration",
        r.parallelization.evaluated,
        p.tp,
        p.pp,
        p.dp,
        p.micro_batch,
        p.interleave,
        best.iteration_time_s
    );
}

fn print_inference(plan: &InferencePlan) {
    let bound: f64 = plan.layers.iter().map(|l| l.dispatch.lower_bound_s).sum();
    let made: f64 = plan.layers.iter().map(|l| l.dispatch.makespan_s).sum();
    println!(
        "{:?}: {} layers, dispatch all-to-all {:.3} ms (lower bound {:.3} ms)",
        plan.scenario,
        plan.layers.len(),
        made * 1e3,
        bound * 1e3
    );
    println!(
        "inference time {:.3} ms, GPU utilization {:.1}%; baseline {:.3} ms -> {:.2}x faster",
        plan.inference_time_s * 1e3,
        plan.gpu_utilization * 100.0,
        plan.baseline.inference_time_s * 1e3,
        plan.speedup_over_baseline
    );
}
