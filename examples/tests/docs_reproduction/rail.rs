//! Rail-only networks: Table 2 (`examples/examples/rail_only_cost.rs`), Table 4 and the
//! calibration with leave-one-out (`llm_iteration_time.rs`), the held-out runs
//! (`iteration_held_out.rs`) and GPT-1T's traffic pattern (`job_traffic.rs`).

use crate::tables::{Drift, Table};
use moe_planner::rail_network::accuracy::{
    accuracy_table, calibrate, held_out_runs, leave_one_out, mean_absolute_error, published_runs,
};
use moe_planner::rail_network::compute::ComputeModel;
use moe_planner::rail_network::fabric::{FabricParams, PAPER_TABLE2, PriceModel, compare_fabrics};
use moe_planner::rail_network::mapping::RankMapping;
use moe_planner::rail_network::model::{Recompute, model_preset};
use moe_planner::rail_network::parallel::Parallelization;
use moe_planner::rail_network::system::system_preset;
use moe_planner::rail_network::traffic::{
    CollectiveAlgorithm, KindShare, TrafficKind, TrafficSummary, job_traffic,
};

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x).replace('-', "−")
}

#[test]
fn rail_only_table_2_matches_the_code() {
    let t = Table::after(
        "### Table 2: switches, transceivers, cost",
        "| N | radix | SOTA #SW | rail-only #SW | SOTA #TR | rail-only #TR | reduction (paper / ours) |",
    );
    let mut drift = Drift::new("Rail-only Table 2");
    for (n, k, _, _, _, _, paper) in PAPER_TABLE2 {
        let c = compare_fabrics(&FabricParams::new(n, 256, k), &PriceModel::default())
            .expect("Table 2 clusters are valid");
        drift.cells(
            t.row(&[&n.to_string(), &k.to_string()]),
            &[2, 3, 4, 5, 6],
            &[
                c.rail_optimized.switches.to_string(),
                c.rail_only.switches.to_string(),
                c.rail_optimized.transceivers.to_string(),
                c.rail_only.transceivers.to_string(),
                format!("{paper}% / {:.1}%", 100.0 * c.cost_reduction),
            ],
        );
    }
    drift.finish();
}

#[test]
fn rail_only_table_4_and_leave_one_out_match_the_code() {
    let sys = system_preset("dgx-a100").expect("preset");
    let runs = published_runs().expect("published runs");
    let paper = ComputeModel::paper();
    let rows = accuracy_table(&runs, &sys, &paper).expect("the runs are valid");
    let t = Table::after(
        "### Table 4: iteration time, one assumption set for every row",
        "| run (GPUs) | measured (Korthikanti) | paper computed | ours | ours vs paper | ours vs measured | paper vs measured |",
    );
    let mut drift = Drift::new("Rail-only Table 4");
    for r in rows.iter().filter(|r| r.paper_computed_s.is_some()) {
        let name = format!("{})", r.label.replace('/', " ("));
        let paper_s = r.paper_computed_s.unwrap_or(f64::NAN);
        drift.cells(
            t.row(&[&name]),
            &[1, 2, 3, 4, 5, 6],
            &[
                format!("{:.2}", r.measured_s),
                format!("{paper_s:.2}"),
                format!("{:.2}", r.predicted_s),
                pct(r.error_vs_paper.unwrap_or(f64::NAN)),
                pct(r.error_vs_measured),
                pct(paper_s / r.measured_s - 1.0),
            ],
        );
    }
    let table4: Vec<_> = rows
        .iter()
        .filter(|r| r.paper_computed_s.is_some())
        .cloned()
        .collect();
    drift.text(&format!(
        "the uncalibrated model has a mean absolute error of {:.1}% on these five rows",
        100.0 * mean_absolute_error(&table4).expect("rows")
    ));
    drift.text(&format!(
        "(mean |error| over all nine runs\n{:.1}%)",
        100.0 * mean_absolute_error(&rows).expect("rows")
    ));

    let fitted = calibrate(&runs, &sys, &paper).expect("calibration");
    drift.text(&format!(
        "`η = {:.3}`, `h½ = {:.0}`, `γ = {:.3}`; in-sample mean |error| {:.1}%",
        fitted.gemm_efficiency,
        fitted.half_efficiency_hidden,
        fitted.attention_slowdown,
        100.0
            * mean_absolute_error(&accuracy_table(&runs, &sys, &fitted).expect("rows"))
                .expect("rows")
    ));
    let calibrated = ComputeModel::calibrated();
    drift.text(&format!(
        "(`ComputeModel::calibrated`: `η = {:.3}`, `h½ = {:.0}`, `γ = {:.3}`)",
        calibrated.gemm_efficiency,
        calibrated.half_efficiency_hidden,
        calibrated.attention_slowdown
    ));

    let loo = leave_one_out(&runs, &sys, &paper).expect("leave-one-out");
    let t = Table::after(
        "Leave-one-out (fit on eight runs, predict the ninth):",
        "| held-out run | measured (s) | predicted (s) | error |",
    );
    for r in &loo {
        drift.cells(
            t.row(&[&r.label]),
            &[1, 2, 3],
            &[
                format!("{:.2}", r.measured_s),
                format!("{:.2}", r.predicted_s),
                pct(r.error),
            ],
        );
    }
    let mae = loo.iter().map(|r| r.error.abs()).sum::<f64>() / loo.len() as f64;
    drift.text(&format!(
        "**Leave-one-out mean absolute error: {:.1}%**",
        100.0 * mae
    ));
    drift.finish();
}

