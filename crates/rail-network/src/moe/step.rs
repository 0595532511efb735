//! The step time of one MoE training mapping, term by term, with its memory and throughput.
//!
//! `step = compute + bubble + tp + cp + ep + pp + dp + optimizer + offload`, every term the time
//! it adds to the busiest GPU's critical path:
//!
//! * **compute**: `m` micro-batches of the busiest pipeline stage, forward and backward (`3x`
//!   the forward FLOPs, `4x` under full recomputation; selective recomputation adds one more
//!   forward of MLA's up-projections and the norms and activation functions, memory bound at
//!   HBM speed), at the rates of
//!   [`ComputeEfficiency`]; routed-expert FLOPs are multiplied by `expert_imbalance` (the
//!   busiest EP rank's load over the mean) and run at the roofline rate of their tokens per
//!   expert. The busiest stage holds `vp ceil(l / (pp vp))` layers, MoE layers first, or
//!   `1/pp` of all layers plus the logit layer if that is more (uneven stages may balance the
//!   logit layer, as Megatron-LM's first/last-stage layer counts allow). MTP modules (a block
//!   like the last layer, a `2h x h` projection, one more head pass each) sit on the last
//!   stage. Every FLOP rate is scaled by `(sms - comm_sms) / sms`: SMs held by overlapped
//!   communication kernels do not compute (DeepSeek-V3 §3.2.2).
//! * **bubble**: `(pp - 1) / vp` micro-batch times (interleaved 1F1B); under `DualPipe`,
//!   `(pp/2 - 1)(F + 2B - 3W)` with `F` one forward pass of the stage, `B` the rest of the
//!   micro-batch and `W = F` (DeepSeek-V3 Table 2, `F&B = F + B`).
//! * **tp**: sequence-parallel all-gather and reduce-scatter, four per block (attention, dense
//!   FFN) and micro-batch in forward and backward (six with full recomputation) over the TP
//!   group (hierarchical, Eq. 1 of the rail-only paper), not overlapped.
//! * **cp**: ring attention's key/value exchange, `3 (cp - 1)` chunk transfers per layer;
//!   assumed overlapped with the attention-score compute, only the excess is exposed.
//! * **ep**: dispatch and combine all-to-alls, two each per MoE layer and micro-batch (three
//!   with full recomputation). A token is sent once to every EP rank hosting one of its `k`
//!   experts (DeepEP's normal kernels): `ep (1 - C(E - E/ep, k) / C(E, k))` copies per token,
//!   `1/ep` of them local; the rest go through the HB domain or over the network (time: the
//!   slower of the two on a rail-optimized fabric; their sum on rail-only, which forwards
//!   cross-rail traffic through the HB domain, rail-only App. D), times `expert_imbalance`
//!   (the busiest rank receives the most). With `etp > 1`, Parm's baseline, S1 and S2 schedules
//!   ([`comm_cost_model::parm`]) replace this term and Algorithm 1 picks S1 or S2. A fraction
//!   `a2a_overlap` of the term is hidden behind compute (0 by default: Megatron-LM's default
//!   runs dispatch and combine between the GEMMs), but never more than the step's compute it
//!   runs beside.
//! * **pp**: activations and gradients sent between stages; steady-state sends overlap compute,
//!   the `2 (pp - 1)` fill and drain messages are exposed.
//! * **dp**: gradient reduce-scatter (FP32) and parameter all-gather (BF16) of the distributed
//!   optimizer, dense parameters over `dp cp` ranks and expert parameters over `edp`; the
//!   reduce-scatter overlaps the last micro-batch's backward (2/3 of its time), the all-gather
//!   the first forward (1/3), only the excess is exposed. Under FSDP every micro-batch
//!   all-gathers the weights (twice, or once when they stay gathered) and reduce-scatters its
//!   gradients, each against that micro-batch's forward or backward; `DualPipe` syncs two
//!   copies.
//! * **optimizer**: Adam on the local shard, memory bound: 30 bytes moved per parameter (read
//!   FP32 master, two moments and gradient; write them back and the BF16 copy; 22 with BF16
//!   moments) at HBM speed; the offloaded fraction crosses the host link (6 bytes) and is
//!   stepped at host-memory speed.
//! * **offload**: offloaded activations leave during their micro-batch's forward and return
//!   during its backward; what exceeds those windows is exposed.
//!
//! Every collective also pays `latency_s` of the system per step on the critical path.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::fabric::FabricKind;
use crate::model::Recompute;
use crate::moe::cluster::TrainingSystem;
use crate::moe::efficiency::ComputeEfficiency;
use crate::moe::mapping::{DerivedDegrees, MoeMapping};
use crate::moe::memory::{MemoryInput, MoeMemory, activation_bytes_per_microbatch, moe_memory};
use crate::moe::model::{MoeModel, Precision};
use crate::moe::strategy::{ParamSharding, PipelineSchedule};
use comm_cost_model::AlphaBeta;
use comm_cost_model::collectives::{TwoTierGrid, hierarchical_all_gather_time_s};
use comm_cost_model::parm::{ParmCollectiveCosts, ParmLayer, Schedule, parm_times};
use comm_cost_model::units::Seconds;
use comm_cost_model::{
    InputError, check_count_u64, check_finite_result, check_non_negative, check_positive,
};

/// Inputs of the step model beyond the model, system and mapping.
///
/// Deserializing rejects unknown fields and runs [`StepOptions::validate`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StepOptionsFields")]
pub struct StepOptions {
    /// Compute-efficiency constants.
    pub efficiency: ComputeEfficiency,
    /// Busiest EP rank's routed tokens over the mean (at least 1; 1 = perfectly balanced).
    pub expert_imbalance: f64,
    /// The network between HB domains.
    pub fabric: FabricKind,
    /// Fraction of the EP all-to-all hidden behind compute, in [0, 1].
    pub a2a_overlap: f64,
    /// Memory held back per GPU for the CUDA context, communication buffers and
    /// fragmentation, bytes.
    pub memory_reserve_bytes: f64,
    /// Streaming multiprocessors the overlapped all-to-all kernels hold while compute runs
    /// (0 by default; DeepSeek-V3's `DualPipe` dedicates 20 of the H800's 132, §3.2.2). Compute
    /// then runs at `(sms - comm_sms) / sms` of its rate; must be below the system's `sms`.
    pub comm_sms: u64,
    /// Where parameters, gradients and optimizer state live (ZeRO-1 by default).
    pub param_sharding: ParamSharding,
    /// The pipeline schedule (1F1B by default).
    pub pipeline_schedule: PipelineSchedule,
    /// Fraction of the optimizer state kept in host memory and stepped by the CPU, in [0, 1]
    /// (Megatron-LM `--optimizer-offload-fraction`).
    pub optimizer_offload_fraction: f64,
    /// Fraction of the stored activations moved to host memory during the forward pass and
    /// back for the backward pass, in [0, 1].
    pub activation_offload_fraction: f64,
    /// Whether Adam's two moments are kept in BF16 (FP32 master weights and gradients
    /// stay): 8 bytes of optimizer state per parameter instead of 12 (DeepSeek-V3 §3.3.3).
    pub bf16_optimizer_moments: bool,
    /// Whether the logits (and the loss over them) stay in BF16, 2 bytes each instead of
    /// FP32's 4 (`NeMo` `AutoModel`'s `fp32_upcast: false`).
    pub bf16_logits: bool,
    /// A measured cost of one expert-parallel all-to-all (NCCL's `alltoall_perf` or DeepEP's
    /// normal kernels, fitted with `moe-planner fit`) on an EP group of `ep` ranks: it replaces
    /// the fabric model for the dispatch and combine of mappings with that EP degree and
    /// `etp = 1`; others keep the fabric model. `None` (default): the fabric model everywhere.
    #[serde(default)]
    pub ep_all_to_all_fit: Option<EpAllToAllFit>,
}

