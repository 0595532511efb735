//! Published MoE training runs, the calibration of the two GEMM efficiencies on a named subset,
//! and the error on the held-out rest (`docs/reproduction.md`, MoE training).
//!
//! Every run gives a model, a system, a GPU count, a global batch, a sequence length, a
//! precision, the parallel mapping and a measured throughput in tokens per second per GPU
//! (convention-free, unlike model TFLOP/s, whose attention-FLOP conventions differ between
//! sources). [`calibrate`] fits only [`ComputeEfficiency::gemm_efficiency`] (on the BF16 runs
//! marked `calibration`) and [`ComputeEfficiency::fp8_gemm_efficiency`] (on the FP8 ones); the
//! attention slowdown and every bandwidth stay at their stated values. Each run also carries
//! what its source states about how it trains (recomputation, parameter sharding, pipeline
//! schedule, all-to-all overlap and the SMs it holds, BF16 optimizer moments or logits); none of
//! these is fitted. Memory does not gate the prediction: a run is predicted whether or not it
//! fits our memory model (5 of the 8 do; `docs/reproduction.md`).

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::fabric::FabricKind;
use crate::model::Recompute;
use crate::moe::cluster::training_system_preset;
use crate::moe::efficiency::ComputeEfficiency;
use crate::moe::mapping::MoeMapping;
use crate::moe::model::Precision;
use crate::moe::presets::moe_model_preset;
use crate::moe::step::{MoeEvaluation, StepModel, StepOptions};
use crate::moe::strategy::{ParamSharding, PipelineSchedule};
use comm_cost_model::InputError;

/// One published training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedRun {
    /// Short name.
    pub name: &'static str,
    /// Where the numbers come from.
    pub source: &'static str,
    /// Model preset.
    pub model: &'static str,
    /// Training-system preset.
    pub system: &'static str,
    /// GPUs.
    pub gpus: u64,
    /// Sequences per step.
    pub global_batch: u64,
    /// Sequence length.
    pub seq_len: u64,
    /// Precision.
    pub precision: Precision,
    /// The published mapping.
    pub mapping: MoeMapping,
    /// Fraction of the EP all-to-all the run hides behind compute (DeepSeek's `DualPipe`: 1).
    pub a2a_overlap: f64,
    /// SMs the run's overlapped all-to-all kernels hold (DeepSeek-V3 §3.2.2: 20 of 132).
    pub comm_sms: u64,
    /// Where the run keeps parameters, gradients and optimizer state.
    pub param_sharding: ParamSharding,
    /// The run's pipeline schedule.
    pub pipeline_schedule: PipelineSchedule,
    /// Whether the run keeps Adam's moments in BF16.
    pub bf16_optimizer_moments: bool,
    /// Whether the run keeps its logits in BF16.
    pub bf16_logits: bool,
    /// Measured tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Whether the run is in the calibration subset (else held out).
    pub calibration: bool,
}

const fn mapping(tp: u64, cp: u64, pp: u64, vp: u64, ep: u64, micro_batch: u64) -> MoeMapping {
    MoeMapping {
        tp,
        cp,
        pp,
        vp,
        ep,
        etp: 1,
        micro_batch,
        recompute: Recompute::None,
    }
}

const AUTOMODEL: &str = "NVIDIA NeMo AutoModel performance summary, DGX-H100 BF16 pre-training table (docs.nvidia.com/nemo/automodel, performance-summary); recipes in NVIDIA-NeMo/Automodel examples/benchmark/configs (FSDP2, activation_checkpointing: true, fake_balanced_gate: true)";

