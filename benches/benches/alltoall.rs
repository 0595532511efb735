//! Criterion benches of `alltoall-sched`: the optimal decomposition, the non-preemptive greedy,
//! Aurora's Algorithm 1 and the contention simulator, from paper scale (8 GPUs) to 2048 GPUs,
//! on Zipf traffic (exponents 0.8 and 1.2), uniform traffic and DeepSeek-like dispatch matrices
//! (issue 24's targets: `optimal` at most 100 us at n = 64, 5 ms at 256, 2 s at 2048). Before timing each input the
//! bench prints the quality numbers recorded in `docs/performance.md`: pieces per non-zero
//! entry of `optimal` and the gap of `non-preemptive` to the bound.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use alltoall_sched::baselines::sjf;
use alltoall_sched::workload::{router_trace, uniform_traffic, zipf_traffic};
use alltoall_sched::{
    Bandwidth, TrafficMatrix, aurora_greedy, dispatch_tokens, lower_bound_s, non_preemptive,
    optimal,
};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use expert_placement::lognormal_loads;

/// 100 Gbps in bytes per second.
const BANDWIDTH: f64 = 12.5e9;

/// The traffic kinds: (label, matrix).
fn workloads(n: usize) -> Vec<(String, TrafficMatrix)> {
    let tokens = 8192 * 8;
    vec![
        (
            "zipf0.8".into(),
            zipf_traffic(n, 0.8, tokens, 8192, 1).expect("valid workload"),
        ),
        (
            "zipf1.2".into(),
            zipf_traffic(n, 1.2, tokens, 8192, 1).expect("valid workload"),
        ),
        (
            "uniform".into(),
            uniform_traffic(n, 1 << 24, 1).expect("valid workload"),
        ),
        ("deepseek".into(), deepseek_like(n)),
    ]
}

/// A DeepSeek-like dispatch: 256 experts (or one per GPU beyond 256) with log-normal(1)
/// popularity, 8192 tokens per GPU routed top-8 with +-25% per-source jitter, experts placed
/// round-robin over the GPUs' slots, nodes of 8 GPUs, 7168-byte tokens.
fn deepseek_like(n: usize) -> TrafficMatrix {
    let experts = n.max(256);
    let tokens = 8.0 * 8192.0 * n as f64;
    let loads = lognormal_loads(1, experts, 1.0, tokens, 1).expect("valid workload");
    let routed = router_trace(&loads[0], n, 0.25, 1).expect("valid workload");
    let slots = experts.div_ceil(n);
    let experts_of_gpu: Vec<Vec<usize>> = (0..n)
        .map(|g| (0..slots).map(|s| (g * slots + s) % experts).collect())
        .collect();
    let node_of_gpu: Vec<usize> = (0..n).map(|g| g / 8).collect();
    dispatch_tokens(&routed, &experts_of_gpu, &node_of_gpu)
        .and_then(|d| d.traffic(7168.0))
        .expect("valid workload")
}

/// Ten samples and short warm-ups: the whole bench takes about two minutes on two shared cores
/// (most of it n = 1024, where one run of `optimal` or `non_preemptive` takes most of a second).
fn configure(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    n: usize,
) {
    let warm_up_ms = if n >= 1024 { 1 } else { 200 };
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(warm_up_ms));
    group.measurement_time(Duration::from_secs(if n >= 256 { 2 } else { 1 }));
}

fn report_quality(label: &str, n: usize, d: &TrafficMatrix, b: &Bandwidth, with_optimal: bool) {
    let bound = lower_bound_s(d, b).expect("valid input");
    let np = non_preemptive(d, b).expect("valid input");
    let gap = (np.makespan_s() / bound - 1.0) * 100.0;
    if with_optimal {
        let opt = optimal(d, b).expect("valid input");
        let ratio = opt.pieces() as f64 / d.nonzeros().max(1) as f64;
        eprintln!(
            "quality n={n} {label}: optimal pieces/nonzeros = {ratio:.3}, non-preemptive gap = {gap:.3}%"
        );
    } else {
        eprintln!("quality n={n} {label}: non-preemptive gap = {gap:.3}%");
    }
}

fn schedulers(c: &mut Criterion) {
    let b = Bandwidth::uniform(BANDWIDTH).expect("positive bandwidth");
    for n in [8usize, 64, 256, 1024, 2048] {
        let mut group = c.benchmark_group(format!("alltoall_n{n}"));
        configure(&mut group, n);
        for (label, d) in workloads(n) {
            // n = 2048: `optimal` on the Zipf 1.2 and DeepSeek-like matrices only.
            if n >= 2048 && label != "zipf1.2" && label != "deepseek" {
                continue;
            }
            // n >= 1024 optimal takes most of a second per run: time it on one Zipf exponent
            // and the DeepSeek-like matrix only.
            let big = n >= 1024;
            if big && label == "zipf0.8" {
                continue;
            }
            if big && label != "zipf1.2" && label != "deepseek" {
                report_quality(&label, n, &d, &b, false);
                group.bench_with_input(
                    BenchmarkId::new("non_preemptive", &label),
                    &d,
                    |bench, d| bench.iter(|| non_preemptive(black_box(d), &b)),
                );
                continue;
            }
            report_quality(&label, n, &d, &b, true);
            group.bench_with_input(BenchmarkId::new("optimal", &label), &d, |bench, d| {
                bench.iter(|| optimal(black_box(d), &b))
            });
            if n < 2048 {
                group.bench_with_input(
                    BenchmarkId::new("non_preemptive", &label),
                    &d,
                    |bench, d| bench.iter(|| non_preemptive(black_box(d), &b)),
                );
            }
            if !big {
                group.bench_with_input(
                    BenchmarkId::new("aurora_greedy", &label),
                    &d,
                    |bench, d| bench.iter(|| aurora_greedy(black_box(d), &b, 1)),
                );
                group.bench_with_input(
                    BenchmarkId::new("sjf_simulated", &label),
                    &d,
                    |bench, d| bench.iter(|| sjf(black_box(d), &b)),
                );
            }
        }
        group.finish();
    }
}

criterion_group!(benches, schedulers);
criterion_main!(benches);
