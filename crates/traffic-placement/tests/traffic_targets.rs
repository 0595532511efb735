//! The issue-23 targets on DeepSeek-shaped layers (run with `--ignored --nocapture` in release
//! for the full table; a small seeded slice runs in CI).

use std::time::Instant;

use expert_placement::{EplbPolicy, LayerLoads, PlacementAlgorithm, PlacementCluster, place};
use traffic_placement::{
    LocalityTrace, TrafficOptions, dispatch, locality_trace, place_traffic_aware, topology_greedy,
};

fn row(gpus: usize, nodes: usize, slots: usize, locality: f64, layers: usize, seed: u64) {
    let cluster = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
    let trace = locality_trace(
        &LocalityTrace::deepseek_like(layers, gpus, nodes, locality),
        seed,
    )
    .unwrap();
    let (mut ours, mut hier, mut glob, mut topo, mut co, mut bound) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut total, mut worst_bal, mut met) = (0.0, 0.0f64, 0);
    let mut time = 0.0;
    let mut capped = 0;
    // `TRAFFIC_TIME_BUDGET_S=1000` lifts the safety cap (for valgrind, 50 times slower).
    let options = TrafficOptions {
        time_budget_s: std::env::var("TRAFFIC_TIME_BUDGET_S")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(traffic_placement::DEFAULT_TRAFFIC_TIME_BUDGET_S),
        ..TrafficOptions::default()
    };
    for t in &trace {
        let w = LayerLoads::new(t.expert_loads()).unwrap();
        let start = Instant::now();
        let p = place_traffic_aware(t, &cluster, &options).unwrap();
        time += start.elapsed().as_secs_f64();
        let h = place(
            &w,
            &cluster,
            PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups: 8 }),
        )
        .unwrap();
        let g = place(&w, &cluster, PlacementAlgorithm::Eplb(EplbPolicy::Global)).unwrap();
        let tg = topology_greedy(&w, &cluster, Some(8)).unwrap();
        ours += p.dispatch.cross_node_tokens;
        co += p.compute_only.cross_node_tokens;
        bound += p.bound.cross_node_tokens;
        hier += dispatch(t, &cluster, &h.physical_to_logical)
            .unwrap()
            .cross_node_tokens;
        glob += dispatch(t, &cluster, &g.physical_to_logical)
            .unwrap()
            .cross_node_tokens;
        topo += dispatch(t, &cluster, &tg).unwrap().cross_node_tokens;
        total += p.dispatch.total_tokens;
        worst_bal = worst_bal.max(p.dispatch.max_gpu_load / p.compute_only_max_gpu_load);
        met += usize::from(p.balance_met);
        capped += usize::from(p.termination == traffic_placement::TrafficTermination::TimeCapped);
    }
    println!(
        "G={gpus:>2} K={nodes} R={:>3} loc={locality:.2}: ratio ours {:.4} co {:.4} hier {:.4} glob {:.4} topo {:.4} bound {:.4} | cut vs hier {:>5.1}% | gap to bound {:>5.2}% | busiest/C max {:.4} met {met}/{layers} | {:.1} ms/layer{}",
        gpus * slots,
        ours / total,
        co / total,
        hier / total,
        glob / total,
        topo / total,
        bound / total,
        100.0 * (1.0 - ours / hier),
        100.0 * (ours / bound - 1.0),
        worst_bal,
        1e3 * time / layers as f64,
        if capped > 0 {
            format!(" | {capped} time-capped")
        } else {
            String::new()
        },
    );
}

#[test]
#[ignore = "the full target table: cargo test --release -p traffic-placement --test traffic_targets -- --ignored --nocapture"]
fn deepseek_targets() {
    // `TRAFFIC_GPUS=32` keeps the rows of one GPU count, `TRAFFIC_LOCALITY=0.5` one locality,
    // `TRAFFIC_LAYERS=1` plans fewer layers per row (for a profile), `TRAFFIC_SEED=2` another
    // trace (seed 1 by default).
    let only = |var: &str| std::env::var(var).ok().and_then(|v| v.parse::<f64>().ok());
    for (gpus, nodes, slots) in [(16, 2, 18), (16, 2, 20), (32, 4, 9), (32, 4, 10)] {
        if only("TRAFFIC_GPUS").is_some_and(|g| g != gpus as f64) {
            continue;
        }
        for locality in [0.0, 0.3, 0.5, 0.8] {
            if only("TRAFFIC_LOCALITY").is_some_and(|l| l != locality) {
                continue;
            }
            let layers = only("TRAFFIC_LAYERS").map_or(8, |l| l as usize);
            let seed = std::env::var("TRAFFIC_SEED")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(1);
            row(gpus, nodes, slots, locality, layers, seed);
        }
    }
}

