//! Criterion bench of `transfer_rounds` (issue 22): a rebalance's copies grouped into rounds of
//! one peer per GPU, from a DeepSeek-V3 layer's ~100 copies on 32 GPUs to 8 copies per GPU on
//! 4096 GPUs; and `align_within_nodes` on 32 GPUs in 4 nodes.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use comm_cost_model::seeded_rng;
use criterion::{Criterion, criterion_group, criterion_main};
use expert_placement::{
    ExpertTransfer, LayerLoads, PlacementAlgorithm, PlacementCluster, align_within_nodes,
    lognormal_loads, place, transfer_rounds,
};
use rand::RngExt;

/// `per_gpu` random copies per GPU between distinct GPUs.
fn copies(gpus: usize, per_gpu: usize, seed: u64) -> Vec<ExpertTransfer> {
    let mut rng = seeded_rng(seed, 0);
    (0..gpus * per_gpu)
        .map(|i| {
            let source_gpu = rng.random_range(0..gpus);
            let destination_gpu = (source_gpu + rng.random_range(1..gpus)) % gpus;
            ExpertTransfer {
                expert: i % 256,
                source_gpu,
                destination_gpu,
                slot: 0,
            }
        })
        .collect()
}

fn rounds(c: &mut Criterion) {
    let mut group = c.benchmark_group("transfer_rounds_one_peer");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (gpus, per_gpu) in [(32, 3), (256, 8), (1024, 8), (4096, 8)] {
        let t = copies(gpus, per_gpu, 1);
        group.bench_function(format!("{gpus}_gpus_{}_copies", t.len()), |b| {
            b.iter(|| transfer_rounds(black_box(&t), gpus, 1).expect("valid"));
        });
    }
    group.finish();
}

fn align(c: &mut Criterion) {
    let cluster = PlacementCluster::uniform(32, 9, 4).expect("valid cluster");
    let rows = lognormal_loads(2, 256, 1.0, 256_000.0, 1).expect("valid workload");
    let layers = LayerLoads::layers(rows).expect("valid loads");
    let algorithm = PlacementAlgorithm::OptimalNodeAware { groups: 8 };
    let old = place(&layers[0], &cluster, algorithm).expect("plan");
    let new = place(&layers[1], &cluster, algorithm).expect("plan");
    let mut group = c.benchmark_group("align_within_nodes");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("32_gpus_4_nodes_256_experts", |b| {
        b.iter(|| {
            align_within_nodes(
                black_box(&new.physical_to_logical),
                &old.physical_to_logical,
                &cluster,
                256,
            )
            .expect("valid")
        });
    });
    group.finish();
}

criterion_group!(benches, rounds, align);
criterion_main!(benches);
