//! `moe-planner train`: baseline, S1 and S2 times of a Parm MoE layer and Algorithm 1's choice.

use std::path::PathBuf;

use moe_planner::comm_cost_model::parm::ParmLayer;
use moe_planner::fitting::CollectiveFitPlan;
use moe_planner::training::{TrainingSpec, parm_costs_from_fits, plan_training};

use crate::error::CliError;
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
    report!("schedule   time (ms)   terms (ms)")?;
    report!(
        "baseline   {:>9.3}   AG_ESP {:.3}, AR_ESP {:.3}, 2 x A2A_EP {:.3}",
        plan.baseline_s * 1e3,
        d.baseline.ag_esp_s * 1e3,
        d.baseline.ar_esp_s * 1e3,
        d.baseline.a2a_dispatch_s * 1e3
    )?;
    report!(
        "S1         {:>9.3}   2 x A2A_EP&ESP {:.3}, AG_MP(BLM) {:.3}",
        plan.s1_s * 1e3,
        d.s1.a2a_dispatch_s * 1e3,
        d.s1.ag_mp_s * 1e3
    )?;
    report!(
        "S2         {:>9.3}   A2A_EP&ESP {:.3}, SAA {:.3} (sequential {:.3})",
        plan.s2_s * 1e3,
        d.s2.a2a_dispatch_s * 1e3,
        d.s2.saa_s * 1e3,
        d.s2.sequential_s * 1e3
    )?;
    report!(
        "choice: {:?} ({:.2}x faster than the baseline)",
        plan.choice,
        plan.speedup
    )?;
    Ok(())
}
