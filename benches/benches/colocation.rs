//! Criterion benches of `colocation-matching`: bottleneck matching from paper scale (8 experts)
//! to 4096, colocating + heterogeneous placement at 8 and 256 GPUs, LysiAssign at 10^5 experts.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use colocation_matching::{
    BottleneckOptions, ColocationCostModel, ExpertDemand, ExpertLoads, GpuSpec, LocalSearchOptions,
    PairingOptions, SquareMatrix, ThresholdSearch, Worker, bottleneck_matching, colocate_decoupled,
    colocate_local_search, lysi_assign, pair_bottleneck,
};
use comm_cost_model::seeded_rng;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rand::RngExt;

fn random_matrix(n: usize, seed: u64) -> SquareMatrix {
    let mut rng = seeded_rng(seed, 0);
    SquareMatrix::from_fn(n, |_, _| rng.random_range(0.0..1.0)).expect("valid weights")
}

/// Ten samples, short warm-up: keeps the whole bench near two minutes on two shared cores.
fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
}

fn bottleneck(c: &mut Criterion) {
    let mut group = c.benchmark_group("bottleneck_matching");
    configure(&mut group);
    for n in [8usize, 64, 256, 1024, 4096] {
        let w = random_matrix(n, n as u64);
        group.bench_with_input(BenchmarkId::new("incremental", n), &w, |b, w| {
            b.iter(|| bottleneck_matching(black_box(w), &BottleneckOptions::default()))
        });
        if n <= 1024 {
            let binary = BottleneckOptions {
                search: ThresholdSearch::BinarySearch,
                ..BottleneckOptions::default()
            };
            group.bench_with_input(BenchmarkId::new("binary_search", n), &w, |b, w| {
                b.iter(|| bottleneck_matching(black_box(w), &binary))
            });
        }
    }
    group.finish();
}

/// Aurora Case II weights `max(a_i + b_j, a_{n+i} + b_{n+j})` of random loads: the structured
/// matrices colocation actually produces (many rows unmatched at the lower bound).
fn case_two(c: &mut Criterion) {
    let mut group = c.benchmark_group("bottleneck_matching_case_two");
    configure(&mut group);
    // 4096 takes about 5 s per run (recorded once in docs/performance.md), too slow to repeat here.
    for n in [256usize, 1024] {
        let mut rng = seeded_rng(n as u64, 0);
        let mut loads = || {
            (0..n)
                .map(|_| rng.random_range(0.0..1.0))
                .collect::<Vec<f64>>()
        };
        let (a_s, a_r, b_s, b_r) = (loads(), loads(), loads(), loads());
        let w = SquareMatrix::from_fn(n, |i, j| f64::max(a_s[i] + b_s[j], a_r[i] + b_r[j]))
            .expect("valid");
        for (name, search) in [
            ("incremental", ThresholdSearch::Incremental),
            ("binary_search", ThresholdSearch::BinarySearch),
        ] {
            let options = BottleneckOptions {
                search,
                ..BottleneckOptions::default()
            };
            group.bench_with_input(BenchmarkId::new(name, n), &w, |b, w| {
                b.iter(|| bottleneck_matching(black_box(w), &options))
            });
        }
    }
    group.finish();
}

/// `pair_bottleneck`'s dominance sweep on the same kind of loads, without any matrix.
fn case_two_sweep(c: &mut Criterion) {
    let mut group = c.benchmark_group("pair_bottleneck_sweep");
    configure(&mut group);
    for n in [256usize, 1024, 4096] {
        let mut rng = seeded_rng(n as u64, 0);
        let mut loads = || {
            (0..n)
                .map(|_| rng.random_range(0.0..1.0))
                .collect::<Vec<f64>>()
        };
        let a = ExpertLoads::new(loads(), loads()).expect("valid");
        let b = ExpertLoads::new(loads(), loads()).expect("valid");
        group.bench_with_input(BenchmarkId::from_parameter(n), &(a, b), |bench, (a, b)| {
            bench.iter(|| pair_bottleneck(black_box(a), black_box(b), &PairingOptions::default()))
        });
    }
    group.finish();
}

fn hetero_instance(n: usize, seed: u64) -> ColocationCostModel {
    let mut rng = seeded_rng(seed, 0);
    let types = [
        (12.5e9, 312e12),
        (10e9, 250e12),
        (6.25e9, 156e12),
        (5e9, 125e12),
    ];
    let gpus = (0..n)
        .map(|g| GpuSpec {
            bandwidth_bytes_per_s: types[g % 4].0,
            flop_per_s: types[g % 4].1,
        })
        .collect();
    let mut model = || {
        (0..n)
            .map(|k| {
                // Zipf-like popularity with random send/receive skew.
                let pop = 64e6 / (k + 1) as f64;
                let recv = pop * rng.random_range(0.5..1.5);
                ExpertDemand {
                    send_bytes: pop * rng.random_range(0.5..1.5),
                    recv_bytes: recv,
                    flop: 4096.0 * recv,
                }
            })
            .collect::<Vec<_>>()
    };
    let a = model();
    let b = model();
    ColocationCostModel::new(a, b, gpus).expect("valid instance")
}

fn hetero(c: &mut Criterion) {
    let mut group = c.benchmark_group("colocate_heterogeneous");
    configure(&mut group);
    for n in [8usize, 256] {
        let inst = hetero_instance(n, 11);
        group.bench_with_input(BenchmarkId::new("decoupled", n), &inst, |b, i| {
            b.iter(|| colocate_decoupled(black_box(i)))
        });
        group.bench_with_input(BenchmarkId::new("local_search", n), &inst, |b, i| {
            b.iter(|| colocate_local_search(black_box(i), &LocalSearchOptions::default()))
        });
    }
    group.finish();
}

fn lysi(c: &mut Criterion) {
    let mut rng = seeded_rng(5, 0);
    let costs: Vec<f64> = (0..100_000).map(|_| rng.random_range(1e9..1e12)).collect();
    let workers: Vec<Worker> = (0..1024)
        .map(|j| Worker {
            flop_per_s: [312e12, 125e12][j % 2],
            expert_slots: 256,
        })
        .collect();
    let mut group = c.benchmark_group("lysi_assign");
    configure(&mut group);
    group.bench_function("100000_experts_1024_workers", |b| {
        b.iter(|| lysi_assign(black_box(&costs), black_box(&workers)))
    });
    group.finish();
}

criterion_group!(benches, bottleneck, case_two, case_two_sweep, hetero, lysi);
criterion_main!(benches);
