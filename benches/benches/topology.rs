//! LysiGroup on dense alpha-beta clusters and the traffic of a 4096-GPU GPT-1T job.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use topology_partition::{
    AristosObjective, CollectiveAlgorithm, GptDims, ParallelConfig, RankMapping, Split,
    TrainingConstants, job_traffic, lysi_group, random_cluster,
};

fn objective() -> AristosObjective {
    let training = TrainingConstants {
        recompute: 0.0,
        layers: 24,
        global_batch: 4096,
        moe_every: 2,
        micro_batch: 4,
    };
    AristosObjective::uniform(training, 64, 8.6e12, 2.0, 16.8e6, 16.8e6)
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

fn gpt_1t_traffic(c: &mut Criterion) {
    let model = GptDims::gpt_1t();
    let config = ParallelConfig {
        tensor: Split::new(8, 1),
        pipeline: Split::new(1, 8),
        data: Split::new(32, 2),
        micro_batch: 1,
        micro_batches: 64,
        interleave: 1,
        expert: None,
    };
    let map = RankMapping::new(4096, 256, &config, &model).unwrap();
    let mut group = c.benchmark_group("job_traffic");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("gpt_1t_4096_gh200", |b| {
        b.iter(|| {
            job_traffic(black_box(&map), &model, CollectiveAlgorithm::Hierarchical)
                .unwrap()
                .summary()
        })
    });
    group.finish();
}

criterion_group!(benches, lysigroup, gpt_1t_traffic);
criterion_main!(benches);
