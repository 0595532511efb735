//! End-to-end MoE inference planning in Aurora's four scenarios (Li et al., §8.2 Q1–Q2).
//!
//! For each scenario (one or two models; identical or mixed GPUs) this runs
//! `moe_planner::inference::plan_inference` on seeded Zipf workloads and prints the planned
//! inference time, the baseline's (random GPU assignment / random colocation with
//! shortest-job-first send order), the speedup and the GPU utilization, averaged over seeds.
//!
//! Run: `cargo run --release -p moe-planner-examples --example moe_inference_plan`

use alltoall_sched::workload::zipf_traffic;
use moe_planner::inference::{
    GpuInput, InferenceModelSpec, InferencePlan, OnePerGpuSpec, plan_inference,
};

const GPUS: usize = 8;
const LAYERS: u64 = 4;
const SEEDS: u64 = 20;
/// Tokens each GPU routes per layer and bytes per token (hidden 4096, fp16).
const TOKENS: u64 = 4096;
const BYTES_PER_TOKEN: u64 = 8192;
/// FFN FLOP per byte received: 16 h^2 FLOP per token over 2 h bytes per token, h = 4096.
const FFN_FLOP_PER_BYTE: f64 = 8.0 * 4096.0;

fn model(
    name: &str,
    exponent: f64,
    seed: u64,
) -> Result<InferenceModelSpec, Box<dyn std::error::Error>> {
    let layers = (0..LAYERS)
        .map(|l| {
            Ok(zipf_traffic(GPUS, exponent, TOKENS, BYTES_PER_TOKEN, seed * 100 + l)?.to_rows())
        })
        .collect::<Result<Vec<_>, alltoall_sched::ScheduleError>>()?;
    Ok(InferenceModelSpec {
        name: name.into(),
        layers,
        gate_s: (2e-4).into(),
        aggregation_s: (1e-4).into(),
        ffn_flop_per_byte: FFN_FLOP_PER_BYTE,
    })
}

/// Eight identical GPUs (A100-class sustained throughput, 100 Gbps), or four of those plus four
/// older ones (V100-class: a quarter of the FLOP/s, half the bandwidth).
fn cluster(heterogeneous: bool) -> Vec<GpuInput> {
    (0..GPUS)
        .map(|g| {
            if heterogeneous && g >= GPUS / 2 {
                GpuInput {
                    tflop_per_s: 37.5,
                    bandwidth_gbps: 50.0,
                }
            } else {
                GpuInput {
                    tflop_per_s: 150.0,
                    bandwidth_gbps: 100.0,
                }
            }
        })
        .collect()
}

struct Summary {
    speedup: Vec<f64>,
    utilization: Vec<f64>,
    at_bound: bool,
}

fn run(models: usize, heterogeneous: bool) -> Result<Summary, Box<dyn std::error::Error>> {
    let mut s = Summary {
        speedup: Vec::new(),
        utilization: Vec::new(),
        at_bound: true,
    };
    for seed in 0..SEEDS {
        let mut specs = vec![model("a", 1.0, seed)?];
        if models == 2 {
            specs.push(model("b", 1.2, seed + 1000)?);
        }
        let spec = OnePerGpuSpec {
            gpus: cluster(heterogeneous),
            models: specs,
            seed,
            ..Default::default()
        };
        let plan: InferencePlan = plan_inference(&spec.into())?;
        s.speedup.push(plan.speedup_over_baseline);
        s.utilization.push(plan.gpu_utilization);
        s.at_bound &= plan.layers.iter().all(|l| {
            (l.dispatch.makespan_s - l.dispatch.lower_bound_s).abs()
                <= 1e-9 * l.dispatch.lower_bound_s
        });
    }
    Ok(s)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "{GPUS} GPUs, {LAYERS} MoE layers, Zipf 1.0 (model a) and 1.2 (model b), {SEEDS} seeds"
    );
    println!(
        "{:<28} {:>16} {:>16} {:>12} {:>9}",
        "scenario", "speedup mean", "speedup range", "GPU util", "at bound"
    );
    let mut util = [0.0; 2];
    for (models, hetero, name) in [
        (1, false, "exclusive + homogeneous"),
        (1, true, "exclusive + heterogeneous"),
        (2, false, "colocating + homogeneous"),
        (2, true, "colocating + heterogeneous"),
    ] {
        let s = run(models, hetero)?;
        let (lo, hi) = range(&s.speedup);
        println!(
            "{name:<28} {:>15.2}x {:>7.2}-{:<7.2} {:>11.1}% {:>9}",
            mean(&s.speedup),
            lo,
            hi,
            mean(&s.utilization) * 100.0,
            if s.at_bound { "yes" } else { "no" }
        );
        if !hetero {
            util[models - 1] = mean(&s.utilization);
        }
    }
    println!(
        "colocation raises GPU utilization {:.2}x on identical GPUs (Aurora Fig. 12a: 1.57-1.72x)",
        util[1] / util[0]
    );
    Ok(())
}
