//! `moe-planner place --routed-tokens`: traffic-aware expert placement (fewest tokens across
//! nodes within a balance limit), next to EPLB, the compute-only plan and SGLang's
//! topology-aware heuristic.

use std::path::PathBuf;

use moe_planner::PlanError;
use moe_planner::placement::formats::CurrentPlacementFile;
use moe_planner::traffic::{TrafficPlan, TrafficSpec, plan_traffic};
use serde::Deserialize;

use crate::error::CliError;
use crate::input::{parse_json, read_json, read_text};
use crate::output::{Context, print_json, report};

/// Default tolerances of the trade-off curve `--svg` draws.
const CURVE_TOLERANCES: [f64; 8] = [0.0, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25];

/// The traffic-aware options of `place`.
#[derive(Debug, clap::Args)]
pub(crate) struct TrafficArgs {
    /// Per-source routed tokens, JSON `{"routed_tokens": [[[...]]]}` or a bare
    /// `[layers][source GPU][expert]` array: plan to cut cross-node tokens (replaces --loads).
    #[arg(long, conflicts_with_all = ["loads", "windows"])]
    pub routed_tokens: Option<PathBuf>,
    /// Allowed relative excess of the busiest GPU over the best compute-only plan.
    #[arg(long, default_value_t = 0.01, requires = "routed_tokens")]
    pub traffic_tolerance: f64,
    /// Bytes of one routed token (hidden size x bytes per element), for cross-node bytes.
    #[arg(long, requires = "routed_tokens")]
    pub bytes_per_token: Option<f64>,
    /// Keep each of the --groups expert groups inside one node.
    #[arg(long, requires_all = ["routed_tokens", "groups"])]
    pub groups_in_nodes: bool,
    /// Layer whose trade-off curve --svg draws.
    #[arg(long, default_value_t = 0, requires = "routed_tokens")]
    pub curve_layer: usize,
    /// With --routed-tokens and --current: at most this many slots of a layer change expert
    /// (weight copies) [default: as many as the traffic-aware plan needs].
    #[arg(long, requires_all = ["routed_tokens", "current"])]
    pub max_moves: Option<usize>,
}

/// The routed-tokens file: an object with `routed_tokens`, or the bare array.
#[derive(Deserialize)]
#[serde(untagged)]
enum RoutedFile {
    Object { routed_tokens: Vec<Vec<Vec<f64>>> },
    Bare(Vec<Vec<Vec<f64>>>),
}

/// Plans, prints the report, writes the engine file and the trade-off curve.
pub(crate) fn run(args: &super::place::Args, ctx: &Context) -> Result<(), CliError> {
    let Some(path) = &args.traffic.routed_tokens else {
        return Err(CliError::input("--routed-tokens is missing"));
    };
    let routed = match parse_json::<RoutedFile>(&read_text(path)?, path)? {
        RoutedFile::Object { routed_tokens } | RoutedFile::Bare(routed_tokens) => routed_tokens,
    };
    if let Some(first) = routed.first() {
        if first.len() != args.gpus {
            return Err(CliError::input(format!(
                "--routed-tokens {}: {} source GPUs per layer but --gpus {}",
                path.display(),
                first.len(),
                args.gpus
            )));
        }
    }
    let mut spec = TrafficSpec::new(routed, args.slots_per_gpu, args.nodes);
    spec.groups = args.groups;
    spec.groups_in_nodes = args.traffic.groups_in_nodes;
    spec.traffic_tolerance = args.traffic.traffic_tolerance;
    spec.bytes_per_token = args.traffic.bytes_per_token;
    spec.search_steps = args.search_steps;
    spec.time_budget_s = args.time_budget_s;
    if let Some(current) = &args.current {
        let file: CurrentPlacementFile = read_json(current)?;
        spec.current = Some(file.physical_to_logical_map);
    }
    spec.max_moves = args.traffic.max_moves;
    if args.svg.is_some() {
        spec.curve_tolerances = CURVE_TOLERANCES.to_vec();
        spec.curve_layer = args.traffic.curve_layer;
    }
    let plan = plan_traffic(&spec).map_err(user_error)?;
    if let Some(out) = &args.out {
        super::place::write_engine_maps(
            out,
            plan.layers
                .iter()
                .map(|l| l.physical_to_logical_map.as_slice()),
        )?;
    }
    if let Some(svg) = &args.svg {
        crate::plot::tradeoff::write(svg, &plan)?;
    }
    if ctx.json {
        return print_json(&plan);
    }
    print_report(&plan)
}

