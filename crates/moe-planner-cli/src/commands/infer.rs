//! `moe-planner infer`: plan an MoE inference deployment (Aurora §4–7).

use std::path::PathBuf;

use moe_planner::inference::{InferencePlan, InferenceSpec, plan_inference};

use crate::error::CliError;
use crate::format;
use crate::input::read_json;
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner infer --spec examples/data/inference_colocated.json
  moe-planner infer --spec examples/data/inference_colocated.json --svg infer.svg

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#infer";

/// Arguments of `moe-planner infer`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// JSON inference spec, `mode` "one-per-gpu" (`gpus` in TFLOP/s and Gbps, `models`: one or
    /// two, each with per-layer dispatch traffic matrices in bytes) or "replicated" (one model
    /// with per-expert `routed_tokens` or `expert_tokens`, `slots_per_gpu`); see the docs linked
    /// below.
    #[arg(long)]
    pub spec: PathBuf,
    /// Override the spec's seed for the random baselines.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write every layer's dispatch and combine timetables as CSV
    /// (`layer,phase,src,dst,bytes,start_s,end_s`, ordered by sender then start).
    #[arg(long)]
    pub timetable_out: Option<PathBuf>,
    /// Write a plot to this SVG file: inference time of the plan next to every baseline.
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

/// Plans the deployment and prints it.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let mut spec: InferenceSpec = read_json(&args.spec)?;
    if let Some(seed) = args.seed {
        spec.set_seed(seed);
    }
    let plan = plan_inference(&spec)?;
    if let Some(path) = &args.svg {
        crate::plot::inference::write(path, &[("this deployment", &plan)])?;
    }
    if let Some(path) = &args.timetable_out {
        std::fs::write(path, timetable_csv(&plan))
            .map_err(|e| CliError::input(format!("cannot write {}: {e}", path.display())))?;
    }
    if ctx.json {
        return print_json(&plan);
    }
    print_report(&spec, &plan)?;
    Ok(())
}

/// Every layer's timetables as CSV rows `layer,phase,src,dst,bytes,start_s,end_s`.
fn timetable_csv(plan: &InferencePlan) -> String {
    let mut out = String::from("layer,phase,src,dst,bytes,start_s,end_s\n");
    for (l, layer) in plan.layers.iter().enumerate() {
        for (phase, a2a) in [("dispatch", &layer.dispatch), ("combine", &layer.combine)] {
            for t in &a2a.timetable {
                out.push_str(&format!(
                    "{l},{phase},{},{},{},{},{}\n",
                    t.src, t.dst, t.bytes, t.start_s, t.end_s
                ));
            }
        }
    }
    out
}

/// The human-readable report, shared with `demo`.
pub(crate) fn print_report(spec: &InferenceSpec, plan: &InferencePlan) -> Result<(), CliError> {
    let names = spec.model_names();
    report!(
        "scenario: {}, {} GPUs",
        format::json_name(&plan.scenario),
        spec.gpus().len()
    )?;
    if plan.experts_of_gpu.is_empty() {
        report!(
            "placement: one per layer (many experts per GPU; see --json layers[i].experts_of_gpu)"
        )?;
    } else {
        report!("placement (GPU: {}):", names.join(" + "))?;
    }
    for (g, experts) in plan.experts_of_gpu.iter().enumerate() {
        let list: Vec<String> = experts.iter().map(usize::to_string).collect();
        report!("  GPU {g:>3}: expert {}", list.join(" + "))?;
    }
    let t = format::duration;
    report!(
        "layer  dispatch bound / makespan    combine bound / makespan     layer time  dispatch pieces / pairs"
    )?;
    for (l, layer) in plan.layers.iter().enumerate() {
        report!(
            "{l:>5}  {:>12} / {:<12}  {:>12} / {:<12}  {:>12}  {:>8} / {}",
            t(layer.dispatch.lower_bound_s),
            t(layer.dispatch.makespan_s),
            t(layer.combine.lower_bound_s),
            t(layer.combine.makespan_s),
            t(layer.inference_time_s),
            layer.dispatch.pieces,
            layer.dispatch.nonzero_pairs
        )?;
    }
    report!(
        "inference time {}, GPU compute busy {:.1}% of it",
        t(plan.inference_time_s),
        plan.gpu_utilization * 100.0
    )?;
    for b in &plan.baselines {
        // A baseline may beat the plan (Lina's packing on identical GPUs): say so plainly.
        let verdict = if b.speedup >= 1.0 || b.speedup <= 0.0 {
            format!("ours is {:.2}x faster", b.speedup)
        } else {
            format!("ours is {:.2}x slower", 1.0 / b.speedup)
        };
        report!(
            "baseline ({}): {} -> {verdict}",
            b.description,
            t(b.inference_time_s),
        )?;
    }
    Ok(())
}
