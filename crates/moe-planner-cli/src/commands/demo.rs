//! `moe-planner demo`: every planner on the embedded default workload.
//!
//! The workload (`src/demo_workload.json`, compiled into the binary) has one spec per planner:
//! two 8-expert Zipf MoE models on 8 GPUs (Aurora), a Parm training layer, an Aristos grouping
//! of 128 experts on 16 Perlmutter GPUs, and a rail-only fabric plus a parallelization search for
//! GPT-1T on GH200. `--workload FILE` runs the same report on your own file of that shape.
//! The expert-placement part always runs on the embedded DeepSeek-like loads
//! (`crates/moe-planner-cli/data/deepseek_like_loads.json`: 58 layers x 256 experts) on 32 GPUs with
//! 9 slots each in 4 nodes, then rebalances after 20% drift.

use std::path::{Path, PathBuf};

use moe_planner::expert_placement::drift_loads;
use moe_planner::grouping::{ClusterSpec, GroupPlan, GroupSpec, plan_groups};
use moe_planner::inference::{
    GpuInput, InferencePlan, InferenceSpec, OnePerGpuSpec, plan_inference,
};
use moe_planner::network::{
    FabricPlan, FabricSpec, ModelRef, SearchPlan, SearchSpec, SystemRef, plan_fabrics, plan_search,
    system_by_name,
};
use moe_planner::placement::formats::LogicalCountFile;
use moe_planner::placement::{PlacementPlan, PlacementPolicy, PlacementSpec, plan_placement};
use moe_planner::training::{TrainingPlan, TrainingSpec, plan_training};
use serde::{Deserialize, Serialize};

use crate::error::CliError;
use crate::format;
use crate::input::read_json;
use crate::output::{Context, print_json, report};
use crate::plot::demo::DemoPlots;

/// The workload compiled into the binary.
const EMBEDDED_WORKLOAD: &str = include_str!("../demo_workload.json");

/// The DeepSeek-like expert loads compiled into the binary (SGLang `logical_count` format).
const EMBEDDED_LOADS: &str = include_str!("../../data/deepseek_like_loads.json");

/// The DeepSeek-like inference spec compiled into the binary (32 GPUs in 4 nodes, 256 experts,
/// 4 layers of router traces; `examples/examples/deepseek_like_inference.rs` writes it).
const EMBEDDED_DEEPSEEK_INFERENCE: &str = include_str!("../../data/inference_deepseek_like.json");

/// Bytes of one DeepSeek-V3 routed expert in FP8: three 7168 x 2048 matrices.
const DEEPSEEK_EXPERT_BYTES: f64 = 3.0 * 7168.0 * 2048.0;

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples:
  moe-planner demo --out moe-planner-demo
  moe-planner demo --json > demo.json

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#demo";

/// Arguments of `moe-planner demo`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Run on this workload file instead of the embedded one (same JSON shape).
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// Directory for the plots (SVG), created if missing.
    #[arg(long, default_value = "moe-planner-demo")]
    pub out: PathBuf,
}

/// One spec per planner.
#[derive(Debug, Deserialize)]
struct Workload {
    description: String,
    /// One or two models with one expert each per GPU (the demo plans the first alone, then both).
    #[serde(deserialize_with = "one_per_gpu")]
    inference: OnePerGpuSpec,
    training: TrainingSpec,
    grouping: GroupSpec,
    network: NetworkWorkload,
}

/// An inference spec in the one-per-GPU mode (with or without `mode`).
fn one_per_gpu<'de, D: serde::Deserializer<'de>>(d: D) -> Result<OnePerGpuSpec, D::Error> {
    match InferenceSpec::deserialize(d)? {
        InferenceSpec::OnePerGpu(spec) => Ok(spec),
        InferenceSpec::Replicated(_) => Err(serde::de::Error::custom(
            "the demo's `inference` has one expert of each model per GPU (mode \"one-per-gpu\")",
        )),
    }
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
    deepseek_like_inference: InferencePlan,
    training: TrainingPlan,
    grouping: GroupPlan,
    fabric: FabricPlan,
    parallelization: SearchPlan,
    expert_placement: PlacementPlan,
    expert_placement_node_aware: PlacementPlan,
    expert_rebalance: PlacementPlan,
}

