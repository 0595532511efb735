//! Traffic-aware expert placement (issue 23) on DeepSeek-shaped layers: cross-node ratio of our
//! plan, its lower bound and the baselines (EPLB hierarchical and global, the compute-only plan,
//! SGLang's topology-aware heuristic) under the same locality dispatch, over locality strengths
//! (0 = the no-locality control), and planning time.
//!
//! `cargo run --release -p moe-planner-examples --example traffic_placement` prints the table of
//! docs/reproduction.md; `-- --write-data` also writes
//! `examples/data/placement/routed_tokens_locality.json` (2 layers, 16 GPUs in 2 nodes,
//! locality 0.5, seed 23, counts rounded to whole tokens).

use std::time::Instant;

use expert_placement::{EplbPolicy, LayerLoads, PlacementAlgorithm, PlacementCluster, place};
use traffic_placement::{
    LocalityTrace, RoutedTokens, TrafficOptions, dispatch, locality_trace, place_traffic_aware,
    topology_greedy,
};

const LAYERS: usize = 16;
const SEED: u64 = 1;

fn main() {
    if std::env::args().any(|a| a == "--write-data") {
        write_data();
    }
    println!(
        "shape             locality | cross-node ratio: ours  bound  compute-only  EPLB-hier  EPLB-glob  topo-aware | cut vs hier | gap to bound | ours busiest/C  topo busiest/C | met | ms/layer"
    );
    for (gpus, nodes, slots) in [(16, 2, 18), (16, 2, 20), (32, 4, 9), (32, 4, 10)] {
        for locality in [0.0, 0.3, 0.5, 0.8] {
            row(gpus, nodes, slots, locality);
        }
    }
}

fn row(gpus: usize, nodes: usize, slots: usize, locality: f64) {
    let cluster = PlacementCluster::uniform(gpus, slots, nodes).expect("valid shape");
    let trace = locality_trace(
        &LocalityTrace::deepseek_like(LAYERS, gpus, nodes, locality),
        SEED,
    )
    .expect("valid trace");
    let mut sums = [0.0f64; 7];
    let (mut worst_ours, mut worst_topo, mut met, mut time) = (0.0f64, 0.0f64, 0, 0.0);
    for t in &trace {
        let w = LayerLoads::new(t.expert_loads()).expect("loads");
        let start = Instant::now();
        let p = place_traffic_aware(t, &cluster, &TrafficOptions::default()).expect("plan");
        time += start.elapsed().as_secs_f64();
        let score = |map: &[usize]| dispatch(t, &cluster, map).expect("valid map");
        let hier = place(
            &w,
            &cluster,
            PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups: 8 }),
        )
        .expect("eplb");
        let glob = place(&w, &cluster, PlacementAlgorithm::Eplb(EplbPolicy::Global)).expect("eplb");
        let topo = score(&topology_greedy(&w, &cluster, Some(8)).expect("topology"));
        for (i, x) in [
            p.dispatch.cross_node_tokens,
            p.bound.cross_node_tokens,
            p.compute_only.cross_node_tokens,
            score(&hier.physical_to_logical).cross_node_tokens,
            score(&glob.physical_to_logical).cross_node_tokens,
            topo.cross_node_tokens,
            p.dispatch.total_tokens,
        ]
        .into_iter()
        .enumerate()
        {
            sums[i] += x;
        }
        worst_ours = worst_ours.max(p.dispatch.max_gpu_load / p.compute_only_max_gpu_load);
        worst_topo = worst_topo.max(topo.max_gpu_load / p.compute_only_max_gpu_load);
        met += usize::from(p.balance_met);
    }
    let r = |i: usize| sums[i] / sums[6];
    println!(
        "G={gpus:<2} K={nodes} R={:<3}      {locality:.1} |                  {:.4} {:.4}  {:.4}        {:.4}     {:.4}     {:.4}     | {:>9.1}%  | {:>10.1}%  | {:>12.4}  {:>14.4} | {met:>2}/{LAYERS} | {:>7.1}",
        gpus * slots,
        r(0),
        r(1),
        r(2),
        r(3),
        r(4),
        r(5),
        100.0 * (1.0 - r(0) / r(3)),
        100.0 * (r(0) / r(1) - 1.0),
        worst_ours,
        worst_topo,
        1e3 * time / LAYERS as f64,
    );
}

fn write_data() {
    let trace = locality_trace(&LocalityTrace::deepseek_like(2, 16, 2, 0.5), 23).expect("trace");
    let rows: Vec<Vec<Vec<f64>>> = trace
        .iter()
        .map(RoutedTokens::rows)
        .map(|l| {
            l.into_iter()
                .map(|r| r.into_iter().map(f64::round).collect())
                .collect()
        })
        .collect();
    let text = serde_json::to_string(&serde_json::json!({ "routed_tokens": rows })).expect("json");
    std::fs::write(
        "examples/data/placement/routed_tokens_locality.json",
        text + "\n",
    )
    .expect("write the data file (run from the repository root)");
}
