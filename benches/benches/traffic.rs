//! Criterion benches of traffic-aware expert placement (issue 23): one DeepSeek-like layer
//! (256 experts, locality 0.5) on 16 GPUs in 2 nodes (288 slots), 32 GPUs in 4 nodes (320
//! slots) and, beyond today's deployments, 64 GPUs in 8 nodes (576 slots): the planner, the
//! exact dispatch of one plan, and the lower bound.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use expert_placement::PlacementCluster;
use traffic_placement::{
    LocalityTrace, TrafficOptions, dispatch, locality_trace, place_traffic_aware,
    traffic_lower_bound,
};

fn traffic(c: &mut Criterion) {
    let mut group = c.benchmark_group("traffic_placement");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (gpus, nodes, slots) in [(16, 2, 18), (32, 4, 10), (64, 8, 9)] {
        let t = locality_trace(&LocalityTrace::deepseek_like(1, gpus, nodes, 0.5), 1)
            .expect("valid trace")
            .remove(0);
        let cluster = PlacementCluster::uniform(gpus, slots, nodes).expect("valid cluster");
        let plan = place_traffic_aware(&t, &cluster, &TrafficOptions::default()).expect("plan");
        let name = format!("{gpus}gpus_{nodes}nodes_{}slots", gpus * slots);
        group.bench_function(format!("plan/{name}"), |b| {
            b.iter(|| place_traffic_aware(black_box(&t), &cluster, &TrafficOptions::default()));
        });
        group.bench_function(format!("dispatch/{name}"), |b| {
            b.iter(|| dispatch(black_box(&t), &cluster, &plan.physical_to_logical));
        });
        group.bench_function(format!("bound/{name}"), |b| {
            b.iter(|| traffic_lower_bound(black_box(&t), &cluster, plan.max_gpu_load_limit, 30));
        });
    }
    group.finish();
}

criterion_group!(benches, traffic);
criterion_main!(benches);