/// Runs every planner and prints the report.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let workload: Workload = match &args.workload {
        Some(path) => read_json(path)?,
        None => serde_json::from_str(EMBEDDED_WORKLOAD)
            .map_err(|e| CliError::input(format!("embedded demo workload: {e}")))?,
    };
    let placement = placement_specs()?;
    let deepseek = deepseek_inference()?;
    let report = plan_all(&workload, &deepseek, &placement)?;
    let files = write_plots(&args.out, &workload, &placement.fresh, &report)?;
    if ctx.json {
        return print_json(&report);
    }
    print_report(&report, &workload, &deepseek)?;
    report!("\nPlots written to {}:", args.out.display())?;
    for f in &files {
        let name = f.file_name().map_or_else(
            || f.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        report!("  {name}")?;
    }
    Ok(())
}

fn write_plots(
    dir: &Path,
    workload: &Workload,
    placement: &PlacementSpec,
    report: &DemoReport,
) -> Result<Vec<PathBuf>, CliError> {
    let first = workload
        .inference
        .models
        .first()
        .and_then(|m| m.layers.first())
        .ok_or_else(|| CliError::input("the demo workload's first model has no layer"))?;
    let plots = DemoPlots {
        traffic: first,
        bandwidth_gbps: workload
            .inference
            .gpus
            .iter()
            .map(|g| g.bandwidth_gbps)
            .collect(),
        inference: vec![
            ("one model (exclusive)", &report.exclusive_inference),
            ("two colocated models", &report.colocated_inference),
            (
                "DeepSeek-like, 256 experts on 32 GPUs",
                &report.deepseek_like_inference,
            ),
        ],
        placement: (placement, &report.expert_placement),
        search: &workload.network.search,
        fabric: &workload.network.fabric,
    };
    crate::plot::demo::write_all(dir, &plots)
}

fn plan_all(
    workload: &Workload,
    deepseek: &InferenceSpec,
    placement: &PlacementSpecs,
) -> Result<DemoReport, CliError> {
    // The first model alone shows the exclusive scenario; both together the colocated one.
    let mut exclusive = workload.inference.clone();
    exclusive.models.truncate(1);
    Ok(DemoReport {
        description: workload.description.clone(),
        exclusive_inference: plan_inference(&exclusive.into())?,
        colocated_inference: plan_inference(&workload.inference.clone().into())?,
        deepseek_like_inference: plan_inference(deepseek)?,
        training: plan_training(&workload.training)?,
        grouping: plan_groups(&workload.grouping)?,
        fabric: plan_fabrics(&workload.network.fabric)?,
        parallelization: plan_search(&workload.network.search)?,
        expert_placement: plan_placement(&placement.fresh)?,
        expert_placement_node_aware: plan_placement(&placement.node_aware)?,
        expert_rebalance: plan_placement(&placement.rebalance)?,
    })
}

/// The embedded DeepSeek-like inference spec (many experts per GPU).
fn deepseek_inference() -> Result<InferenceSpec, CliError> {
    serde_json::from_str(EMBEDDED_DEEPSEEK_INFERENCE)
        .map_err(|e| CliError::input(format!("embedded DeepSeek-like inference spec: {e}")))
}

/// The demo's three placements of the embedded DeepSeek-like loads, each compared like for like.
struct PlacementSpecs {
    /// Unconstrained (`optimal`), against EPLB's global policy.
    fresh: PlacementSpec,
    /// Each of the 8 groups inside one of the 4 nodes, against EPLB's hierarchical policy.
    node_aware: PlacementSpec,
    /// The unconstrained plan rebalanced after 20% drift.
    rebalance: PlacementSpec,
}