/// A measured all-to-all cost for one expert-parallel group size: one dispatch (or combine)
/// takes `alpha_s + beta_s_per_byte * b` where `b` is the bytes each rank sends to the other
/// ranks of the group.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpAllToAllFit {
    /// EP group size the measurement was taken on.
    pub ep: u64,
    /// Fitted start-up time of one call, seconds (`alpha_s` of `moe-planner fit`).
    pub alpha_s: f64,
    /// Fitted seconds per byte a rank sends (`beta_s_per_byte` of `moe-planner fit`).
    pub beta_s_per_byte: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepOptionsFields {
    #[serde(default)]
    efficiency: ComputeEfficiency,
    #[serde(default = "one")]
    expert_imbalance: f64,
    #[serde(default = "rail_optimized")]
    fabric: FabricKind,
    #[serde(default)]
    a2a_overlap: f64,
    #[serde(default = "reserve")]
    memory_reserve_bytes: f64,
    #[serde(default)]
    comm_sms: u64,
    #[serde(default)]
    param_sharding: ParamSharding,
    #[serde(default)]
    pipeline_schedule: PipelineSchedule,
    #[serde(default)]
    optimizer_offload_fraction: f64,
    #[serde(default)]
    activation_offload_fraction: f64,
    #[serde(default)]
    bf16_optimizer_moments: bool,
    #[serde(default)]
    bf16_logits: bool,
    #[serde(default)]
    ep_all_to_all_fit: Option<EpAllToAllFit>,
}

fn one() -> f64 {
    1.0
}
fn rail_optimized() -> FabricKind {
    FabricKind::RailOptimized
}
fn reserve() -> f64 {
    DEFAULT_RESERVE_BYTES
}

/// Memory held back per GPU by default: 5 GB (CUDA context about 0.5 GB, NCCL and all-to-all
/// buffers 1-2 GB, allocator fragmentation a few percent of 80 GB).
pub const DEFAULT_RESERVE_BYTES: f64 = 5e9;

impl TryFrom<StepOptionsFields> for StepOptions {
    type Error = RailNetworkError;

    fn try_from(f: StepOptionsFields) -> Result<Self, Self::Error> {
        let o = Self {
            efficiency: f.efficiency,
            expert_imbalance: f.expert_imbalance,
            fabric: f.fabric,
            a2a_overlap: f.a2a_overlap,
            memory_reserve_bytes: f.memory_reserve_bytes,
            comm_sms: f.comm_sms,
            param_sharding: f.param_sharding,
            pipeline_schedule: f.pipeline_schedule,
            optimizer_offload_fraction: f.optimizer_offload_fraction,
            activation_offload_fraction: f.activation_offload_fraction,
            bf16_optimizer_moments: f.bf16_optimizer_moments,
            bf16_logits: f.bf16_logits,
            ep_all_to_all_fit: f.ep_all_to_all_fit,
        };
        o.validate()?;
        Ok(o)
    }
}

impl Default for StepOptions {
    fn default() -> Self {
        Self {
            efficiency: ComputeEfficiency::calibrated(),
            expert_imbalance: 1.0,
            fabric: FabricKind::RailOptimized,
            a2a_overlap: 0.0,
            memory_reserve_bytes: DEFAULT_RESERVE_BYTES,
            comm_sms: 0,
            param_sharding: ParamSharding::DistributedOptimizer,
            pipeline_schedule: PipelineSchedule::OneFOneB,
            optimizer_offload_fraction: 0.0,
            activation_offload_fraction: 0.0,
            bf16_optimizer_moments: false,
            bf16_logits: false,
            ep_all_to_all_fit: None,
        }
    }
}

impl StepOptions {
    /// Checks every field.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] naming the field: `expert_imbalance` below 1 or not finite,
    /// `a2a_overlap` outside [0, 1], a negative or non-finite reserve, invalid efficiency.
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        self.efficiency.validate()?;
        check_positive("expert_imbalance", self.expert_imbalance)?;
        if self.expert_imbalance < 1.0 {
            return Err(InputError::NotPositive {
                what: "expert_imbalance - 1 (busiest over mean is at least 1)",
                value: self.expert_imbalance - 1.0,
            }
            .into());
        }
        for (what, value) in [
            ("a2a_overlap", self.a2a_overlap),
            (
                "optimizer_offload_fraction",
                self.optimizer_offload_fraction,
            ),
            (
                "activation_offload_fraction",
                self.activation_offload_fraction,
            ),
        ] {
            check_non_negative(what, value)?;
            if value > 1.0 {
                return Err(InputError::AboveMaximum {
                    what,
                    max: 1.0,
                    value,
                }
                .into());
            }
        }
        check_non_negative("memory_reserve_bytes", self.memory_reserve_bytes)?;
        if let Some(fit) = self.ep_all_to_all_fit {
            if fit.ep < 2 {
                return Err(InputError::NotPositive {
                    what: "ep_all_to_all_fit.ep - 1 (a fit needs at least 2 ranks)",
                    value: fit.ep as f64 - 1.0,
                }
                .into());
            }
            check_non_negative("ep_all_to_all_fit.alpha_s", fit.alpha_s)?;
            check_non_negative("ep_all_to_all_fit.beta_s_per_byte", fit.beta_s_per_byte)?;
        }
        Ok(())
    }
}

/// Every term of one step, seconds (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepTerms {
    /// Attention projections and scores of the busiest stage, all micro-batches.
    pub attention_compute_s: Seconds,
    /// Dense FFNs, shared experts and routers.
    pub dense_compute_s: Seconds,
    /// Routed experts (with the imbalance factor and the roofline).
    pub expert_compute_s: Seconds,
    /// Logit layer (when the busiest stage carries it).
    pub logits_compute_s: Seconds,
    /// Compute of one micro-batch on the busiest stage, forward and backward.
    pub microbatch_compute_s: Seconds,
    /// Pipeline fill and drain, `(pp - 1) / vp` micro-batch times.
    pub bubble_s: Seconds,
    /// Tensor-parallel all-gather / reduce-scatter.
    pub tp_comm_s: Seconds,
    /// Exposed context-parallel key/value exchange.
    pub cp_comm_s: Seconds,
    /// Exposed EP dispatch and combine (Parm's chosen schedule when `etp > 1`).
    pub ep_comm_s: Seconds,
    /// Parm's baseline schedule for the same layers (0 when `etp = 1`), for comparison.
    pub parm_baseline_s: Seconds,
    /// Exposed pipeline point-to-point.
    pub pp_comm_s: Seconds,
    /// Exposed gradient reduce-scatter and parameter all-gather.
    pub dp_comm_s: Seconds,
    /// Optimizer step (on the GPU, and on the CPU for the offloaded part).
    pub optimizer_s: Seconds,
    /// Exposed activation offload transfers.
    pub offload_s: Seconds,
    /// The sum.
    pub step_time_s: Seconds,
}

/// One evaluated mapping.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoeEvaluation {
    /// The mapping.
    pub mapping: MoeMapping,
    /// The degrees it implies.
    pub degrees: DerivedDegrees,
    /// Step time, term by term.
    pub terms: StepTerms,
    /// Parm's schedule for the MoE layers (`None` when `etp = 1`).
    pub etp_schedule: Option<Schedule>,
    /// Memory of the busiest GPU.
    pub memory: MoeMemory,
    /// Whether it fits the GPU memory.
    pub fits: bool,
    /// Training tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOP/s per GPU (no recomputation counted), in TFLOP/s.
    pub model_tflop_per_s_per_gpu: f64,
    /// Model FLOP/s over the BF16 dense peak.
    pub mfu: f64,
}

/// A model on a system under options, prepared for many evaluations.
#[derive(Debug, Clone, PartialEq)]
pub struct StepModel {
    model: MoeModel,
    system: TrainingSystem,
    options: StepOptions,
    /// Model FLOPs per token (training).
    flop_per_token: f64,
    /// Expert imbalance per EP degree, overriding `options.expert_imbalance` for those degrees.
    imbalance_by_ep: Vec<(u64, f64)>,
}

/// Per-token forward FLOPs of one layer by kind.
struct LayerFlops {
    attention_gemm: f64,
    /// MLA's query and key/value up-projections (0 for GQA).
    up_projection: f64,
    attention_score: f64,
    dense_ffn: f64,
    moe_dense: f64,
    routed: f64,
}

