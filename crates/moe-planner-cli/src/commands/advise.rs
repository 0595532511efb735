//! `moe-planner advise`: is EPLB worth it, how many redundant experts, and does rebalancing now
//! pay for its weight transfers.

use std::path::PathBuf;

use moe_planner::PlanError;
use moe_planner::placement::formats::CurrentPlacementFile;
use moe_planner::placement::{
    Advice, AdviseSpec, DEFAULT_MIN_GAIN, DEFAULT_TARGET_IMBALANCE, advise,
};

use crate::commands::place::read_loads;
use crate::error::CliError;
use crate::format;
use crate::input::read_json;
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner advise --loads examples/data/placement/eplb_readme_loads.csv --gpus 4 \
      --max-redundant 12 --target-imbalance 1.02
  moe-planner advise --loads examples/data/placement/eplb_readme_loads.csv --gpus 8 \
      --current examples/data/placement/eplb_readme_placement.json --expert-bytes 44040192 \
      --svg advice.svg

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#advise";

/// Arguments of `moe-planner advise`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Per-expert loads: CSV with one layer per row, or JSON `{"logical_count": [[...]]}`
    /// (a 3-D count is summed over windows).
    #[arg(long)]
    pub loads: PathBuf,
    /// Number of GPUs (expert-parallel ranks).
    #[arg(long)]
    pub gpus: usize,
    /// Number of nodes; with --groups and more than one node, groups stay inside nodes.
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,
    /// Number of expert groups (must divide the expert count).
    #[arg(long)]
    pub groups: Option<usize>,
    /// Largest number of redundant experts to try [default: the fewest feasible plus the GPU
    /// count].
    #[arg(long)]
    pub max_redundant: Option<usize>,
    /// The balance to reach: busiest GPU's load over the mean, averaged over layers.
    #[arg(long, default_value_t = DEFAULT_TARGET_IMBALANCE)]
    pub target_imbalance: f64,
    /// The placement serving now (`place --out` file or a `place --json` plan): asks whether
    /// rebalancing it now pays.
    #[arg(long)]
    pub current: Option<PathBuf>,
    /// Rebalance only when it cuts the busiest GPU's load by at least this fraction.
    #[arg(long, default_value_t = DEFAULT_MIN_GAIN)]
    pub min_gain: f64,
    /// The rebalance's tolerance and transfer costs.
    #[command(flatten)]
    pub rebalance: super::rebalance_args::RebalanceArgs,
    /// Steps each layer's exact search may take (small instances; deterministic, no time limit)
    /// [default: 2000000].
    #[arg(long)]
    pub search_steps: Option<u64>,
    /// Write a plot to this SVG file: balance against redundant experts, ours and EPLB's, with
    /// the target.
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

/// Runs the advisor, prints the report or the JSON document, draws the plot.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let mut spec = AdviseSpec::new(read_loads(&args.loads, "--loads")?, args.gpus);
    spec.nodes = args.nodes;
    spec.groups = args.groups;
    spec.max_redundant = args.max_redundant;
    spec.target_imbalance = args.target_imbalance;
    spec.min_gain = args.min_gain;
    spec.tolerance = args.rebalance.tolerance;
    spec.expert_bytes = args.rebalance.expert_bytes;
    spec.bandwidth_gbps = args.rebalance.bandwidth_gbps;
    spec.transfer_peer_limit = args.rebalance.transfer_peer_limit;
    spec.search_steps = args.search_steps;
    if let Some(path) = &args.current {
        let file: CurrentPlacementFile = read_json(path)?;
        spec.current = Some(file.physical_to_logical_map);
    }
    let advice = advise(&spec).map_err(user_error)?;
    if let Some(path) = &args.svg {
        crate::plot::advice::write(path, &advice)?;
    }
    if ctx.json {
        return print_json(&advice);
    }
    print_report(&advice)
}

/// The command-line option of a spec field.
fn flag(field: &str) -> String {
    match field {
        "gpus" | "nodes" | "groups" | "loads" | "current" | "tolerance" => format!("--{field}"),
        other => format!("--{}", other.replace('_', "-")),
    }
}

/// A planner error in the vocabulary of the command line.
fn user_error(err: PlanError) -> CliError {
    match err {
        PlanError::InvalidField { field, reason } => {
            let field = match field {
                "slots_per_gpu" => "current",
                f => f,
            };
            CliError::input(format!("{}: {reason}", flag(field)))
        }
        PlanError::MissingField { field, needed_by } => {
            CliError::input(format!("{needed_by} needs {}", flag(field)))
        }
        other => other.into(),
    }
}

fn print_report(a: &Advice) -> Result<(), CliError> {
    report!(
        "{} experts on {} GPUs; planner {}, baseline {}; target busiest/mean <= {:.4}",
        a.experts,
        a.gpus,
        a.policy,
        a.baseline_policy,
        a.target_imbalance
    )?;
    report!("redundant   slots/GPU   max/mean (worst layer)   EPLB max/mean (worst layer)")?;
    for p in &a.points {
        report!(
            "{:>9}   {:>9}   {:>8.4} ({:.4})        {:>8.4} ({:.4})",
            p.redundant,
            p.slots_per_gpu,
            p.imbalance,
            p.worst_layer_imbalance,
            p.baseline_imbalance,
            p.baseline_worst_layer_imbalance
        )?;
    }
    let say = |r: Option<usize>| {
        r.map_or_else(
            || "not reached in the range tried".to_string(),
            |r| format!("{r} redundant experts"),
        )
    };
    report!(
        "smallest that reaches the target: ours {}, EPLB {}",
        say(a.recommended_redundant),
        say(a.baseline_recommended_redundant)
    )?;
    if let Some(r) = &a.rebalance {
        report!(
            "current placement: max/mean {:.4}; after a fewest-move rebalance {:.4} (gain {:.2}% of the busiest GPU's load)",
            r.current_imbalance,
            r.rebalanced_imbalance,
            100.0 * r.gain
        )?;
        let mut cost = format!(
            "cost: {} expert copies in {} migration rounds",
            r.moves, r.transfer_rounds
        );
        if let (Some(b), Some(t)) = (r.transfer_bytes, r.transfer_time_s) {
            cost.push_str(&format!(
                ", {} in {}",
                format::bytes(b),
                format::duration(t)
            ));
        }
        report!("{cost}")?;
        report!(
            "recommendation: {} (rebalance when the gain is at least {:.2}%)",
            if r.recommend {
                "rebalance now"
            } else {
                "keep the current placement"
            },
            100.0 * r.min_gain
        )?;
    }
    Ok(())
}