/// `NeMo` `AutoModel`'s benchmark recipes shard with `FSDP2` and checkpoint every layer
/// (`activation_checkpointing: true`); the DeepSeek-V3 ones keep the gathered weights from
/// forward to backward (`reshard_after_forward: false`). Their gate is forced balanced
/// (`fake_balanced_gate: true`), so no expert imbalance; the loss keeps BF16 logits
/// (`fp32_upcast: false`).
fn automodel(run: PublishedRun, sharding: ParamSharding) -> PublishedRun {
    PublishedRun {
        param_sharding: sharding,
        bf16_logits: true,
        mapping: MoeMapping {
            recompute: Recompute::Full,
            ..run.mapping
        },
        ..run
    }
}
const NEMO_2504: &str = "NVIDIA NeMo Framework 25.04 performance summary, DGX-GB200 FP8 pre-training table (docs.nvidia.com/nemo-framework, performance_summary)";
const NEMO_2507: &str = "NVIDIA NeMo Framework 25.07 performance summary, DGX-GB200 FP8 pre-training table (docs.nvidia.com/nemo-framework, performance-summary)";

/// The published runs (sources in each entry; `docs/reproduction.md` has the table).
///
/// # Examples
///
/// ```
/// use rail_network::moe::validation::published_runs;
/// let runs = published_runs();
/// assert!(runs.len() >= 8);
/// assert!(runs.iter().filter(|r| r.calibration).count() < runs.len() / 2);
/// ```
#[must_use]
pub fn published_runs() -> Vec<PublishedRun> {
    let run = |name, source, model, system, (gpus, global_batch, seq_len), precision, mapping| {
        PublishedRun {
            name,
            source,
            model,
            system,
            gpus,
            global_batch,
            seq_len,
            precision,
            mapping,
            a2a_overlap: 0.0,
            comm_sms: 0,
            param_sharding: ParamSharding::DistributedOptimizer,
            pipeline_schedule: PipelineSchedule::OneFOneB,
            bf16_optimizer_moments: false,
            bf16_logits: false,
            tokens_per_s_per_gpu: 0.0,
            calibration: false,
        }
    };
    let bf16 = Precision::Bf16;
    let fp8 = Precision::Fp8;
    vec![
        automodel(
            PublishedRun {
                tokens_per_s_per_gpu: 1002.0,
                calibration: true,
                ..run(
                    "deepseek-v3-256-h100",
                    AUTOMODEL,
                    "deepseek-v3",
                    "h100",
                    (256, 512, 4096),
                    bf16,
                    mapping(1, 1, 4, 8, 64, 1),
                )
            },
            ParamSharding::FsdpKeepGathered,
        ),
        automodel(
            PublishedRun {
                tokens_per_s_per_gpu: 12040.0,
                calibration: true,
                ..run(
                    "qwen3-30b-a3b-8-h100",
                    AUTOMODEL,
                    "qwen3-30b-a3b",
                    "h100",
                    (8, 512, 4096),
                    bf16,
                    mapping(1, 1, 1, 1, 8, 4),
                )
            },
            ParamSharding::Fsdp,
        ),
        PublishedRun {
            tokens_per_s_per_gpu: 19275.0,
            calibration: true,
            ..run(
                "mixtral-8x7b-64-gb200",
                NEMO_2504,
                "mixtral-8x7b",
                "gb200-nvl72",
                (64, 256, 4096),
                fp8,
                mapping(1, 1, 1, 1, 8, 2),
            )
        },
        automodel(
            PublishedRun {
                tokens_per_s_per_gpu: 865.0,
                ..run(
                    "deepseek-v3-1024-h100",
                    AUTOMODEL,
                    "deepseek-v3",
                    "h100",
                    (1024, 8192, 4096),
                    bf16,
                    mapping(1, 1, 4, 8, 64, 1),
                )
            },
            ParamSharding::FsdpKeepGathered,
        ),
        automodel(
            PublishedRun {
                tokens_per_s_per_gpu: 924.0,
                ..run(
                    "kimi-k2-256-h100",
                    AUTOMODEL,
                    "kimi-k2",
                    "h100",
                    (256, 512, 4096),
                    bf16,
                    mapping(1, 1, 8, 4, 32, 1),
                )
            },
            ParamSharding::Fsdp,
        ),
        PublishedRun {
            tokens_per_s_per_gpu: 13783.0,
            ..run(
                "llama4-scout-64-gb200",
                NEMO_2507,
                "llama4-scout",
                "gb200-nvl72",
                (64, 1024, 8192),
                fp8,
                mapping(1, 1, 1, 1, 16, 1),
            )
        },
        PublishedRun {
            tokens_per_s_per_gpu: 2731.0,
            ..run(
                "mixtral-8x22b-64k-256-gb200",
                NEMO_2504,
                "mixtral-8x22b",
                "gb200-nvl72",
                (256, 64, 65536),
                fp8,
                MoeMapping {
                    tp: 2,
                    ..mapping(2, 8, 4, 14, 8, 1)
                },
            )
        },
        PublishedRun {
            // 180K H800 GPU hours per trillion tokens (§1, Table 1): 1e12 / (180e3 x 3600).
            tokens_per_s_per_gpu: 1e12 / (180e3 * 3600.0),
            a2a_overlap: 1.0,
            // §3.2.2: "only 20 SMs are sufficient to fully utilize the bandwidths of IB and
            // NVLink" for the cross-node all-to-all that DualPipe overlaps with compute.
            comm_sms: 20,
            // §3.2.1, Table 2: DualPipe's bubble and two copies of the parameters.
            pipeline_schedule: PipelineSchedule::DualPipe,
            // §3.3.3: AdamW's moments in BF16.
            bf16_optimizer_moments: true,
            ..run(
                "deepseek-v3-2048-h800",
                "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, §1 and §3.2 (2,048 H800, PP16, EP64 over 8 nodes, ZeRO-1 DP, DualPipe overlapping all-to-all; batch 15,360 x 4,096)",
                "deepseek-v3",
                "h800",
                (2048, 15360, 4096),
                fp8,
                MoeMapping {
                    // §3.3: RMSNorm and MLA up-projections are recomputed in back-propagation.
                    recompute: Recompute::Selective,
                    ..mapping(1, 1, 16, 1, 64, 1)
                },
            )
        },
    ]
}