impl StepModel {
    /// Validates and prepares.
    ///
    /// # Errors
    ///
    /// An invalid model, system or options ([`RailNetworkError::Input`] naming the field).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::moe::{moe_model_preset, training_system_preset, StepModel, StepOptions};
    /// let sm = StepModel::new(moe_model_preset("mixtral-8x7b")?, training_system_preset("h100")?,
    ///     StepOptions::default())?;
    /// assert_eq!(sm.model().experts, 8);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn new(
        model: MoeModel,
        system: TrainingSystem,
        options: StepOptions,
    ) -> Result<Self, RailNetworkError> {
        model.validate()?;
        system.validate()?;
        options.validate()?;
        if options.comm_sms >= system.sms {
            return Err(InputError::SizeMismatch {
                what: "comm_sms must be below the system's sms",
                expected: system.sms.saturating_sub(1),
                actual: options.comm_sms,
            }
            .into());
        }
        let flop_per_token = model.training_flop_per_token()?;
        Ok(Self {
            model,
            system,
            options,
            flop_per_token,
            imbalance_by_ep: Vec::new(),
        })
    }

    /// The same model with an expert-imbalance factor per EP degree (busiest EP rank's routed
    /// tokens over the mean when the experts are spread over `ep` ranks), e.g. computed by a
    /// placement planner from measured loads; degrees not listed use
    /// [`StepOptions::expert_imbalance`].
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] for a zero degree or a factor below 1 or not finite.
    ///
    /// # Complexity
    ///
    /// `O(t)` for `t` entries; each evaluation then looks its degree up in `O(t)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::model::Recompute;
    /// use rail_network::moe::*;
    /// let sm = StepModel::new(moe_model_preset("mixtral-8x7b")?, training_system_preset("h100")?,
    ///     StepOptions::default())?;
    /// let skewed = sm.clone().with_imbalance_by_ep(vec![(8, 1.5)])?;
    /// let m = MoeMapping { tp: 1, cp: 1, pp: 4, vp: 8, ep: 8, etp: 1, micro_batch: 1,
    ///     recompute: Recompute::None };
    /// let (a, b) = (sm.evaluate(&m, 64, 256)?, skewed.evaluate(&m, 64, 256)?);
    /// assert!(b.terms.expert_compute_s > a.terms.expert_compute_s);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn with_imbalance_by_ep(
        mut self,
        table: Vec<(u64, f64)>,
    ) -> Result<Self, RailNetworkError> {
        for &(ep, factor) in &table {
            check_count_u64("ep of an imbalance entry", ep, 1)?;
            check_positive("expert imbalance of an EP degree", factor)?;
            if factor < 1.0 {
                return Err(InputError::NotPositive {
                    what: "expert imbalance of an EP degree - 1 (at least 1)",
                    value: factor - 1.0,
                }
                .into());
            }
        }
        self.imbalance_by_ep = table;
        Ok(self)
    }

    /// The imbalance factor used for `ep` ranks.
    #[must_use]
    pub fn expert_imbalance(&self, ep: u64) -> f64 {
        self.imbalance_by_ep
            .iter()
            .find(|(e, _)| *e == ep)
            .map_or(self.options.expert_imbalance, |&(_, f)| f)
    }

    /// The model.
    #[must_use]
    pub fn model(&self) -> &MoeModel {
        &self.model
    }

    /// The system.
    #[must_use]
    pub fn system(&self) -> &TrainingSystem {
        &self.system
    }

    /// The options.
    #[must_use]
    pub fn options(&self) -> &StepOptions {
        &self.options
    }

    /// The same model and system under other options.
    ///
    /// # Errors
    ///
    /// Invalid options.
    pub fn with_options(&self, options: StepOptions) -> Result<Self, RailNetworkError> {
        let mut sm = Self::new(self.model, self.system, options)?;
        sm.imbalance_by_ep.clone_from(&self.imbalance_by_ep);
        Ok(sm)
    }

    fn layer_flops(&self) -> LayerFlops {
        let m = &self.model;
        let h = m.hidden as f64;
        let mats = m.ffn_matrices();
        let s = m.seq_len as f64;
        let score = match m.attention {
            crate::moe::model::Attention::Gqa {
                heads, head_dim, ..
            } => 4.0 * s * (heads * head_dim) as f64,
            crate::moe::model::Attention::Mla {
                heads,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
                ..
            } => 2.0 * s * heads as f64 * (qk_nope_head_dim + qk_rope_head_dim + v_head_dim) as f64,
        };
        let up_projection = match m.attention {
            crate::moe::model::Attention::Gqa { .. } => 0.0,
            crate::moe::model::Attention::Mla {
                heads,
                q_lora_rank,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
            } => {
                let n = heads as f64;
                2.0 * (q_lora_rank as f64 * n * (qk_nope_head_dim + qk_rope_head_dim) as f64
                    + kv_lora_rank as f64 * n * (qk_nope_head_dim + v_head_dim) as f64)
            }
        };
        LayerFlops {
            up_projection,
            attention_gemm: 2.0 * m.attention_weights_per_layer(),
            attention_score: score,
            dense_ffn: 2.0 * mats * h * m.dense_ffn as f64,
            moe_dense: 2.0 * mats * h * m.shared_ffn as f64 + 2.0 * h * m.experts as f64,
            routed: 2.0 * m.top_k as f64 * m.expert_weights(),
        }
    }

    /// Evaluates `mapping` on `gpus` GPUs at `global_batch` sequences per step.
    ///
    /// # Errors
    ///
    /// The first rule of [`MoeMapping::validate`] the mapping breaks (naming the field);
    /// [`RailNetworkError::Input`] (`NonFinite`) when a time or size overflows `f64`. A mapping
    /// that does not fit in memory is returned with `fits = false` (see
    /// [`StepModel::evaluate_fitting`]).
    ///
    /// # Complexity
    ///
    /// `O(k)` time for top-k `k` (the distinct-destination count), no allocation.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::model::Recompute;
    /// use rail_network::moe::*;
    /// let sm = StepModel::new(moe_model_preset("mixtral-8x7b")?, training_system_preset("h100")?,
    ///     StepOptions::default())?;
    /// let mapping = MoeMapping { tp: 1, cp: 1, pp: 4, vp: 8, ep: 8, etp: 1, micro_batch: 1,
    ///     recompute: Recompute::None };
    /// let e = sm.evaluate(&mapping, 64, 256)?;
    /// assert!(e.fits && e.mfu > 0.2 && e.mfu < 0.7);
    /// assert!(e.terms.ep_comm_s > 0.0 && e.terms.tp_comm_s == 0.0);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn evaluate(
        &self,
        mapping: &MoeMapping,
        gpus: u64,
        global_batch: u64,
    ) -> Result<MoeEvaluation, RailNetworkError> {
        let degrees = mapping.validate(&self.model, gpus, global_batch)?;
        self.check_schedule(mapping, &degrees)?;
        self.evaluate_valid(mapping, degrees, gpus, global_batch)
    }

    /// As [`StepModel::evaluate`], but a mapping that does not fit is an error.
    ///
    /// # Errors
    ///
    /// As [`StepModel::evaluate`]; [`RailNetworkError::OutOfMemory`] with the bytes needed.
    ///
    /// # Complexity
    ///
    /// As [`StepModel::evaluate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::model::Recompute;
    /// use rail_network::moe::*;
    /// use rail_network::RailNetworkError;
    /// let sm = StepModel::new(moe_model_preset("deepseek-v3")?, training_system_preset("h100")?,
    ///     StepOptions::default())?;
    /// let one_node = MoeMapping { tp: 8, cp: 1, pp: 1, vp: 1, ep: 8, etp: 1, micro_batch: 1,
    ///     recompute: Recompute::Full };
    /// assert!(matches!(sm.evaluate_fitting(&one_node, 8, 8),
    ///     Err(RailNetworkError::OutOfMemory { .. })));
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn evaluate_fitting(
        &self,
        mapping: &MoeMapping,
        gpus: u64,
        global_batch: u64,
    ) -> Result<MoeEvaluation, RailNetworkError> {
        let e = self.evaluate(mapping, gpus, global_batch)?;
        if !e.fits {
            return Err(RailNetworkError::OutOfMemory {
                needed_bytes: e.memory.total_bytes,
                capacity_bytes: self.system.system.memory_bytes,
            });
        }
        Ok(e)
    }

    /// Evaluation of a mapping that passed [`MoeMapping::validate`].
    pub(crate) fn evaluate_valid(
        &self,
        mapping: &MoeMapping,
        degrees: DerivedDegrees,
        gpus: u64,
        global_batch: u64,
    ) -> Result<MoeEvaluation, RailNetworkError> {
        let (terms, etp_schedule) = self.terms(mapping, &degrees, gpus)?;
        let memory = moe_memory(&self.memory_input(mapping, &degrees))?;
        let fits = memory.total_bytes <= self.system.system.memory_bytes;
        let tokens = global_batch as f64 * self.model.seq_len as f64;
        let tokens_per_s_per_gpu = tokens / terms.step_time_s / gpus as f64;
        let flop_per_s = tokens_per_s_per_gpu * self.flop_per_token;
        let tokens_per_s_per_gpu = check_finite_result("tokens/s/GPU", tokens_per_s_per_gpu)?;
        let flop_per_s = check_finite_result("model FLOP/s per GPU", flop_per_s)?;
        Ok(MoeEvaluation {
            mapping: *mapping,
            degrees,
            terms,
            etp_schedule,
            memory,
            fits,
            tokens_per_s_per_gpu,
            model_tflop_per_s_per_gpu: flop_per_s / 1e12,
            mfu: flop_per_s / self.system.system.peak_flop_per_s,
        })
    }

    /// What the memory model needs for a mapping.
    fn memory_input<'a>(
        &'a self,
        mapping: &'a MoeMapping,
        degrees: &'a DerivedDegrees,
    ) -> MemoryInput<'a> {
        MemoryInput {
            model: &self.model,
            mapping,
            degrees,
            expert_imbalance: self.expert_imbalance(mapping.ep),
            reserve_bytes: self.options.memory_reserve_bytes,
            param_sharding: self.options.param_sharding,
            pipeline_schedule: self.options.pipeline_schedule,
            optimizer_offload_fraction: self.options.optimizer_offload_fraction,
            activation_offload_fraction: self.options.activation_offload_fraction,
            bf16_optimizer_moments: self.options.bf16_optimizer_moments,
            bf16_logits: self.options.bf16_logits,
        }
    }

    /// Checks the rules the pipeline schedule adds to [`MoeMapping::validate`]: `DualPipe`
    /// needs `vp = 1`, an even `pp` and an even micro-batch count of at least `pp`.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] naming the field.
    pub fn check_schedule(
        &self,
        mapping: &MoeMapping,
        degrees: &DerivedDegrees,
    ) -> Result<(), RailNetworkError> {
        if self.options.pipeline_schedule != PipelineSchedule::DualPipe {
            return Ok(());
        }
        if mapping.vp != 1 {
            return Err(InputError::SizeMismatch {
                what: "vp under DualPipe (one chunk per direction)",
                expected: 1,
                actual: mapping.vp,
            }
            .into());
        }
        comm_cost_model::check_divides("pp must be even under DualPipe", mapping.pp, 2)?;
        comm_cost_model::check_divides(
            "the micro-batch count must be even under DualPipe",
            degrees.micro_batches,
            2,
        )?;
        if degrees.micro_batches < mapping.pp {
            return Err(InputError::SizeMismatch {
                what: "micro-batches under DualPipe (at least pp)",
                expected: mapping.pp,
                actual: degrees.micro_batches,
            }
            .into());
        }
        Ok(())
    }

    /// The terms of a valid mapping.
    fn terms(
        &self,
        mapping: &MoeMapping,
        d: &DerivedDegrees,
        gpus: u64,
    ) -> Result<(StepTerms, Option<Schedule>), RailNetworkError> {
        let model = &self.model;
        let sys = &self.system.system;
        let eff = &self.options.efficiency;
        let imbalance = self.expert_imbalance(mapping.ep);
        let (tp, cp, pp, vp) = (
            mapping.tp as f64,
            mapping.cp as f64,
            mapping.pp as f64,
            mapping.vp as f64,
        );
        let (b, s, h) = (
            mapping.micro_batch as f64,
            model.seq_len as f64,
            model.hidden as f64,
        );
        let m = d.micro_batches as f64;
        let dp = d.dp as f64;
        let fp8 = model.precision == Precision::Fp8;
        let (gemm_peak, gemm_efficiency) = if fp8 {
            (self.system.fp8_peak_flop_per_s, eff.fp8_gemm_efficiency)
        } else {
            (sys.peak_flop_per_s, eff.gemm_efficiency)
        };
        // SMs held by overlapped communication kernels are lost to compute.
        let sm_share =
            self.system.sms.saturating_sub(self.options.comm_sms) as f64 / self.system.sms as f64;
        let gemm_rate = gemm_peak * gemm_efficiency * sm_share;
        let bf16_rate = sys.peak_flop_per_s * eff.gemm_efficiency * sm_share;
        let score_rate = bf16_rate / eff.attention_slowdown;
        // Ridge point in tokens: FLOP per weight byte of a skinny GEMM is about 2n / bytes.
        let weight_bytes = if fp8 { 1.0 } else { 2.0 };
        let ridge = gemm_peak * weight_bytes / (2.0 * self.system.hbm_bytes_per_s);

        // Tokens of one micro-batch on one GPU (sequence-parallel shard).
        let tokens = b * s / (tp * cp);
        let f = self.layer_flops();
        // Tokens each expert instance sees per micro-batch on the busiest rank.
        let per_expert = if model.is_moe() {
            dp * b * s * model.top_k as f64 / (model.experts as f64 * d.edp as f64) * imbalance
        } else {
            0.0
        };
        let expert_rate = gemm_rate * ComputeEfficiency::roofline(per_expert, ridge);
        let passes = if mapping.recompute == Recompute::Full {
            4.0
        } else {
            3.0
        };
        // Selective recomputation re-runs MLA's up-projections (one more forward of them) and
        // the norms and activation functions, which are memory bound: BF16 input read and
        // output written at HBM speed (a norm moves 2 h elements, a gated activation 3 f).
        let selective = mapping.recompute == Recompute::Selective;
        let hbm = self.system.hbm_bytes_per_s;
        let act = |f: f64| if model.gated_ffn { 3.0 * f } else { 2.0 * f };
        let on = if selective { 1.0 } else { 0.0 };
        let recompute_gemm = on * f.up_projection;
        let norm_s = on * tokens * 2.0 * 2.0 * h / hbm;
        let act_s = |f: f64| on * tokens * 2.0 * act(f) / hbm;
        // Forward+backward seconds per micro-batch of one layer of each kind.
        let attn =
            passes * tokens * (f.attention_gemm / gemm_rate + f.attention_score / score_rate)
                + tokens * recompute_gemm / gemm_rate
                + norm_s;
        let attn_score_only = passes * tokens * f.attention_score / score_rate;
        let dense =
            passes * tokens * f.dense_ffn / gemm_rate + norm_s + act_s(model.dense_ffn as f64);
        let moe_dense = passes * tokens * f.moe_dense / gemm_rate
            + if model.is_moe() {
                norm_s + act_s(model.shared_ffn as f64)
            } else {
                0.0
            };
        let routed = if model.is_moe() {
            passes * tokens * f.routed * imbalance / expert_rate
                + act_s(model.expert_ffn as f64 / mapping.etp as f64)
                    * model.top_k as f64
                    * imbalance
        } else {
            0.0
        };
        let logits = 3.0 * tokens * 2.0 * h * model.vocab as f64 / bf16_rate;

        // Busiest stage: its own layers (MoE first), or an even share of everything. The MTP
        // modules (blocks like the last layer, a 2h x h projection, one more head pass) sit on
        // the last stage: part of the stage when pp = 1, of the even share otherwise.
        let moe_layers = model.moe_layers() as f64;
        let all = model.layers as f64;
        let stage = d.stage_layers as f64;
        let stage_moe = stage.min(moe_layers);
        let stage_dense = stage - stage_moe;
        let mtp = model.mtp_modules as f64;
        let (mtp_dense, mtp_routed, mtp_moe) = if model.is_moe() {
            (moe_dense, routed, mtp)
        } else {
            (dense, 0.0, 0.0)
        };
        let mtp_proj = passes * tokens * 4.0 * h * h / gemm_rate;
        let mtp_all = (
            mtp * attn,
            mtp * (mtp_dense + mtp_proj),
            mtp * mtp_routed,
            mtp * logits,
        );
        let last = if mapping.pp == 1 { 1.0 } else { 0.0 };
        let own = (
            stage * attn + last * mtp_all.0,
            stage_dense * dense + stage_moe * moe_dense + last * mtp_all.1,
            stage_moe * routed + last * mtp_all.2,
            last * (logits + mtp_all.3),
        );
        let share = (
            (all * attn + mtp_all.0) / pp,
            ((all - moe_layers) * dense + moe_layers * moe_dense + mtp_all.1) / pp,
            (moe_layers * routed + mtp_all.2) / pp,
            (logits + mtp_all.3) / pp,
        );
        let sum = |x: (f64, f64, f64, f64)| x.0 + x.1 + x.2 + x.3;
        let (busiest, layers_used, moe_used) = if sum(share) > sum(own) {
            (share, (all + mtp) / pp, (moe_layers + mtp_moe) / pp)
        } else {
            (own, stage + last * mtp, stage_moe + last * mtp_moe)
        };
        let t_mb = sum(busiest);
        let microbatch_compute_s = check_positive("micro-batch compute time (s)", t_mb)?;

        // Tensor parallelism (sequence parallel): gathered size b s h 2 / cp per collective.
        let lat = sys.latency_s;
        let k = self.system.job_hb_domain(gpus);
        let (tp_in, tp_out) = MoeMapping::hb_part(1, mapping.tp, k);
        let tp_grid = grid(tp_in, tp_out, sys);
        let tp_bytes = b * s * h * 2.0 / cp;
        let tp_one = if mapping.tp > 1 {
            ag_time(tp_bytes, &tp_grid) + lat * (tp - 1.0)
        } else {
            0.0
        };
        let per_block = if mapping.recompute == Recompute::Full {
            6.0
        } else {
            4.0
        };
        // Attention in every layer, dense FFN in dense layers, shared experts in MoE layers;
        // routed experts with etp = 1 take sequence-parallel tokens straight into the dispatch
        // (Parm's terms cover etp > 1).
        let shared_blocks = if model.shared_ffn > 0 { moe_used } else { 0.0 };
        let tp_blocks = layers_used + (layers_used - moe_used) + shared_blocks;
        let tp_comm_s = m * tp_blocks * per_block * tp_one;

        // Context parallelism: 3 (cp - 1) key/value chunks per layer, overlapped with scores.
        let (_, cp_out) = MoeMapping::hb_part(mapping.tp, mapping.cp, k);
        let cp_bw = if cp_out > 1 {
            sys.network_bytes_per_s
        } else {
            sys.hb_bytes_per_s
        };
        let kv_chunk = b * (s / cp) * kv_elements_per_token(model) / tp * 2.0;
        let cp_layer = if mapping.cp > 1 {
            3.0 * (cp - 1.0) * (kv_chunk / cp_bw + lat)
        } else {
            0.0
        };
        let cp_comm_s = m * layers_used * (cp_layer - attn_score_only).max(0.0);

        // Expert parallelism.
        let a2a_passes = if mapping.recompute == Recompute::Full {
            3.0
        } else {
            2.0
        };
        let (ep_layer, parm_baseline_layer, schedule) = if !model.is_moe() {
            (0.0, 0.0, None)
        } else if mapping.etp == 1 {
            (self.dispatch_combine_s(mapping, tokens, k)?, 0.0, None)
        } else {
            let (chosen, baseline, schedule) = self.parm_layer_s(mapping, k)?;
            // Parm's terms are one forward pass; backward mirrors them.
            (chosen / 2.0, baseline / 2.0, Some(schedule))
        };
        // An overlapped all-to-all hides behind compute that runs at the same time (DualPipe
        // pairs one micro-batch's dispatch and combine with another's forward or backward);
        // what exceeds the step's compute stays exposed.
        let ep_total = m * moe_used * a2a_passes * ep_layer * imbalance;
        let ep_comm_s =
            ep_total - (self.options.a2a_overlap * ep_total).min(m * microbatch_compute_s);
        let parm_baseline_s = m * moe_used * a2a_passes * parm_baseline_layer * imbalance;

        // Pipeline: fill and drain messages of one micro-batch's boundary activations.
        let (pp_in, _) = MoeMapping::hb_part(gpus / mapping.pp, mapping.pp, k);
        let pp_bw = if pp_in == mapping.pp {
            sys.hb_bytes_per_s
        } else {
            sys.network_bytes_per_s
        };
        let pp_comm_s = if mapping.pp > 1 {
            2.0 * (pp - 1.0) * (tokens * h * 2.0 / pp_bw + lat)
        } else {
            0.0
        };
        let bubble_s = match self.options.pipeline_schedule {
            PipelineSchedule::OneFOneB => (pp - 1.0) / vp * microbatch_compute_s,
            // DeepSeek-V3 Table 2: (pp/2 - 1)(F&B + B - 3W), with F one forward pass of the
            // stage, B the rest of the micro-batch (backward and recomputation), W (weight
            // gradients) one forward's worth, and F&B = F + B (the overlapped pair's compute).
            PipelineSchedule::DualPipe => {
                let f = microbatch_compute_s / passes;
                let b = microbatch_compute_s - f;
                (pp / 2.0 - 1.0).max(0.0) * (f + 2.0 * b - 3.0 * f).max(0.0)
            }
        };

        // Data parallelism: ZeRO-1 syncs once per step, FSDP every micro-batch; DualPipe
        // holds (and syncs) two copies of the stage's parameters.
        let copies = match self.options.pipeline_schedule {
            PipelineSchedule::OneFOneB => 1.0,
            PipelineSchedule::DualPipe => 2.0,
        };
        let (dense_params, expert_params) = stage_parameters(model, mapping, d);
        let dense_group = d.dp.saturating_mul(mapping.cp);
        let (dg_in, dg_out) = MoeMapping::hb_part(mapping.tp, dense_group, k);
        let (eg_in, eg_out) = MoeMapping::hb_part(mapping.etp.saturating_mul(mapping.ep), d.edp, k);
        let sync = |params: f64, g_in: u64, g_out: u64| -> f64 {
            if g_in * g_out <= 1 {
                return 0.0;
            }
            let g = grid(g_in, g_out, sys);
            let steps = (g_in + g_out - 2) as f64 * lat;
            let rs = ag_time(copies * params * 4.0, &g) + steps;
            let ag = ag_time(copies * params * 2.0, &g) + steps;
            let (fwd, bwd) = (microbatch_compute_s / 3.0, microbatch_compute_s * 2.0 / 3.0);
            match self.options.param_sharding {
                ParamSharding::DistributedOptimizer => (rs - bwd).max(0.0) + (ag - fwd).max(0.0),
                ParamSharding::Fsdp => m * ((ag - fwd).max(0.0) + (ag + rs - bwd).max(0.0)),
                ParamSharding::FsdpKeepGathered => m * ((ag - fwd).max(0.0) + (rs - bwd).max(0.0)),
            }
        };
        let dp_comm_s = sync(dense_params, dg_in, dg_out) + sync(expert_params, eg_in, eg_out);
        // Adam on the local shard at HBM speed; the offloaded part crosses the host link
        // (FP32 gradients out, BF16 weights back) and is stepped by the CPU at host-memory
        // speed. Either way it reads and writes the FP32 master and both moments, reads the
        // FP32 gradient and writes the BF16 weight: 30 bytes per parameter (22 with BF16
        // moments).
        let adam = if self.options.bf16_optimizer_moments {
            22.0
        } else {
            30.0
        };
        let shard = dense_params / dense_group.max(1) as f64 + expert_params / d.edp.max(1) as f64;
        let off = self.options.optimizer_offload_fraction;
        let optimizer_s = shard * (1.0 - off) * adam / self.system.hbm_bytes_per_s
            + shard
                * off
                * (6.0 / self.system.host_bytes_per_s + adam / self.system.host_memory_bytes_per_s);
        // Activation offload: a micro-batch's offloaded activations go out during its forward
        // pass and come back during its backward pass; only what exceeds them is exposed.
        let offload_s = if self.options.activation_offload_fraction > 0.0 {
            let moved = self.options.activation_offload_fraction
                * activation_bytes_per_microbatch(&self.memory_input(mapping, d))
                / self.system.host_bytes_per_s;
            m * ((moved - microbatch_compute_s / passes).max(0.0)
                + (moved - microbatch_compute_s * (passes - 1.0) / passes).max(0.0))
        } else {
            0.0
        };

        let compute = m * microbatch_compute_s;
        let step_time_s = compute
            + bubble_s
            + tp_comm_s
            + cp_comm_s
            + ep_comm_s
            + pp_comm_s
            + dp_comm_s
            + optimizer_s
            + offload_s;
        let step_time_s = check_positive("step time (s)", step_time_s)?;
        Ok((
            StepTerms {
                attention_compute_s: m * busiest.0,
                dense_compute_s: m * busiest.1,
                expert_compute_s: m * busiest.2,
                logits_compute_s: m * busiest.3,
                microbatch_compute_s,
                bubble_s,
                tp_comm_s,
                cp_comm_s,
                ep_comm_s,
                parm_baseline_s,
                pp_comm_s,
                dp_comm_s,
                optimizer_s,
                offload_s,
                step_time_s,
            },
            schedule,
        ))
    }

    /// One dispatch plus one combine of one MoE layer and micro-batch (etp = 1), seconds,
    /// before the imbalance factor.
    fn dispatch_combine_s(
        &self,
        mapping: &MoeMapping,
        tokens: f64,
        hb_domain: u64,
    ) -> Result<f64, RailNetworkError> {
        let model = &self.model;
        let sys = &self.system.system;
        if mapping.ep == 1 {
            return Ok(0.0);
        }
        let copies = distinct_ranks(model.experts, model.top_k, mapping.ep);
        let (ep_in, _) = MoeMapping::hb_part(mapping.etp, mapping.ep, hb_domain);
        let ep = mapping.ep as f64;
        let inside = (ep_in as f64 - 1.0) / ep;
        let across = (ep - ep_in as f64) / ep;
        let h = model.hidden as f64;
        let dispatch_bytes = if model.precision == Precision::Fp8 {
            1.0 + 4.0 / 128.0
        } else {
            2.0
        };
        let fit = self
            .options
            .ep_all_to_all_fit
            .filter(|f| f.ep == mapping.ep && mapping.etp == 1);
        let mut total = 0.0;
        for bytes_per_element in [dispatch_bytes, 2.0] {
            let volume = tokens * copies * h * bytes_per_element;
            if let Some(fit) = fit {
                // The measured call: what one rank sends to the others of its group.
                total += fit.alpha_s + fit.beta_s_per_byte * volume * (inside + across);
                continue;
            }
            let (hb, net) = (volume * inside, volume * across);
            let t = match self.options.fabric {
                FabricKind::RailOptimized => {
                    (hb / sys.hb_bytes_per_s).max(net / sys.network_bytes_per_s)
                }
                FabricKind::RailOnly => {
                    (hb + net) / sys.hb_bytes_per_s + net / sys.network_bytes_per_s
                }
            };
            total += t + sys.latency_s;
        }
        Ok(check_finite_result("EP all-to-all time (s)", total)?)
    }

    /// Parm's chosen and baseline schedule times of one MoE layer (forward, both all-to-alls),
    /// seconds, with alpha-beta costs derived from the system.
    fn parm_layer_s(
        &self,
        mapping: &MoeMapping,
        hb_domain: u64,
    ) -> Result<(f64, f64, Schedule), RailNetworkError> {
        let model = &self.model;
        let sys = &self.system.system;
        let usize_of = |what: &'static str, v: u64| {
            usize::try_from(v).map_err(|_| InputError::Overflow { what })
        };
        let group = mapping.ep.saturating_mul(mapping.etp);
        // Parm's MP group holds the same B L tokens: the ETP group's sequence-parallel shards
        // (`b s / (tp cp)` is whole: the mapping passed validation).
        let shard = model.seq_len / mapping.tp.saturating_mul(mapping.cp).max(1);
        let tokens_group = comm_cost_model::checked_product(
            "micro_batch * s / (tp cp) * etp",
            &[mapping.micro_batch, shard, mapping.etp],
        )?;
        let layer = ParmLayer {
            p: usize_of("ep etp", group)?,
            n_mp: usize_of("etp", mapping.etp)?,
            n_ep: usize_of("ep", mapping.ep)?,
            n_esp: usize_of("etp", mapping.etp)?,
            b: 1,
            l: usize_of("tokens per ETP group", tokens_group)?,
            m: usize_of("hidden size", model.hidden)?,
            h: usize_of("expert FFN size", model.expert_ffn)?,
            e: usize_of("experts", model.experts)?,
            k: usize_of("top_k", model.top_k)?,
            f: 1.0,
            bytes_per_element: 2.0,
        };
        let lat = sys.latency_s;
        // Per-byte cost of an all-to-all over `n` ranks with stride `inner`.
        let a2a_cost = |inner: u64, n: u64| -> Result<AlphaBeta, InputError> {
            let (inside, _) = MoeMapping::hb_part(inner, n, hb_domain);
            let nf = n as f64;
            let beta = (((inside as f64) - 1.0) / nf / sys.hb_bytes_per_s)
                .max((nf - inside as f64) / nf / sys.network_bytes_per_s);
            AlphaBeta::new(lat, beta)
        };
        // Ring collectives over the ETP group (innermost): (n-1)/n of the argument per link.
        let (_, e_out) = MoeMapping::hb_part(1, mapping.etp, hb_domain);
        let etp_bw = if e_out > 1 {
            sys.network_bytes_per_s
        } else {
            sys.hb_bytes_per_s
        };
        let n = mapping.etp as f64;
        let ag = AlphaBeta::new(lat * (n - 1.0), (n - 1.0) / n / etp_bw)?;
        let ar = AlphaBeta::new(2.0 * lat * (n - 1.0), 2.0 * (n - 1.0) / n / etp_bw)?;
        let costs = ParmCollectiveCosts {
            ag_esp: ag,
            ar_esp: ar,
            a2a_ep: a2a_cost(mapping.etp, mapping.ep)?,
            a2a_ep_esp: a2a_cost(1, group)?,
            ag_mp: ag,
            saa: None,
        };
        let t = parm_times(&layer, &costs)?;
        Ok((t.parm_s, t.baseline.total_s, t.choice))
    }
}

