//! `moe-planner train`: baseline, S1 and S2 times of a Parm MoE layer and Algorithm 1's choice.

use std::path::PathBuf;

use moe_planner::comm_cost_model::parm::ParmLayer;
use moe_planner::fitting::CollectiveFitPlan;
use moe_planner::training::{TrainingSpec, parm_costs_from_fits, plan_training};

use crate::error::CliError;
use crate::format;
use crate::input::read_json;
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner train --spec examples/data/parm_layer.json
  moe-planner train --spec examples/data/measured/parm_layer_8gpu.json \
      --fit examples/data/measured/h100_fits.json

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#train";

/// Arguments of `moe-planner train`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// JSON Parm layer spec (fields in the docs linked below).
    #[arg(long)]
    pub spec: PathBuf,
    /// `fit --json` output of measured collectives: every cost comes from it (the spec's
    /// `costs` may then be omitted).
    #[arg(long)]
    pub fit: Option<PathBuf>,
}

/// The spec, with its costs replaced by the fitted ones under `--fit`.
fn read_spec(args: &Args) -> Result<TrainingSpec, CliError> {
    let Some(fit) = &args.fit else {
        return read_json(&args.spec);
    };
    let layer: ParmLayer = read_json(&args.spec)?;
    let fits: CollectiveFitPlan = read_json(fit)?;
    let costs = parm_costs_from_fits(&fits, &layer)?;
    Ok(TrainingSpec { layer, costs })
}

/// Plans the layer and prints the choice and the three schedule times.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let spec = read_spec(args)?;
    let plan = plan_training(&spec)?;
    if ctx.json {
        return print_json(&plan);
    }
    let d = &plan.details;
    let t = format::duration;
    report!("schedule   time         terms")?;
    report!(
        "baseline   {:<12} AG_ESP {}, AR_ESP {}, 2 x A2A_EP {}",
        t(plan.baseline_s),
        t(d.baseline.ag_esp_s),
        t(d.baseline.ar_esp_s),
        t(d.baseline.a2a_dispatch_s)
    )?;
    report!(
        "s1         {:<12} 2 x A2A_EP&ESP {}, AG_MP(BLM) {}",
        t(plan.s1_s),
        t(d.s1.a2a_dispatch_s),
        t(d.s1.ag_mp_s)
    )?;
    report!(
        "s2         {:<12} A2A_EP&ESP {}, SAA {} (sequential {})",
        t(plan.s2_s),
        t(d.s2.a2a_dispatch_s),
        t(d.s2.saa_s),
        t(d.s2.sequential_s)
    )?;
    report!(
        "choice: {} ({:.2}x faster than the baseline)",
        format::json_name(&plan.choice),
        plan.speedup
    )?;
    Ok(())
}