/// The embedded DeepSeek-like placements: unconstrained, node-aware, and a rebalance of the
/// unconstrained plan after 20% drift.
fn placement_specs() -> Result<PlacementSpecs, CliError> {
    let file: LogicalCountFile = serde_json::from_str(EMBEDDED_LOADS)
        .map_err(|e| CliError::input(format!("embedded expert loads: {e}")))?;
    let loads = file.logical_count.summed()?;
    let mut fresh = PlacementSpec::new(loads.clone(), 32, 9);
    fresh.nodes = 4;
    fresh.groups = Some(8);
    let node_aware = PlacementSpec {
        policy: PlacementPolicy::OptimalNodeAware,
        ..fresh.clone()
    };
    let current = plan_placement(&fresh)?
        .physical_to_logical_map()
        .into_iter()
        // Expert ids are below MAX_PLACEMENT_SLOTS (2^24), so they fit.
        .map(|row| {
            row.into_iter()
                .map(|e| i64::try_from(e).unwrap_or(i64::MAX))
                .collect()
        })
        .collect();
    let mut rebalance = fresh.clone();
    rebalance.loads = drift_loads(&loads, 0.2, 1)?;
    rebalance.current = Some(current);
    rebalance.expert_bytes = Some(DEEPSEEK_EXPERT_BYTES);
    Ok(PlacementSpecs {
        fresh,
        node_aware,
        rebalance,
    })
}

fn heading(title: &str) -> Result<(), CliError> {
    report!("\n== {title} ==")?;
    Ok(())
}

/// `100 Gbps`, or `25-100 Gbps` when the values differ.
fn spread(values: impl Iterator<Item = f64>, unit: &str) -> String {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo == hi {
        format!("{lo} {unit}")
    } else {
        format!("{lo}-{hi} {unit}")
    }
}

/// One line describing an inference cluster.
fn gpu_cluster(gpus: &[GpuInput]) -> String {
    format!(
        "cluster: {} GPUs, {} of network bandwidth and {} of compute per GPU",
        gpus.len(),
        spread(gpus.iter().map(|g| g.bandwidth_gbps), "Gbps"),
        spread(gpus.iter().map(|g| g.tflop_per_s), "TFLOP/s")
    )
}

/// One line describing the grouping cluster.
fn group_cluster(spec: &GroupSpec) -> String {
    let experts = format!(
        "{} experts of {:.3} GFLOP each",
        spec.experts.count,
        spec.experts.flop_per_expert / 1e9
    );
    match &spec.cluster {
        ClusterSpec::Perlmutter {
            nodes,
            expert_slots,
        } => format!(
            "cluster: Perlmutter, {nodes} nodes x 4 A100 GPUs, {expert_slots} expert slots per \
             GPU; {experts}"
        ),
        ClusterSpec::Nodes { nodes } => format!(
            "cluster: {} kinds of node, listed in the workload; {experts}",
            nodes.len()
        ),
        ClusterSpec::Matrix { workers, .. } => format!(
            "cluster: {} workers with explicit link costs; {experts}",
            workers.len()
        ),
    }
}

/// One line describing the system of the parallelization search.
fn search_cluster(spec: &SearchSpec) -> String {
    let name = match &spec.system {
        SystemRef::Preset(name) => name.clone(),
        SystemRef::Custom(_) => String::from("custom system"),
    };
    let numbers = match &spec.system {
        SystemRef::Preset(preset) => system_by_name(preset).ok(),
        SystemRef::Custom(_) => None,
    }
    .map_or_else(String::new, |s| {
        format!(
            " ({:.0} TFLOP/s, {}/s inside an HB domain of {}, {}/s network per GPU)",
            s.peak_flop_per_s / 1e12,
            format::bytes(s.hb_bytes_per_s),
            s.hb_domain,
            format::bytes(s.network_bytes_per_s)
        )
    });
    let model = match &spec.model {
        ModelRef::Preset(name) => name.clone(),
        ModelRef::Custom(_) => String::from("a custom model"),
    };
    format!(
        "parallelization search for {model}, global batch {}: {} {name} GPUs{numbers}",
        spec.global_batch, spec.gpus
    )
}