/// Our prediction for a run under `efficiency`.
///
/// # Errors
///
/// An unknown preset or an invalid mapping (a bug in the table; tests evaluate every run).
///
/// # Complexity
///
/// `O(1)`.
///
/// # Examples
///
/// ```
/// use rail_network::moe::{validation::{predict, published_runs}, ComputeEfficiency};
/// let run = &published_runs()[0];
/// let e = predict(run, &ComputeEfficiency::calibrated())?;
/// assert!((e.tokens_per_s_per_gpu / run.tokens_per_s_per_gpu - 1.0).abs() < 0.3);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn predict(
    run: &PublishedRun,
    efficiency: &ComputeEfficiency,
) -> Result<MoeEvaluation, RailNetworkError> {
    step_model(run, efficiency)?.evaluate(&run.mapping, run.gpus, run.global_batch)
}

/// The step model a run is predicted with.
///
/// # Errors
///
/// An unknown preset or invalid options.
pub fn step_model(
    run: &PublishedRun,
    efficiency: &ComputeEfficiency,
) -> Result<StepModel, RailNetworkError> {
    let mut model = moe_model_preset(run.model)?;
    model.seq_len = run.seq_len;
    model.precision = run.precision;
    let options = StepOptions {
        efficiency: *efficiency,
        a2a_overlap: run.a2a_overlap,
        comm_sms: run.comm_sms,
        param_sharding: run.param_sharding,
        pipeline_schedule: run.pipeline_schedule,
        bf16_optimizer_moments: run.bf16_optimizer_moments,
        bf16_logits: run.bf16_logits,
        fabric: FabricKind::RailOptimized,
        ..StepOptions::default()
    };
    StepModel::new(model, training_system_preset(run.system)?, options)
}

