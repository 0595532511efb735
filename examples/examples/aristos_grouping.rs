//! Aristos LysiGroup on the 16-GPU Perlmutter set-up (Aimuyo §3) and on seeded random
//! heterogeneous clusters, compared with the naive groupings on the same objective T(g).
//!
//! Run with `cargo run --release -p moe-planner-examples --example aristos_grouping`.

use topology_partition::{
    AristosObjective, Cluster, EXHAUSTIVE_MAX_WORKERS, NodeKind, Partition, TopologyError,
    TrainingConstants, exhaustive_partition, lysi_group, one_group_per_node, random_cluster,
    smallest_fitting_groups, whole_world,
};

// The GPT-3 350M MoE run of Aristos §3.2, from the author's Megatron-DeepSpeed fork
// (`examples_deepspeed/MoE/ds_pretrain_gpt_350M_MoE128.sh`): 24 layers, h = 1024, 16 heads,
// 2048-token sequences, global batch 256, micro-batch 4, FP16, activation checkpointing on,
// capacity factor 1.0; `--expert-interval` 2 and `--topk` 1 are Megatron-DeepSpeed defaults.
const HIDDEN: f64 = 1024.0;
const SEQUENCE: f64 = 2048.0;
const MICRO_BATCH: usize = 4;
const GLOBAL_BATCH: usize = 256;
const LAYERS: usize = 24;
const MOE_EVERY: usize = 2;
const TOP_K: f64 = 1.0;
const CAPACITY_FACTOR: f64 = 1.0;
/// FP16 activations and gradients.
const BYTES_PER_VALUE: f64 = 2.0;
/// GPT-2 BPE vocabulary padded to a multiple of 128 (Megatron's default padding).
const VOCAB: f64 = 50304.0;

/// Tokens one worker routes per MoE-layer run: `cf · k · b · s` (8192).
fn routed_tokens() -> f64 {
    CAPACITY_FACTOR * TOP_K * MICRO_BATCH as f64 * SEQUENCE
}

/// Forward FLOP of one token through one expert (two `h x 4h` GEMMs, 2 FLOP per MAC): `16 h²`.
fn expert_flop_per_token() -> f64 {
    16.0 * HIDDEN * HIDDEN
}

/// Parameters of one expert (`h x 4h` and `4h x h`, biases ignored): `8 h²`.
fn expert_params() -> f64 {
    8.0 * HIDDEN * HIDDEN
}

/// Non-expert parameters: attention (`4h² + 4h` + 2 LayerNorms) in all 24 layers, dense FFNs
/// (`8h² + 5h`) in the 12 non-MoE layers, token and position embeddings, final LayerNorm.
fn non_expert_params() -> f64 {
    let h = HIDDEN;
    let moe_layers = (LAYERS / MOE_EVERY) as f64;
    LAYERS as f64 * (4.0 * h * h + 8.0 * h)
        + (LAYERS as f64 - moe_layers) * (8.0 * h * h + 5.0 * h)
        + (VOCAB + SEQUENCE) * h
        + 2.0 * h
}

/// The constants Aristos leaves unstated, each a reading of the §3 set-up.
#[derive(Clone, Copy)]
struct Reading {
    /// `r` of Eq. 1: 1 with activation checkpointing (the fork's script), 0 without.
    recompute: f64,
    /// How many workers' routed tokens one expert's `f_x` covers. The true share grows with
    /// the group (`|g| · cf k b s / |X|`), which Eq. 4's group-independent `f_x` cannot
    /// express: 1 (one worker's micro-batch) and 16 (the whole world's) bound it.
    fx_sources: f64,
    /// `d_ar` = FP16 gradients of `|X| / holders` experts over all MoE layers: what one worker
    /// holds when the experts are spread over `holders` GPUs. `None`: the non-expert
    /// parameters' gradients instead.
    ar_holders: Option<f64>,
    /// `F_j`, FLOP/s per A100.
    flop_per_s: f64,
    /// Inter-node beta, ms per MB.
    inter_beta_ms_per_mb: f64,
}

