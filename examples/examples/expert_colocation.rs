//! Expert colocation (Aurora §6–§8): two 8-expert models with Zipf popularity.
//!
//! Part 1 prints the aggregated communication bound (largest per-GPU send or receive of the
//! first all-to-all) for Aurora's optimal pairing, Lina (each model alone, hot expert with cold
//! expert on one GPU) and random colocation (REC). Part 2 measures the colocating +
//! heterogeneous gap to the exact optimum of Aurora's decoupled method and of this crate's local
//! search on 1000 random instances with 4 to 8 GPUs. Part 3 compares Theorem 5.1, the exact GPU
//! assignment and the colocated placements with the random baselines RGA and RGA + REC. Run with
//! `cargo run --release -p moe-planner-examples --example expert_colocation`.

use std::time::Instant;

use colocation_matching::{
    LocalSearchOptions, colocate_decoupled, colocate_local_search, colocate_lower_bound_s,
};
use comm_cost_model::seeded_rng;
use moe_planner_examples::colocation::{
    Error, gap_study, hetero_instance, pairing_bounds, random_baselines, summarize,
};

fn part_one() -> Result<(), Error> {
    let p = pairing_bounds()?;
    println!("Part 1: two 8-expert Zipf models (s = 1.0 and 1.2), 512 MB per all-to-all each");
    println!(
        "  Aurora pairing (bottleneck matching): {:>8.2} MB  pairs {:?}",
        p.aurora / 1e6,
        p.pairs
    );
    println!(
        "  Lina (same-model hot+cold, 4 GPUs each): {:>5.2} MB  ({:.2}x Aurora)",
        p.lina / 1e6,
        p.lina / p.aurora
    );
    let (mean, best, worst) = p.rec;
    println!(
        "  REC (1000 seeds): mean {:.2} MB ({:.2}x), best {:.2} MB, worst {:.2} MB",
        mean / 1e6,
        mean / p.aurora,
        best / 1e6,
        worst / 1e6
    );
    Ok(())
}

fn summary(name: &str, ratios: &mut [f64]) {
    let [mean, p50, p90, p99, max, optimal] = summarize(ratios);
    println!(
        "  {name:<22} mean {mean:.4}  p50 {p50:.4}  p90 {p90:.4}  p99 {p99:.4}  max {max:.4}  optimal {:.1}%",
        100.0 * optimal
    );
}

fn part_two() -> Result<(), Error> {
    let mut rng = seeded_rng(7, 0);
    let mut ours_n8_us = Vec::new();
    let (mut paper, mut ours) = gap_study(&mut rng, |n, inst, options| {
        let start = Instant::now();
        let value = colocate_local_search(inst, options)?.bottleneck_s;
        if n == 8 {
            ours_n8_us.push(start.elapsed().as_secs_f64() * 1e6);
        }
        Ok(value)
    })?;
    println!(
        "Part 2: colocating + heterogeneous, {} instances (n = 4..8, 200 each), ratio to exact",
        paper.len()
    );
    summary("Aurora decoupled (§7.2)", &mut paper);
    summary("local search (ours)", &mut ours);
    ours_n8_us.sort_by(f64::total_cmp);
    let at = |q: f64| ours_n8_us[((ours_n8_us.len() - 1) as f64 * q).round() as usize];
    println!(
        "  local search time at n = 8: median {:.0} µs, p90 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    let options = LocalSearchOptions::default();
    let big = hetero_instance(256, &mut rng)?;
    let start = Instant::now();
    let p = colocate_decoupled(&big)?.bottleneck_s;
    let paper_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    let o = colocate_local_search(&big, &options)?.bottleneck_s;
    let lower = colocate_lower_bound_s(&big)?;
    println!(
        "  n = 256: decoupled {:.3} ms in {paper_ms:.1} ms; local search {:.3} ms in {:.1} ms ({:.4}x of decoupled); lower bound {:.3} ms",
        p * 1e3,
        o * 1e3,
        start.elapsed().as_secs_f64() * 1e3,
        o / p,
        lower * 1e3
    );
    Ok(())
}

/// Slowest GPU when expert `e` runs on GPU `gpu_of[e]`.
fn part_three() -> Result<(), Error> {
    let r = random_baselines()?;
    println!("Part 3: one 8-GPU heterogeneous instance (seed 11)");
    println!(
        "  exclusive: Theorem 5.1 {:.3} ms, exact {:.3} ms, RGA mean of 1000 seeds {:.3} ms ({:.2}x slower)",
        r.theorem_5_1 * 1e3,
        r.exclusive_exact * 1e3,
        r.rga_mean * 1e3,
        r.rga_mean / r.exclusive_exact
    );
    println!(
        "  colocated: decoupled {:.3} ms, local search {:.3} ms, exact {:.3} ms, RGA + REC mean {:.3} ms ({:.2}x slower than exact)",
        r.decoupled * 1e3,
        r.local_search * 1e3,
        r.colocated_exact * 1e3,
        r.random_mean * 1e3,
        r.random_mean / r.colocated_exact
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    part_one()?;
    println!();
    part_two()?;
    println!();
    part_three()
}
