//! Aristos LysiGroup on the 16-GPU Perlmutter set-up (Aimuyo §3) and on seeded random
//! heterogeneous clusters, compared with the naive groupings on the same objective T(g).
//!
//! Run with `cargo run --release -p moe-planner-examples --example aristos_grouping`.

use topology_partition::{
    AristosObjective, Cluster, EXHAUSTIVE_MAX_WORKERS, Partition, TopologyError, TrainingConstants,
    exhaustive_partition, lysi_group, one_group_per_node, random_cluster, smallest_fitting_groups,
    whole_world,
};

/// GPT-3 350M MoE (h = 1024, 24 layers, MoE every 2nd layer), micro-batch 4 x 2048 tokens,
/// global batch 256, no recomputation.
const HIDDEN: f64 = 1024.0;
const TOKENS_PER_MICRO_BATCH: f64 = 4.0 * 2048.0;

fn objective(experts: usize, world: usize) -> AristosObjective {
    scaled_objective(experts, world, 1.0)
}

/// As [`objective`], with each expert serving `scale` times as many tokens.
fn scaled_objective(experts: usize, world: usize, scale: f64) -> AristosObjective {
    let training = TrainingConstants {
        recompute: 0.0,
        layers: 24,
        global_batch: 256,
        moe_every: 2,
        micro_batch: 4,
    };
    // Each expert (a 4h FFN, 16 h² FLOP per token forward) serves 1/16 of a micro-batch.
    let flop_per_expert = scale * 16.0 * HIDDEN * HIDDEN * TOKENS_PER_MICRO_BATCH / 16.0;
    // AlltoAll payload: the micro-batch's activations in BF16.
    let all_to_all_bytes = 2.0 * TOKENS_PER_MICRO_BATCH * HIDDEN;
    // Expert gradients (8 h² BF16 parameters each) of the experts one worker hosts when
    // the experts are spread over the whole world.
    let all_reduce_bytes = 2.0 * 8.0 * HIDDEN * HIDDEN * experts as f64 / world as f64;
    AristosObjective::uniform(
        training,
        experts,
        flop_per_expert,
        2.0,
        all_to_all_bytes,
        all_reduce_bytes,
    )
}

fn describe(name: &str, p: &Partition) {
    let sizes: Vec<usize> = p.groups.iter().map(Vec::len).collect();
    println!(
        "  {name:<22} T = {:>9.4} s   group sizes {sizes:?}",
        p.max_objective_s()
    );
}

fn perlmutter() -> Result<(), TopologyError> {
    println!("Perlmutter, 4 nodes x 4 A100 80 GB (32 expert slots each), GPT-3 350M MoE");
    let cluster = Cluster::perlmutter(4, 32)?;
    for experts in [16, 64, 128] {
        let obj = objective(experts, cluster.len());
        let lysi = lysi_group(&cluster, &obj)?;
        println!("{experts} experts: LysiGroup groups {:?}", lysi.groups);
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
    println!("(Aristos reports 1.49x over the single-node grouping at 128 experts.)\n");
    println!("128 experts, expert FLOP scaled (more tokens per expert -> more compute-bound):");
    for scale in [1.0, 2.0, 4.0, 8.0, 16.0, 64.0] {
        let obj = scaled_objective(128, cluster.len(), scale);
        let lysi = lysi_group(&cluster, &obj)?;
        let node = one_group_per_node(&cluster, &obj)?;
        let sizes: Vec<usize> = lysi.groups.iter().map(Vec::len).collect();
        println!(
            "  x{scale:<4} LysiGroup sizes {sizes:?}: single node / LysiGroup = {:.3}",
            node.max_objective_s() / lysi.max_objective_s()
        );
    }
    println!();
    Ok(())
}

/// Statistics of the random-cluster study.
#[derive(Default)]
struct Study {
    instances: usize,
    lysi_best_or_tied: usize,
    lysi_strictly_best: usize,
    log_ratio_sum: f64,
    worst_ratio: f64,
    worst_seed: u64,
    small: usize,
    small_optimal: usize,
    small_gap_sum: f64,
    small_worst_gap: f64,
}

fn study(instances: u64) -> Result<(), TopologyError> {
    let mut s = Study {
        worst_ratio: f64::INFINITY,
        ..Study::default()
    };
    for seed in 0..instances {
        let nodes = 2 + (seed % 4) as usize;
        let cluster = random_cluster(nodes, 0.2, seed)?;
        let experts = [8, 16, 32, 64, 128][(seed / 4 % 5) as usize];
        if cluster.total_expert_slots() < experts as u64 {
            continue;
        }
        let obj = objective(experts, cluster.len());
        let lysi = lysi_group(&cluster, &obj)?.max_objective_s();
        let best_baseline = [
            one_group_per_node(&cluster, &obj)?,
            whole_world(&cluster, &obj)?,
            smallest_fitting_groups(&cluster, &obj)?,
        ]
        .iter()
        .map(Partition::max_objective_s)
        .fold(f64::INFINITY, f64::min);
        let ratio = best_baseline / lysi; // > 1: LysiGroup better
        s.instances += 1;
        s.lysi_best_or_tied += usize::from(ratio >= 1.0 - 1e-9);
        s.lysi_strictly_best += usize::from(ratio > 1.0 + 1e-9);
        s.log_ratio_sum += ratio.ln();
        if ratio < s.worst_ratio {
            (s.worst_ratio, s.worst_seed) = (ratio, seed);
        }
        if cluster.len() <= EXHAUSTIVE_MAX_WORKERS {
            let best = exhaustive_partition(&cluster, &obj)?.max_objective_s();
            let gap = lysi / best;
            s.small += 1;
            s.small_optimal += usize::from(gap <= 1.0 + 1e-9);
            s.small_gap_sum += gap;
            s.small_worst_gap = s.small_worst_gap.max(gap);
        }
    }
    report(&s);
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
    study(400)
}
