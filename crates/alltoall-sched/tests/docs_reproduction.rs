//! `docs/reproduction.md`'s all-to-all table (the 8-GPU Zipf layer of
//! `examples/data/traffic_zipf8.csv` at 100 Gbps, as `examples/examples/alltoall_schedule.rs`
//! prints it) recomputed row by row: a change that moves a documented number fails here until
//! the table is regenerated (issue 24: the table said 72 pieces after the code returned 56).

use alltoall_sched::{Algorithm, Bandwidth, TrafficMatrix, lower_bound_s, schedule};

const DOC: &str = include_str!("../../../docs/reproduction.md");
const LAYER: &str = include_str!("../../../examples/data/traffic_zipf8.csv");

fn layer() -> TrafficMatrix {
    let rows: Vec<Vec<f64>> = LAYER
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split(',').map(|v| v.trim().parse().unwrap()).collect())
        .collect();
    TrafficMatrix::from_rows(&rows).unwrap()
}

/// The cells of the table row whose first cell is `name`, after the table's header.
fn row(name: &str) -> Vec<String> {
    let table = DOC
        .split("| algorithm | time (ms) | / bound | pieces |")
        .nth(1)
        .expect("the all-to-all table is in docs/reproduction.md");
    let line = table
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .find(|l| l.split('|').nth(1).is_some_and(|c| c.trim() == name))
        .unwrap_or_else(|| panic!("no row `{name}` in the all-to-all table"));
    line.split('|')
        .skip(2)
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn the_documented_all_to_all_table_matches_the_code() {
    let d = layer();
    let b = Bandwidth::uniform(12.5e9).unwrap();
    let bound = lower_bound_s(&d, &b).unwrap();
    assert_eq!(
        row("lower bound (Thm 4.2)")[0],
        format!("{:.3}", bound * 1e3)
    );
    for (name, algorithm) in [
        ("`optimal`", Algorithm::Optimal),
        ("`aurora-greedy` (Algorithm 1)", Algorithm::AuroraGreedy),
        ("`non-preemptive`", Algorithm::NonPreemptive),
        ("SJF", Algorithm::Sjf),
        ("random order (RCS)", Algorithm::Random),
        ("pairwise shift", Algorithm::Shift),
        ("NCCL peer order", Algorithm::Nccl),
    ] {
        let plan = schedule(&d, &b, algorithm, 1).unwrap();
        let computed = vec![
            format!("{:.3}", plan.makespan_s * 1e3),
            format!("{:.3}", plan.ratio_to_bound()),
            plan.pieces.to_string(),
        ];
        assert_eq!(row(name), computed, "row `{name}` of docs/reproduction.md");
    }
}
