//! `moe-planner place`: expert replication and placement (EPLB's job), with EPLB beside it.

use std::fs;
use std::path::{Path, PathBuf};

use moe_planner::PlanError;
use moe_planner::placement::formats::{CurrentPlacementFile, EngineFile, LogicalCountFile};
use moe_planner::placement::{
    PlacementPlan, PlacementPolicy, PlacementSpec, RobustObjective, plan_placement,
};

use crate::error::CliError;
use crate::format;
use crate::input::{looks_like_json_object, parse_csv_rows, parse_json, read_json, read_text};
use crate::output::{Context, print_json, report, report_part};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner place --loads examples/data/placement/eplb_readme_loads.csv \
      --gpus 8 --slots-per-gpu 2 --nodes 2 --groups 4
  moe-planner place --loads examples/data/placement/vllm_pr37656_loads.csv \
      --gpus 8 --slots-per-gpu 2 --out placement.json --svg placement.svg
  moe-planner place --routed-tokens examples/data/placement/routed_tokens_locality.json \
      --gpus 16 --slots-per-gpu 18 --nodes 2 --groups 8 --traffic-tolerance 0.01

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#place";

/// Arguments of `moe-planner place`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Per-expert loads: CSV with one layer per row, or JSON `{"logical_count": [[...]]}`
    /// (SGLang's expert-distribution dump; a 3-D `[windows][layers][experts]` count is summed
    /// over windows, as SGLang does).
    #[arg(long, required_unless_present = "routed_tokens")]
    pub loads: Option<PathBuf>,
    /// Number of GPUs.
    #[arg(long)]
    pub gpus: usize,
    /// Physical expert slots per GPU (GPUs x slots >= experts).
    #[arg(long)]
    pub slots_per_gpu: usize,
    /// Number of nodes (GPUs numbered node by node; need not divide the GPU count).
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,
    /// Number of expert groups (for EPLB's hierarchical policy and `optimal-node-aware`); must
    /// divide the expert count.
    #[arg(long)]
    pub groups: Option<usize>,
    /// Planner.
    #[arg(long, value_enum, default_value_t = Policy::Optimal)]
    pub policy: Policy,
    /// The placement serving now: an --out file `{"physical_to_logical_map": [[...]]}` or a
    /// whole --json plan; with policy optimal, plan the rebalance with the fewest expert
    /// transfers.
    #[arg(long)]
    pub current: Option<PathBuf>,
    /// With --current: the rebalance's tolerance and transfer costs.
    #[command(flatten)]
    pub rebalance: super::rebalance_args::RebalanceArgs,
    /// Steps the exact search of one layer may take [default: 500000, the 2-slot count search
    /// 3000000, exact: 20000000; 0 skips the exact search].
    #[arg(long)]
    pub search_steps: Option<u64>,
    /// Wall-clock limit of one layer's search, seconds [default: 1].
    #[arg(long)]
    pub time_budget_s: Option<f64>,
    /// An older load window (same formats as --loads); repeat for several. With policy optimal
    /// every layer is planned against all windows and --loads at once; with eplb, EPLB plans on
    /// their sum; optimal-node-aware and exact refuse windows.
    #[arg(long = "window")]
    pub windows: Vec<PathBuf>,
    /// How windows combine.
    #[arg(long, value_enum, default_value_t = Objective::Worst)]
    pub robust_objective: Objective,
    /// Write the placement for the serving engine (SGLang's `--init-expert-location` file:
    /// `{"physical_to_logical_map": [[...]]}`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write a plot to this SVG file: the busiest GPU's load per layer and one layer's per-GPU loads, ours next to
    /// EPLB's, with the lower bound.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Traffic-aware placement (issue 23): per-source routed tokens instead of --loads.
    #[command(flatten)]
    pub traffic: super::place_traffic::TrafficArgs,
}

/// The planners of `place`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Policy {
    /// Minimum maximum GPU load, no duplicate replicas on a GPU.
    Optimal,
    /// Optimal with each expert group's replicas inside one node (needs --groups).
    OptimalNodeAware,
    /// Branch and bound to proven optimality (small instances).
    Exact,
    /// DeepSeek's EPLB as published.
    Eplb,
}

/// How load windows combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Objective {
    /// The worst window's maximum GPU load.
    Worst,
    /// The mean over windows.
    Mean,
}

