//! Aurora's colocation and heterogeneous assignment (`examples/examples/expert_colocation.rs`,
//! instances from `moe_planner_examples::colocation`): the aggregated communication bound, the
//! random baselines of one instance, and (ignored in debug) the gap to the exact optimum.

use crate::tables::{Drift, Table};
use colocation_matching::{colocate_decoupled, colocate_lower_bound_s};
use comm_cost_model::seeded_rng;
use moe_planner_examples::colocation::{
    gap_study, hetero_instance, local_search_s, pairing_bounds, random_baselines, summarize,
};

#[test]
fn aggregated_communication_bound_matches_the_code() {
    let p = pairing_bounds().expect("planners");
    let t = Table::after(
        "**Aggregated communication bound, Colocating + Homogeneous",
        "| method | bound | vs Aurora |",
    );
    let mut drift = Drift::new("Aurora, aggregated communication bound");
    let mb = |b: f64| format!("{:.2} MB", b / 1e6);
    let vs = |b: f64| format!("{:.2}×", b / p.aurora);
    drift.cells(
        t.row_starting("Aurora pairing"),
        &[1, 2],
        &[mb(p.aurora), vs(p.aurora)],
    );
    let (mean, best, worst) = p.rec;
    drift.cells(
        t.row_starting("REC"),
        &[0, 1, 2],
        &[
            format!(
                "REC, mean over 1000 seeds (best / worst {:.2} / {:.2} MB)",
                best / 1e6,
                worst / 1e6
            ),
            mb(mean),
            vs(mean),
        ],
    );
    drift.cells(t.row_starting("Lina"), &[1, 2], &[mb(p.lina), vs(p.lina)]);
    drift.finish();
}

#[test]
fn random_baselines_of_one_instance_match_the_code() {
    let r = random_baselines().expect("planners");
    let t = Table::after(
        "**Against the random baselines (Fig. 11b, 11d, 14).**",
        "| scenario | Aurora | exact | ours | random baseline (mean of 1000 seeds) | random / exact | paper |",
    );
    let ms = |s: f64| format!("{:.3} ms", s * 1e3);
    let mut drift = Drift::new("Aurora, against the random baselines (seed 11)");
    drift.cells(
        t.row(&["Exclusive + Heterogeneous"]),
        &[1, 2, 4, 5],
        &[
            format!("Thm 5.1: {}", ms(r.theorem_5_1)),
            ms(r.exclusive_exact),
            format!("RGA {}", ms(r.rga_mean)),
            format!("{:.2}×", r.rga_mean / r.exclusive_exact),
        ],
    );
    drift.cells(
        t.row(&["Colocating + Heterogeneous"]),
        &[1, 2, 3, 4, 5],
        &[
            format!("decoupled: {}", ms(r.decoupled)),
            ms(r.colocated_exact),
            format!("local search {}", ms(r.local_search)),
            format!("RGA + REC {}", ms(r.random_mean)),
            format!("{:.2}×", r.random_mean / r.colocated_exact),
        ],
    );
    drift.text(&format!(
        "Theorem 5.1 is {:.0} % off the exact assignment",
        100.0 * (r.theorem_5_1 / r.exclusive_exact - 1.0)
    ));
    drift.finish();
}

/// 1000 exact colocations take minutes in a debug build: run with
/// `cargo test --release -p moe-planner-examples --test docs_reproduction -- --ignored`.
#[test]
#[ignore = "heavy in debug (1000 exact colocations); scripts/check-docs --release runs it"]
fn gap_to_the_optimum_matches_the_code() {
    let mut rng = seeded_rng(7, 0);
    let (mut paper, mut ours) = gap_study(&mut rng, local_search_s).expect("planners");
    let t = Table::after(
        "**Colocating + Heterogeneous: gap to the optimum**",
        "| method | mean | p50 | p90 | p99 | max | instances optimal |",
    );
    let mut drift = Drift::new("Aurora, colocating + heterogeneous: gap to the optimum");
    for (name, ratios) in [
        ("Aurora decoupled two-stage", &mut paper),
        ("local search (ours", &mut ours),
    ] {
        let s = summarize(ratios);
        let mut cells: Vec<String> = s[..5].iter().map(|v| format!("{v:.4}")).collect();
        cells.push(format!("{:.1} %", 100.0 * s[5]));
        drift.cells(t.row_starting(name), &[1, 2, 3, 4, 5, 6], &cells);
    }
    let big = hetero_instance(256, &mut rng).expect("instance");
    let lower = colocate_lower_bound_s(&big).expect("bound");
    drift.text(&format!("`colocate_lower_bound_s` ({:.3} ms", lower * 1e3));
    drift.value(
        "decoupled at n = 256 reaches the bound (doc: both are provably optimal there)",
        "true",
        &(colocate_decoupled(&big).expect("plan").bottleneck_s <= lower * (1.0 + 1e-12))
            .to_string(),
    );
    drift.finish();
}
