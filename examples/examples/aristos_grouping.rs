//! Aristos LysiGroup on the 16-GPU Perlmutter set-up (Aimuyo §3) and on seeded random
//! heterogeneous clusters, compared with the naive groupings on the same objective T(g).
//!
//! Run with `cargo run --release -p moe-planner-examples --example aristos_grouping`.

use moe_planner_examples::aristos::{
    A100_PEAK, BASE, BYTES_PER_VALUE, GLOBAL_BATCH, HIDDEN, LAYERS, MICRO_BATCH, MOE_EVERY,
    Reading, Study, expert_flop_per_token, expert_params, non_expert_params, random_cluster_study,
    routed_tokens, single_node_over_best_uniform, uniform_grouping_times,
};
use topology_partition::{
    EXHAUSTIVE_MAX_WORKERS, Partition, TopologyError, TrainingConstants, lysi_group,
    one_group_per_node, smallest_fitting_groups, whole_world,
};

fn describe(name: &str, p: &Partition) {
    let sizes: Vec<usize> = p.groups.iter().map(Vec::len).collect();
    println!(
        "  {name:<22} T = {:>9.4} s   group sizes {sizes:?}",
        p.max_objective_s()
    );
}

fn perlmutter_table(reading: &Reading) -> Result<(), TopologyError> {
    let cluster = reading.cluster()?;
    for experts in [16, 64, 128] {
        let obj = reading.objective(experts);
        let lysi = lysi_group(&cluster, &obj)?;
        println!("{experts} experts:");
        describe("LysiGroup", &lysi);
        for (name, p) in [
            ("single node", one_group_per_node(&cluster, &obj)?),
            ("whole world", whole_world(&cluster, &obj)?),
            ("min |CG|", smallest_fitting_groups(&cluster, &obj)?),
        ] {
            describe(name, &p);
            println!(
                "  {:<22} {:.3}x LysiGroup",
                "",
                p.max_objective_s() / lysi.max_objective_s()
            );
        }
    }
    Ok(())
}

fn sensitivity() -> Result<(), TopologyError> {
    println!("Sensitivity at 128 experts (single node / LysiGroup under Eq. 4, LysiGroup sizes):");
    let rows: [(&str, Reading); 12] = [
        ("base: r=1, f_x 1 source, d_ar |X|/16", BASE),
        (
            "f_x 16 sources (whole world)",
            Reading {
                fx_sources: 16.0,
                ..BASE
            },
        ),
        (
            "d_ar |X|/4 (single-node holding)",
            Reading {
                ar_holders: Some(4.0),
                ..BASE
            },
        ),
        (
            "f_x 16 sources, d_ar |X|/4",
            Reading {
                fx_sources: 16.0,
                ar_holders: Some(4.0),
                ..BASE
            },
        ),
        (
            "d_ar = non-expert gradients",
            Reading {
                ar_holders: None,
                ..BASE
            },
        ),
        (
            "r = 0",
            Reading {
                recompute: 0.0,
                ..BASE
            },
        ),
        (
            "r = 0, f_x 16 sources",
            Reading {
                recompute: 0.0,
                fx_sources: 16.0,
                ..BASE
            },
        ),
        (
            "F = 40% of peak",
            Reading {
                flop_per_s: 0.4 * A100_PEAK,
                ..BASE
            },
        ),
        (
            "F = 40%, f_x 16 sources",
            Reading {
                flop_per_s: 0.4 * A100_PEAK,
                fx_sources: 16.0,
                ..BASE
            },
        ),
        (
            "inter beta 0.04 ms/MB (25 GB/s)",
            Reading {
                inter_beta_ms_per_mb: 0.04,
                ..BASE
            },
        ),
        (
            "25 GB/s, f_x 16 sources",
            Reading {
                inter_beta_ms_per_mb: 0.04,
                fx_sources: 16.0,
                ..BASE
            },
        ),
        (
            "f_x 16, d_ar |X|/4, F 40%",
            Reading {
                fx_sources: 16.0,
                ar_holders: Some(4.0),
                flop_per_s: 0.4 * A100_PEAK,
                ..BASE
            },
        ),
    ];
    for (name, reading) in rows {
        let (sizes, ratio, world) = reading.ratio(128)?;
        println!("  {name:<40} {ratio:>6.3}x  (vs whole world {world:.3}x)  {sizes:?}");
    }
    println!("f_x scaled from the base (x = f_x sources):");
    for sources in [2.0, 4.0, 8.0, 16.0, 32.0, 64.0] {
        let (sizes, ratio, world) = Reading {
            fx_sources: sources,
            ..BASE
        }
        .ratio(128)?;
        println!("  x{sources:<4} {ratio:>6.3}x  (vs whole world {world:.3}x)  {sizes:?}");
    }
    Ok(())
}

