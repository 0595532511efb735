//! Aristos: LysiGroup on Perlmutter under the base and upper readings, the sensitivity table and
//! the grouping-aware AllReduce (`examples/examples/aristos_grouping.rs`, whose set-up lives in
//! `moe_planner_examples::aristos`), and the random heterogeneous clusters (ignored in debug).

use crate::tables::{Drift, Table};
use moe_planner_examples::aristos::{
    A100_PEAK, BASE, BYTES_PER_VALUE, GLOBAL_BATCH, HIDDEN, LAYERS, MICRO_BATCH, MOE_EVERY,
    Reading, non_expert_params, random_cluster_study, routed_tokens, single_node_over_best_uniform,
};
use topology_partition::{
    Partition, TrainingConstants, lysi_group, one_group_per_node, smallest_fitting_groups,
    whole_world,
};

const HEADER: &str =
    "| experts | LysiGroup groups | LysiGroup | single node | whole world | min \\|CG\\| |";

/// `4 x 4`: the number of groups and their size (all groups are equal here); `nodes` marks
/// one group per node as the Perlmutter tables do.
fn groups(p: &Partition, nodes: bool) -> String {
    let size = p.groups.first().map_or(0, Vec::len);
    let base = format!("{} x {size}", p.groups.len());
    match (size, nodes) {
        (1, true) => format!("{base} GPU"),
        (4, true) => format!("{base} (= nodes)"),
        _ => base,
    }
}

fn perlmutter_table(anchor: &str, reading: &Reading, name: &str) {
    let t = Table::after(anchor, HEADER);
    let cluster = reading.cluster().expect("cluster");
    let mut drift = Drift::new(name);
    for experts in [16, 64, 128] {
        let obj = reading.objective(experts);
        let lysi = lysi_group(&cluster, &obj).expect("LysiGroup");
        let l = lysi.max_objective_s();
        let cell = |p: &Partition| {
            let v = p.max_objective_s();
            format!("{v:.4} ({:.3}x)", v / l)
        };
        drift.cells(
            t.row(&[&experts.to_string()]),
            &[1, 2, 3, 4, 5],
            &[
                groups(&lysi, true),
                format!("{l:.4}"),
                cell(&one_group_per_node(&cluster, &obj).expect("baseline")),
                cell(&whole_world(&cluster, &obj).expect("baseline")),
                cell(&smallest_fitting_groups(&cluster, &obj).expect("baseline")),
            ],
        );
    }
    drift.finish();
}

#[test]
fn lysigroup_on_perlmutter_base_reading_matches_the_code() {
    perlmutter_table(
        "Max T(g) per iteration (s) and baseline / LysiGroup, **base reading**",
        &BASE,
        "Aristos, LysiGroup on Perlmutter, base reading",
    );
}

#[test]
fn lysigroup_on_perlmutter_upper_reading_matches_the_code() {
    perlmutter_table(
        "**Upper reading** (`S = 16`, `H = 4`):",
        &Reading {
            fx_sources: 16.0,
            ar_holders: Some(4.0),
            ..BASE
        },
        "Aristos, LysiGroup on Perlmutter, upper reading",
    );
}

#[test]
fn lysigroup_sensitivity_matches_the_code() {
    let t = Table::after(
        "Sensitivity at 128 experts",
        "| reading | single node / LysiGroup | single node / whole world | LysiGroup |",
    );
    let s16 = |r: Reading| Reading {
        fx_sources: 16.0,
        ..r
    };
    let f40 = Reading {
        flop_per_s: 0.4 * A100_PEAK,
        ..BASE
    };
    let beta = Reading {
        inter_beta_ms_per_mb: 0.04,
        ..BASE
    };
    let h4 = Reading {
        ar_holders: Some(4.0),
        ..BASE
    };
    let r0 = Reading {
        recompute: 0.0,
        ..BASE
    };
    let rows: [(&str, Vec<Reading>); 14] = [
        ("base (`r = 1`, `S = 1`, `H = 16`)", vec![BASE]),
        ("`S = 16`", vec![s16(BASE)]),
        ("`H = 4`", vec![h4]),
        ("`S = 16`, `H = 4` (upper)", vec![s16(h4)]),
        (
            "`d_ar` = non-expert gradients",
            vec![Reading {
                ar_holders: None,
                ..BASE
            }],
        ),
        ("`r = 0`", vec![r0]),
        ("`r = 0`, `S = 16`", vec![s16(r0)]),
        ("`F` = 40% of peak", vec![f40]),
        ("`F` = 40%, `S = 16`", vec![s16(f40)]),
        ("inter beta 0.04 ms/MB (25 GB/s)", vec![beta]),
        ("25 GB/s, `S = 16`", vec![s16(beta)]),
        (
            "`S = 16`, `H = 4`, `F` 40%",
            vec![Reading {
                flop_per_s: 0.4 * A100_PEAK,
                ..s16(h4)
            }],
        ),
        (
            "`S` = 2, 4, 8",
            [2.0, 4.0, 8.0]
                .map(|x| Reading {
                    fx_sources: x,
                    ..BASE
                })
                .to_vec(),
        ),
        (
            "`S` = 32, 64",
            [32.0, 64.0]
                .map(|x| Reading {
                    fx_sources: x,
                    ..BASE
                })
                .to_vec(),
        ),
    ];
    let mut drift = Drift::new("Aristos, sensitivity at 128 experts");
    for (name, readings) in rows {
        let results: Vec<_> = readings
            .iter()
            .map(|r| r.ratio(128).expect("planners"))
            .collect();
        let join = |f: &dyn Fn(f64, f64) -> f64| {
            results
                .iter()
                .map(|(_, lysi, world)| format!("{:.3}x", f(*lysi, *world)))
                .collect::<Vec<_>>()
        };
        let lysi = join(&|l, _| l);
        let world = join(&|_, w| w);
        // A row of several readings prints one value when they agree.
        let collapse = |v: Vec<String>| {
            if v.iter().all(|x| x == &v[0]) {
                v[0].clone()
            } else {
                v.join(", ")
            }
        };
        let (lysi, world) = (collapse(lysi), collapse(world));
        let world = if world == lysi && results.len() > 1 {
            "same".to_owned()
        } else {
            world
        };
        let sizes = collapse(
            results
                .iter()
                .map(|(s, _, _)| format!("{} x {}", s.len(), s.first().copied().unwrap_or(0)))
                .collect(),
        );
        drift.cells(t.row(&[name]), &[1, 2, 3], &[lysi, world, sizes]);
    }
    drift.finish();
}

