//! Parm's schedules over every Table III configuration on both testbeds (Parm §VI, Table IV).
//!
//! For each testbed and cluster size: how often Algorithm 1 picks S1 vs S2, whether the paper's
//! claims hold in the model, and the mean modelled speedup over the baseline schedule by
//! (`N_MP`, `N_ESP`), like Table IV. Communication only: the model has no computation term.
//!
//! Run: `cargo run --release -p moe-planner-examples --example parm_schedules`

use comm_cost_model::InputError;
use comm_cost_model::parm::{ParmTimes, Testbed, check_claims, table3_layers};

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn speedup_table(testbed: &Testbed, p: usize) -> Result<(), InputError> {
    println!("  N_MP N_ESP  S1 speedup  S2 speedup  Parm speedup  S1 wins  S2 wins");
    for n_mp in [1, 2, 4] {
        for n_esp in [1, 2, 4] {
            let layers: Vec<_> = table3_layers(p, 4.0)
                .into_iter()
                .filter(|l| l.n_mp == n_mp && l.n_esp == n_esp)
                .collect();
            let times = layers
                .iter()
                .map(|l| testbed.times(l))
                .collect::<Result<Vec<ParmTimes>, _>>()?;
            let ratio = |f: &dyn Fn(&ParmTimes) -> f64| {
                mean(
                    &times
                        .iter()
                        .map(|t| t.baseline.total_s / f(t))
                        .collect::<Vec<_>>(),
                )
            };
            let s1_wins = times
                .iter()
                .filter(|t| t.s1.total_s <= t.s2.total_s)
                .count();
            println!(
                "  {n_mp:>4} {n_esp:>5}  {:>9.2}x  {:>9.2}x  {:>11.2}x  {s1_wins:>7}  {:>7}",
                ratio(&|t| t.s1.total_s),
                ratio(&|t| t.s2.total_s),
                ratio(&|t| t.parm_s),
                times.len() - s1_wins
            );
        }
    }
    Ok(())
}

fn main() -> Result<(), InputError> {
    let runs = [
        (Testbed::parm_testbed_a(), vec![8]),
        (Testbed::parm_testbed_b(), vec![8, 16, 32]),
    ];
    for (testbed, sizes) in runs {
        for p in sizes {
            let report = check_claims(&testbed, &table3_layers(p, 4.0))?;
            println!(
                "Testbed {} with P = {p}: {} layers",
                testbed.name, report.layers
            );
            println!(
                "  Algorithm 1 picks S1 {} times, S2 {} times; the printed algorithm disagrees {} times",
                report.s1_chosen, report.s2_chosen, report.printed_algorithm_disagrees
            );
            println!(
                "  claim failures: S2 > baseline {}, N_MP = 1 S1/S2 > baseline {}, S1 > baseline {}",
                report.s2_slower_than_baseline,
                report.nmp1_slower_than_baseline,
                report.s1_slower_than_baseline
            );
            for c in &report.counterexamples {
                let l = &c.layer;
                println!(
                    "  counterexample ({}): N_MP={} N_ESP={} B={} L={} M={} k={} f={}: baseline {:.3} ms, S1 {:.3} ms, S2 {:.3} ms",
                    c.claim,
                    l.n_mp,
                    l.n_esp,
                    l.b,
                    l.l,
                    l.m,
                    l.k,
                    l.f,
                    c.times.baseline.total_s * 1e3,
                    c.times.s1.total_s * 1e3,
                    c.times.s2.total_s * 1e3
                );
            }
            speedup_table(&testbed, p)?;
        }
    }
    Ok(())
}
