//! Times issue 20's rebalance target: 58 layers x 256 experts on 32 GPUs x 9 slots after a 20%
//! drift, at tolerance 0, 1% and 5%, and prints the moves, the mean busiest/mean and the time.
//!
//! `cargo run --release -p expert-placement --example rebalance_timing [LAYERS] [REPEATS] [node]`
//! (`RAYON_NUM_THREADS=1` for one thread). The criterion bench `rebalance_58x256_on_32x9` in
//! `benches/benches/placement.rs` measures the same input. With `node`, the groups-in-nodes
//! rebalance (8 groups, 4 nodes, [`rebalance_node_aware`]) from a node-aware plan, beside the
//! moves of the relabeled fresh node-aware plan. With `MOE_REBALANCE_DIGEST=1` it also prints a
//! hash of every result's JSON (placements, transfers, trade-off lists) per tolerance, to check
//! that a faster search returns bit-identical rebalances.

use std::time::Instant;

use expert_placement::{
    LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementError, PlacementOptions,
    drift_loads, lognormal_loads, place_layers, rebalance_layers, rebalance_node_aware,
};
use rayon::prelude::*;

fn main() -> Result<(), PlacementError> {
    let mut args = std::env::args().skip(1);
    let layers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(58);
    let repeats: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let cluster = PlacementCluster::uniform(32, 9, 4)?;
    let rows = lognormal_loads(layers, 256, 1.0, 1e6, 42)?;
    let old = LayerLoads::layers(rows.clone())?;
    let new = LayerLoads::layers(drift_loads(&rows, 0.2, 43)?)?;
    if args.next().as_deref() == Some("node") {
        return node_aware(&cluster, &old, &new, repeats);
    }
    let maps: Vec<Vec<usize>> = place_layers(&old, &cluster, PlacementAlgorithm::Optimal)?
        .into_iter()
        .map(|p| p.physical_to_logical)
        .collect();
    for tolerance in [0.0, 0.01, 0.05] {
        let mut times = Vec::new();
        let mut summary = (0, 0.0);
        for _ in 0..repeats {
            let t = Instant::now();
            let r = rebalance_layers(
                &maps,
                &new,
                &cluster,
                tolerance,
                &PlacementOptions::default(),
            )?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            let moves: usize = r.iter().map(|x| x.moves).sum();
            let ratio: f64 = r
                .iter()
                .map(|x| x.placement.max_gpu_load / x.placement.mean_gpu_load())
                .sum::<f64>()
                / r.len() as f64;
            summary = (moves, ratio);
            digest(tolerance, &r);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "tolerance {tolerance}: {} moves, busiest/mean {:.5}, median {:.1} ms (min {:.1})",
            summary.0,
            summary.1,
            times[times.len() / 2],
            times[0]
        );
    }
    Ok(())
}

/// With `MOE_REBALANCE_DIGEST` set (first repeat only): an FNV-1a hash of the results' JSON.
fn digest(tolerance: f64, results: &[expert_placement::Rebalance]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(u64::MAX);
    if std::env::var_os("MOE_REBALANCE_DIGEST").is_none()
        || LAST.swap(tolerance.to_bits(), Ordering::Relaxed) == tolerance.to_bits()
    {
        return;
    }
    let json = serde_json::to_string(results).unwrap_or_default();
    let hash = json.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    println!(
        "digest tolerance {tolerance}: {hash:016x} ({} bytes)",
        json.len()
    );
}

/// The groups-in-nodes rebalance of every layer (in parallel), per tolerance.
fn node_aware(
    cluster: &PlacementCluster,
    old: &[LayerLoads],
    new: &[LayerLoads],
    repeats: usize,
) -> Result<(), PlacementError> {
    let algorithm = PlacementAlgorithm::OptimalNodeAware { groups: 8 };
    let maps: Vec<Vec<usize>> = place_layers(old, cluster, algorithm)?
        .into_iter()
        .map(|p| p.physical_to_logical)
        .collect();
    for tolerance in [0.0, 0.01, 0.05] {
        let mut times = Vec::new();
        let mut summary = (0, 0, 0.0);
        for _ in 0..repeats {
            let t = Instant::now();
            let r = maps
                .par_iter()
                .zip(new)
                .map(|(map, loads)| {
                    rebalance_node_aware(
                        map,
                        loads,
                        cluster,
                        8,
                        tolerance,
                        &PlacementOptions::default(),
                    )
                })
                .collect::<Result<Vec<_>, _>>()?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            let moves: usize = r.iter().map(|x| x.moves).sum();
            let relabeled: usize = r.iter().map(|x| x.fresh_moves).sum();
            let ratio: f64 = r
                .iter()
                .map(|x| x.placement.max_gpu_load / x.placement.mean_gpu_load())
                .sum::<f64>()
                / r.len() as f64;
            summary = (moves, relabeled, ratio);
            digest(tolerance, &r);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "node-aware tolerance {tolerance}: {} moves (relabeled fresh plan: {}), busiest/mean \
             {:.5}, median {:.1} ms",
            summary.0,
            summary.1,
            summary.2,
            times[times.len() / 2]
        );
    }
    Ok(())
}