/// Sum of squared log errors of the runs of one precision in the calibration subset.
fn loss(runs: &[&PublishedRun], efficiency: &ComputeEfficiency) -> Result<f64, RailNetworkError> {
    let mut sum = 0.0;
    for run in runs {
        let e = predict(run, efficiency)?;
        sum += (e.tokens_per_s_per_gpu / run.tokens_per_s_per_gpu)
            .ln()
            .powi(2);
    }
    Ok(sum)
}

/// Golden-section minimum of `f` on `[lo, hi]` (60 steps: width below `1e-12`).
fn golden(
    mut lo: f64,
    mut hi: f64,
    f: impl Fn(f64) -> Result<f64, RailNetworkError>,
) -> Result<f64, RailNetworkError> {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let mut a = hi - r * (hi - lo);
    let mut b = lo + r * (hi - lo);
    let (mut fa, mut fb) = (f(a)?, f(b)?);
    for _ in 0..60 {
        if fa <= fb {
            hi = b;
            b = a;
            fb = fa;
            a = hi - r * (hi - lo);
            fa = f(a)?;
        } else {
            lo = a;
            a = b;
            fa = fb;
            b = lo + r * (hi - lo);
            fb = f(b)?;
        }
    }
    Ok((lo + hi) / 2.0)
}

/// Fits the BF16 and FP8 GEMM efficiencies on the runs marked `calibration` (least squares on
/// log throughput, golden-section search on `[0.05, 1]`; BF16 first on the BF16 runs, then FP8
/// on the FP8 runs with the fitted BF16 value, since FP8 runs keep scores and logits in BF16),
/// keeping the stated attention slowdown.
///
/// # Errors
///
/// [`RailNetworkError::Input`] (`Degenerate`) when the subset has no BF16 or no FP8 run;
/// prediction errors of a run.
///
/// # Complexity
///
/// `O(60 r)` step evaluations for `r` calibration runs.
///
/// # Examples
///
/// ```
/// use rail_network::moe::{validation::{calibrate, published_runs}, ComputeEfficiency};
/// let fitted = calibrate(&published_runs())?;
/// assert!((fitted.gemm_efficiency - ComputeEfficiency::calibrated().gemm_efficiency).abs() < 1e-6);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn calibrate(runs: &[PublishedRun]) -> Result<ComputeEfficiency, RailNetworkError> {
    let start = ComputeEfficiency::calibrated();
    let subset = |p: Precision| -> Vec<&PublishedRun> {
        runs.iter()
            .filter(|r| r.calibration && r.precision == p)
            .collect()
    };
    let (bf16, fp8) = (subset(Precision::Bf16), subset(Precision::Fp8));
    if bf16.is_empty() || fp8.is_empty() {
        return Err(InputError::Degenerate {
            what: "the calibration subset needs a BF16 and an FP8 run",
        }
        .into());
    }
    let gemm_efficiency = golden(0.05, 1.0, |x| {
        loss(
            &bf16,
            &ComputeEfficiency {
                gemm_efficiency: x,
                ..start
            },
        )
    })?;
    let fp8_gemm_efficiency = golden(0.05, 1.0, |x| {
        // FP8 runs still run scores and logits in BF16: fit after the BF16 efficiency.
        let e = ComputeEfficiency {
            gemm_efficiency,
            fp8_gemm_efficiency: x,
            ..start
        };
        loss(&fp8, &e)
    })?;
    Ok(ComputeEfficiency {
        gemm_efficiency,
        fp8_gemm_efficiency,
        ..start
    })
}

/// One run's published and predicted throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunError {
    /// The run's name.
    pub name: &'static str,
    /// Whether it was in the calibration subset.
    pub calibration: bool,
    /// Published tokens/s/GPU.
    pub published_tokens_per_s_per_gpu: f64,
    /// Predicted tokens/s/GPU.
    pub predicted_tokens_per_s_per_gpu: f64,
    /// `predicted / published - 1`.
    pub relative_error: f64,
    /// The prediction, term by term.
    pub evaluation: MoeEvaluation,
}

