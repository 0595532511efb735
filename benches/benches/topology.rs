//! LysiGroup on dense alpha-beta clusters.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use topology_partition::{AristosObjective, TrainingConstants, lysi_group, random_cluster};

fn objective() -> AristosObjective {
    let training = TrainingConstants {
        recompute: 0.0,
        layers: 24,
        global_batch: 4096,
        moe_every: 2,
        micro_batch: 4,
    };
    AristosObjective::uniform(training, 64, 8.6e12, 2.0, 16.8e6, 16.8e6)
        .expect("64 experts are below MAX_EXPERTS")
}

fn lysigroup(c: &mut Criterion) {
    let mut group = c.benchmark_group("lysi_group");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    // Random heterogeneous nodes of 2/4/8 GPUs with 20% jitter: a dense, tie-free matrix.
    for n in [16, 256, 1024, 4096] {
        // Random heterogeneous nodes of 2/4/8 GPUs with 20% jitter, cut to exactly n workers.
        let big = random_cluster(n / 2, 0.2, 1).unwrap();
        let ids: Vec<usize> = (0..n).collect();
        let cluster = big.restrict(&ids).unwrap();
        let obj = objective();
        group.bench_with_input(BenchmarkId::from_parameter(n), &cluster, |b, cl| {
            b.iter(|| lysi_group(black_box(cl), &obj).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, lysigroup);
criterion_main!(benches);
