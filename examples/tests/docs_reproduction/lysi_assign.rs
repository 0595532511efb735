//! LysiAssign's quality against brute force and against the lower bound
//! (`examples/examples/lysi_assign_quality.rs`, instances from `moe_planner_examples::lysi_assign`).

use crate::tables::{Drift, Table};
use colocation_matching::{LysiAlgorithm, lysi_assign_with};
use moe_planner_examples::lysi_assign::{LARGE, SMALL, brute_force, instance};

/// Mean, worst and the count at 1 of `ratios`.
fn summary(ratios: &[f64]) -> (f64, f64, usize) {
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let worst = ratios.iter().copied().fold(0.0, f64::max);
    let optimal = ratios.iter().filter(|&&r| r <= 1.0 + 1e-9).count();
    (mean, worst, optimal)
}

#[test]
fn lysi_assign_quality_matches_the_code() {
    let t = Table::after(
        "### LysiAssign (colocation-matching)",
        "| method | mean / optimum | worst | optimal in |",
    );
    let mut drift = Drift::new("LysiAssign against brute force");
    for (name, algorithm) in [
        (
            "`lysi_assign` (Algorithm 2 as written)",
            LysiAlgorithm::Paper,
        ),
        ("`lysi_assign_refined` (ours)", LysiAlgorithm::Refined),
    ] {
        let ratios: Vec<f64> = (0..300)
            .map(|seed| {
                let inst = instance(&SMALL, seed);
                let a = lysi_assign_with(&inst.costs, &inst.workers, algorithm).expect("feasible");
                a.makespan_s / brute_force(&inst)
            })
            .collect();
        let (mean, worst, optimal) = summary(&ratios);
        drift.cells(
            t.row(&[name]),
            &[1, 2, 3],
            &[
                format!("{mean:.3}×"),
                format!("{worst:.3}×"),
                format!("{optimal} / 300"),
            ],
        );
    }
    let large = |algorithm| {
        let ratios: Vec<f64> = (0..300)
            .map(|seed| {
                let inst = instance(&LARGE, seed);
                let a = lysi_assign_with(&inst.costs, &inst.workers, algorithm).expect("feasible");
                a.makespan_s / a.lower_bound_s
            })
            .collect();
        summary(&ratios)
    };
    let (paper, refined) = (large(LysiAlgorithm::Paper), large(LysiAlgorithm::Refined));
    drift.text(&format!(
        "Algorithm 2 {:.3}× on average (worst {:.2}×), refined {:.3}× (worst {:.2}×)",
        paper.0, paper.1, refined.0, refined.1
    ));
    drift.finish();
}