#[test]
#[ignore = "58 layers in sequence and on 2 threads: cargo test --release -p traffic-placement --test traffic_targets -- --ignored fifty_eight --nocapture"]
fn fifty_eight_layers() {
    for (gpus, nodes, slots) in [(16, 2, 18), (32, 4, 9), (32, 4, 10)] {
        let cluster = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
        let trace = locality_trace(&LocalityTrace::deepseek_like(58, gpus, nodes, 0.5), 1).unwrap();
        let plan = |t: &traffic_placement::RoutedTokens| {
            place_traffic_aware(t, &cluster, &TrafficOptions::default()).unwrap()
        };
        let start = Instant::now();
        let cpu = thread_cpu_s();
        let met: usize = trace.iter().map(|t| usize::from(plan(t).balance_met)).sum();
        let sequential = start.elapsed().as_secs_f64();
        let cpu = thread_cpu_s().zip(cpu).map(|(b, a)| b - a);
        // The facade plans layers in parallel (rayon); plain threads show the same here
        // (`TRAFFIC_THREADS`, default 2).
        let threads = std::env::var("TRAFFIC_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(2)
            .max(1);
        let start = Instant::now();
        std::thread::scope(|scope| {
            for i in 0..threads {
                let (trace, plan) = (&trace, &plan);
                scope.spawn(move || {
                    for t in trace.iter().skip(i).step_by(threads) {
                        plan(t);
                    }
                });
            }
        });
        println!(
            "G={gpus} K={nodes} R={}: 58 layers in {sequential:.2} s in sequence (CPU {}), {:.2} s on {threads} threads, {met} within the limit",
            gpus * slots,
            cpu.map_or("unknown".to_owned(), |c| format!("{c:.2} s")),
            start.elapsed().as_secs_f64()
        );
    }
}

/// CPU time of the calling thread in seconds (Linux `/proc/thread-self/schedstat`), so that the
/// sequential time can be read on a machine shared with other work.
fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

#[test]
#[ignore = "beyond today's deployments: cargo test --release -p traffic-placement --test traffic_targets -- --ignored wide --nocapture"]
fn wide_shapes() {
    for (gpus, nodes, slots) in [(64, 8, 9), (64, 8, 10)] {
        row(gpus, nodes, slots, 0.5, 2, 1);
    }
}

#[test]
#[ignore = "a large instance stays within its budgets: cargo test --release -p traffic-placement --test traffic_targets -- --ignored large --nocapture"]
fn large_instance_is_bounded() {
    let spec = LocalityTrace {
        experts: 1024,
        ..LocalityTrace::deepseek_like(1, 256, 32, 0.5)
    };
    let t = &locality_trace(&spec, 3).unwrap()[0];
    let cluster = PlacementCluster::uniform(256, 5, 32).unwrap();
    let w = LayerLoads::new(t.expert_loads()).unwrap();
    let clock = Instant::now();
    let co = place(&w, &cluster, PlacementAlgorithm::Optimal).unwrap();
    let t_co = clock.elapsed();
    let clock = Instant::now();
    dispatch(t, &cluster, &co.physical_to_logical).unwrap();
    let t_d = clock.elapsed();
    let clock = Instant::now();
    traffic_placement::traffic_lower_bound(t, &cluster, co.max_gpu_load * 1.01, 30).unwrap();
    println!(
        "compute-only {t_co:?}, one dispatch {t_d:?}, bound {:?}",
        clock.elapsed()
    );
    let start = Instant::now();
    let p = place_traffic_aware(t, &cluster, &TrafficOptions::default()).unwrap();
    println!(
        "256 GPUs in 32 nodes, 1024 experts: {:.2} s, ratio {:.4} (compute-only {:.4}, bound {:.4}), met {}, {}",
        start.elapsed().as_secs_f64(),
        p.dispatch.cross_node_ratio(),
        p.compute_only.cross_node_ratio(),
        p.bound.cross_node_tokens / p.dispatch.total_tokens,
        p.balance_met,
        p.termination
    );
}

/// The CI slice: one DeepSeek-like layer per shape, with and without redundant experts.
#[test]
fn deepseek_slice() {
    for (slots, locality) in [(18, 0.5), (16, 0.5)] {
        let cluster = PlacementCluster::uniform(16, slots, 2).unwrap();
        let t = &locality_trace(&LocalityTrace::deepseek_like(1, 16, 2, locality), 5).unwrap()[0];
        let p = place_traffic_aware(t, &cluster, &TrafficOptions::default()).unwrap();
        let w = LayerLoads::new(t.expert_loads()).unwrap();
        let h = place(
            &w,
            &cluster,
            PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups: 8 }),
        )
        .unwrap();
        let hier = dispatch(t, &cluster, &h.physical_to_logical)
            .unwrap()
            .cross_node_tokens;
        println!(
            "R={}: ratio {:.4}, EPLB hierarchical {:.4}, bound {:.4}, met {}",
            16 * slots,
            p.dispatch.cross_node_ratio(),
            hier / p.dispatch.total_tokens,
            p.bound.cross_node_tokens / p.dispatch.total_tokens,
            p.balance_met
        );
        assert!(p.dispatch.cross_node_tokens + 1e-6 >= p.bound.cross_node_tokens || !p.balance_met);
        if slots == 18 {
            assert!(p.balance_met);
            assert!(
                p.dispatch.cross_node_tokens <= 0.6 * hier,
                "at least 40% below EPLB hierarchical"
            );
        }
    }
}

