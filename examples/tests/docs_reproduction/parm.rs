//! Parm (Table IV): the modelled speedups over every Table III layer, Algorithm 1's choices and
//! the claim checks, as `examples/examples/parm_schedules.rs` prints them; and the speedups with
//! the expert compute term (`rail_network::moe::parm_compute`).

use crate::tables::{Drift, Table};
use moe_planner::comm_cost_model::parm::{ParmLayer, Testbed, check_claims, table3_layers};
use moe_planner::rail_network::moe::parm_compute::{
    RTX2080TI_FP32_FLOP_PER_S, RTX4090_FP32_FLOP_PER_S, parm_layer_with_compute,
};

fn layers(p: usize, n_mp: usize, n_esp: usize) -> Vec<ParmLayer> {
    table3_layers(p, 4.0)
        .into_iter()
        .filter(|l| l.n_mp == n_mp && l.n_esp == n_esp)
        .collect()
}

/// Mean over the layers of baseline time / Parm time (communication only).
fn comm_speedup(testbed: &Testbed, p: usize, n_mp: usize, n_esp: usize) -> f64 {
    let ls = layers(p, n_mp, n_esp);
    let sum: f64 = ls
        .iter()
        .map(|l| {
            let t = testbed.times(l).expect("Table III layers are valid");
            t.baseline.total_s / t.parm_s
        })
        .sum();
    sum / ls.len() as f64
}

/// Mean end-to-end speedup with the compute term at `peak` FLOP/s.
fn compute_speedup(testbed: &Testbed, peak: f64, p: usize, n_mp: usize, n_esp: usize) -> f64 {
    let ls = layers(p, n_mp, n_esp);
    let sum: f64 = ls
        .iter()
        .map(|l| {
            parm_layer_with_compute(testbed, l, peak)
                .expect("Table III layers are valid")
                .speedup
        })
        .sum();
    sum / ls.len() as f64
}

fn b_sizes(f: impl Fn(usize) -> f64) -> String {
    format!("{:.2}//{:.2}//{:.2}×", f(8), f(16), f(32))
}

#[test]
fn parm_table_iv_speedups_match_the_code() {
    let (a, b) = (Testbed::parm_testbed_a(), Testbed::parm_testbed_b());
    let t = Table::after(
        "## Parm (MoE training schedules)",
        "| N_MP | N_ESP | paper T-A | ours T-A | paper T-B 8//16//32 | ours T-B 8//16//32 |",
    );
    let mut drift = Drift::new("Parm, Table IV (communication only)");
    for (n_mp, n_esp) in [(2, 2), (2, 4), (4, 2), (4, 4)] {
        let row = t.row(&[&n_mp.to_string(), &n_esp.to_string()]);
        drift.cells(
            row,
            &[3, 5],
            &[
                format!("{:.2}×", comm_speedup(&a, 8, n_mp, n_esp)),
                b_sizes(|p| comm_speedup(&b, p, n_mp, n_esp)),
            ],
        );
    }
    drift.finish();
}

#[test]
fn parm_algorithm_1_choices_and_claims_match_the_code() {
    let mut drift = Drift::new("Parm, Algorithm 1's choices and the claims (prose)");
    let report = |tb: &Testbed, p: usize| {
        check_claims(tb, &table3_layers(p, 4.0)).expect("Table III layers are valid")
    };
    let (a, b) = (Testbed::parm_testbed_a(), Testbed::parm_testbed_b());
    let ra = report(&a, 8);
    let rb: Vec<_> = [8, 16, 32].iter().map(|&p| report(&b, p)).collect();
    drift.text(&format!(
        "testbed A {} / {}; testbed B\n8 GPUs {} / {}, 16 GPUs {} / {}, 32 GPUs {} / {}.",
        ra.s1_chosen,
        ra.s2_chosen,
        rb[0].s1_chosen,
        rb[0].s2_chosen,
        rb[1].s1_chosen,
        rb[1].s2_chosen,
        rb[2].s1_chosen,
        rb[2].s2_chosen
    ));
    drift.text(&format!(
        "fails on {} testbed-A layers",
        ra.s1_slower_than_baseline
    ));
    drift.text(&format!(
        "consistent model on {} (A), {}, {} and {} (B) layers",
        ra.printed_algorithm_disagrees,
        rb[0].printed_algorithm_disagrees,
        rb[1].printed_algorithm_disagrees,
        rb[2].printed_algorithm_disagrees
    ));
    let others: usize = std::iter::once(&ra)
        .chain(&rb)
        .map(|r| r.s2_slower_than_baseline + r.nmp1_slower_than_baseline)
        .sum();
    drift.value(
        "S2 or N_MP = 1 slower than the baseline (doc: hold everywhere)",
        "0",
        &others.to_string(),
    );
    drift.finish();
}

#[test]
fn parm_with_its_compute_term_matches_the_code() {
    let (a, b) = (Testbed::parm_testbed_a(), Testbed::parm_testbed_b());
    let t = Table::after(
        "**Parm with its compute term (issue item 6).**",
        "| N_MP | N_ESP | paper T-A | ours T-A comm only / +compute at 100% / 50% | paper T-B 8//16//32 | ours T-B +compute at 100% | at 50% |",
    );
    let mut drift = Drift::new("Parm with its compute term");
    for (n_mp, n_esp) in [(2, 2), (2, 4), (4, 2), (4, 4)] {
        let row = t.row(&[&n_mp.to_string(), &n_esp.to_string()]);
        let at = |eff: f64| compute_speedup(&a, RTX4090_FP32_FLOP_PER_S * eff, 8, n_mp, n_esp);
        let b_at = |eff: f64| {
            b_sizes(|p| compute_speedup(&b, RTX2080TI_FP32_FLOP_PER_S * eff, p, n_mp, n_esp))
        };
        drift.cells(
            row,
            &[3, 5, 6],
            &[
                format!(
                    "{:.2} / {:.2} / {:.2}×",
                    comm_speedup(&a, 8, n_mp, n_esp),
                    at(1.0),
                    at(0.5)
                ),
                b_at(1.0),
                b_at(0.5),
            ],
        );
    }
    // The range over every Table III layer with N_MP N_ESP > 1, at 100% and 50% of the peak.
    let range = |tb: &Testbed, peak: f64, sizes: &[usize]| {
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for &p in sizes {
            for l in table3_layers(p, 4.0)
                .iter()
                .filter(|l| l.n_mp * l.n_esp > 1)
            {
                let s = parm_layer_with_compute(tb, l, peak)
                    .expect("Table III layers are valid")
                    .speedup;
                lo = lo.min(s);
                hi = hi.max(s);
            }
        }
        format!("{lo:.2}–{hi:.2}×")
    };
    let (ra, rb) = (RTX4090_FP32_FLOP_PER_S, RTX2080TI_FP32_FLOP_PER_S);
    drift.text(&format!(
        "**{}** on testbed A and **{}** on testbed B at 100% ({} and {} at 50%)",
        range(&a, ra, &[8]),
        range(&b, rb, &[8, 16, 32]),
        range(&a, 0.5 * ra, &[8]),
        range(&b, 0.5 * rb, &[8, 16, 32])
    ));
    drift.finish();
}