/// The error of every run under `efficiency`, and the median and worst absolute error of the
/// held-out runs.
///
/// # Errors
///
/// Prediction errors of a run.
///
/// # Complexity
///
/// `O(r)`.
///
/// # Examples
///
/// ```
/// use rail_network::moe::{validation::{held_out_errors, published_runs}, ComputeEfficiency};
/// let (rows, median, worst) = held_out_errors(&published_runs(), &ComputeEfficiency::calibrated())?;
/// assert_eq!(rows.len(), published_runs().len());
/// assert!(median <= worst);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn held_out_errors(
    runs: &[PublishedRun],
    efficiency: &ComputeEfficiency,
) -> Result<(Vec<RunError>, f64, f64), RailNetworkError> {
    let mut rows = Vec::with_capacity(runs.len());
    for run in runs {
        let e = predict(run, efficiency)?;
        rows.push(RunError {
            name: run.name,
            calibration: run.calibration,
            published_tokens_per_s_per_gpu: run.tokens_per_s_per_gpu,
            predicted_tokens_per_s_per_gpu: e.tokens_per_s_per_gpu,
            relative_error: e.tokens_per_s_per_gpu / run.tokens_per_s_per_gpu - 1.0,
            evaluation: e,
        });
    }
    let mut held: Vec<f64> = rows
        .iter()
        .filter(|r| !r.calibration)
        .map(|r| r.relative_error.abs())
        .collect();
    held.sort_by(f64::total_cmp);
    let median = match held.len() {
        0 => 0.0,
        n if n % 2 == 1 => held[n / 2],
        n => (held[n / 2 - 1] + held[n / 2]) / 2.0,
    };
    let worst = held.last().copied().unwrap_or(0.0);
    Ok((rows, median, worst))
}