#[test]
#[ignore = "a digest of every plan, to check that a speed change keeps them: cargo test --release -p traffic-placement --test traffic_targets -- --ignored digests --nocapture"]
fn plan_digests() {
    use std::hash::{Hash, Hasher};
    // `TRAFFIC_LAYERS` layers (default 8) of seeds `TRAFFIC_SEEDS` (default 1,2) at localities
    // 0.0 / 0.3 / 0.5 / 0.8 on the 2- and 4-node shapes.
    let layers = std::env::var("TRAFFIC_LAYERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(8);
    let seeds: Vec<u64> = std::env::var("TRAFFIC_SEEDS")
        .unwrap_or_else(|_| "1,2".to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    for (gpus, nodes, slots) in [(16, 2, 18), (32, 4, 9), (32, 4, 10)] {
        let cluster = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
        for &seed in &seeds {
            for locality in [0.0, 0.3, 0.5, 0.8] {
                let spec = LocalityTrace::deepseek_like(layers, gpus, nodes, locality);
                let trace = locality_trace(&spec, seed).unwrap();
                let mut h = std::collections::hash_map::DefaultHasher::new();
                let (mut cross, mut bound, mut total) = (0.0, 0.0, 0.0);
                for t in &trace {
                    let p = place_traffic_aware(t, &cluster, &TrafficOptions::default()).unwrap();
                    p.physical_to_logical.hash(&mut h);
                    p.dispatch.cross_node_tokens.to_bits().hash(&mut h);
                    p.bound.cross_node_tokens.to_bits().hash(&mut h);
                    cross += p.dispatch.cross_node_tokens;
                    bound += p.bound.cross_node_tokens;
                    total += p.dispatch.total_tokens;
                    if std::env::var("TRAFFIC_PER_LAYER").is_ok() {
                        println!(
                            "  layer cross {:.3} busiest/limit {:.6} gap {:.2}% {}",
                            p.dispatch.cross_node_tokens,
                            p.dispatch.max_gpu_load / p.max_gpu_load_limit,
                            100.0 * p.traffic_gap(),
                            p.termination
                        );
                    }
                }
                println!(
                    "G={gpus} K={nodes} R={} seed {seed} loc {locality:.1}: ratio {:.5} bound {:.5} gap {:.2}% digest {:016x}",
                    gpus * slots,
                    cross / total,
                    bound / total,
                    100.0 * (cross / bound - 1.0),
                    h.finish()
                );
            }
        }
    }
}
