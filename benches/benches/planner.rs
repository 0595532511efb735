//! The facade's end-to-end inference planner (Aurora's four scenarios composed): placement,
//! an optimal all-to-all per layer and direction, timelines, and the simulated SJF baseline; and
//! the many-experts planner on the DeepSeek-like workload (58 layers, 256 experts, top-8).

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use alltoall_sched::workload::{router_trace, zipf_traffic};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use expert_placement::lognormal_loads;
use moe_planner::inference::{
    GpuInput, InferenceModelSpec, InferenceSpec, OnePerGpuSpec, plan_inference,
};

/// One model of `layers` Zipf layers on `n` GPUs (4096 tokens of 8192 bytes per GPU).
fn model(n: usize, layers: u64, exponent: f64, seed: u64) -> InferenceModelSpec {
    InferenceModelSpec {
        name: format!("zipf-{exponent}"),
        layers: (0..layers)
            .map(|l| {
                zipf_traffic(n, exponent, 4096, 8192, seed + l)
                    .unwrap()
                    .to_rows()
            })
            .collect(),
        gate_s: (2e-4).into(),
        aggregation_s: (1e-4).into(),
        ffn_flop_per_byte: 32768.0,
    }
}

/// Identical GPUs, or half of them four times slower with half the bandwidth.
fn gpus(n: usize, heterogeneous: bool) -> Vec<GpuInput> {
    (0..n)
        .map(|g| match heterogeneous && g >= n / 2 {
            true => GpuInput {
                tflop_per_s: 37.5,
                bandwidth_gbps: 50.0,
            },
            false => GpuInput {
                tflop_per_s: 150.0,
                bandwidth_gbps: 100.0,
            },
        })
        .collect()
}

fn inference(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan_inference");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for n in [8, 64] {
        for (name, models, hetero) in [
            ("exclusive-homogeneous", 1, false),
            ("exclusive-heterogeneous", 1, true),
            ("colocating-homogeneous", 2, false),
            ("colocating-heterogeneous", 2, true),
        ] {
            let mut specs = vec![model(n, 4, 1.0, 1)];
            if models == 2 {
                specs.push(model(n, 4, 1.2, 100));
            }
            let spec: InferenceSpec = OnePerGpuSpec {
                gpus: gpus(n, hetero),
                models: specs,
                seed: 7,
                ..Default::default()
            }
            .into();
            group.bench_with_input(BenchmarkId::new(name, n), &spec, |b, s| {
                b.iter(|| plan_inference(black_box(s)).unwrap())
            });
        }
    }
    group.finish();
}

/// The embedded DeepSeek-like spec (`crates/moe-planner-cli/data/inference_deepseek_like.json`: GPUs, token
/// sizes, FLOP) on `nodes` x `per_node` GPUs with `slots` experts each, with all 58 layers of the
/// loads of `deepseek_like_workload` (256 experts, log-normal sigma 1, 131,072 routings per layer,
/// seed 2026) as router traces (+-25% per-source jitter, as `deepseek_like_inference`).
fn deepseek_like(nodes: usize, per_node: usize, slots: usize) -> InferenceSpec {
    let text = include_str!("../../crates/moe-planner-cli/data/inference_deepseek_like.json");
    let Ok(InferenceSpec::Replicated(mut spec)) = serde_json::from_str(text) else {
        panic!("the DeepSeek-like spec is replicated");
    };
    let gpus = nodes * per_node;
    let loads = lognormal_loads(58, 256, 1.0, 131_072.0, spec.seed).unwrap();
    spec.models[0].routed_tokens = loads
        .iter()
        .enumerate()
        .map(|(l, row)| router_trace(row, gpus, 0.25, spec.seed + l as u64).unwrap())
        .collect();
    spec.gpus = vec![spec.gpus[0]; gpus];
    spec.slots_per_gpu = Some(slots);
    spec.gpus_per_node = Some(per_node);
    spec.into()
}

/// Many experts per GPU: 32 GPUs (4 nodes x 8, 9 slots) and 256 GPUs (32 nodes x 8, 2 slots).
fn many_experts(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan_inference_deepseek_like_58_layers");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for (nodes, slots) in [(4, 9), (32, 2)] {
        let spec = deepseek_like(nodes, 8, slots);
        group.bench_with_input(BenchmarkId::new("gpus", nodes * 8), &spec, |b, s| {
            b.iter(|| plan_inference(black_box(s)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, inference, many_experts);
criterion_main!(benches);