/// Key and value elements per token a context-parallel ring sends.
fn kv_elements_per_token(model: &MoeModel) -> f64 {
    match model.attention {
        crate::moe::model::Attention::Gqa {
            kv_heads, head_dim, ..
        } => 2.0 * (kv_heads * head_dim) as f64,
        crate::moe::model::Attention::Mla {
            heads,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
            ..
        } => heads as f64 * (qk_nope_head_dim + qk_rope_head_dim + v_head_dim) as f64,
    }
}

/// Expected distinct EP ranks a token's `k` experts live on, experts spread `E/ep` per rank and
/// chosen uniformly: `ep (1 - C(E - E/ep, k) / C(E, k))`.
pub(crate) fn distinct_ranks(experts: u64, top_k: u64, ep: u64) -> f64 {
    if ep <= 1 {
        return 1.0;
    }
    let e = experts as f64;
    let others = e - (experts / ep) as f64;
    let mut miss = 1.0;
    for i in 0..top_k {
        let i = i as f64;
        if others - i <= 0.0 {
            miss = 0.0;
            break;
        }
        miss *= (others - i) / (e - i);
    }
    ep as f64 * (1.0 - miss)
}

/// `(dense, expert)` parameters held by one GPU of the busiest stage.
pub(crate) fn stage_parameters(
    model: &MoeModel,
    mapping: &MoeMapping,
    d: &DerivedDegrees,
) -> (f64, f64) {
    let h = model.hidden as f64;
    // With one stage, it also holds the MTP modules (blocks like the last layer).
    let mtp = if mapping.pp == 1 {
        model.mtp_modules as f64
    } else {
        0.0
    };
    let mtp_moe = if model.is_moe() { mtp } else { 0.0 };
    let stage = (d.stage_layers as f64).min(model.layers as f64) + mtp;
    let stage_moe = stage.min(model.moe_layers() as f64 + mtp_moe);
    let stage_dense = stage - stage_moe;
    let mats = model.ffn_matrices();
    let attention = stage * (model.attention_weights_per_layer() + h);
    let dense_ffn = stage_dense * (mats * h * model.dense_ffn as f64 + h);
    let moe_dense = stage_moe * (mats * h * model.shared_ffn as f64 + h * model.experts as f64 + h);
    let embedding = model.vocab as f64 * h;
    let mtp_projection = mtp * (2.0 * h * h + 2.0 * h);
    let ends = mtp_projection
        + if mapping.pp == 1 && !model.tied_embeddings {
            2.0 * embedding
        } else {
            embedding
        };
    let dense = (attention + dense_ffn + moe_dense + ends) / mapping.tp as f64;
    let expert = if model.is_moe() {
        stage_moe * (model.experts / mapping.ep) as f64 * model.expert_weights()
            / mapping.etp as f64
    } else {
        0.0
    };
    (dense, expert)
}

