//! `moe-planner train`: either one Parm MoE layer (baseline, S1, S2 and Algorithm 1's choice,
//! from a spec file), or end-to-end MoE training of a model on a cluster: every mapping ranked
//! by step time, term by term, with memory and the network question.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};

use moe_planner::comm_cost_model::parm::ParmLayer;
use moe_planner::fitting::CollectiveFitPlan;
use moe_planner::rail_network::fabric::FabricKind;
use moe_planner::rail_network::model::Recompute;
use moe_planner::rail_network::moe::{
    EpAllToAllFit, MoeMapping, MoeSearchOptions, ParamSharding, PipelineSchedule, Precision,
    StepOptions,
};
use moe_planner::training::{
    ExpertLayout, ExpertLoads, MoeModelRef, MoeTrainingPlan, MoeTrainingSpec, TrainingConfig,
    TrainingSpec, TrainingSystemRef, parm_costs_from_fits, plan_moe_training_with_progress,
    plan_training,
};

use crate::error::CliError;
use crate::format;
use crate::input::read_json;
use crate::output::{Context, print_json, report};

/// Examples printed at the end of `--help`.
const EXAMPLES: &str = r"Examples (the input files ship in the repository's examples/data/; run from a checkout's root):
  moe-planner train --model mixtral-8x7b --gpus 64 --system h100 --global-batch 256 --search --top 5
  moe-planner train --model deepseek-v3 --gpus 2048 --system h100 --global-batch 8192 \
      --tp 1 --pp 16 --ep 64 --micro-batch 1
  moe-planner train --spec examples/data/parm_layer.json
  moe-planner train --spec examples/data/measured/parm_layer_8gpu.json \
      --fit examples/data/measured/h100_fits.json

Every option and file format: https://github.com/moe-planner/moe-planner/blob/main/docs/cli.md#train";

