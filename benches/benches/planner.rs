//! The facade's end-to-end inference planner (Aurora's four scenarios composed): placement,
//! an optimal all-to-all per layer and direction, timelines, and the simulated SJF baseline.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use alltoall_sched::workload::zipf_traffic;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use moe_planner::inference::{GpuInput, InferenceModelSpec, InferenceSpec, plan_inference};

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
        gate_s: 2e-4,
        aggregation_s: 1e-4,
        ffn_flop_per_byte: 32768.0,
        ..Default::default()
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
            let spec = InferenceSpec {
                gpus: gpus(n, hetero),
                models: specs,
                seed: 7,
                ..Default::default()
            };
            group.bench_with_input(BenchmarkId::new(name, n), &spec, |b, s| {
                b.iter(|| plan_inference(black_box(s)).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, inference);
criterion_main!(benches);