/// A100 dense FP16 tensor-core peak (NVIDIA datasheet).
const A100_PEAK: f64 = 312e12;
/// Inter-node beta of the cluster builder (0.054 ms/MB, about 18.5 GB/s).
const BUILDER_INTER_BETA: f64 = 0.054;

const BASE: Reading = Reading {
    recompute: 1.0,
    fx_sources: 1.0,
    ar_holders: Some(16.0),
    flop_per_s: A100_PEAK,
    inter_beta_ms_per_mb: BUILDER_INTER_BETA,
};

impl Reading {
    fn objective(&self, experts: usize) -> AristosObjective {
        let training = TrainingConstants {
            recompute: self.recompute,
            layers: LAYERS,
            global_batch: GLOBAL_BATCH,
            moe_every: MOE_EVERY,
            micro_batch: MICRO_BATCH,
        };
        let e = experts as f64;
        let flop_per_expert = expert_flop_per_token() * routed_tokens() * self.fx_sources / e;
        // DeepSpeed's dispatch buffer: |X| experts x capacity cf k b s / |X| tokens x h values.
        let all_to_all_bytes = routed_tokens() * HIDDEN * BYTES_PER_VALUE;
        let moe_layers = (LAYERS / MOE_EVERY) as f64;
        let all_reduce_bytes = match self.ar_holders {
            Some(holders) => e / holders * expert_params() * moe_layers * BYTES_PER_VALUE,
            None => non_expert_params() * BYTES_PER_VALUE,
        };
        AristosObjective::uniform(
            training,
            experts,
            flop_per_expert,
            2.0, // eta: a dispatch and a combine AlltoAll per pass
            all_to_all_bytes,
            all_reduce_bytes,
        )
        .expect("the studies use at most a few hundred experts, far below MAX_EXPERTS")
    }

    fn cluster(&self) -> Result<Cluster, TopologyError> {
        let mut node = NodeKind::perlmutter(32); // Aristos §3.2: 32 experts per A100 80 GB
        node.flop_per_s = self.flop_per_s;
        node.network.beta_s_per_byte = self.inter_beta_ms_per_mb * 1e-3 / 1e6;
        Cluster::uniform_nodes(4, node)
    }

    /// LysiGroup's group sizes, single-node T / LysiGroup T and single-node T / whole-world T
    /// at `experts`.
    fn ratio(&self, experts: usize) -> Result<(Vec<usize>, f64, f64), TopologyError> {
        let cluster = self.cluster()?;
        let obj = self.objective(experts);
        let lysi = lysi_group(&cluster, &obj)?;
        let node = one_group_per_node(&cluster, &obj)?;
        let world = whole_world(&cluster, &obj)?;
        let sizes = lysi.groups.iter().map(Vec::len).collect();
        let node_s = node.max_objective_s();
        Ok((
            sizes,
            node_s / lysi.max_objective_s(),
            node_s / world.max_objective_s(),
        ))
    }
}

fn objective(experts: usize) -> AristosObjective {
    BASE.objective(experts)
}

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
            let mut best = f64::INFINITY;
            let mut node = f64::NAN;
            for size in [1usize, 2, 4, 8, 16] {
                if size * 32 < experts {
                    continue;
                }
                let reading = Reading {
                    fx_sources,
                    ar_holders: Some(size as f64),
                    ..BASE
                };
                let cluster = reading.cluster()?;
                let groups = (0..16 / size)
                    .map(|g| (g * size..(g + 1) * size).collect())
                    .collect();
                let t = reading
                    .objective(experts)
                    .evaluate(&cluster, groups)?
                    .max_objective_s();
                line += &format!(" |g|={size}: {t:.4}");
                best = best.min(t);
                if size == 4 {
                    node = t;
                }
            }
            println!("{line}  single node / best = {:.3}x", node / best);
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
        let obj = objective(experts);
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