/// Spec fields in the command line's words.
fn user_error(err: PlanError) -> CliError {
    match err {
        PlanError::InvalidField { field, reason } => {
            let flag = match field {
                "groups_in_nodes" => "--groups-in-nodes",
                "bytes_per_token" => "--bytes-per-token",
                "curve_layer" => "--curve-layer",
                "current" => "--current",
                "max_moves" => "--max-moves",
                other => other,
            };
            CliError::input(format!("{flag}: {reason}"))
        }
        other => other.into(),
    }
}

fn print_report(plan: &TrafficPlan) -> Result<(), CliError> {
    report!(
        "{} experts on {} GPUs x {} slots in {} node(s); busiest GPU within {:.2}% of the compute-only plan",
        plan.experts,
        plan.gpus,
        plan.slots_per_gpu,
        plan.nodes,
        100.0 * plan.traffic_tolerance
    )?;
    report!(
        "cross-node ratio per layer (busiest/mean GPU load in brackets), locality dispatch for every plan:"
    )?;
    report!(
        "layer        ours      bound  compute-only   EPLB hier.   EPLB global  topology-aware"
    )?;
    let cell = |f: Option<&moe_planner::traffic::TrafficFigures>| match f {
        Some(f) => format!("{:.4} ({:.3})", f.cross_node_ratio, f.max_over_mean),
        None => "-".to_owned(),
    };
    for (i, l) in plan.layers.iter().enumerate() {
        let total = if l.traffic_aware.cross_node_ratio > 0.0 {
            l.traffic_aware.cross_node_tokens / l.traffic_aware.cross_node_ratio
        } else {
            0.0
        };
        let bound = if total > 0.0 {
            l.traffic_lower_bound / total
        } else {
            0.0
        };
        report!(
            "{i:>5} {:>16} {bound:>6.4} {:>16} {:>16} {:>16} {:>16}{}",
            cell(Some(&l.traffic_aware)),
            cell(Some(&l.compute_only)),
            cell(l.eplb_hierarchical.as_ref()),
            cell(Some(&l.eplb_global)),
            cell(l.topology_aware.as_ref()),
            if l.balance_met {
                ""
            } else {
                "  (limit not met)"
            }
        )?;
    }
    let t = &plan.totals;
    let pct = |x: Option<f64>| {
        x.filter(|&b| b > 0.0).map_or("-".to_owned(), |b| {
            format!("{:.1}%", 100.0 * (1.0 - t.traffic_aware_ratio / b))
        })
    };
    report!(
        "all layers: cross-node ratio {:.4} (bound {:.4}), compute-only {:.4}, EPLB hierarchical {}, global {:.4}, topology-aware {}",
        t.traffic_aware_ratio,
        t.lower_bound_ratio,
        t.compute_only_ratio,
        t.eplb_hierarchical_ratio
            .map_or("-".to_owned(), |r| format!("{r:.4}")),
        t.eplb_global_ratio,
        t.topology_aware_ratio
            .map_or("-".to_owned(), |r| format!("{r:.4}"))
    )?;
    report!(
        "cut: {} below EPLB hierarchical, {} below the topology-aware heuristic; balance limit met on {} of {} layers (worst busiest/limit {:.4})",
        pct(t.eplb_hierarchical_ratio),
        pct(t.topology_aware_ratio),
        t.layers_balance_met,
        plan.layers.len(),
        t.worst_load_over_limit
    )?;
    report!(
        "search ended: {} (layers)",
        crate::format::endings(plan.layers.iter().map(|l| l.termination.as_str()))
    )?;
    if !plan.curve.is_empty() {
        let points: Vec<String> = plan
            .curve
            .iter()
            .map(|p| format!("eps {} {}", p.tolerance, p.termination))
            .collect();
        report!("trade-off curve search ended: {}", points.join(", "))?;
    }
    if let Some(moves) = plan.layers.iter().map(|l| l.moves).sum::<Option<usize>>() {
        let current: f64 = plan
            .layers
            .iter()
            .filter_map(|l| l.current.as_ref().map(|c| c.cross_node_tokens))
            .sum();
        let ours: f64 = plan
            .layers
            .iter()
            .map(|l| l.traffic_aware.cross_node_tokens)
            .sum();
        report!(
            "from the current placement: {moves} slot changes over all layers; cross-node tokens {:.0} -> {:.0}",
            current,
            ours
        )?;
    }
    if let Some(bytes) = plan
        .layers
        .iter()
        .map(|l| l.traffic_aware.cross_node_bytes)
        .sum::<Option<f64>>()
    {
        report!(
            "cross-node dispatch bytes: {} (the combine sends as many back)",
            crate::format::bytes(bytes)
        )?;
    }
    Ok(())
}
