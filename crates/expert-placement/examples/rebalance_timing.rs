//! Times issue 20's rebalance target: 58 layers x 256 experts on 32 GPUs x 9 slots after a 20%
//! drift, at tolerance 0, 1% and 5%, and prints the moves, the mean busiest/mean and the time.
//!
//! `cargo run --release -p expert-placement --example rebalance_timing [LAYERS] [REPEATS] [node]`
//! (`RAYON_NUM_THREADS=1` for one thread). The criterion bench `rebalance_58x256_on_32x9` in
//! `benches/benches/placement.rs` measures the same input. With `node`, the groups-in-nodes
//! rebalance (8 groups, 4 nodes, [`rebalance_node_aware`]) from a node-aware plan, beside the
//! moves of the relabeled fresh node-aware plan. With `MOE_REBALANCE_DIGEST=1` it also prints a
//! hash of every result's JSON (placements, transfers, trade-off lists) per tolerance, to check
//! that a faster search returns bit-identical rebalances. `MOE_REBALANCE_TOLERANCES=0,0.01`
//! runs only the tolerances listed (for a per-tolerance instruction count).

use std::time::Instant;

use expert_placement::{
    LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementError, PlacementOptions,
    drift_loads, lognormal_loads, place_layers, rebalance_layers, rebalance_node_aware,
};
use rayon::prelude::*;