/// Arguments of `moe-planner train`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// JSON Parm layer spec (one MoE layer; fields in the docs linked below).
    #[arg(long, conflicts_with = "model", required_unless_present = "model")]
    pub spec: Option<PathBuf>,
    /// With --spec: `fit --json` output of measured collectives: every cost comes from it (the
    /// spec's `costs` may then be omitted).
    #[arg(long, requires = "spec")]
    pub fit: Option<PathBuf>,
    /// Model preset (mixtral-8x7b, mixtral-8x22b, deepseek-v3, qwen3-235b-a22b,
    /// qwen2-57b-a14b, gpt-*) or a JSON model file.
    #[arg(long)]
    pub model: Option<String>,
    /// GPUs.
    #[arg(long, requires = "model")]
    pub gpus: Option<u64>,
    /// System preset (h100, h800, h200, b200, gb200-nvl72) or a JSON system file.
    #[arg(long, default_value = "h100")]
    pub system: String,
    /// Sequences per step.
    #[arg(long, requires = "model")]
    pub global_batch: Option<u64>,
    /// Sequence length (default: the model's, 4096 for the MoE presets).
    #[arg(long)]
    pub seq_len: Option<u64>,
    /// GEMM and dispatch precision.
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// Search every valid mapping (the default when no mapping flag is given).
    #[arg(long, conflicts_with_all = ["tp", "pp", "vp", "ep", "etp", "cp", "micro_batch"])]
    pub search: bool,
    /// Mappings shown.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Tensor parallelism (evaluate one mapping; unset degrees are 1).
    #[arg(long)]
    pub tp: Option<u64>,
    /// Pipeline stages.
    #[arg(long)]
    pub pp: Option<u64>,
    /// Virtual pipeline stages per GPU.
    #[arg(long)]
    pub vp: Option<u64>,
    /// Expert parallelism.
    #[arg(long)]
    pub ep: Option<u64>,
    /// Expert tensor parallelism (Parm's ESP; >1 uses Parm's S1/S2 schedules).
    #[arg(long)]
    pub etp: Option<u64>,
    /// Context parallelism.
    #[arg(long)]
    pub cp: Option<u64>,
    /// Sequences per micro-batch.
    #[arg(long)]
    pub micro_batch: Option<u64>,
    /// Recomputation of the evaluated mapping.
    #[arg(long, value_enum, default_value_t = RecomputeArg::None)]
    pub recompute: RecomputeArg,
    /// Busiest EP rank's load over the mean (1 = balanced); overridden per EP degree by
    /// --zipf or --loads.
    #[arg(long, default_value_t = 1.0)]
    pub imbalance: f64,
    /// Expert loads from a Zipf distribution with this exponent, hottest experts first (the
    /// worst case for contiguous experts; --lognormal draws them in random order).
    #[arg(long, conflicts_with_all = ["loads", "lognormal"])]
    pub zipf: Option<f64>,
    /// Expert loads drawn log-normal (mean 1) with this sigma (seeded by --seed).
    #[arg(long, conflicts_with = "loads")]
    pub lognormal: Option<f64>,
    /// Seed of --lognormal.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// JSON array of per-expert loads (e.g. one layer of a `logical_count` dump).
    #[arg(long)]
    pub loads: Option<PathBuf>,
    /// Extra expert slots per EP rank for the placement planner (replicas of hot experts);
    /// without it experts sit contiguously, `E/ep` per rank.
    #[arg(long)]
    pub redundant: Option<usize>,
    /// Network between HB domains.
    #[arg(long, value_enum, default_value_t = FabricArg::RailOptimized)]
    pub fabric: FabricArg,
    /// Fraction of the EP all-to-all hidden behind compute (0 to 1).
    #[arg(long, default_value_t = 0.0)]
    pub a2a_overlap: f64,
    /// JSON file `{"ep": N, "alpha_s": A, "beta_s_per_byte": B}`: a measured EP all-to-all
    /// (NCCL or DeepEP, fitted with `moe-planner fit`) on N ranks, used instead of the fabric
    /// model for mappings with that EP degree and ETP 1.
    #[arg(long)]
    pub ep_a2a_fit: Option<PathBuf>,
    /// SMs the overlapped all-to-all kernels hold while compute runs (DeepSeek-V3: 20).
    #[arg(long, default_value_t = 0)]
    pub comm_sms: u64,
    /// Where parameters, gradients and optimizer state live.
    #[arg(long, value_enum, default_value_t = ShardingArg::DistributedOptimizer)]
    pub param_sharding: ShardingArg,
    /// Pipeline schedule.
    #[arg(long, value_enum, default_value_t = PipelineArg::OneFOneB)]
    pub pipeline: PipelineArg,
    /// Fraction of the optimizer state offloaded to host memory (0 to 1).
    #[arg(long, default_value_t = 0.0)]
    pub optimizer_offload: f64,
    /// Fraction of the stored activations offloaded to host memory (0 to 1).
    #[arg(long, default_value_t = 0.0)]
    pub activation_offload: f64,
    /// Keep Adam's moments in BF16 (8 bytes of optimizer state per parameter, not 12).
    #[arg(long)]
    pub bf16_moments: bool,
    /// Keep the logits in BF16 (2 bytes each, not FP32's 4).
    #[arg(long)]
    pub bf16_logits: bool,
    /// With --model: write an SVG of the step-time breakdown of the shown mappings.
    #[arg(long, requires = "model")]
    pub svg: Option<PathBuf>,
}

/// `--precision` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PrecisionArg {
    /// BF16.
    Bf16,
    /// FP8 GEMMs and dispatch.
    Fp8,
}

/// `--recompute` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RecomputeArg {
    /// Store activations.
    None,
    /// Recompute norms, activation functions and MLA up-projections.
    Selective,
    /// Recompute every layer.
    Full,
}

/// `--param-sharding` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ShardingArg {
    /// ZeRO-1: optimizer state sharded.
    DistributedOptimizer,
    /// ZeRO-3 / FSDP: everything sharded, re-gathered per micro-batch pass.
    Fsdp,
    /// FSDP keeping the gathered weights from forward to backward.
    FsdpKeepGathered,
}

/// `--pipeline` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PipelineArg {
    /// 1F1B, interleaved when --vp > 1.
    #[value(name = "1f1b")]
    OneFOneB,
    /// DeepSeek's `DualPipe` (vp 1, even pp and micro-batch count).
    Dualpipe,
}

/// `--fabric` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FabricArg {
    /// Full-bisection Clos.
    RailOptimized,
    /// One Clos per rail, no spine.
    RailOnly,
}

/// The spec, with its costs replaced by the fitted ones under `--fit`.
fn read_spec(spec: &Path, fit: Option<&PathBuf>) -> Result<TrainingSpec, CliError> {
    let Some(fit) = fit else {
        return read_json(spec);
    };
    let layer: ParmLayer = read_json(spec)?;
    let fits: CollectiveFitPlan = read_json(fit)?;
    let costs = parm_costs_from_fits(&fits, &layer)?;
    Ok(TrainingSpec { layer, costs })
}

