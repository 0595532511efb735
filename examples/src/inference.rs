//! The four scenarios of `examples/examples/moe_inference_plan.rs` (Aurora §8.2 Q1-Q2 through
//! the facade's `plan_inference`), shared with the drift test of its table
//! (`examples/tests/docs_reproduction`).

use alltoall_sched::workload::zipf_traffic;
use moe_planner::inference::{
    GpuInput, InferenceModelSpec, InferencePlan, OnePerGpuSpec, plan_inference,
};

/// GPUs of every scenario.
pub const GPUS: usize = 8;
/// MoE layers per model.
pub const LAYERS: u64 = 4;
/// The four scenarios of Aurora §8.2: models (1 or 2), mixed GPUs, and the name.
pub const SCENARIOS: [(usize, bool, &str); 4] = [
    (1, false, "exclusive + homogeneous"),
    (1, true, "exclusive + heterogeneous"),
    (2, false, "colocating + homogeneous"),
    (2, true, "colocating + heterogeneous"),
];
/// Seeds per scenario.
pub const SEEDS: u64 = 20;
/// Tokens each GPU routes per layer and bytes per token (hidden 4096, fp16).
/// Tokens per GPU and layer.
const TOKENS: u64 = 4096;
/// Bytes per token (h = 4096, 2 bytes).
const BYTES_PER_TOKEN: u64 = 8192;
/// FFN FLOP per byte received: 16 h^2 FLOP per token over 2 h bytes per token, h = 4096.
/// FFN work: `16 h^2` FLOP per `2h`-byte token.
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

/// One scenario over every seed.
pub struct Summary {
    /// Speedup over the baseline, per seed.
    pub speedup: Vec<f64>,
    /// GPU utilization of the plan, per seed.
    pub utilization: Vec<f64>,
    /// Every layer's dispatch all-to-all ends at its lower bound in every run.
    pub at_bound: bool,
}

/// Plans `models` models (Zipf 1.0, and 1.2 for the second) on identical or mixed GPUs for
/// every seed.
///
/// # Errors
///
/// As the planner.
pub fn run(models: usize, heterogeneous: bool) -> Result<Summary, Box<dyn std::error::Error>> {
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
