//! Memory of the busiest GPU of an MoE training mapping.
//!
//! * **Weights and gradients** ([`ParamSharding`]): under the distributed optimizer (ZeRO-1)
//!   6 bytes per parameter held (BF16 weights, FP32 gradient accumulation); under FSDP
//!   (ZeRO-3) 4 bytes per sharded parameter (the FP32 gradient shard) plus the gathered BF16
//!   weights and gradients of two layers (`fsdp`) or the stage's gathered BF16 weights and two
//!   layers' gradients (`fsdp_keep_gathered`). `DualPipe` holds two copies of the stage.
//! * **Optimizer**: 12 bytes per parameter (FP32 master weights and two Adam moments; 8 with
//!   BF16 moments, DeepSeek-V3 §3.3.3), sharded
//!   over the dense parameters' `dp cp` ranks and the expert parameters' `edp` ranks; the
//!   offloaded fraction lives in host memory.
//! * **Activations** per layer and micro-batch (BF16, sequence parallel, flash attention so no
//!   `s x s` scores), per token of the GPU's `b s / (tp cp)` shard, in elements: attention
//!   `2h + 2q + 2kv` (norm and projection inputs, Q, K, V, attention output; MLA stores its
//!   per-head Q, K, V); dense FFN `2h + 3f` gated (`2h + 2f` plain); MoE layer
//!   `2h + k x imbalance x (h + 3 f_e / etp)` plus the shared experts' FFN terms. Selective
//!   recomputation (norms, activation functions and MLA's up-projections re-run in the
//!   backward pass, as DeepSeek-V3 §3.3 and Megatron-Core's `--recompute-modules` do) drops the
//!   norm outputs (`2h -> h`), the activation outputs (`3f -> 2f`) and MLA's per-head tensors
//!   (stores the latents instead). Under full recomputation only the layer input `h`, plus one
//!   layer's full activations while it is recomputed. The first stage keeps `min(pp, m)`
//!   micro-batches in flight, times `1 + (pp - 1) / (pp vp)` when interleaved (Korthikanti et
//!   al. 2022 §4.2.3); `pp + 1` under `DualPipe` (DeepSeek-V3 Table 2). Activations are
//!   BF16, except that FP8 runs cache the inputs of their FP8 GEMMs (the FFN and expert
//!   tensors) in FP8, one byte each (DeepSeek-V3 §3.3.2; Transformer Engine keeps the FP8
//!   cast of a linear layer's input for its weight gradient); attention tensors stay BF16.
//!   The offloaded fraction of the activations lives in host memory.
//! * **All-to-all buffers**: one layer's dispatch and combine of one micro-batch.
//! * **Logits**: FP32 (or BF16) logits of one micro-batch, on the last stage (counted only when
//!   `pp = 1`; otherwise the first stage, with more micro-batches in flight, is the fuller).
//! * **Reserve**: [`crate::moe::StepOptions::memory_reserve_bytes`].

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::model::Recompute;
use crate::moe::mapping::{DerivedDegrees, MoeMapping};
use crate::moe::model::{Attention, MoeModel, Precision};
use crate::moe::step::stage_parameters;
use crate::moe::strategy::{ParamSharding, PipelineSchedule};
use comm_cost_model::check_finite_result;
use comm_cost_model::units::Bytes;

/// Memory of the busiest GPU, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoeMemory {
    /// Weights and gradients held on the GPU (see the module documentation per sharding).
    pub weights_and_gradients_bytes: Bytes,
    /// This GPU's shard of the FP32 optimizer state, less what is offloaded.
    pub optimizer_bytes: Bytes,
    /// Stored activations of the micro-batches in flight, less what is offloaded.
    pub activation_bytes: Bytes,
    /// All-to-all buffers and logits.
    pub buffer_bytes: Bytes,
    /// Reserve for context, communication buffers and fragmentation.
    pub reserve_bytes: Bytes,
    /// The sum.
    pub total_bytes: Bytes,
}

/// What [`moe_memory`] needs.
#[derive(Debug, Clone, Copy)]
pub struct MemoryInput<'a> {
    /// The model.
    pub model: &'a MoeModel,
    /// A mapping that passed [`MoeMapping::validate`].
    pub mapping: &'a MoeMapping,
    /// Its degrees.
    pub degrees: &'a DerivedDegrees,
    /// Busiest EP rank's tokens over the mean (at least 1).
    pub expert_imbalance: f64,
    /// Reserve, bytes.
    pub reserve_bytes: Bytes,
    /// Where parameters, gradients and optimizer state live.
    pub param_sharding: ParamSharding,
    /// The pipeline schedule.
    pub pipeline_schedule: PipelineSchedule,
    /// Fraction of the optimizer state in host memory, in [0, 1].
    pub optimizer_offload_fraction: f64,
    /// Fraction of the stored activations in host memory, in [0, 1].
    pub activation_offload_fraction: f64,
    /// Adam's moments in BF16: 8 bytes of optimizer state per parameter instead of 12.
    pub bf16_optimizer_moments: bool,
    /// Logits in BF16 (2 bytes) instead of FP32 (4).
    pub bf16_logits: bool,
}