/// Runs the Parm layer planner or the end-to-end planner.
pub(crate) fn run(args: &Args, ctx: &Context) -> Result<(), CliError> {
    match &args.spec {
        Some(spec) => run_layer(spec, args.fit.as_ref(), ctx),
        None => run_end_to_end(args, ctx),
    }
}

/// A preset name, or a JSON file when the name ends in `.json`.
fn model_ref(name: &str) -> Result<MoeModelRef, CliError> {
    if name.ends_with(".json") {
        Ok(MoeModelRef::Custom(read_json(Path::new(name))?))
    } else {
        Ok(MoeModelRef::Preset(name.to_string()))
    }
}

fn system_ref(name: &str) -> Result<TrainingSystemRef, CliError> {
    if name.ends_with(".json") {
        Ok(TrainingSystemRef::Custom(read_json(Path::new(name))?))
    } else {
        Ok(TrainingSystemRef::Preset(name.to_string()))
    }
}

fn end_to_end_spec(args: &Args) -> Result<MoeTrainingSpec, CliError> {
    let model = args
        .model
        .as_deref()
        .ok_or_else(|| CliError::input("--model is required without --spec"))?;
    let gpus = args
        .gpus
        .ok_or_else(|| CliError::input("--gpus is required with --model"))?;
    let global_batch = args
        .global_batch
        .ok_or_else(|| CliError::input("--global-batch is required with --model"))?;
    let degrees = [
        args.tp,
        args.pp,
        args.vp,
        args.ep,
        args.etp,
        args.cp,
        args.micro_batch,
    ];
    let mapping = if degrees.iter().any(Option::is_some) {
        Some(MoeMapping {
            tp: args.tp.unwrap_or(1),
            cp: args.cp.unwrap_or(1),
            pp: args.pp.unwrap_or(1),
            vp: args.vp.unwrap_or(1),
            ep: args.ep.unwrap_or(1),
            etp: args.etp.unwrap_or(1),
            micro_batch: args.micro_batch.unwrap_or(1),
            recompute: match args.recompute {
                RecomputeArg::None => Recompute::None,
                RecomputeArg::Selective => Recompute::Selective,
                RecomputeArg::Full => Recompute::Full,
            },
        })
    } else {
        None
    };
    let options = StepOptions {
        expert_imbalance: args.imbalance,
        fabric: match args.fabric {
            FabricArg::RailOptimized => FabricKind::RailOptimized,
            FabricArg::RailOnly => FabricKind::RailOnly,
        },
        a2a_overlap: args.a2a_overlap,
        comm_sms: args.comm_sms,
        param_sharding: match args.param_sharding {
            ShardingArg::DistributedOptimizer => ParamSharding::DistributedOptimizer,
            ShardingArg::Fsdp => ParamSharding::Fsdp,
            ShardingArg::FsdpKeepGathered => ParamSharding::FsdpKeepGathered,
        },
        pipeline_schedule: match args.pipeline {
            PipelineArg::OneFOneB => PipelineSchedule::OneFOneB,
            PipelineArg::Dualpipe => PipelineSchedule::DualPipe,
        },
        optimizer_offload_fraction: args.optimizer_offload,
        activation_offload_fraction: args.activation_offload,
        bf16_optimizer_moments: args.bf16_moments,
        bf16_logits: args.bf16_logits,
        ep_all_to_all_fit: match &args.ep_a2a_fit {
            Some(path) => Some(read_json::<EpAllToAllFit>(path)?),
            None => None,
        },
        ..StepOptions::default()
    };
    options.validate()?;
    let expert_loads = match (&args.loads, args.zipf, args.lognormal) {
        (Some(path), _, _) => Some(ExpertLoads::Measured(read_json(path)?)),
        (None, Some(s), _) => Some(ExpertLoads::Zipf(s)),
        (None, None, Some(sigma)) => Some(ExpertLoads::Lognormal {
            sigma,
            seed: args.seed,
        }),
        (None, None, None) => None,
    };
    Ok(MoeTrainingSpec {
        model: model_ref(model)?,
        system: system_ref(&args.system)?,
        gpus,
        global_batch,
        seq_len: args.seq_len,
        precision: args.precision.map(|p| match p {
            PrecisionArg::Bf16 => Precision::Bf16,
            PrecisionArg::Fp8 => Precision::Fp8,
        }),
        mapping,
        options,
        search: MoeSearchOptions {
            keep: args.top.max(1),
            ..MoeSearchOptions::default()
        },
        expert_loads,
        expert_layout: args
            .redundant
            .map_or(ExpertLayout::Contiguous, |redundant| {
                ExpertLayout::Planned { redundant }
            }),
        switch_radix: 64,
    })
}

