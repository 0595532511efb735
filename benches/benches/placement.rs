//! Criterion benches of expert replication and placement: DeepSeek-V3 scale (58 layers x 256
//! experts on 32 GPUs x 9 slots in 4 nodes) for the optimal planner and EPLB's two policies,
//! one layer of 4096 experts on 1024 GPUs, a fewest-move rebalance of one layer, and the
//! hot-expert shapes of issue 20 (two hot experts among cold ones) beside EPLB.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use expert_placement::{
    EplbPolicy, LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementOptions, drift_loads,
    lognormal_loads, place, place_layers, rebalance, rebalance_layers,
};
/// `layers` rows of `experts` log-normal loads (`sigma = 1`, 1000 tokens per expert on average),
/// from the workspace's shared generator.
fn loads(layers: usize, experts: usize, seed: u64) -> Vec<LayerLoads> {
    let rows = lognormal_loads(layers, experts, 1.0, 1000.0 * experts as f64, seed)
        .expect("valid workload");
    LayerLoads::layers(rows).expect("valid loads")
}

/// Ten samples, short warm-up, as the other benches.
fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
}

fn deepseek_scale(c: &mut Criterion) {
    let cluster = PlacementCluster::uniform(32, 9, 4).expect("valid cluster");
    let layers = loads(58, 256, 1);
    let mut group = c.benchmark_group("placement_58x256_on_32x9");
    configure(&mut group);
    for algorithm in [
        PlacementAlgorithm::Optimal,
        PlacementAlgorithm::OptimalNodeAware { groups: 8 },
        PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups: 8 }),
        PlacementAlgorithm::Eplb(EplbPolicy::Global),
    ] {
        group.bench_function(algorithm.name(), |b| {
            b.iter(|| place_layers(black_box(&layers), &cluster, algorithm).expect("plans"));
        });
    }
    group.finish();
}

fn large_layer(c: &mut Criterion) {
    let cluster = PlacementCluster::uniform(1024, 5, 128).expect("valid cluster");
    let layer = loads(1, 4096, 2).remove(0);
    let mut group = c.benchmark_group("placement_4096_on_1024x5");
    configure(&mut group);
    group.bench_function("optimal", |b| {
        b.iter(|| place(black_box(&layer), &cluster, PlacementAlgorithm::Optimal).expect("plan"));
    });
    group.bench_function("eplb-global", |b| {
        b.iter(|| {
            place(
                black_box(&layer),
                &cluster,
                PlacementAlgorithm::Eplb(EplbPolicy::Global),
            )
            .expect("plan")
        });
    });
    group.finish();
}

fn rebalance_one_layer(c: &mut Criterion) {
    let cluster = PlacementCluster::uniform(32, 9, 4).expect("valid cluster");
    let pair = loads(2, 256, 3);
    let current = place(&pair[0], &cluster, PlacementAlgorithm::Optimal).expect("plan");
    let mut group = c.benchmark_group("rebalance_256_on_32x9");
    configure(&mut group);
    group.bench_function("tolerance-0", |b| {
        b.iter(|| {
            rebalance(
                &current.physical_to_logical,
                black_box(&pair[1]),
                &cluster,
                0.0,
            )
            .expect("rebalance")
        });
    });
    group.finish();
}

/// Issue 20's rebalance target: 58 layers x 256 experts on 32 x 9 after a 20% drift, every
/// layer at once (`rebalance_layers`, parallel over layers), at tolerance 0 and 1%.
fn rebalance_all_layers(c: &mut Criterion) {
    let cluster = PlacementCluster::uniform(32, 9, 4).expect("valid cluster");
    let rows = lognormal_loads(58, 256, 1.0, 1e6, 42).expect("valid workload");
    let old = LayerLoads::layers(rows.clone()).expect("valid loads");
    let new =
        LayerLoads::layers(drift_loads(&rows, 0.2, 43).expect("valid drift")).expect("valid loads");
    let maps: Vec<Vec<usize>> = place_layers(&old, &cluster, PlacementAlgorithm::Optimal)
        .expect("plans")
        .into_iter()
        .map(|p| p.physical_to_logical)
        .collect();
    let mut group = c.benchmark_group("rebalance_58x256_on_32x9");
    configure(&mut group);
    for tolerance in [0.0, 0.01] {
        group.bench_function(format!("tolerance-{tolerance}"), |b| {
            b.iter(|| {
                rebalance_layers(
                    &maps,
                    black_box(&new),
                    &cluster,
                    tolerance,
                    &PlacementOptions::default(),
                )
                .expect("rebalance")
            });
        });
    }
    group.finish();
}

/// Issue 20's adversarial shapes: 18 experts with two at 1000 on 9 x 3, and 32 experts (two at
/// 1000, thirty at 0-20) on 16 x 3; the optimal planner's default budget beside EPLB's global.
fn hot_experts(c: &mut Criterion) {
    let small = LayerLoads::new(vec![
        0.0, 1.0, 5.0, 0.0, 1.0, 1000.0, 20.0, 0.0, 0.0, 5.0, 20.0, 0.0, 1000.0, 5.0, 5.0, 20.0,
        1.0, 5.0,
    ])
    .expect("valid loads");
    let mut w = vec![1000.0, 1000.0];
    w.extend((0..30).map(|i| f64::from((i * 7 + 3) % 21)));
    let wide = LayerLoads::new(w).expect("valid loads");
    let cases = [
        ("18_on_9x3", small, PlacementCluster::uniform(9, 3, 1)),
        ("32_on_16x3", wide, PlacementCluster::uniform(16, 3, 1)),
    ];
    let mut group = c.benchmark_group("placement_hot_experts");
    configure(&mut group);
    for (name, layer, cluster) in cases {
        let cluster = cluster.expect("valid cluster");
        for algorithm in [
            PlacementAlgorithm::Optimal,
            PlacementAlgorithm::Eplb(EplbPolicy::Global),
        ] {
            group.bench_function(format!("{name}/{}", algorithm.name()), |b| {
                b.iter(|| place(black_box(&layer), &cluster, algorithm).expect("plan"));
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    deepseek_scale,
    large_layer,
    rebalance_one_layer,
    rebalance_all_layers,
    hot_experts
);
criterion_main!(benches);