impl<'a> MemoryInput<'a> {
    /// The defaults of [`crate::moe::StepOptions`] (ZeRO-1, 1F1B, nothing offloaded, no
    /// imbalance) with `reserve_bytes`.
    #[must_use]
    pub fn new(
        model: &'a MoeModel,
        mapping: &'a MoeMapping,
        degrees: &'a DerivedDegrees,
        reserve_bytes: Bytes,
    ) -> Self {
        Self {
            model,
            mapping,
            degrees,
            expert_imbalance: 1.0,
            reserve_bytes,
            param_sharding: ParamSharding::DistributedOptimizer,
            pipeline_schedule: PipelineSchedule::OneFOneB,
            optimizer_offload_fraction: 0.0,
            activation_offload_fraction: 0.0,
            bf16_optimizer_moments: false,
            bf16_logits: false,
        }
    }
}

/// Memory of the busiest GPU (see the module documentation for every term).
///
/// # Errors
///
/// [`RailNetworkError::Input`] (`NonFinite`) when the total overflows `f64` (a non-finite
/// imbalance, fraction or reserve).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::model::Recompute;
/// use rail_network::moe::{moe_memory, moe_model_preset, MemoryInput, MoeMapping, ParamSharding};
/// let model = moe_model_preset("mixtral-8x7b")?;
/// let mapping = MoeMapping { tp: 1, cp: 1, pp: 4, vp: 8, ep: 8, etp: 1, micro_batch: 1,
///     recompute: Recompute::None };
/// let degrees = mapping.validate(&model, 64, 256)?;
/// let zero1 = moe_memory(&MemoryInput::new(&model, &mapping, &degrees, 5e9))?;
/// assert!(zero1.total_bytes < 80e9);
/// let fsdp = moe_memory(&MemoryInput { param_sharding: ParamSharding::Fsdp,
///     ..MemoryInput::new(&model, &mapping, &degrees, 5e9) })?;
/// assert!(fsdp.weights_and_gradients_bytes < zero1.weights_and_gradients_bytes);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn moe_memory(input: &MemoryInput<'_>) -> Result<MoeMemory, RailNetworkError> {
    let (model, mapping, d) = (input.model, input.mapping, input.degrees);
    let (dense, expert) = stage_parameters(model, mapping, d);
    let dual = input.pipeline_schedule == PipelineSchedule::DualPipe;
    let copies = if dual { 2.0 } else { 1.0 };
    let dense_group = (d.dp as f64) * mapping.cp as f64;
    let shard = dense / dense_group + expert / d.edp.max(1) as f64;
    let held = copies * (dense + expert);
    // Two layers of the stage in flight (FSDP gathers one and prefetches the next).
    let layers = (d.stage_layers as f64).clamp(1.0, model.layers as f64);
    let two_layers = held * (2.0 / layers).min(1.0);
    let weights_and_gradients_bytes = match input.param_sharding {
        ParamSharding::DistributedOptimizer => 6.0 * held,
        ParamSharding::Fsdp => 4.0 * copies * shard + 4.0 * two_layers,
        ParamSharding::FsdpKeepGathered => 4.0 * copies * shard + 2.0 * held + 2.0 * two_layers,
    };
    let state = if input.bf16_optimizer_moments {
        8.0
    } else {
        12.0
    };
    let optimizer_bytes = state * shard * (1.0 - input.optimizer_offload_fraction);

    let activation_bytes = activation_bytes_per_microbatch(input)
        * in_flight(input)
        * (1.0 - input.activation_offload_fraction);
    let (tp, cp) = (mapping.tp as f64, mapping.cp as f64);
    let (b, s, h) = (
        mapping.micro_batch as f64,
        model.seq_len as f64,
        model.hidden as f64,
    );
    let tokens = b * s / (tp * cp);
    let a2a = if model.is_moe() {
        2.0 * 2.0 * tokens * model.top_k as f64 * h
    } else {
        0.0
    };
    let logit_bytes = if input.bf16_logits { 2.0 } else { 4.0 };
    let logits = if mapping.pp == 1 {
        logit_bytes * b * s / cp * model.vocab as f64 / tp
    } else {
        0.0
    };
    let buffer_bytes = a2a + logits;
    let total = weights_and_gradients_bytes
        + optimizer_bytes
        + activation_bytes
        + buffer_bytes
        + input.reserve_bytes;
    Ok(MoeMemory {
        weights_and_gradients_bytes,
        optimizer_bytes,
        activation_bytes,
        buffer_bytes,
        reserve_bytes: input.reserve_bytes,
        total_bytes: check_finite_result("memory per GPU (bytes)", total)?,
    })
}

