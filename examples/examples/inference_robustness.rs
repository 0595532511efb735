//! Robustness of a deployment planned on stale statistics (Aurora, Li et al., §8.2 Q4, Fig. 14),
//! and what planning against several windows at once recovers.
//!
//! **Aurora's sweep.** 8 GPUs of §8.1's four types (100, 80, 50, 40 Gbps, two of each; compute
//! scaled alike: 312, 250, 156, 125 TFLOP/s), one model (Zipf 1.0) or two colocated (Zipf 1.0
//! and 1.2), four MoE layers each with their own hot experts
//! (`alltoall_sched::workload::zipf_traffic`). The deployment is planned on layer 1 and
//! evaluated on `workload::blend_traffic` of layer 1 with layers 2..=k+1 at k x 25% noise; the
//! send order is planned per batch (it takes microseconds), the placement stays. The baseline
//! is the facade's RGA (+ REC) with shortest-job-first order on the same noisy traffic. The
//! multi-window rows plan against all four layers as windows: `place_robust` (worst window) for
//! one model, the summed statistics of `plan_inference` for two (no multi-window colocation
//! optimizer exists). Means over 20 seeds.
//!
//! **DeepSeek-like windows.** The 58-layer DeepSeek-like loads (256 experts, 32 GPUs in 4 nodes
//! of 9 slots) drift from window to window (`expert_placement::drift_loads`, a lognormal
//! random walk). A placement planned at window t is evaluated on windows t+1..=t+k by its
//! maximum GPU load over each window's lower bound: planned on window t alone (`place`,
//! optimal), with EPLB on window t, and against windows t-k+1..=t (`place_robust`, worst and
//! mean).
//!
//! Run: `cargo run --release -p moe-planner-examples --example inference_robustness`

use moe_planner_examples::robustness::{
    DRIFTS, DS_AHEAD, LAYERS, Res, SEEDS, aurora_rows, deepseek_window_rows,
};

fn aurora_sweep() -> Res<()> {
    println!(
        "Aurora Q4 / Fig. 14: speedup over the random baseline as noise grows ({SEEDS} seeds)"
    );
    println!(
        "{:<30} {:>6} {:>14} {:>9} {:>12} {:>14} {:>10}",
        "scenario", "noise", "planned on L1", "vs 0%", "fresh plan", "fresh / L1", "4 windows"
    );
    for (two, name) in [
        (false, "exclusive + hetero (RGA)"),
        (true, "colocating + hetero (RGA+REC)"),
    ] {
        let rows = aurora_rows(two)?;
        debug_assert_eq!(rows.len(), LAYERS as usize);
        for (k, r) in rows.iter().enumerate() {
            println!(
                "{name:<30} {:>5}% {:>13.2}x {:>8.1}% {:>11.2}x {:>13.1}% {:>9.2}x",
                k * 25,
                r.stale,
                (r.stale / rows[0].stale - 1.0) * 100.0,
                r.fresh,
                (r.fresh / r.stale - 1.0) * 100.0,
                r.windows
            );
        }
    }
    Ok(())
}

fn deepseek_windows() -> Res<()> {
    println!();
    println!(
        "DeepSeek-like, 58 layers, 32 GPUs x 9 slots: plan at window t, max GPU load / bound on t+1..=t+{DS_AHEAD} (mean, worst)"
    );
    println!(
        "{:>16} {:>18} {:>18} {:>18} {:>18}",
        "drift, sigma", "window t (optimal)", "EPLB on t", "robust worst", "robust mean"
    );
    for ((walk, sigma), row) in DRIFTS.iter().zip(deepseek_window_rows()?) {
        print!(
            "{:>11} {sigma:>4.1}",
            if *walk { "walk" } else { "stationary" }
        );
        for (mean, worst) in row {
            print!(" {mean:>10.3}, {worst:>6.3}");
        }
        println!();
    }
    Ok(())
}

fn main() -> Res<()> {
    aurora_sweep()?;
    deepseek_windows()
}