fn main() -> Result<(), PlacementError> {
    if std::env::args().nth(1).as_deref() == Some("campaign") {
        let n = std::env::args()
            .nth(2)
            .and_then(|a| a.parse().ok())
            .unwrap_or(300);
        return campaign(n);
    }
    let mut args = std::env::args().skip(1);
    let layers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(58);
    let repeats: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let cluster = PlacementCluster::uniform(32, 9, 4)?;
    let rows = lognormal_loads(layers, 256, 1.0, 1e6, 42)?;
    let old = LayerLoads::layers(rows.clone())?;
    let new = LayerLoads::layers(drift_loads(&rows, 0.2, 43)?)?;
    fresh_digest(&cluster, &old)?;
    if args.next().as_deref() == Some("node") {
        return node_aware(&cluster, &old, &new, repeats);
    }
    let maps: Vec<Vec<usize>> = place_layers(&old, &cluster, PlacementAlgorithm::Optimal)?
        .into_iter()
        .map(|p| p.physical_to_logical)
        .collect();
    for tolerance in tolerances() {
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
            figures(tolerance, &r);
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

/// The tolerances to time: `MOE_REBALANCE_TOLERANCES` (comma-separated), else 0, 1% and 5%.
fn tolerances() -> Vec<f64> {
    std::env::var("MOE_REBALANCE_TOLERANCES")
        .ok()
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![0.0, 0.01, 0.05])
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

/// With `MOE_REBALANCE_FIGURES` set (first repeat only): each layer's moves and busiest GPU,
/// to compare two builds result by result when their plans differ.
fn figures(tolerance: f64, results: &[expert_placement::Rebalance]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(u64::MAX);
    if std::env::var_os("MOE_REBALANCE_FIGURES").is_none()
        || LAST.swap(tolerance.to_bits(), Ordering::Relaxed) == tolerance.to_bits()
    {
        return;
    }
    for (l, r) in results.iter().enumerate() {
        println!(
            "figures tolerance {tolerance} layer {l}: {} moves, busiest {:?}",
            r.moves, r.placement.max_gpu_load
        );
    }
}

/// FNV-1a of a JSON document.
fn fnv(json: &str) -> u64 {
    json.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `campaign N`: `N` seeded random small instances (2-16 GPUs of 1-8 slots, mixed speeds, 2
/// nodes, log-normal loads with a hot expert now and then), each planned fresh (optimal and
/// robust over two windows) and rebalanced from a drifted plan (global and groups-in-nodes,
/// tolerance 0, 1% and 5%); prints one hash of every result, to compare two builds.
fn campaign(n: u64) -> Result<(), PlacementError> {
    use rand::RngExt;
    let mut all = 0_u64;
    let mut count = 0;
    let first: u64 = std::env::var("MOE_CAMPAIGN_FIRST")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for seed in first..n {
        let mut rng = comm_cost_model::seeded_rng(seed, 20);
        let gpus = 2 * rng.random_range(1..=8_usize);
        let slots = rng.random_range(1..=8_usize);
        let speed: Vec<f64> = (0..gpus)
            .map(|g| {
                if g % 3 == 0 && seed % 2 == 0 {
                    2.0
                } else {
                    1.0
                }
            })
            .collect();
        let nodes: Vec<usize> = (0..gpus).map(|g| g * 2 / gpus).collect();
        let cluster = PlacementCluster::new(vec![slots; gpus], speed, nodes)?;
        let groups = 2 * rng.random_range(1..=3_usize);
        // Every GPU needs as many experts as slots, and every expert a slot.
        let (least, most) = (slots.div_ceil(groups), (gpus * slots).min(64) / groups);
        if least > most {
            continue;
        }
        let experts = groups * rng.random_range(least..=most);
        let rows = lognormal_loads(2, experts, 0.5 + (seed % 4) as f64 * 0.5, 1e3, seed)?;
        let mut rows = rows;
        if seed % 5 == 0 {
            rows[1][0] *= 20.0;
        }
        let old = LayerLoads::new(rows[0].clone())?;
        let new = LayerLoads::new(drift_loads(&rows[1..], 0.2, seed)?.remove(0))?;
        let options = PlacementOptions::default();
        let mut out = Vec::new();
        let fresh = expert_placement::place(&new, &cluster, PlacementAlgorithm::Optimal)?;
        out.push(serde_json::to_string(&fresh).unwrap_or_default());
        let robust = expert_placement::place_robust(
            &[old.clone(), new.clone()],
            &cluster,
            expert_placement::RobustObjective::Worst,
        )?;
        out.push(serde_json::to_string(&robust).unwrap_or_default());
        let from = expert_placement::place(&old, &cluster, PlacementAlgorithm::Optimal)?;
        let node_from = expert_placement::place(
            &old,
            &cluster,
            PlacementAlgorithm::OptimalNodeAware { groups },
        );
        for tolerance in [0.0, 0.01, 0.05] {
            let r = expert_placement::rebalance_with(
                &from.physical_to_logical,
                &new,
                &cluster,
                tolerance,
                &options,
            )?;
            out.push(serde_json::to_string(&r).unwrap_or_default());
            if std::env::var_os("MOE_REBALANCE_FIGURES").is_some() {
                println!(
                    "figures seed {seed} tolerance {tolerance} global: {} moves, busiest {:?}",
                    r.moves, r.placement.max_gpu_load
                );
            }
            if let Ok(p) = &node_from {
                let r = rebalance_node_aware(
                    &p.physical_to_logical,
                    &new,
                    &cluster,
                    groups,
                    tolerance,
                    &options,
                );
                if let (Ok(r), Some(_)) = (&r, std::env::var_os("MOE_REBALANCE_FIGURES")) {
                    println!(
                        "figures seed {seed} tolerance {tolerance} node: {} moves, busiest {:?}",
                        r.moves, r.placement.max_gpu_load
                    );
                }
                out.push(format!("{:?}", r.map(|r| serde_json::to_string(&r).ok())));
            }
        }
        for json in &out {
            all = all.rotate_left(5) ^ fnv(json);
            count += 1;
        }
        if std::env::var_os("MOE_CAMPAIGN_VERBOSE").is_some() {
            let hashes: Vec<String> = out
                .iter()
                .map(|j| format!("{:04x}", fnv(j) & 0xffff))
                .collect();
            println!(
                "seed {seed}: {} x {slots} x {gpus}: {}",
                experts,
                hashes.join(" ")
            );
        }
    }
    println!("campaign digest: {all:016x} ({count} results)");
    Ok(())
}

/// With `MOE_REBALANCE_DIGEST` set: a hash of the fresh plans (optimal and node-aware) of the
/// old loads and of the CLI demo's 58-layer loads on the same cluster, to check that a change
/// to the shared local search leaves fresh plans bit-identical.
fn fresh_digest(cluster: &PlacementCluster, old: &[LayerLoads]) -> Result<(), PlacementError> {
    if std::env::var_os("MOE_REBALANCE_DIGEST").is_none() {
        return Ok(());
    }
    #[derive(serde::Deserialize)]
    struct Counts {
        logical_count: Vec<Vec<f64>>,
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../moe-planner-cli/data/deepseek_like_loads.json"
    );
    let demo = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Counts>(&t).ok())
        .map(|c| LayerLoads::layers(c.logical_count))
        .transpose()?
        .unwrap_or_default();
    for (name, loads) in [("generated", old), ("demo", &demo[..])] {
        for algorithm in [
            PlacementAlgorithm::Optimal,
            PlacementAlgorithm::OptimalNodeAware { groups: 8 },
        ] {
            let plans = place_layers(loads, cluster, algorithm)?;
            let json = serde_json::to_string(&plans).unwrap_or_default();
            let hash = json.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            println!(
                "digest fresh {name} {algorithm:?}: {hash:016x} ({} layers)",
                plans.len()
            );
        }
    }
    Ok(())
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
    for tolerance in tolerances() {
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
            figures(tolerance, &r);
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
