//! Writes the embedded DeepSeek-like inference spec to `crates/moe-planner-cli/data/inference_deepseek_like.json`
//! and plans it.
//!
//! 32 GPUs in 4 nodes of 8 with 9 expert slots each (256 routed experts plus 32 replicas), the
//! first 4 layers of the DeepSeek-like loads (`crates/moe-planner-cli/data/deepseek_like_loads.json`: 131,072
//! routings per layer, 16,384 tokens with top-8) turned into router traces `[G][E]` with
//! [`alltoall_sched::workload::router_trace`] (each GPU the source of 1/32 of every expert's
//! tokens, +-25% per-source jitter, seed 2026 + layer). A token is 7,168 bytes (DeepSeek-V3's
//! hidden size in FP8) and costs 2 x 3 x 7,168 x 2,048 FLOP in an expert; GPUs at 400 TFLOP/s
//! and 400 Gbps. These figures are our assumptions for a realistic shape, not measurements.
//!
//! Run: `cargo run --release -p moe-planner-examples --example deepseek_like_inference`
use alltoall_sched::workload::router_trace;
use moe_planner::inference::{
    GpuInput, InferenceSpec, ReplicatedModelSpec, ReplicatedSpec, plan_inference,
};
use moe_planner::placement::formats::LogicalCountFile;

const GPUS: usize = 32;
const GPUS_PER_NODE: usize = 8;
const SLOTS_PER_GPU: usize = 9;
const LAYERS: usize = 4;
const NOISE: f64 = 0.25;
const SEED: u64 = 2026;

/// The spec: shared with the demo through the data file.
fn spec() -> Result<InferenceSpec, Box<dyn std::error::Error>> {
    let text = include_str!("../../crates/moe-planner-cli/data/deepseek_like_loads.json");
    let file: LogicalCountFile = serde_json::from_str(text)?;
    let loads = file.logical_count.summed()?;
    let routed_tokens = loads
        .iter()
        .take(LAYERS)
        .enumerate()
        .map(|(l, row)| router_trace(row, GPUS, NOISE, SEED + l as u64))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReplicatedSpec {
        gpus: vec![
            GpuInput {
                tflop_per_s: 400.0,
                bandwidth_gbps: 400.0
            };
            GPUS
        ],
        models: vec![ReplicatedModelSpec {
            name: "deepseek-like".into(),
            gate_s: (20e-6).into(),
            aggregation_s: (20e-6).into(),
            routed_tokens,
            bytes_per_token: 7168.0,
            flop_per_token: 2.0 * 3.0 * 7168.0 * 2048.0,
            ..Default::default()
        }],
        seed: SEED,
        slots_per_gpu: Some(SLOTS_PER_GPU),
        gpus_per_node: Some(GPUS_PER_NODE),
        ..Default::default()
    }
    .into())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let spec = spec()?;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/moe-planner-cli/data/inference_deepseek_like.json"
    );
    std::fs::write(path, serde_json::to_string(&spec)? + "\n")?;
    println!("wrote {path}");
    let plan = plan_inference(&spec)?;
    println!("planned: {:.3} ms", plan.inference_time_s * 1e3);
    for b in &plan.baselines {
        println!(
            "  {:.3} ms ({:.2}x)  {}",
            b.inference_time_s * 1e3,
            b.speedup,
            b.description
        );
    }
    for (l, layer) in plan.layers.iter().enumerate() {
        println!(
            "layer {l}: dispatch {:.3} ms on bound {:.3} ms, {} pieces / {} pairs",
            layer.dispatch.makespan_s * 1e3,
            layer.dispatch.lower_bound_s * 1e3,
            layer.dispatch.pieces,
            layer.dispatch.nonzero_pairs
        );
    }
    Ok(())
}