/// Median absolute held-out error under [`ComputeEfficiency::calibrated`] (docs/reproduction.md).
pub const MEDIAN_HELD_OUT: f64 = 0.0564;
/// Worst absolute held-out error under [`ComputeEfficiency::calibrated`] (docs/reproduction.md).
pub const WORST_HELD_OUT: f64 = 0.1307;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moe::cluster::training_system_preset;
    use crate::moe::search::{MoeSearchOptions, search_mappings};

    #[test]
    fn calibration_reproduces_the_stated_constants() {
        let fitted = calibrate(&published_runs()).unwrap();
        let c = ComputeEfficiency::calibrated();
        assert!(
            (fitted.gemm_efficiency - c.gemm_efficiency).abs() < 1e-6,
            "{fitted:?}"
        );
        assert!(
            (fitted.fp8_gemm_efficiency - c.fp8_gemm_efficiency).abs() < 1e-6,
            "{fitted:?}"
        );
    }

    #[test]
    fn every_run_is_valid_and_the_held_out_error_is_as_documented() {
        let (rows, median, worst) =
            held_out_errors(&published_runs(), &ComputeEfficiency::calibrated()).unwrap();
        for r in &rows {
            assert!(r.predicted_tokens_per_s_per_gpu.is_finite(), "{}", r.name);
        }
        // docs/reproduction.md reports these numbers; the test keeps them honest.
        assert!(median <= MEDIAN_HELD_OUT + 1e-3, "median {median}");
        assert!(worst <= WORST_HELD_OUT + 1e-3, "worst {worst}");
    }

    #[test]
    fn published_mappings_that_fit_are_as_documented() {
        // docs/reproduction.md: with each run's published strategy, 5 of the 8 fit.
        let (rows, _, _) =
            held_out_errors(&published_runs(), &ComputeEfficiency::calibrated()).unwrap();
        let fitting: Vec<&str> = rows
            .iter()
            .filter(|r| r.evaluation.fits)
            .map(|r| r.name)
            .collect();
        assert_eq!(
            fitting,
            [
                "qwen3-30b-a3b-8-h100",
                "mixtral-8x7b-64-gb200",
                "deepseek-v3-1024-h100",
                "llama4-scout-64-gb200",
                "mixtral-8x22b-64k-256-gb200"
            ]
        );
    }

    #[test]
    fn megatron_core_guide_mappings_fit() {
        // Megatron-Core MoE guide: Mixtral 8x7B on 64 H100 TP1 EP8 PP4 VP8; 8x22B on 128 H100
        // TP4 EP2 PP8 VP7 (experts take the attention's TP, the default before folding).
        let m8x7 = MoeMapping {
            tp: 1,
            cp: 1,
            pp: 4,
            vp: 8,
            ep: 8,
            etp: 1,
            micro_batch: 1,
            recompute: Recompute::None,
        };
        let m8x22 = MoeMapping {
            tp: 4,
            pp: 8,
            vp: 7,
            ep: 2,
            etp: 4,
            ..m8x7
        };
        for (name, gpus, m) in [("mixtral-8x7b", 64, m8x7), ("mixtral-8x22b", 128, m8x22)] {
            let sm = StepModel::new(
                moe_model_preset(name).unwrap(),
                training_system_preset("h100").unwrap(),
                StepOptions::default(),
            )
            .unwrap();
            let e = sm.evaluate_fitting(&m, gpus, 256).unwrap();
            assert!(e.memory.total_bytes < 80e9, "{name}");
        }
    }

    /// The table of docs/reproduction.md with each run's rank in our search:
    /// `cargo test -p rail-network --release moe::validation -- --ignored --nocapture`.
    #[test]
    #[ignore = "prints the reproduction table; about a minute in release"]
    fn print_reproduction_table() {
        let c = ComputeEfficiency::calibrated();
        let (rows, median, worst) = held_out_errors(&published_runs(), &c).unwrap();
        println!("fitted: {c:?}");
        for (run, row) in published_runs().iter().zip(&rows) {
            let sm = step_model(run, &c).unwrap();
            let options = MoeSearchOptions {
                keep: 100_000,
                ..MoeSearchOptions::default()
            };
            let search = search_mappings(&sm, run.gpus, run.global_batch, &options);
            // Rank by step time among the mappings that fit (the run's own may not fit in our
            // memory model; its time still has a rank).
            let step = row.evaluation.terms.step_time_s;
            let (rank, fitting, best) = match &search {
                Ok(r) => (
                    1 + r
                        .ranked
                        .iter()
                        .filter(|e| e.terms.step_time_s < step)
                        .count(),
                    r.fitting,
                    r.ranked
                        .first()
                        .map(|e| (e.mapping, e.tokens_per_s_per_gpu)),
                ),
                Err(_) => (1, 0, None),
            };
            let rank = format!("{rank} of {fitting}");
            let t = &row.evaluation.terms;
            println!(
                "{} | {} | {:.0} | {:.0} | {:+.1}% | rank {:?} | best {:?} | compute {:.3} bubble {:.3} tp {:.3} cp {:.3} ep {:.3} pp {:.3} dp {:.3} | fits {} mem {:.1} GB",
                row.name,
                if row.calibration { "fit" } else { "held out" },
                row.published_tokens_per_s_per_gpu,
                row.predicted_tokens_per_s_per_gpu,
                100.0 * row.relative_error,
                rank,
                best,
                t.microbatch_compute_s * row.evaluation.degrees.micro_batches as f64,
                t.bubble_s,
                t.tp_comm_s,
                t.cp_comm_s,
                t.ep_comm_s,
                t.pp_comm_s,
                t.dp_comm_s,
                row.evaluation.fits,
                row.evaluation.memory.total_bytes / 1e9,
            );
        }
        println!("held-out median {median:.4} worst {worst:.4}");
    }
}