/// Plans the placement, prints the report and writes the engine file.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    if args.traffic.routed_tokens.is_some() {
        return super::place_traffic::run(args, ctx);
    }
    let spec = spec(args)?;
    let plan = plan_placement(&spec).map_err(user_error)?;
    if let Some(path) = &args.out {
        write_engine_file(path, &plan)?;
    }
    if let Some(path) = &args.svg {
        crate::plot::placement::write(path, &spec, &plan)?;
    }
    if ctx.json {
        return print_json(&plan);
    }
    print_report(&plan)?;
    Ok(())
}

fn spec(args: &Args) -> Result<PlacementSpec, CliError> {
    let Some(loads) = &args.loads else {
        return Err(CliError::input("place needs --loads or --routed-tokens"));
    };
    let mut spec = PlacementSpec::new(read_loads(loads, "--loads")?, args.gpus, args.slots_per_gpu);
    spec.nodes = args.nodes;
    spec.groups = args.groups;
    spec.policy = match args.policy {
        Policy::Optimal => PlacementPolicy::Optimal,
        Policy::OptimalNodeAware => PlacementPolicy::OptimalNodeAware,
        Policy::Exact => PlacementPolicy::Exact,
        Policy::Eplb => PlacementPolicy::Eplb,
    };
    spec.robust_objective = match args.robust_objective {
        Objective::Worst => RobustObjective::Worst,
        Objective::Mean => RobustObjective::Mean,
    };
    if let Some(path) = &args.current {
        let file: CurrentPlacementFile = read_json(path)?;
        spec.current = Some(file.physical_to_logical_map);
    }
    spec.tolerance = args.rebalance.tolerance;
    spec.search_steps = args.search_steps;
    spec.time_budget_s = args.time_budget_s;
    spec.expert_bytes = args.rebalance.expert_bytes;
    spec.bandwidth_gbps = args.rebalance.bandwidth_gbps;
    spec.transfer_peer_limit = args.rebalance.transfer_peer_limit;
    spec.windows = args
        .windows
        .iter()
        .map(|p| read_loads(p, "--window"))
        .collect::<Result<_, _>>()?;
    Ok(spec)
}

/// Reads loads from CSV (one layer per row) or SGLang's `logical_count` JSON; `flag` names the
/// option the file came from in errors.
pub(crate) fn read_loads(path: &Path, flag: &str) -> Result<Vec<Vec<f64>>, CliError> {
    let text = read_text(path)?;
    if !looks_like_json_object(path, &text) {
        return parse_csv_rows(&text, path);
    }
    let file: LogicalCountFile = parse_json(&text, path)?;
    file.logical_count.summed().map_err(|err| match err {
        PlanError::InvalidField { reason, .. } => {
            CliError::input(format!("{flag} {}: {reason}", path.display()))
        }
        other => CliError::input(format!("{flag} {}: {other}", path.display())),
    })
}

/// The command-line option of a spec field.
fn flag(field: &str) -> &str {
    match field {
        "loads" => "--loads",
        "windows" => "--window",
        "robust_objective" => "--robust-objective",
        "gpus" => "--gpus",
        "slots_per_gpu" => "--slots-per-gpu",
        "nodes" => "--nodes",
        "groups" => "--groups",
        "policy" => "--policy",
        "current" => "--current",
        "tolerance" => "--tolerance",
        "expert_bytes" => "--expert-bytes",
        "bandwidth_gbps" => "--bandwidth-gbps",
        "transfer_peer_limit" => "--transfer-peer-limit",
        "search_steps" => "--search-steps",
        "time_budget_s" => "--time-budget-s",
        other => other,
    }
}

/// A planner error in the vocabulary of the command line: the flag, not the spec field.
fn user_error(err: PlanError) -> CliError {
    match err {
        PlanError::InvalidField { field, reason } => {
            CliError::input(format!("{}: {reason}", flag(field)))
        }
        PlanError::Incompatible {
            field,
            other,
            reason,
        } => CliError::input(format!(
            "{} cannot be combined with {}: {reason}",
            flag(field),
            flag(other)
        )),
        PlanError::MissingField { field, needed_by } => CliError::input(format!(
            "{} needs {}",
            needed_by.replace("policy ", "--policy "),
            flag(field)
        )),
        other => other.into(),
    }
}

fn write_engine_file(path: &Path, plan: &PlacementPlan) -> Result<(), CliError> {
    write_engine_maps(
        path,
        plan.layers
            .iter()
            .map(|l| l.physical_to_logical_map.as_slice()),
    )
}

