//! Times the many-experts inference planner on the DeepSeek-like workload (58 layers, 256
//! experts, top-8): 32 GPUs (4 nodes x 8, 9 slots) and 256 GPUs (32 nodes x 8, 2 slots), the
//! median of 3 runs each. The loads are `deepseek_like_workload`'s (log-normal sigma 1, 131,072
//! routings per layer, seed 2026), turned into router traces as `deepseek_like_inference` does.
//!
//! Run: `cargo run --release -p moe-planner-examples --example deepseek_like_planner_timing [GPUS
//! [RUNS]]`; with `PLAN_JSON_DIR` set, each plan is also written there as JSON.
use std::time::Instant;

use alltoall_sched::workload::router_trace;
use expert_placement::lognormal_loads;
use moe_planner::inference::{InferenceSpec, plan_inference};

const LAYERS: usize = 58;
const EXPERTS: usize = 256;

/// The embedded DeepSeek-like spec (GPUs, token sizes, FLOP) on `nodes` x 8 GPUs with `slots`
/// expert slots each and all 58 layers as router traces.
fn spec(nodes: usize, slots: usize) -> Result<InferenceSpec, Box<dyn std::error::Error>> {
    let text = include_str!("../../crates/moe-planner-cli/data/inference_deepseek_like.json");
    let InferenceSpec::Replicated(mut spec) = serde_json::from_str(text)? else {
        return Err("the DeepSeek-like spec is replicated".into());
    };
    let gpus = nodes * 8;
    let loads = lognormal_loads(LAYERS, EXPERTS, 1.0, 131_072.0, spec.seed)?;
    spec.models[0].routed_tokens = loads
        .iter()
        .enumerate()
        .map(|(l, row)| router_trace(row, gpus, 0.25, spec.seed + l as u64))
        .collect::<Result<Vec<_>, _>>()?;
    spec.gpus = vec![spec.gpus[0]; gpus];
    spec.slots_per_gpu = Some(slots);
    spec.gpus_per_node = Some(8);
    Ok(spec.into())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let only: Option<usize> = std::env::args().nth(1).map(|a| a.parse()).transpose()?;
    let runs: usize = std::env::args().nth(2).map_or(Ok(3), |a| a.parse())?;
    for (nodes, slots) in [(4, 9), (32, 2)] {
        if only.is_some_and(|n| n != nodes * 8) {
            continue;
        }
        let spec = spec(nodes, slots)?;
        let mut times = Vec::new();
        let mut planned = 0.0;
        for _ in 0..runs {
            let start = Instant::now();
            let plan = plan_inference(&spec)?;
            times.push(start.elapsed().as_secs_f64());
            planned = plan.inference_time_s;
            // To check that a speed-up changes no result: diff the plans written before and after.
            if let Ok(dir) = std::env::var("PLAN_JSON_DIR") {
                let path = format!("{dir}/plan-{}-gpus.json", nodes * 8);
                std::fs::write(path, serde_json::to_string(&plan)?)?;
            }
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{} GPUs, {slots} slots: median {:.3} s (runs {:.3?}), planned {:.6} ms",
            nodes * 8,
            times[times.len() / 2],
            times,
            planned * 1e3
        );
    }
    Ok(())
}
