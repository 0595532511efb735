//! End-to-end MoE inference planning in Aurora's four scenarios (Li et al., §8.2 Q1–Q2).
//!
//! For each scenario (one or two models; identical or mixed GPUs) this runs
//! `moe_planner::inference::plan_inference` on seeded Zipf workloads and prints the planned
//! inference time, the baseline's (random GPU assignment / random colocation with
//! shortest-job-first send order), the speedup and the GPU utilization, averaged over seeds.
//!
//! Run: `cargo run --release -p moe-planner-examples --example moe_inference_plan`

use moe_planner_examples::inference::{GPUS, LAYERS, SCENARIOS, SEEDS, run};

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "{GPUS} GPUs, {LAYERS} MoE layers, Zipf 1.0 (model a) and 1.2 (model b), {SEEDS} seeds"
    );
    println!(
        "{:<28} {:>16} {:>16} {:>12} {:>9}",
        "scenario", "speedup mean", "speedup range", "GPU util", "at bound"
    );
    let mut util = [0.0; 2];
    for (models, hetero, name) in SCENARIOS {
        let s = run(models, hetero)?;
        let (lo, hi) = range(&s.speedup);
        println!(
            "{name:<28} {:>15.2}x {:>7.2}-{:<7.2} {:>11.1}% {:>9}",
            mean(&s.speedup),
            lo,
            hi,
            mean(&s.utilization) * 100.0,
            if s.at_bound { "yes" } else { "no" }
        );
        if !hetero {
            util[models - 1] = mean(&s.utilization);
        }
    }
    println!(
        "colocation raises GPU utilization {:.2}x on identical GPUs (Aurora Fig. 12a: 1.57-1.72x)",
        util[1] / util[0]
    );
    Ok(())
}