#[test]
fn derived_constants_match_the_code() {
    let mut drift = Drift::new("Aristos, derived constants (prose)");
    let gamma = TrainingConstants {
        recompute: BASE.recompute,
        layers: LAYERS,
        global_batch: GLOBAL_BATCH,
        moe_every: MOE_EVERY,
        micro_batch: MICRO_BATCH,
    }
    .gamma(16)
    .expect("valid constants");
    drift.text(&format!("`gamma = 3 · 24 · 256 / (2 · 16 · 4) = {gamma}`"));
    drift.text(&format!(
        "| `d` | {:.2} MB |",
        routed_tokens() * HIDDEN * BYTES_PER_VALUE / 1e6
    ));
    drift.text(&format!(
        "({:.0} MB of FP16 gradients",
        non_expert_params() * BYTES_PER_VALUE / 1e6
    ));
    drift.finish();
}

#[test]
fn grouping_aware_all_reduce_matches_the_code() {
    let mut drift = Drift::new("Aristos, outside Eq. 4 (prose)");
    let ratios = |fx: f64| {
        [16, 64, 128]
            .map(|e| {
                format!(
                    "{:.2}x",
                    single_node_over_best_uniform(fx, e).expect("planners")
                )
            })
            .join(" / ")
    };
    drift.text(&format!(
        "the best uniform grouping beats single-node groups by {} at 16 / 64 / 128 experts with `S = 1`, and by {} with `S = 16`",
        ratios(1.0),
        ratios(16.0)
    ));
    drift.finish();
}

/// The 400 seeded random clusters take about 25 s in a debug build: run with
/// `cargo test --release -p moe-planner-examples --test docs_reproduction -- --ignored`.
#[test]
#[ignore = "heavy in debug (exhaustive partitions); scripts/check-docs --release runs it"]
fn random_heterogeneous_clusters_match_the_code() {
    let s = random_cluster_study(400).expect("planners");
    let t = Table::after("**Random heterogeneous clusters**", "| | result |");
    let n = s.instances;
    let pct = |k: usize, of: usize| format!("{k} / {of} ({:.1}%)", 100.0 * k as f64 / of as f64);
    let mut drift = Drift::new("Aristos, random heterogeneous clusters");
    drift.cells(
        t.row(&["LysiGroup best or tied"]),
        &[1],
        &[pct(s.lysi_best_or_tied, n)],
    );
    drift.cells(
        t.row(&["LysiGroup strictly best"]),
        &[1],
        &[pct(s.lysi_strictly_best, n)],
    );
    drift.cells(
        t.row(&["best baseline / LysiGroup"]),
        &[1],
        &[format!(
            "geometric mean {:.3}, worst {:.3} (seed {}: a baseline is {:.2}x better)",
            (s.log_ratio_sum / n as f64).exp(),
            s.worst_ratio,
            s.worst_seed,
            1.0 / s.worst_ratio
        )],
    );
    drift.cells(
        t.row_starting("vs exhaustive optimum"),
        &[1],
        &[format!(
            "optimal in {} ({:.1}%), mean LysiGroup / optimum {:.3}, worst {:.3}",
            s.small_optimal,
            100.0 * s.small_optimal as f64 / s.small as f64,
            s.small_gap_sum / s.small as f64,
            s.small_worst_gap
        )],
    );
    drift.text(&format!("{n}\nfeasible instances"));
    drift.value(
        "instances small enough for the exhaustive optimum",
        t.row_starting("vs exhaustive optimum")[0]
            .trim_start_matches("vs exhaustive optimum (n <= 10, ")
            .trim_end_matches(" instances)"),
        &s.small.to_string(),
    );
    drift.finish();
}