/// Micro-batches whose activations the first stage holds at once.
fn in_flight(input: &MemoryInput<'_>) -> f64 {
    let (mapping, d) = (input.mapping, input.degrees);
    if input.pipeline_schedule == PipelineSchedule::DualPipe {
        return (mapping.pp + 1).min(d.micro_batches.max(1)) as f64;
    }
    let in_flight = mapping.pp.min(d.micro_batches.max(1)) as f64;
    let interleave = if mapping.vp > 1 {
        let (p, v) = (mapping.pp as f64, mapping.vp as f64);
        1.0 + (p - 1.0) / (p * v)
    } else {
        1.0
    };
    in_flight * interleave
}

/// Stored activations of one micro-batch on the busiest stage, bytes (before offloading).
pub(crate) fn activation_bytes_per_microbatch(input: &MemoryInput<'_>) -> f64 {
    let (model, mapping, d) = (input.model, input.mapping, input.degrees);
    let (tp, cp) = (mapping.tp as f64, mapping.cp as f64);
    let (b, s, h) = (
        mapping.micro_batch as f64,
        model.seq_len as f64,
        model.hidden as f64,
    );
    let tokens = b * s / (tp * cp);
    // FP8 runs cache their FP8 GEMM inputs (FFN and expert tensors) in one byte.
    let ffn_bytes = if model.precision == Precision::Fp8 {
        1.0
    } else {
        2.0
    };
    // Selective recomputation re-runs norms and activation functions (and MLA's
    // up-projections) in the backward pass, so their outputs are not stored.
    let selective = mapping.recompute == Recompute::Selective;
    let norm_inputs = if selective { h } else { 2.0 * h };
    // Head-sharded tensors are per (s / cp) tokens and 1/tp of the heads: the same
    // tokens x (dim / tp) product as the sequence-parallel shard.
    let attention = 2.0
        * match model.attention {
            Attention::Gqa {
                heads,
                kv_heads,
                head_dim,
            } => {
                let (q, kv) = ((heads * head_dim) as f64, (kv_heads * head_dim) as f64);
                norm_inputs + 2.0 * q + 2.0 * kv
            }
            Attention::Mla {
                heads,
                q_lora_rank,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
            } => {
                let n = heads as f64;
                let out = n * v_head_dim as f64;
                if selective {
                    // The latents, the shared rotary key and the attention output.
                    norm_inputs + (q_lora_rank + kv_lora_rank + qk_rope_head_dim) as f64 + out
                } else {
                    let qk = n * (qk_nope_head_dim + qk_rope_head_dim) as f64;
                    norm_inputs + 2.0 * qk + n * v_head_dim as f64 + out
                }
            }
        };
    // fc1 input, fc1 output(s), activation output (recomputed under selective).
    let up = if model.gated_ffn { 2.0 } else { 1.0 };
    let act = if selective { 0.0 } else { 1.0 };
    let ffn = |f: f64| ffn_bytes * (norm_inputs + (up + act) * f);
    let dense_layer = attention + ffn(model.dense_ffn as f64);
    let shared = if model.shared_ffn > 0 {
        ffn(model.shared_ffn as f64) - ffn_bytes * norm_inputs
    } else {
        0.0
    };
    let moe_layer = attention
        + ffn_bytes * norm_inputs
        + shared
        + ffn_bytes
            * model.top_k as f64
            * input.expert_imbalance
            * (h + (up + act) * model.expert_ffn as f64 / mapping.etp as f64);
    let stage = (d.stage_layers as f64).min(model.layers as f64);
    let stage_moe = stage.min(model.moe_layers() as f64);
    let stage_dense = stage - stage_moe;
    let full_layer = if model.is_moe() {
        moe_layer
    } else {
        dense_layer
    };
    let per_token = match mapping.recompute {
        Recompute::Full => 2.0 * stage * h + full_layer,
        Recompute::None | Recompute::Selective => stage_dense * dense_layer + stage_moe * moe_layer,
    };
    tokens * per_token
}