fn print_report(r: &DemoReport, w: &Workload, deepseek: &InferenceSpec) -> Result<(), CliError> {
    report!("{}", r.description)?;
    heading("MoE inference, one model (Aurora §4)")?;
    report!("{}", gpu_cluster(&w.inference.gpus))?;
    print_inference(&r.exclusive_inference)?;
    heading("MoE inference, two colocated models (Aurora §6)")?;
    if w.inference.models.len() < 2 {
        // A one-model workload has nothing to colocate: say so instead of repeating the plan.
        report!("the workload has one model: no colocation to plan")?;
    } else {
        report!(
            "{} (same cluster, two experts per GPU)",
            gpu_cluster(&w.inference.gpus)
        )?;
        print_inference(&r.colocated_inference)?;
    }
    heading("MoE inference, DeepSeek-like (32 GPUs in 4 nodes, 256 experts, top-8, 4 layers)")?;
    report!("{}", gpu_cluster(deepseek.gpus()))?;
    print_inference(&r.deepseek_like_inference)?;
    for b in &r.deepseek_like_inference.baselines[1..] {
        report!(
            "  vs {} ({:.2}x): {}",
            format::duration(b.inference_time_s),
            b.speedup,
            b.description
        )?;
    }
    heading("Expert replication and placement (DeepSeek-like, 58 layers x 256 experts)")?;
    print_placement(
        &r.expert_placement,
        &r.expert_placement_node_aware,
        &r.expert_rebalance,
    )?;
    print_training(&r.training, w)?;
    print_grouping(&r.grouping, w)?;
    print_network(r, w)
}

fn print_training(t: &TrainingPlan, w: &Workload) -> Result<(), CliError> {
    heading("MoE training layer (Parm Algorithm 1)")?;
    let l = &w.training.layer;
    report!(
        "cluster: {} GPUs in model-parallel groups of {}, experts spread over {} (expert-parallel) \
         x {} (expert-sharding) GPUs; collective costs from the workload's alpha-beta fits",
        l.p,
        l.n_mp,
        l.n_ep,
        l.n_esp
    )?;
    report!(
        "S1 and S2 are Parm's two schedules: both fold the expert-sharding AllGather and \
         AllReduce into the expert all-to-all, S2 also overlaps the rest (SAA); the baseline runs \
         every collective separately"
    )?;
    report!(
        "baseline {}, S1 {}, S2 {} -> run {} ({:.2}x over the baseline)",
        format::duration(t.baseline_s),
        format::duration(t.s1_s),
        format::duration(t.s2_s),
        format::json_name(&t.choice),
        t.speedup
    )?;
    Ok(())
}

fn print_grouping(g: &GroupPlan, w: &Workload) -> Result<(), CliError> {
    heading("Expert-parallel groups (Aristos LysiGroup)")?;
    report!("{}", group_cluster(&w.grouping))?;
    report!(
        "T(g) is a group's time per training step: compute plus communication of its slowest member"
    )?;
    let n = g.partition.groups.len();
    report!(
        "{n} group{}, largest T(g) {}; the naive groupings on the same objective:",
        if n == 1 { "" } else { "s" },
        format::duration(g.max_objective_s)
    )?;
    for b in &g.baselines {
        match b.ratio_to_lysigroup {
            Some(ratio) => report!(
                "  {:<17} largest T(g) {}",
                b.name,
                super::group::ratio_words(ratio)
            )?,
            None => report!("  {:<17} infeasible", b.name)?,
        }
    }
    Ok(())
}

fn print_network(r: &DemoReport, w: &Workload) -> Result<(), CliError> {
    heading("Network (rail-only, Table 2 and Appendix C)")?;
    let f = &r.fabric;
    report!(
        "cluster: {} GPUs in HB domains (high-bandwidth NVLink domains) of {}, switch radix {}",
        f.params.gpus,
        f.params.hb_domain,
        w.network.fabric.radix
    )?;
    report!(
        "network cost: rail-optimized {} vs rail-only {} ({:.1}% cheaper)",
        format::usd(f.rail_optimized.cost_usd),
        format::usd(f.rail_only.cost_usd),
        f.cost_reduction * 100.0
    )?;
    report!("{}", search_cluster(&w.network.search))?;
    let best = &r.parallelization.best;
    let p = &best.parallelization;
    report!(
        "best of {} parallelizations: t = {}, p = {}, d = {}, b = {}, v = {} -> {} per iteration",
        r.parallelization.evaluated,
        p.tp,
        p.pp,
        p.dp,
        p.micro_batch,
        p.interleave,
        format::duration(best.iteration_time_s)
    )?;
    report!(
        "  (t, p, d: tensor, pipeline and data parallel degrees; b: micro-batch size; \
         v: interleaved pipeline chunks per GPU)"
    )?;
    Ok(())
}

