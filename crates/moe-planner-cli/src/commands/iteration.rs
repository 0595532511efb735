//! `moe-planner iteration`: LLM training iteration time on a cluster (rail-only paper §5,
//! Eq. 2–7), for a given parallelization or the best one found by search (Appendix C).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use moe_planner::fitting::CollectiveFitPlan;
use moe_planner::network::{
    IterationPlan, IterationSpec, ModelRef, ParallelSpec, SearchSpec, SystemRef, compute_by_name,
    model_by_name, plan_iteration, plan_search_with_progress, system_by_name,
};
use moe_planner::rail_network::compute::ComputeModel;
use moe_planner::rail_network::model::Recompute;

use crate::error::CliError;
use crate::format;
use crate::input::read_json;
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples:
  moe-planner iteration --model gpt-1t --system dgx-a100 --gpus 512 --tp 8 --pp 64 --global-batch 512
  moe-planner iteration --model gpt-175b --system dgx-h100 --gpus 1024 --search --top 5

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#iteration";

/// Arguments of `moe-planner iteration`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// Model preset (gpt-22b, gpt-175b, gpt-530b, gpt-1t, gpt-145.6b, gpt-310.1b, gpt-529.6b,
    /// gpt-1008b) or a JSON file {heads, hidden, layers, `seq_len`, vocab}.
    #[arg(long)]
    pub model: String,
    /// System preset (dgx-a100, dgx-h100, gh200) or a JSON file {`hb_domain`, `peak_tflop_per_s`,
    /// `hb_gb_per_s`, `network_gbps`, `memory_gb`, `latency_us`}.
    #[arg(long)]
    pub system: String,
    /// GPUs used.
    #[arg(long)]
    pub gpus: u64,
    /// Tensor parallel degree (required without --search).
    #[arg(long)]
    pub tp: Option<u64>,
    /// Pipeline parallel degree (required without --search).
    #[arg(long)]
    pub pp: Option<u64>,
    /// Data parallel degree (default N / (tp pp)).
    #[arg(long)]
    pub dp: Option<u64>,
    /// Micro-batch size.
    #[arg(long, default_value_t = 1)]
    pub microbatch: u64,
    /// Global batch size (default: d × micro-batch, or N with --search).
    #[arg(long)]
    pub global_batch: Option<u64>,
    /// Interleaved pipeline stages per GPU.
    #[arg(long, default_value_t = 1)]
    pub interleave: u64,
    /// Search every valid parallelization and print the best under `best` (the search chooses
    /// t, p, d, b and v itself, so giving any of them is a usage error).
    #[arg(long, conflicts_with_all = ["tp", "pp", "dp", "microbatch", "interleave"])]
    pub search: bool,
    /// Configurations listed with --search (at least 1).
    #[arg(long, default_value_t = 5, value_parser = at_least_one)]
    pub top: usize,
    /// Write a plot to this SVG file: with --search, the best iteration time against the HB-domain size
    /// K = 1, 2, 4, ... (rail-only Fig. 9).
    #[arg(long, requires = "search")]
    pub svg: Option<PathBuf>,
    /// Compute model: `paper` (the rail-only paper's assumptions) or `calibrated` (fitted on
    /// nine published runs; valid for hidden >= 6144; its accuracy is in the docs
    /// linked below).
    #[arg(long, default_value = "paper")]
    pub compute: String,
    /// Activation recomputation: none, selective (Korthikanti et al.) or full (Megatron-LM).
    #[arg(long, default_value = "selective", value_parser = ["none", "selective", "full"])]
    pub recompute: String,
    /// `fit --json` output of measured collectives: the HB-domain bandwidth and per-step
    /// latency come from its AllGather fit.
    #[arg(long)]
    pub fit: Option<PathBuf>,
}