fn grid(x: u64, y: u64, sys: &crate::system::SystemSpec) -> TwoTierGrid {
    TwoTierGrid {
        x: usize::try_from(x.max(1)).unwrap_or(usize::MAX),
        y: usize::try_from(y.max(1)).unwrap_or(usize::MAX),
        hb_bytes_per_s: sys.hb_bytes_per_s,
        network_bytes_per_s: sys.network_bytes_per_s,
    }
}

/// Hierarchical all-gather time (rail-only Eq. 1); the inputs are validated upstream, so an
/// error would only mean an absurd grid and is reported as an infinitely slow collective
/// (rejected by the final finiteness check).
fn ag_time(bytes: f64, grid: &TwoTierGrid) -> Seconds {
    hierarchical_all_gather_time_s(bytes, grid).unwrap_or(f64::INFINITY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moe::model::Attention;
    use crate::moe::{MoeSearchOptions, moe_model_preset, search_mappings, training_system_preset};
    use crate::system::SystemSpec;

    fn tiny() -> (MoeModel, TrainingSystem, StepOptions) {
        let model = MoeModel {
            layers: 2,
            hidden: 1024,
            attention: Attention::Gqa {
                heads: 8,
                kv_heads: 8,
                head_dim: 128,
            },
            dense_ffn: 0,
            expert_ffn: 2048,
            experts: 4,
            top_k: 1,
            shared_ffn: 0,
            first_dense_layers: 0,
            gated_ffn: true,
            vocab: 1000,
            tied_embeddings: false,
            seq_len: 1024,
            precision: Precision::Bf16,
            mtp_modules: 0,
        };
        let system = TrainingSystem {
            system: SystemSpec {
                hb_domain: 8,
                peak_flop_per_s: 1e15,
                hb_bytes_per_s: 1e11,
                network_bytes_per_s: 1e10,
                memory_bytes: 80e9,
                latency_s: 0.0,
            },
            hbm_bytes_per_s: 1e12,
            fp8_peak_flop_per_s: 2e15,
            sms: 100,
            host_bytes_per_s: 1e10,
            host_memory_bytes_per_s: 1e10,
        };
        let options = StepOptions {
            efficiency: ComputeEfficiency {
                gemm_efficiency: 0.5,
                fp8_gemm_efficiency: 0.5,
                attention_slowdown: 2.0,
            },
            expert_imbalance: 1.0,
            fabric: FabricKind::RailOptimized,
            a2a_overlap: 0.0,
            memory_reserve_bytes: 0.0,
            ..StepOptions::default()
        };
        (model, system, options)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-300)
    }

    #[test]
    fn hand_computed_step_time() {
        // Two GPUs in one HB domain, ep = 2 (dp = 2, edp = 1), one micro-batch of one sequence.
        let (model, system, options) = tiny();
        let sm = StepModel::new(model, system, options).unwrap();
        let mapping = MoeMapping {
            tp: 1,
            cp: 1,
            pp: 1,
            vp: 1,
            ep: 2,
            etp: 1,
            micro_batch: 1,
            recompute: Recompute::None,
        };
        let e = sm.evaluate(&mapping, 2, 2).unwrap();
        let t = e.terms;
        // GEMMs at 0.5 x 1e15, scores at half that; 1024 tokens per GPU, x3 for fwd + bwd.
        let gemm = 5e14;
        let score = 2.5e14;
        let tokens = 1024.0;
        // Attention: 4 h^2 weights (q = kv = 1024), 2 FLOP each; scores 4 s (heads hd).
        let attn_layer =
            3.0 * tokens * (2.0 * 4.0 * 1024.0 * 1024.0 / gemm + 4.0 * 1024.0 * 1024.0 / score);
        assert!(close(t.attention_compute_s, 2.0 * attn_layer));
        // Router: 2 h E per token.
        let router_layer = 3.0 * tokens * 2.0 * 1024.0 * 4.0 / gemm;
        assert!(close(t.dense_compute_s, 2.0 * router_layer));
        // Experts: 2 k (3 h f) per token; 2 x 1024 x 1 / 4 = 512 tokens per expert against a
        // ridge point of 1e15 x 2 / (2 x 1e12) = 1000 tokens: 512 / 1512 of the GEMM rate.
        let expert_rate = gemm * 512.0 / 1512.0;
        let expert_layer = 3.0 * tokens * 2.0 * 3.0 * 1024.0 * 2048.0 / expert_rate;
        assert!(close(t.expert_compute_s, 2.0 * expert_layer));
        // Logits: 2 h V per token at the BF16 GEMM rate.
        let logits = 3.0 * tokens * 2.0 * 1024.0 * 1000.0 / gemm;
        assert!(close(t.logits_compute_s, logits));
        let t_mb = 2.0 * (attn_layer + router_layer + expert_layer) + logits;
        assert!(close(t.microbatch_compute_s, t_mb));
        // EP: top-1 of 4 experts on 2 ranks is one copy per token, half of it to the peer GPU
        // over NVLink: 1024 x 1024 x 2 bytes / 2 / 1e11 per all-to-all; dispatch and combine,
        // forward and backward, two MoE layers.
        let a2a = 1024.0 * 1024.0 * 2.0 / 2.0 / 1e11;
        assert!(close(t.ep_comm_s, 2.0 * 2.0 * 2.0 * a2a));
        assert_eq!(
            (t.tp_comm_s, t.cp_comm_s, t.pp_comm_s, t.bubble_s),
            (0.0, 0.0, 0.0, 0.0)
        );
        // DP: dense parameters = 2 (4 h^2 + h) attention + 2 (h E + h) MoE norms and routers
        // + 2 V h embedding and output; ring reduce-scatter of FP32 gradients and all-gather of
        // BF16 weights over 2 GPUs, each (1/2) x bytes / 1e11, minus the overlap windows.
        let h = 1024.0;
        let dense = 2.0 * (4.0 * h * h + h) + 2.0 * (h * 4.0 + h) + 2.0 * 1000.0 * h;
        let rs = 0.5 * dense * 4.0 / 1e11;
        let ag = 0.5 * dense * 2.0 / 1e11;
        let dp = (rs - t_mb * 2.0 / 3.0).max(0.0) + (ag - t_mb / 3.0).max(0.0);
        assert!(close(t.dp_comm_s + 1.0, dp + 1.0));
        // Optimizer: 30 bytes per parameter of the shard (dense / 2, all local experts) at HBM.
        let experts = 2.0 * 2.0 * 3.0 * h * 2048.0;
        assert!(close(t.optimizer_s, (dense / 2.0 + experts) * 30.0 / 1e12));
        let sum = 2.0 * t_mb / 2.0 * 1.0 + t.ep_comm_s + t.dp_comm_s + t.optimizer_s;
        assert!(close(t.step_time_s, sum));
        // Two sequences of 1024 tokens on 2 GPUs per step.
        assert!(close(e.tokens_per_s_per_gpu, 1024.0 / t.step_time_s));
    }

    #[test]
    fn a_measured_all_to_all_replaces_the_fabric_model_for_its_ep_degree() {
        // The setup of `hand_computed_step_time`: each dispatch or combine sends 1024 x 1024 x 2
        // bytes / 2 to the peer; four of them per MoE layer and micro-batch, two layers.
        let (model, system, options) = tiny();
        let mapping = MoeMapping {
            tp: 1,
            cp: 1,
            pp: 1,
            vp: 1,
            ep: 2,
            etp: 1,
            micro_batch: 1,
            recompute: Recompute::None,
        };
        let with = |fit: Option<EpAllToAllFit>| {
            let o = StepOptions {
                ep_all_to_all_fit: fit,
                ..options
            };
            let sm = StepModel::new(model, system, o).unwrap();
            sm.evaluate(&mapping, 2, 2).unwrap().terms.ep_comm_s
        };
        let sent = 1024.0 * 1024.0 * 2.0 / 2.0;
        let measured = EpAllToAllFit {
            ep: 2,
            alpha_s: 1e-4,
            beta_s_per_byte: 2e-11,
        };
        assert!(close(with(Some(measured)), 8.0 * (1e-4 + 2e-11 * sent)));
        // A fit taken on another EP degree leaves the fabric model in place.
        let other = EpAllToAllFit { ep: 4, ..measured };
        assert!(close(with(Some(other)), with(None)));
        assert!(close(with(None), 8.0 * sent / 1e11));
        // Bad fits are refused naming the field.
        for (bad, field) in [
            (EpAllToAllFit { ep: 1, ..measured }, "ep_all_to_all_fit.ep"),
            (
                EpAllToAllFit {
                    alpha_s: -1.0,
                    ..measured
                },
                "ep_all_to_all_fit.alpha_s",
            ),
            (
                EpAllToAllFit {
                    beta_s_per_byte: f64::NAN,
                    ..measured
                },
                "ep_all_to_all_fit.beta_s_per_byte",
            ),
        ] {
            let o = StepOptions {
                ep_all_to_all_fit: Some(bad),
                ..options
            };
            let err = o.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        }
        // And from JSON, unknown fields too.
        let json = r#"{"ep_all_to_all_fit": {"ep": 2, "alpha_s": 0.0, "beta_s_per_byte": 1e-11}}"#;
        let o: StepOptions = serde_json::from_str(json).unwrap();
        assert_eq!(o.ep_all_to_all_fit.map(|f| f.ep), Some(2));
        let typo = r#"{"ep_all_to_all_fit": {"ep": 2, "alpha": 0.0, "beta_s_per_byte": 1e-11}}"#;
        assert!(serde_json::from_str::<StepOptions>(typo).is_err());
    }

    #[test]
    fn bad_input_names_the_field() {
        let sm = StepModel::new(
            moe_model_preset("mixtral-8x7b").unwrap(),
            training_system_preset("h100").unwrap(),
            StepOptions::default(),
        )
        .unwrap();
        let ok = MoeMapping {
            tp: 1,
            cp: 1,
            pp: 4,
            vp: 8,
            ep: 8,
            etp: 1,
            micro_batch: 1,
            recompute: Recompute::None,
        };
        let what = |r: Result<MoeEvaluation, RailNetworkError>| match r {
            Err(RailNetworkError::Input(InputError::NotDivisible { what, .. })) => what,
            other => panic!("expected NotDivisible, got {other:?}"),
        };
        assert!(what(sm.evaluate(&MoeMapping { ep: 3, ..ok }, 64, 256)).contains("ep"));
        assert!(what(sm.evaluate(&ok, 66, 256)).contains("tp * cp * pp"));
        assert!(what(sm.evaluate(&MoeMapping { tp: 3, ..ok }, 96, 256)).contains("tp"));
        assert!(what(sm.evaluate(&ok, 64, 250)).contains("global batch"));
        assert!(matches!(
            sm.evaluate(&MoeMapping { tp: 0, ..ok }, 64, 256),
            Err(RailNetworkError::Input(InputError::CountTooSmall {
                what: "tp",
                ..
            }))
        ));
        let nan = StepOptions {
            expert_imbalance: f64::NAN,
            ..StepOptions::default()
        };
        assert!(matches!(
            sm.with_options(nan),
            Err(RailNetworkError::Input(InputError::NonFinite {
                what: "expert_imbalance",
                ..
            }))
        ));
        // A model that cannot fit anywhere: DeepSeek-V3 on 8 GPUs.
        let ds = StepModel::new(
            moe_model_preset("deepseek-v3").unwrap(),
            training_system_preset("h100").unwrap(),
            StepOptions::default(),
        )
        .unwrap();
        assert!(matches!(
            search_mappings(&ds, 8, 8, &MoeSearchOptions::default()),
            Err(RailNetworkError::NoFeasibleConfiguration { .. })
        ));
    }

    #[test]
    fn distinct_ranks_matches_small_cases() {
        // Top-2 of 8 experts on 8 ranks: always 2 distinct ranks.
        assert!((distinct_ranks(8, 2, 8) - 2.0).abs() < 1e-12);
        // Top-2 of 8 on 2 ranks: P(both on one rank) = 2 C(4,2) / C(8,2) = 12 / 28.
        assert!((distinct_ranks(8, 2, 2) - (2.0 - 12.0 / 28.0)).abs() < 1e-12);
        assert_eq!(distinct_ranks(8, 2, 1), 1.0);
    }

    #[test]
    fn parm_schedules_apply_when_etp_exceeds_one() {
        let sm = StepModel::new(
            moe_model_preset("mixtral-8x7b").unwrap(),
            training_system_preset("h100").unwrap(),
            StepOptions::default(),
        )
        .unwrap();
        let m = MoeMapping {
            tp: 2,
            cp: 1,
            pp: 4,
            vp: 1,
            ep: 4,
            etp: 2,
            micro_batch: 1,
            recompute: Recompute::None,
        };
        let e = sm.evaluate(&m, 64, 256).unwrap();
        assert!(e.etp_schedule.is_some());
        assert!(e.terms.parm_baseline_s >= e.terms.ep_comm_s);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            #[test]
            fn imbalance_and_bandwidth_are_monotone(
                imbalance in 1.0f64..4.0, scale in 1.0f64..8.0, ep_exp in 0u32..4, pp_exp in 0u32..3,
            ) {
                let model = moe_model_preset("mixtral-8x7b").unwrap();
                let mut system = training_system_preset("h100").unwrap();
                let m = MoeMapping { tp: 1, cp: 1, pp: 1 << pp_exp, vp: 1, ep: 1 << ep_exp, etp: 1,
                    micro_batch: 1, recompute: Recompute::Full };
                let base = StepModel::new(model, system, StepOptions::default()).unwrap()
                    .evaluate(&m, 64, 256).unwrap();
                let skewed = StepModel::new(model, system,
                    StepOptions { expert_imbalance: imbalance, ..StepOptions::default() }).unwrap()
                    .evaluate(&m, 64, 256).unwrap();
                prop_assert!(skewed.terms.step_time_s >= base.terms.step_time_s * (1.0 - 1e-12));
                system.system.network_bytes_per_s *= scale;
                system.system.hb_bytes_per_s *= scale;
                let fast = StepModel::new(model, system, StepOptions::default()).unwrap()
                    .evaluate(&m, 64, 256).unwrap();
                prop_assert!(fast.terms.step_time_s <= base.terms.step_time_s * (1.0 + 1e-12));
            }
        }
    }
}