fn print_inference(plan: &InferencePlan) -> Result<(), CliError> {
    let bound: f64 = plan.layers.iter().map(|l| l.dispatch.lower_bound_s).sum();
    let made: f64 = plan.layers.iter().map(|l| l.dispatch.makespan_s).sum();
    report!(
        "scenario {}: {} layers; dispatch all-to-all summed over the layers {} (lower bound {})",
        format::json_name(&plan.scenario),
        plan.layers.len(),
        format::duration(made),
        format::duration(bound)
    )?;
    report!(
        "inference time (all layers) {}, GPU compute busy {:.1}% of it; baseline \
         ({}) {} -> ours is {:.2}x faster",
        format::duration(plan.inference_time_s),
        plan.gpu_utilization * 100.0,
        plan.baseline.description,
        format::duration(plan.baseline.inference_time_s),
        plan.speedup_over_baseline
    )?;
    Ok(())
}

fn print_placement(
    fresh: &PlacementPlan,
    node_aware: &PlacementPlan,
    rebalance: &PlacementPlan,
) -> Result<(), CliError> {
    report!(
        "{} GPUs x {} slots in {} nodes, 8 expert groups; busiest GPU over the mean GPU load, \
         mean over layers, each plan against the EPLB policy with the same constraint:",
        fresh.gpus,
        fresh.slots_per_gpu,
        fresh.nodes,
    )?;
    print_comparison("unconstrained", fresh)?;
    print_comparison("groups kept in nodes", node_aware)?;
    let r = &rebalance.totals;
    if let (Some(moves), Some(eplb_moves)) = (r.moves, r.baseline_moves) {
        report!(
            "after 20% load drift, the unconstrained plan rebalanced: {:.4}x with {moves} expert \
             copies ({} planning afresh: {:.4}x with {eplb_moves} copies)",
            r.mean_imbalance,
            rebalance.baseline_policy,
            r.baseline_mean_imbalance
        )?;
    }
    if let (Some(matching), Some(eplb_moves)) = (r.moves_at_baseline_load, r.baseline_moves) {
        report!(
            "  matching EPLB's balance instead (layer by layer) takes {matching} copies, \
             1/{:.0} of EPLB's",
            eplb_moves as f64 / matching.max(1) as f64
        )?;
    }
    if let (Some(bytes), Some(time)) = (r.transfer_bytes, r.transfer_time_s) {
        report!(
            "  {} of FP8 expert weights, {} as contention-free all-to-alls at 400 Gbps",
            format::bytes(bytes),
            format::duration(time)
        )?;
    }
    Ok(())
}

/// One plan against its like-for-like EPLB policy: the figures, the win in words (small when it
/// is), the bound it is measured against, and what else the plan gives.
fn print_comparison(label: &str, plan: &PlacementPlan) -> Result<(), CliError> {
    let t = &plan.totals;
    let win = 100.0 * (1.0 - t.mean_imbalance / t.baseline_mean_imbalance);
    let size = if win < 1.0 {
        "lower, a small win"
    } else {
        "lower"
    };
    report!(
        "  {label}: ours {:.4}x, {} {:.4}x ({win:.2}% {size}; better on {} of {} layers, \
         worse on {}); worst gap to the {} lower bound {:.2}%{}; replicas on a GPU that \
         already holds their expert: ours {}, EPLB {}",
        t.mean_imbalance,
        plan.baseline_policy,
        t.baseline_mean_imbalance,
        t.layers_better_than_baseline,
        t.layers,
        t.layers_worse_than_baseline,
        plan.lower_bound_kind,
        100.0 * t.max_gap,
        if plan.policy == "optimal-node-aware" && plan.lower_bound_kind == "unconstrained" {
            " (no bound under the node constraint yet, so this overstates the gap)"
        } else {
            ""
        },
        t.duplicates_on_gpu,
        t.baseline_duplicates_on_gpu
    )?;
    Ok(())
}