/// Parses a count that must be at least 1 (a usage error otherwise, exit 2).
fn at_least_one(arg: &str) -> Result<usize, String> {
    match arg.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn model_ref(arg: &str) -> Result<ModelRef, CliError> {
    if model_by_name(arg).is_ok() || !Path::new(arg).exists() {
        // An unknown name that is not a file reports the preset list from the library.
        model_by_name(arg)?;
        return Ok(ModelRef::Preset(arg.to_string()));
    }
    Ok(ModelRef::Custom(read_json(Path::new(arg))?))
}

fn system_ref(arg: &str) -> Result<SystemRef, CliError> {
    if system_by_name(arg).is_ok() || !Path::new(arg).exists() {
        system_by_name(arg)?;
        return Ok(SystemRef::Preset(arg.to_string()));
    }
    Ok(SystemRef::Custom(read_json(Path::new(arg))?))
}

/// The compute model of `--compute` with the recomputation of `--recompute`.
fn compute_model(args: &Args) -> Result<ComputeModel, CliError> {
    let recompute = match args.recompute.as_str() {
        "none" => Recompute::None,
        "full" => Recompute::Full,
        _ => Recompute::Selective,
    };
    Ok(ComputeModel {
        recompute,
        ..compute_by_name(&args.compute)?
    })
}

fn print_plan(plan: &IterationPlan) -> Result<(), CliError> {
    let p = &plan.parallelization;
    let t = &plan.terms;
    report!(
        "t = {} (HB {}), p = {} (HB {}), d = {} (HB {}), b = {}, B = {}, v = {}, m = {}",
        p.tp,
        p.tp_hb,
        p.pp,
        p.pp_hb,
        p.dp,
        p.dp_hb,
        p.micro_batch,
        p.global_batch,
        p.interleave,
        t.micro_batches
    )?;
    report!(
        "iteration time        {:>12}",
        format::duration(plan.iteration_time_s)
    )?;
    for (name, v) in [
        ("  bubble compute", t.bubble_compute_s),
        ("  bubble comm", t.bubble_comm_s),
        ("  last-stage compute", t.last_stage_compute_s),
        ("  last-stage TP comm", t.last_stage_tp_comm_s),
        ("  last-stage PP comm", t.last_stage_pp_comm_s),
        ("  parameter sync", t.sync_s),
        ("  latency", t.latency_s),
    ] {
        report!("{name:<22}{:>12}", format::duration(v))?;
    }
    report!(
        "memory per GPU        {:>12}{}",
        format::bytes(plan.memory.total_bytes),
        if plan.fits_in_memory {
            ""
        } else {
            "  (does NOT fit)"
        }
    )?;
    Ok(())
}

fn run_search(
    args: &Args,
    ctx: &Context,
    model: ModelRef,
    system: SystemRef,
    link_fits: Option<CollectiveFitPlan>,
    compute: Option<ComputeModel>,
) -> Result<(), CliError> {
    let spec = SearchSpec {
        model,
        system,
        gpus: args.gpus,
        global_batch: args.global_batch.unwrap_or(args.gpus),
        keep: args.top,
        compute,
        link_fits: link_fits.clone(),
    };
    let show_bar = !ctx.json && std::io::stderr().is_terminal();
    let bar = if show_bar {
        let bar = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} shapes") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let result = plan_search_with_progress(&spec, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let plan = result?;
    if let Some(path) = &args.svg {
        crate::plot::sweep::write_hb_domain_sweep(path, &spec)?;
    }
    if ctx.json {
        return print_json(&plan);
    }
    report!(
        "searched {} configurations over {} (p, t, d) shapes; best:",
        plan.evaluated,
        plan.shapes
    )?;
    print_plan(&plan.best)?;
    report!(
        "\nt, p, d: tensor, pipeline and data parallel degrees (t_h, p_h, d_h: the part inside an \
         HB domain); b: micro-batch size; v: interleaved pipeline chunks per GPU"
    )?;
    report!("rank          time    t  p  d  b  v  (t_h p_h d_h)")?;
    for (i, c) in plan.ranked.iter().enumerate() {
        let p = &c.parallelization;
        report!(
            "{:>4} {:>13} {:>4} {:>2} {:>2} {:>2} {:>2}  ({} {} {})",
            i + 1,
            format::duration(c.iteration_time_s),
            p.tp,
            p.pp,
            p.dp,
            p.micro_batch,
            p.interleave,
            p.tp_hb,
            p.pp_hb,
            p.dp_hb
        )?;
    }
    Ok(())
}

/// Predicts the iteration time (or searches for the best configuration) and prints it.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let model = model_ref(&args.model)?;
    let system = system_ref(&args.system)?;
    let link_fits: Option<CollectiveFitPlan> = args.fit.as_deref().map(read_json).transpose()?;
    let compute = Some(compute_model(args)?);
    if args.search {
        return run_search(args, ctx, model, system, link_fits, compute);
    }
    let (Some(tp), Some(pp)) = (args.tp, args.pp) else {
        return Err(CliError::input("give --tp and --pp, or --search"));
    };
    let spec = IterationSpec {
        model,
        system,
        gpus: args.gpus,
        parallelization: ParallelSpec {
            tp,
            pp,
            dp: args.dp,
            micro_batch: args.microbatch,
            global_batch: args.global_batch,
            interleave: args.interleave,
        },
        compute,
        link_fits: link_fits.clone(),
    };
    let plan = plan_iteration(&spec)?;
    if args.global_batch.is_none() {
        warn_if_degenerate_pipeline(&plan);
    }
    if ctx.json {
        return print_json(&plan);
    }
    print_plan(&plan)?;
    Ok(())
}

/// Warns on stderr when the default global batch (d x b) leaves a pipeline of p > 1 stages
/// fewer micro-batches than stages: the bubble (p - 1 of m + p - 1 slots) then dominates the
/// iteration, which is almost never the configuration the user meant to evaluate.
fn warn_if_degenerate_pipeline(plan: &IterationPlan) {
    let p = &plan.parallelization;
    let m = plan.terms.micro_batches;
    if p.pp > 1 && m < p.pp {
        eprintln!(
            "moe-planner: warning: --global-batch defaulted to d x b = {}, so the {} pipeline \
             stages run {m} micro-batch(es) and the pipeline bubble is {:.0}% of the iteration; \
             give --global-batch",
            p.global_batch,
            p.pp,
            100.0 * (plan.terms.bubble_compute_s + plan.terms.bubble_comm_s)
                / plan.iteration_time_s.max(f64::MIN_POSITIVE)
        );
    }
}