/// Outside Eq. 4: each uniform partition pays the AllReduce of the expert gradients its own
/// workers hold (`|X| / |g|` experts), which Eq. 4's single `d_ar` cannot express.
fn grouping_aware_all_reduce() -> Result<(), TopologyError> {
    println!("Outside Eq. 4: d_ar = gradients of |X| / |g| experts for each uniform grouping:");
    for fx_sources in [1.0, 16.0] {
        for experts in [16, 64, 128] {
            let mut line = format!("  f_x {fx_sources:>2} sources, {experts:>3} experts:");
            for (size, t) in uniform_grouping_times(fx_sources, experts)? {
                line += &format!(" |g|={size}: {t:.4}");
            }
            println!(
                "{line}  single node / best = {:.3}x",
                single_node_over_best_uniform(fx_sources, experts)?
            );
        }
    }
    Ok(())
}

fn perlmutter() -> Result<(), TopologyError> {
    println!("Perlmutter, 4 nodes x 4 A100 80 GB (32 expert slots each), GPT-3 350M MoE");
    println!(
        "  derived: gamma = {}, d = {:.2} MB, f_x = {:.2} MFLOP/token x 8192 tokens / |X| per source, \
         expert grads {:.1} MB per expert over 12 MoE layers, non-expert grads {:.1} MB",
        TrainingConstants {
            recompute: BASE.recompute,
            layers: LAYERS,
            global_batch: GLOBAL_BATCH,
            moe_every: MOE_EVERY,
            micro_batch: MICRO_BATCH,
        }
        .gamma(16)?,
        routed_tokens() * HIDDEN * BYTES_PER_VALUE / 1e6,
        expert_flop_per_token() / 1e6,
        expert_params() * 12.0 * BYTES_PER_VALUE / 1e6,
        non_expert_params() * BYTES_PER_VALUE / 1e6,
    );
    println!("Base reading (f_x one worker's tokens, d_ar |X|/16 experts' gradients):");
    perlmutter_table(&BASE)?;
    println!("Upper reading (f_x the whole world's tokens, d_ar |X|/4 experts' gradients):");
    perlmutter_table(&Reading {
        fx_sources: 16.0,
        ar_holders: Some(4.0),
        ..BASE
    })?;
    println!("(Aristos reports 1.49x over the single-node grouping at 128 experts.)\n");
    sensitivity()?;
    grouping_aware_all_reduce()?;
    println!();
    Ok(())
}

fn report(s: &Study) {
    let n = s.instances as f64;
    println!("Random heterogeneous clusters (2-5 nodes of 2/4/8 mixed GPUs, 20% link jitter):");
    println!("  feasible instances               {}", s.instances);
    println!(
        "  LysiGroup best or tied           {} ({:.1}%)",
        s.lysi_best_or_tied,
        100.0 * s.lysi_best_or_tied as f64 / n
    );
    println!(
        "  LysiGroup strictly best          {} ({:.1}%)",
        s.lysi_strictly_best,
        100.0 * s.lysi_strictly_best as f64 / n
    );
    println!(
        "  best baseline / LysiGroup        geometric mean {:.3}, worst {:.3} (seed {})",
        (s.log_ratio_sum / n).exp(),
        s.worst_ratio,
        s.worst_seed
    );
    if s.small > 0 {
        println!(
            "  vs exhaustive optimum (n <= {EXHAUSTIVE_MAX_WORKERS}): {} instances, optimal in {} ({:.1}%), mean gap {:.3}, worst {:.3}",
            s.small,
            s.small_optimal,
            100.0 * s.small_optimal as f64 / s.small as f64,
            s.small_gap_sum / s.small as f64,
            s.small_worst_gap
        );
    }
}

fn main() -> Result<(), TopologyError> {
    perlmutter()?;
    report(&random_cluster_study(400)?);
    Ok(())
}