/// Writes SGLang's `{"physical_to_logical_map": [[...]]}` from one slot map per layer.
pub(super) fn write_engine_maps<'a>(
    path: &Path,
    layers: impl Iterator<Item = &'a [usize]>,
) -> Result<(), CliError> {
    let map = layers
        .map(|l| {
            l.iter()
                .map(|&e| i64::try_from(e).map_err(|_| CliError::input("expert id too large")))
                .collect::<Result<Vec<i64>, CliError>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let text = serde_json::to_string(&EngineFile {
        physical_to_logical_map: map,
    })?;
    fs::write(path, text + "\n")
        .map_err(|e| CliError::input(format!("cannot write {}: {e}", path.display())))
}

fn print_report(plan: &PlacementPlan) -> Result<(), CliError> {
    report!(
        "{} experts on {} GPUs x {} slots in {} node(s); planner {}, baseline {}",
        plan.experts,
        plan.gpus,
        plan.slots_per_gpu,
        plan.nodes,
        plan.policy,
        plan.baseline_policy
    )?;
    if plan.policy == "optimal-node-aware" && plan.lower_bound_kind == "unconstrained" {
        // More groups than the library's exact group-to-node bound handles.
        report!(
            "bound: the unconstrained lower bound (valid for node-aware plans but loose: the gap \
             overstates how far the plan may be from the best node-aware one)"
        )?;
    }
    let rebalance = plan.layers.iter().any(|l| l.moves.is_some());
    report_part!("layer   max/mean   bound/mean      gap   EPLB max/mean")?;
    if rebalance {
        report_part!("   moves   EPLB moves")?;
    }
    report!()?;
    for (i, l) in plan.layers.iter().enumerate() {
        let mean = if l.mean_gpu_load > 0.0 {
            l.mean_gpu_load
        } else {
            1.0
        };
        report_part!(
            "{i:>5}   {:>8.4}   {:>10.4}   {:>5.2}%   {:>13.4}",
            l.max_gpu_load / mean,
            l.lower_bound / mean,
            100.0 * l.gap,
            l.baseline_max_gpu_load / mean
        )?;
        if let (Some(m), Some(b)) = (l.moves, l.baseline_moves) {
            report_part!("   {m:>5}   {b:>10}")?;
        }
        report!()?;
    }
    let t = &plan.totals;
    report!(
        "mean max/mean {:.4} (EPLB {:.4}); worst gap to bound {:.2}%; better than EPLB on {} of {} layers, worse on {}",
        t.mean_imbalance,
        t.baseline_mean_imbalance,
        100.0 * t.max_gap,
        t.layers_better_than_baseline,
        t.layers,
        t.layers_worse_than_baseline
    )?;
    report!(
        "search ended: {} (layers)",
        crate::format::endings(plan.layers.iter().map(|l| l.termination.as_str()))
    )?;
    report!(
        "duplicate replicas on one GPU: {} (EPLB {})",
        t.duplicates_on_gpu,
        t.baseline_duplicates_on_gpu
    )?;
    if let (Some(m), Some(b)) = (t.moves, t.baseline_moves) {
        report!("expert copies to transfer: {m} (EPLB's fresh plan: {b})")?;
    }
    if let Some(m) = t.moves_at_baseline_load {
        report!("expert copies to reach EPLB's maximum load on every layer: {m}")?;
    }
    if let (Some(bytes), Some(time)) = (t.transfer_bytes, t.transfer_time_s) {
        report!(
            "weights moved: {} in {} (contention-free, layer after layer)",
            format::bytes(bytes),
            format::duration(time)
        )?;
    }
    if let Some(rounds) = t.transfer_rounds {
        let limit = plan
            .layers
            .iter()
            .find_map(|l| l.transfer_rounds.as_ref().map(|r| r.peer_limit))
            .unwrap_or(1);
        let copies = if limit == 1 { "copy" } else { "copies" };
        match t.transfer_rounds_time_s {
            Some(time) => report!(
                "migration in rounds of at most {limit} {copies} out and in per GPU: {rounds} \
                 rounds, {} (layer after layer)",
                format::duration(time)
            )?,
            None => report!(
                "migration in rounds of at most {limit} {copies} out and in per GPU: {rounds} \
                 rounds over all layers"
            )?,
        }
    }
    Ok(())
}
