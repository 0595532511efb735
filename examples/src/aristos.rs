//! Aristos §3's set-up (GPT-3 350M MoE on four Perlmutter nodes) and the readings of the
//! constants the paper leaves unstated, shared by `examples/examples/aristos_grouping.rs` and
//! the drift test of its tables (`examples/tests/docs_reproduction`).
//!
//! The GPT-3 350M MoE run of Aristos §3.2, from the author's Megatron-DeepSpeed fork
//! (`examples_deepspeed/MoE/ds_pretrain_gpt_350M_MoE128.sh`): 24 layers, h = 1024, 16 heads,
//! 2048-token sequences, global batch 256, micro-batch 4, FP16, activation checkpointing on,
//! capacity factor 1.0; `--expert-interval` 2 and `--topk` 1 are Megatron-DeepSpeed defaults.

use topology_partition::{
    AristosObjective, Cluster, EXHAUSTIVE_MAX_WORKERS, NodeKind, Partition, TopologyError,
    TrainingConstants, exhaustive_partition, lysi_group, one_group_per_node, random_cluster,
    smallest_fitting_groups, whole_world,
};

/// Hidden size `h`.
pub const HIDDEN: f64 = 1024.0;
/// Sequence length `s`.
pub const SEQUENCE: f64 = 2048.0;
/// Micro-batch `b`.
pub const MICRO_BATCH: usize = 4;
/// Global batch `B`.
pub const GLOBAL_BATCH: usize = 256;
/// Transformer layers `L`.
pub const LAYERS: usize = 24;
/// An MoE layer every `i` layers (`--expert-interval`).
pub const MOE_EVERY: usize = 2;
/// Experts per token (`--topk`).
pub const TOP_K: f64 = 1.0;
/// Capacity factor `cf`.
pub const CAPACITY_FACTOR: f64 = 1.0;
/// FP16 activations and gradients.
pub const BYTES_PER_VALUE: f64 = 2.0;
/// GPT-2 BPE vocabulary padded to a multiple of 128 (Megatron's default padding).
pub const VOCAB: f64 = 50304.0;

/// Tokens one worker routes per MoE-layer run: `cf · k · b · s` (8192).
#[must_use]
pub fn routed_tokens() -> f64 {
    CAPACITY_FACTOR * TOP_K * MICRO_BATCH as f64 * SEQUENCE
}

/// Forward FLOP of one token through one expert (two `h x 4h` GEMMs, 2 FLOP per MAC): `16 h²`.
#[must_use]
pub fn expert_flop_per_token() -> f64 {
    16.0 * HIDDEN * HIDDEN
}

/// Parameters of one expert (`h x 4h` and `4h x h`, biases ignored): `8 h²`.
#[must_use]
pub fn expert_params() -> f64 {
    8.0 * HIDDEN * HIDDEN
}

/// Non-expert parameters: attention (`4h² + 4h` + 2 LayerNorms) in all 24 layers, dense FFNs
/// (`8h² + 5h`) in the 12 non-MoE layers, token and position embeddings, final LayerNorm.
#[must_use]
pub fn non_expert_params() -> f64 {
    let h = HIDDEN;
    let moe_layers = (LAYERS / MOE_EVERY) as f64;
    LAYERS as f64 * (4.0 * h * h + 8.0 * h)
        + (LAYERS as f64 - moe_layers) * (8.0 * h * h + 5.0 * h)
        + (VOCAB + SEQUENCE) * h
        + 2.0 * h
}

/// The constants Aristos leaves unstated, each a reading of the §3 set-up.
#[derive(Clone, Copy)]
pub struct Reading {
    /// `r` of Eq. 1: 1 with activation checkpointing (the fork's script), 0 without.
    pub recompute: f64,
    /// How many workers' routed tokens one expert's `f_x` covers. The true share grows with
    /// the group (`|g| · cf k b s / |X|`), which Eq. 4's group-independent `f_x` cannot
    /// express: 1 (one worker's micro-batch) and 16 (the whole world's) bound it.
    pub fx_sources: f64,
    /// `d_ar` = FP16 gradients of `|X| / holders` experts over all MoE layers: what one worker
    /// holds when the experts are spread over `holders` GPUs. `None`: the non-expert
    /// parameters' gradients instead.
    pub ar_holders: Option<f64>,
    /// `F_j`, FLOP/s per A100.
    pub flop_per_s: f64,
    /// Inter-node beta, ms per MB.
    pub inter_beta_ms_per_mb: f64,
}

