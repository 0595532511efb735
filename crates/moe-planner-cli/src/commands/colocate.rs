//! `moe-planner colocate`: pair two models' experts on shared GPUs (Aurora §6.2 Case II).

use std::path::PathBuf;

use moe_planner::colocation::{ColocationSpec, plan_colocation};

use crate::error::CliError;
use crate::format;
use crate::input::read_matrix;
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner colocate --model-a examples/data/model_a_traffic.csv \
      --model-b examples/data/model_b_traffic.csv --seed 3

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#colocate";

/// Arguments of `moe-planner colocate`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Traffic matrix of model A's first all-to-all (CSV rows or JSON `{"traffic": [[...]]}`),
    /// bytes, expert i on GPU i.
    #[arg(long)]
    pub model_a: PathBuf,
    /// Traffic matrix of model B, same format and size.
    #[arg(long)]
    pub model_b: PathBuf,
    /// Seed of the random-colocation (REC) baseline.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// Computes the optimal pairing and the REC baseline and prints them.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let spec = ColocationSpec {
        model_a_traffic_bytes: read_matrix(&args.model_a)?,
        model_b_traffic_bytes: read_matrix(&args.model_b)?,
        seed: args.seed,
    };
    let plan = plan_colocation(&spec)?;
    if ctx.json {
        return print_json(&plan);
    }
    report!("GPU  expert A  expert B          send          recv")?;
    for (g, pair) in plan.pairs.iter().enumerate() {
        report!(
            "{g:>3}  {:>8}  {:>8}  {:>12}  {:>12}",
            pair[0],
            pair[1],
            format::bytes(plan.gpu_send_bytes[g]),
            format::bytes(plan.gpu_recv_bytes[g])
        )?;
    }
    report!(
        "bottleneck: {} (random colocation, seed {}: {}, {:.2}x)",
        format::bytes(plan.bottleneck_bytes),
        args.seed,
        format::bytes(plan.random_bottleneck_bytes),
        plan.random_bottleneck_bytes / plan.bottleneck_bytes.max(f64::MIN_POSITIVE)
    )?;
    Ok(())
}