fn run_end_to_end(args: &Args, ctx: &Context) -> Result<(), CliError> {
    let spec = end_to_end_spec(args)?;
    // A progress bar on a terminal only (JSON output and pipes stay clean); searches of
    // realistic sizes finish in well under a second, so it rarely shows.
    let bar = if !ctx.json && std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} shapes") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let result = plan_moe_training_with_progress(&spec, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let plan = result?;
    if let Some(path) = &args.svg {
        crate::plot::training::write(path, &plan)?;
    }
    if ctx.json {
        return print_json(&plan);
    }
    print_plan(&plan)
}

fn print_plan(plan: &MoeTrainingPlan) -> Result<(), CliError> {
    report!(
        "model: {:.1}B parameters, {:.1}B active, {:.3e} FLOP per trained token",
        plan.parameters / 1e9,
        plan.active_parameters / 1e9,
        plan.model_flop_per_token
    )?;
    if plan.candidates > 0 {
        report!(
            "searched {} candidate mappings: {} valid, {} fit in memory",
            plan.candidates,
            plan.valid,
            plan.fitting
        )?;
    }
    report!(
        "rank  tp pp vp cp   dp  ep etp  mb recompute  step       tok/s/GPU  TFLOP/s  MFU    memory     fits"
    )?;
    for (i, c) in plan.configs.iter().enumerate() {
        report!(
            "{:<5} {:>2} {:>2} {:>2} {:>2} {:>4} {:>3} {:>3} {:>3} {:<10} {:<10} {:>9.0}  {:>7.1}  {:<5.1}% {:<10} {}",
            i + 1,
            c.tp,
            c.pp,
            c.vp,
            c.cp,
            c.dp,
            c.ep,
            c.etp,
            c.micro_batch,
            format::json_name(&c.recompute),
            format::duration(c.step_time_s),
            c.tokens_per_s_per_gpu,
            c.model_tflop_per_s_per_gpu,
            100.0 * c.mfu,
            format::bytes(c.memory_bytes_per_gpu),
            if c.fits { "yes" } else { "no" }
        )?;
    }
    if let Some(first) = plan.configs.first() {
        print_terms(first)?;
    }
    if let Some(net) = &plan.network {
        report!(
            "network: rail-optimized {} per step, {}; rail-only {} per step, {} ({:.0}% cheaper)",
            format::duration(net.rail_optimized_step_s),
            format::usd(net.comparison.rail_optimized.cost_usd),
            format::duration(net.rail_only_step_s),
            format::usd(net.comparison.rail_only.cost_usd),
            100.0 * net.comparison.cost_reduction
        )?;
    }
    Ok(())
}

fn print_terms(c: &TrainingConfig) -> Result<(), CliError> {
    let t = &c.terms;
    let d = format::duration;
    report!(
        "terms of rank 1: compute {} (attention {}, dense {}, experts {} at imbalance {:.2}, logits {}), bubble {}",
        d(t.attention_compute_s + t.dense_compute_s + t.expert_compute_s + t.logits_compute_s),
        d(t.attention_compute_s),
        d(t.dense_compute_s),
        d(t.expert_compute_s),
        c.expert_imbalance,
        d(t.logits_compute_s),
        d(t.bubble_s)
    )?;
    let parm = match c.etp_schedule {
        Some(s) => format!(
            " ({} schedule; baseline {})",
            format::json_name(&s),
            d(t.parm_baseline_s)
        ),
        None => String::new(),
    };
    report!(
        "  tp {}, cp {}, ep all-to-all {}{parm}, pp {}, dp {}, optimizer {}, offload {}",
        d(t.tp_comm_s),
        d(t.cp_comm_s),
        d(t.ep_comm_s),
        d(t.pp_comm_s),
        d(t.dp_comm_s),
        d(t.optimizer_s),
        d(t.offload_s)
    )?;
    Ok(())
}

/// Plans one Parm layer and prints the choice and the three schedule times.
fn run_layer(spec: &Path, fit: Option<&PathBuf>, ctx: &Context) -> Result<(), CliError> {
    let spec = read_spec(spec, fit)?;
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
