//! All-to-all scheduling beyond the first table (which `crates/alltoall-sched/tests/
//! docs_reproduction.rs` checks): the speedups of the optimal order, the start-up cost
//! trade-off and the stale orders of Q4, as `examples/examples/alltoall_schedule.rs` prints
//! them.

use crate::tables::{Drift, Table};
use alltoall_sched::workload::{uniform_traffic, zipf_batch, zipf_traffic};
use alltoall_sched::{
    Algorithm, Bandwidth, TrafficMatrix, latency_pareto, lower_bound_s, non_preemptive, optimal,
    replay, schedule,
};

const LAYER: &str = include_str!("../../data/traffic_zipf8.csv");

fn layer() -> TrafficMatrix {
    let rows: Vec<Vec<f64>> = LAYER
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.split(',')
                .map(|v| v.trim().parse().expect("a number"))
                .collect()
        })
        .collect();
    TrafficMatrix::from_rows(&rows).expect("the layer is valid")
}

fn bandwidth() -> Bandwidth {
    Bandwidth::uniform(12.5e9).expect("valid")
}

/// SJF time and random-order time over the optimal time.
fn speedups(d: &TrafficMatrix, seed: u64) -> (f64, f64) {
    let b = bandwidth();
    let time = |a| schedule(d, &b, a, seed).expect("schedules").makespan_s;
    let best = time(Algorithm::Optimal);
    (time(Algorithm::Sjf) / best, time(Algorithm::Random) / best)
}

#[test]
fn speedups_of_the_optimal_order_match_the_code() {
    let mut drift = Drift::new("All-to-all: speedup of the optimal order (prose)");
    let (sjf, random) = speedups(&layer(), 1);
    drift.text(&format!(
        "On this layer {sjf:.2}× over SJF and {random:.2}× over random order"
    ));
    let (mut sjf, mut random) = (Vec::new(), Vec::new());
    for l in 0..40u64 {
        let d = zipf_traffic(8, 0.8 + 0.1 * (l % 5) as f64, 8192, 8192, 100 + l).expect("valid");
        let (s, r) = speedups(&d, l);
        sjf.push(s);
        random.push(r);
    }
    let stats = |v: &[f64]| {
        (
            v.iter().sum::<f64>() / v.len() as f64,
            v.iter().copied().fold(0.0, f64::max),
        )
    };
    let ((ms, xs), (mr, xr)) = (stats(&sjf), stats(&random));
    drift.text(&format!(
        "over SJF mean {ms:.2}×, max {xs:.2}×; over random mean {mr:.2}×, max {xr:.2}×"
    ));
    drift.finish();
}

#[test]
fn start_up_cost_trade_off_matches_the_code() {
    let b = bandwidth();
    let mut drift = Drift::new("All-to-all: start-up cost (prose)");
    let zipf = latency_pareto(&layer(), &b, 10e-6).expect("pareto");
    drift.text(&format!(
        "the Zipf layer is fastest with one piece per pair ({:.3} ms)",
        zipf.first().expect("one point").makespan_s * 1e3
    ));
    let uniform = uniform_traffic(8, 16 << 20, 3).expect("valid");
    let points = latency_pareto(&uniform, &b, 10e-6).expect("pareto");
    let at = |q: f64| {
        points
            .iter()
            .find(|p| p.quantum_fraction.is_some_and(|f| (f - q).abs() < 1e-12))
            .expect("a point at that quantum")
    };
    let (one, l64, l256) = (at(0.25), at(1.0 / 64.0), at(1.0 / 256.0));
    drift.text(&format!(
        "A uniform 8-GPU layer (bound {:.3} ms) shows the trade-off: one piece per pair {:.3} ms ({} pieces), quantum L/64 {:.3} ms ({}), L/256 {:.3} ms ({})",
        lower_bound_s(&uniform, &b).expect("bound") * 1e3,
        one.makespan_s * 1e3,
        one.pieces,
        l64.makespan_s * 1e3,
        l64.pieces,
        l256.makespan_s * 1e3,
        l256.pieces
    ));
    let slow = latency_pareto(&uniform, &b, 100e-6).expect("pareto");
    drift.text(&format!(
        "per message one piece per pair wins ({:.3} ms)",
        slow.first().expect("one point").makespan_s * 1e3
    ));
    drift.finish();
}

#[test]
fn stale_orders_of_q4_match_the_code() {
    let (d, b) = (layer(), bandwidth());
    let plan = optimal(&d, &b).expect("schedules");
    let whole = non_preemptive(&d, &b).expect("schedules");
    let t = Table::after(
        "**Imprecise statistics (Q4).**",
        "| batch (seed) | stale `optimal` order | stale `non-preemptive` order | SJF, fresh |",
    );
    let mut drift = Drift::new("All-to-all: imprecise statistics (Q4)");
    for batch in [7u64, 8, 9] {
        let actual = zipf_batch(8, 1.0, 8192, 8192, 2024, batch).expect("valid");
        let r = replay(&plan, &actual, &b).expect("replays").slowdown;
        let w = replay(&whole, &actual, &b).expect("replays").slowdown;
        let sjf = schedule(&actual, &b, Algorithm::Sjf, 0)
            .expect("schedules")
            .ratio_to_bound();
        drift.cells(
            t.row(&[&batch.to_string()]),
            &[1, 2, 3],
            &[format!("{r:.3}×"), format!("{w:.3}×"), format!("{sjf:.3}×")],
        );
    }
    drift.finish();
}
