//! Aurora Q4 / Fig. 14 and planning against several windows
//! (`examples/examples/inference_robustness.rs`, sweeps in `moe_planner_examples::robustness`).
//! Minutes even in release, and the placement searches stop on wall clocks: release only.

use crate::tables::{Drift, Table};
use moe_planner_examples::robustness::{DRIFTS, aurora_rows, deepseek_window_rows};

fn signed(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x).replace('-', "−")
}

/// About 2 minutes in release: `scripts/check-docs --release`.
#[test]
#[ignore = "minutes in release (20 seeds x 4 noise levels x 3 plans); scripts/check-docs --release runs it"]
fn imprecise_statistics_table_matches_the_code() {
    let t = Table::after(
        "## Aurora Q4 / Fig. 14: imprecise statistics",
        "| scenario | noise | paper (Fig. 14) | ours: planned on layer 1 | change vs 0% | fresh plan | fresh faster by | 4 windows |",
    );
    let mut drift = Drift::new("Aurora Q4 / Fig. 14, speedup over the random baseline");
    for (block, two_models) in [(0, false), (1, true)] {
        let rows = aurora_rows(two_models).expect("planners");
        for (k, r) in rows.iter().enumerate() {
            let change = if k == 0 {
                "—".to_owned()
            } else {
                signed(r.stale / rows[0].stale - 1.0)
            };
            drift.cells(
                t.row_at(4 * block + k),
                &[3, 4, 5, 6, 7],
                &[
                    format!("{:.2}×", r.stale),
                    change,
                    format!("{:.2}×", r.fresh),
                    format!("{:.1}%", 100.0 * (r.fresh / r.stale - 1.0)),
                    format!("{:.2}×", r.windows),
                ],
            );
        }
    }
    drift.finish();
}

/// About a minute in release: `scripts/check-docs --release`.
#[test]
#[ignore = "58 layers x 25 windows x 4 plans; scripts/check-docs --release runs it"]
fn deepseek_windows_table_matches_the_code() {
    let t = Table::after(
        "**DeepSeek-like workload: plan on window t, evaluate on t+1..=t+3.**",
        "| drift, sigma | window t alone (`optimal`) | EPLB on window t | `place_robust` worst, windows t-2..=t | `place_robust` mean, windows t-2..=t |",
    );
    let mut drift = Drift::new("DeepSeek-like windows");
    let rows = deepseek_window_rows().expect("planners");
    for (r, ((walk, sigma), row)) in DRIFTS.iter().zip(&rows).enumerate() {
        let name = format!("{}, {sigma}", if *walk { "walk" } else { "stationary" });
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, (mean, worst))| {
                // Only the table's first cell spells out "worst".
                if r == 0 && i == 0 {
                    format!("{mean:.3} (worst {worst:.3})")
                } else {
                    format!("{mean:.3} ({worst:.3})")
                }
            })
            .collect();
        drift.cells(t.row(&[&name]), &[1, 2, 3, 4], &cells);
    }
    drift.finish();
}
