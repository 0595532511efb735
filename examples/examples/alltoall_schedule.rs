//! Aurora §4.2 / §8: the all-to-all of one Zipf-skewed 8-GPU MoE layer under every scheduler.
//!
//! Prints the lower bound (Theorem 4.2), each algorithm's completion time, its ratio to the
//! bound and its number of pieces, and the speedup of `optimal` over the SJF and random-order
//! (RCS) baselines, which Aurora reports as up to 1.38x over SJF. Then sweeps 40 synthetic
//! layers (Zipf exponents 0.8-1.2) for the range of that speedup, shows the latency-aware
//! trade-off with a 10 or 100 us start-up cost per message, and replays the layer's plans on
//! three new batches of the same layer (Aurora Q4, plans made from historical statistics).
//!
//! Run: `cargo run --release -p moe-planner-examples --example alltoall_schedule`

use alltoall_sched::workload::{uniform_traffic, zipf_batch, zipf_traffic};
use alltoall_sched::{
    Algorithm, Bandwidth, ScheduleError, TrafficMatrix, latency_pareto, lower_bound_s,
    non_preemptive, optimal, replay, schedule,
};

/// The paper's 100 Gbps, in bytes per second.
const BANDWIDTH_BYTES_PER_S: f64 = 12.5e9;

fn load_layer() -> Result<TrafficMatrix, Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/traffic_zipf8.csv");
    let text = std::fs::read_to_string(path)?;
    let rows = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split(',').map(|v| v.trim().parse::<f64>()).collect())
        .collect::<Result<Vec<Vec<f64>>, _>>()?;
    Ok(TrafficMatrix::from_rows(&rows)?)
}

fn speedups(d: &TrafficMatrix, b: &Bandwidth, seed: u64) -> Result<(f64, f64), ScheduleError> {
    let best = schedule(d, b, Algorithm::Optimal, seed)?.makespan_s;
    let sjf = schedule(d, b, Algorithm::Sjf, seed)?.makespan_s;
    let random = schedule(d, b, Algorithm::Random, seed)?.makespan_s;
    Ok((sjf / best, random / best))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let b = Bandwidth::uniform(BANDWIDTH_BYTES_PER_S)?;
    let d = load_layer()?;
    println!("Zipf(1.0) layer, 8 GPUs, 100 Gbps (examples/data/traffic_zipf8.csv)");
    println!(
        "{:<16} {:>12} {:>10} {:>8}",
        "algorithm", "time (ms)", "/ bound", "pieces"
    );
    let mut times = Vec::new();
    for algorithm in Algorithm::ALL {
        let plan = schedule(&d, &b, algorithm, 1)?;
        if times.is_empty() {
            println!("{:<16} {:>12.4}", "lower bound", plan.lower_bound_s * 1e3);
        }
        println!(
            "{:<16} {:>12.4} {:>10.4} {:>8}",
            algorithm.name(),
            plan.makespan_s * 1e3,
            plan.ratio_to_bound(),
            plan.pieces
        );
        times.push(plan.makespan_s);
    }
    let (sjf, random) = speedups(&d, &b, 1)?;
    println!("optimal speedup: {sjf:.3}x over SJF, {random:.3}x over random order");

    // 40 layers: the range of the speedup over the baselines (the paper: up to 1.38x over SJF).
    let (mut max_sjf, mut sum_sjf, mut max_rnd, mut sum_rnd, mut count) =
        (0.0f64, 0.0, 0.0f64, 0.0, 0.0);
    for layer in 0..40u64 {
        let exponent = 0.8 + 0.1 * (layer % 5) as f64;
        let layer_d = zipf_traffic(8, exponent, 8192, 8192, 100 + layer)?;
        let (s, r) = speedups(&layer_d, &b, layer)?;
        (max_sjf, sum_sjf, max_rnd, sum_rnd, count) = (
            max_sjf.max(s),
            sum_sjf + s,
            max_rnd.max(r),
            sum_rnd + r,
            count + 1.0,
        );
    }
    println!(
        "40 layers (Zipf 0.8-1.2): speedup over SJF mean {:.3}x max {:.3}x; over random mean {:.3}x max {:.3}x",
        sum_sjf / count,
        max_sjf,
        sum_rnd / count,
        max_rnd
    );

    // Latency-aware: every message pays alpha; fewer pieces can finish earlier.
    let uniform = uniform_traffic(8, 16 << 20, 3)?;
    for (name, layer, alpha_s) in [
        ("Zipf layer", &d, 10e-6),
        ("uniform layer", &uniform, 10e-6),
        ("uniform layer", &uniform, 100e-6),
    ] {
        println!(
            "\n{name}, {:.0} us start-up cost per message (bound {:.4} ms), Pareto list:",
            alpha_s * 1e6,
            lower_bound_s(layer, &b)? * 1e3
        );
        println!("{:>10} {:>8} {:>12}", "quantum", "pieces", "time (ms)");
        for p in latency_pareto(layer, &b, alpha_s)? {
            let quantum = p
                .quantum_fraction
                .map_or("one/pair".to_string(), |q| format!("{q:.5}"));
            println!("{quantum:>10} {:>8} {:>12.4}", p.pieces, p.makespan_s * 1e3);
        }
    }

    // Aurora Q4: plan from one batch's statistics, run on later batches of the same layer.
    let plan = optimal(&d, &b)?;
    let whole_pairs = non_preemptive(&d, &b)?;
    // Same experts and popularity as the planned layer (seed 2024), new per-pair counts.
    for batch in [7u64, 8, 9] {
        let actual = zipf_batch(8, 1.0, 8192, 8192, 2024, batch)?;
        let r = replay(&plan, &actual, &b)?;
        let w = replay(&whole_pairs, &actual, &b)?;
        let fresh_sjf = schedule(&actual, &b, Algorithm::Sjf, 0)?.ratio_to_bound();
        println!(
            "replay on another batch of the layer (seed {batch}): optimal plan {:.4}x its bound, non-preemptive plan {:.4}x (SJF on it: {fresh_sjf:.4}x)",
            r.slowdown, w.slowdown
        );
    }
    Ok(())
}