/// A100 dense FP16 tensor-core peak (NVIDIA datasheet).
pub const A100_PEAK: f64 = 312e12;
/// Inter-node beta of the cluster builder (0.054 ms/MB, about 18.5 GB/s).
pub const BUILDER_INTER_BETA: f64 = 0.054;

/// The base reading: `r = 1`, `f_x` one worker's tokens, `d_ar` the gradients of `|X| / 16`
/// experts, A100 peak, the cluster builder's inter-node beta.
pub const BASE: Reading = Reading {
    recompute: 1.0,
    fx_sources: 1.0,
    ar_holders: Some(16.0),
    flop_per_s: A100_PEAK,
    inter_beta_ms_per_mb: BUILDER_INTER_BETA,
};

impl Reading {
    /// The Aristos objective (Eq. 1-4) of `experts` experts under this reading.
    ///
    /// # Panics
    ///
    /// Above `AristosObjective`'s expert limit (the studies use at most a few hundred).
    #[must_use]
    pub fn objective(&self, experts: usize) -> AristosObjective {
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

    /// Four Perlmutter nodes of four A100s (32 expert slots each) under this reading.
    ///
    /// # Errors
    ///
    /// As `Cluster::uniform_nodes`.
    pub fn cluster(&self) -> Result<Cluster, TopologyError> {
        let mut node = NodeKind::perlmutter(32); // Aristos §3.2: 32 experts per A100 80 GB
        node.flop_per_s = self.flop_per_s;
        node.network.beta_s_per_byte = self.inter_beta_ms_per_mb * 1e-3 / 1e6;
        Cluster::uniform_nodes(4, node)
    }

    /// LysiGroup's group sizes, single-node T / LysiGroup T and single-node T / whole-world T
    /// at `experts`.
    ///
    /// # Errors
    ///
    /// As the planners.
    pub fn ratio(&self, experts: usize) -> Result<(Vec<usize>, f64, f64), TopologyError> {
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

/// Outside Eq. 4: the largest T(g) of each uniform grouping of the 16 GPUs into groups of
/// `|g|` = 1, 2, 4, 8, 16 that can hold `experts`, when each pays the AllReduce of the `|X| / |g|`
/// experts its own workers hold (which Eq. 4's single `d_ar` cannot express); `f_x` covers
/// `fx_sources` workers' tokens.
///
/// # Errors
///
/// As `AristosObjective::evaluate`.
pub fn uniform_grouping_times(
    fx_sources: f64,
    experts: usize,
) -> Result<Vec<(usize, f64)>, TopologyError> {
    let mut out = Vec::new();
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
        out.push((size, t));
    }
    Ok(out)
}

/// Single-node groups (`|g|` = 4) over the best uniform grouping of [`uniform_grouping_times`].
///
/// # Errors
///
/// As [`uniform_grouping_times`].
pub fn single_node_over_best_uniform(
    fx_sources: f64,
    experts: usize,
) -> Result<f64, TopologyError> {
    let times = uniform_grouping_times(fx_sources, experts)?;
    let best = times.iter().map(|&(_, t)| t).fold(f64::INFINITY, f64::min);
    let node = times
        .iter()
        .find(|&&(size, _)| size == 4)
        .map_or(f64::NAN, |&(_, t)| t);
    Ok(node / best)
}

/// Statistics of the random-cluster study ([`random_cluster_study`]).
#[derive(Debug, Default)]
pub struct Study {
    /// Feasible instances (enough expert slots).
    pub instances: usize,
    /// Instances where LysiGroup's largest T(g) is at most the best baseline's.
    pub lysi_best_or_tied: usize,
    /// Instances where it is strictly below.
    pub lysi_strictly_best: usize,
    /// Sum over instances of `ln(best baseline / LysiGroup)`.
    pub log_ratio_sum: f64,
    /// The smallest `best baseline / LysiGroup`.
    pub worst_ratio: f64,
    /// The seed of that instance.
    pub worst_seed: u64,
    /// Instances small enough for the exhaustive optimum.
    pub small: usize,
    /// Of those, instances where LysiGroup is optimal.
    pub small_optimal: usize,
    /// Sum of LysiGroup / optimum over the small instances.
    pub small_gap_sum: f64,
    /// The largest LysiGroup / optimum.
    pub small_worst_gap: f64,
}

/// LysiGroup against the best of the three naive groupings (and the exhaustive optimum where
/// it is computable) on the seeded random heterogeneous clusters `0..instances`, under the
/// base reading.
///
/// # Errors
///
/// As the planners.
pub fn random_cluster_study(instances: u64) -> Result<Study, TopologyError> {
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
        let obj = BASE.objective(experts);
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
    Ok(s)
}
