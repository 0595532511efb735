//! Measured hardware (`examples/examples/measured_hardware.rs`): the bus bandwidths of the
//! bandwidth-bound segments, the held-out errors of the NCCL fits and the DeepEP table.
//! (`crates/moe-planner/tests/measured_hardware.rs` asserts bounds on the same figures; this
//! compares them with the doc.)

use crate::tables::{Drift, Table};
use moe_planner::comm_cost_model::deepep::DeepEpMode;
use moe_planner::comm_cost_model::gpu_scaling::Collective;
use moe_planner::comm_cost_model::piecewise::Regime;
use moe_planner::fitting::{CollectiveFitSpec, plan_collective_fits};
use moe_planner::measured::{
    link_fit, parse_collective_csv, parse_deepep_csv, plan_deepep_validation, plan_nccl_validation,
};

const H100: &str = include_str!("../../data/measured/nccl_h100_sxm.csv");
const A100: &str = include_str!("../../data/measured/nccl_a100_sxm.csv");
const DEEPEP: &str = include_str!("../../data/measured/deepep_h100_sxm.csv");

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

const COLLECTIVES: [(Collective, &str); 4] = [
    (Collective::AllGather, "AllGather"),
    (Collective::ReduceScatter, "ReduceScatter"),
    (Collective::AllReduce, "AllReduce"),
    (Collective::AllToAll, "AlltoAll"),
];

#[test]
fn nccl_bus_bandwidths_and_held_out_errors_match_the_code() {
    let t = Table::after(
        "### Held out: sizes and GPU counts",
        "| GPU | collective | every other size: median / worst | 2, 4 GPUs → 8: median / worst |",
    );
    let mut drift = Drift::new("Measured hardware: NCCL fits");
    for (gpu, text) in [("H100", H100), ("A100", A100)] {
        let measurements = parse_collective_csv(text).expect("the table parses");
        let plan = plan_collective_fits(&CollectiveFitSpec {
            measurements: measurements.clone(),
            options: None,
        })
        .expect("fits");
        for (collective, name) in COLLECTIVES {
            let bus: Vec<String> = [2, 4, 8]
                .iter()
                .map(|&g| {
                    let fit = plan
                        .fits
                        .iter()
                        .find(|f| f.collective == collective && f.gpus == g)
                        .expect("a fit per collective and GPU count");
                    let s = fit
                        .segments
                        .iter()
                        .rev()
                        .find(|s| s.regime == Regime::BandwidthBound)
                        .expect("a bandwidth-bound segment");
                    format!(
                        "{:.0}",
                        s.bus_bandwidth_bytes_per_s.unwrap_or(f64::NAN) / 1e9
                    )
                })
                .collect();
            drift.text(&format!("{name} {}", bus.join(" / ")));
        }
        let rows = plan_nccl_validation(&measurements).expect("validation");
        for (collective, name) in COLLECTIVES {
            let cell = |split: &str| {
                let r = rows
                    .iter()
                    .find(|r| r.collective == collective && r.split == split)
                    .expect("both splits");
                format!("{} / {}", pct(r.held_out.median), pct(r.held_out.worst))
            };
            drift.cells(
                t.row(&[gpu, name]),
                &[2, 3],
                &[cell("every-other-size"), cell("smaller-gpu-counts")],
            );
        }
    }
    drift.finish();
}

#[test]
fn deepep_validation_matches_the_code() {
    let t = Table::after(
        "### DeepEP dispatch and combine",
        "| kernels | phase | link only: median / worst | overhead + link: median / worst | own fit, held-out shapes: median / worst | own fit: overhead (µs), bandwidth (GB/s) per segment |",
    );
    let h100 = parse_collective_csv(H100).expect("the table parses");
    let link = link_fit(&h100, Collective::AllToAll, 8).expect("link fit");
    let rows = plan_deepep_validation(&parse_deepep_csv(DEEPEP).expect("parses"), &link)
        .expect("validation");
    let mut drift = Drift::new("Measured hardware: DeepEP");
    for r in &rows {
        let kernels = if r.mode == DeepEpMode::LowLatency {
            "low latency"
        } else {
            "normal"
        };
        let segments: Vec<String> = r
            .fit
            .segments
            .iter()
            .map(|s| format!("{:.1}, {:.0}", s.alpha_s * 1e6, 1e-9 / s.beta_s_per_byte))
            .collect();
        drift.cells(
            t.row(&[kernels, &r.phase]),
            &[2, 3, 4, 5],
            &[
                format!("{} / {}", pct(r.link_only.median), pct(r.link_only.worst)),
                format!(
                    "{} / {} ({:.1} µs)",
                    pct(r.overhead_plus_link.median),
                    pct(r.overhead_plus_link.worst),
                    r.overhead_s * 1e6
                ),
                format!("{} / {}", pct(r.held_out.median), pct(r.held_out.worst)),
                segments.join("; "),
            ],
        );
    }
    drift.finish();
}