#[test]
fn held_out_iteration_runs_match_the_code() {
    let sys = system_preset("dgx-a100").expect("preset");
    let paper = ComputeModel {
        recompute: Recompute::Full,
        ..ComputeModel::paper()
    };
    let held = held_out_runs().expect("held-out runs");
    let p = accuracy_table(&held, &sys, &paper).expect("rows");
    let c = accuracy_table(&held, &sys, &ComputeModel::calibrated()).expect("rows");
    let t = Table::after(
        "## Iteration model: in-sample and held-out accuracy",
        "| run | measured (s) | paper model, full recomputation (s) | error | calibrated, full recomputation (s) | error |",
    );
    let mut drift = Drift::new("Iteration model, held-out runs");
    for (a, b) in p.iter().zip(&c) {
        drift.cells(
            t.row_starting(&a.label),
            &[1, 2, 3, 4, 5],
            &[
                format!("{:.2}", a.measured_s),
                format!("{:.2}", a.predicted_s),
                pct(a.error_vs_measured),
                format!("{:.2}", b.predicted_s),
                pct(b.error_vs_measured),
            ],
        );
    }
    drift.text(&format!(
        "Held-out mean |error|: paper model {:.1}%, calibrated {:.1}%",
        100.0 * mean_absolute_error(&p).expect("rows"),
        100.0 * mean_absolute_error(&c).expect("rows")
    ));
    drift.finish();
}

fn traffic(
    gpus: u64,
    k: u64,
    par: Parallelization,
    algorithm: CollectiveAlgorithm,
) -> TrafficSummary {
    let model = model_preset("gpt-1t").expect("preset");
    let map = RankMapping::new(&model, &par, gpus, k).expect("mapping");
    job_traffic(&map, algorithm).summary().expect("summary")
}

fn of_kind(s: &TrafficSummary, kind: TrafficKind) -> &KindShare {
    s.by_kind
        .iter()
        .find(|k| k.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} traffic"))
}

fn share(s: &TrafficSummary, kind: TrafficKind) -> f64 {
    of_kind(s, kind).share
}

#[test]
fn gpt_1t_traffic_pattern_matches_the_code() {
    let mut drift = Drift::new("Traffic pattern of GPT-1T (rail-only §3)");
    let dgx = Parallelization::with_default_mapping(8, 64, 6, 1, 3072, 1, 8).expect("valid");
    let s = traffic(3072, 8, dgx, CollectiveAlgorithm::Ring);
    drift.text(&format!(
        "| {:.3}% idle (of N (N-1) ordered pairs) |",
        100.0 * s.idle_pair_fraction
    ));
    let tp_pairs = of_kind(&s, TrafficKind::TpAllGather).pairs;
    drift.text(&format!(
        "| {:.4}% |",
        100.0 * tp_pairs as f64 / s.ordered_pairs as f64
    ));
    let (ag, rs) = (
        share(&s, TrafficKind::TpAllGather),
        share(&s, TrafficKind::TpReduceScatter),
    );
    drift.text(&format!(
        "TP {:.1}% (AllGather {:.1}% + ReduceScatter {:.1}%), PP {:.1}%, DP {:.2}%",
        100.0 * (ag + rs),
        100.0 * ag,
        100.0 * rs,
        100.0 * share(&s, TrafficKind::PpSendRecv),
        100.0 * share(&s, TrafficKind::DpAllReduce)
    ));
    drift.value(
        "DGX cross-rail bytes (doc: 0)",
        "0",
        &format!("{:.0}", s.cross_rail_network_bytes),
    );

    let gh200 = Parallelization::with_default_mapping(8, 8, 64, 1, 4096, 1, 256).expect("valid");
    let s = traffic(4096, 256, gh200, CollectiveAlgorithm::Hierarchical);
    drift.text(&format!(
        "| > 99% pairs idle | {:.3}% |",
        100.0 * s.idle_pair_fraction
    ));
    let dp = of_kind(&s, TrafficKind::DpAllReduce);
    drift.text(&format!(
        "| {:.2}% (= (31/32)",
        100.0 * dp.hb_bytes / dp.bytes
    ));
    drift.text(&format!(
        "TP {:.1}%, DP {:.1}%, PP {:.2}%",
        100.0 * (share(&s, TrafficKind::TpAllGather) + share(&s, TrafficKind::TpReduceScatter)),
        100.0 * share(&s, TrafficKind::DpAllReduce),
        100.0 * share(&s, TrafficKind::PpSendRecv)
    ));
    drift.value(
        "GH200 hierarchical cross-rail bytes (doc: 0)",
        "0",
        &format!("{:.0}", s.cross_rail_network_bytes),
    );
    let flat = traffic(4096, 256, gh200, CollectiveAlgorithm::Ring);
    drift.text(&format!(
        "would send {:.1} TB across rails",
        flat.cross_rail_network_bytes / 1e12
    ));
    drift.finish();
}
