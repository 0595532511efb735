//! How a training job keeps its parameters and schedules its pipeline: the choices beside the
//! parallel degrees that change memory and step time.
//!
//! * [`ParamSharding`]: Megatron-LM's distributed optimizer (ZeRO-1: every GPU keeps its
//!   stage's BF16 weights and FP32 gradients, the optimizer state is sharded; Rajbhandari et
//!   al. 2020, *`ZeRO`*, §5), or fully sharded data parallelism (ZeRO-3: weights, gradients and
//!   optimizer state sharded; weights gathered layer by layer; Zhao et al. 2023, *`PyTorch`
//!   FSDP*, §3), re-sharding after the forward pass or keeping the gathered weights until the
//!   backward pass (`FSDP2`'s `reshard_after_forward = False`, the setting of `NeMo` `AutoModel`'s
//!   DeepSeek-V3 recipes).
//! * [`PipelineSchedule`]: 1F1B (interleaved when `vp > 1`; Narayanan et al. 2021 §2.2) or
//!   DeepSeek's `DualPipe` (DeepSeek-V3 report §3.2.1, Table 2: bubble
//!   `(pp/2 - 1)(F&B + B - 3W)`, two copies of the parameters, `pp + 1` micro-batches of
//!   activations).

use serde::{Deserialize, Serialize};

/// Where parameters, gradients and optimizer state live across the data-parallel ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamSharding {
    /// ZeRO-1 (Megatron-LM `--use-distributed-optimizer`): BF16 weights and FP32 gradients
    /// of the stage on every GPU, FP32 master weights and Adam moments sharded; one gradient
    /// reduce-scatter and one weight all-gather per step.
    #[default]
    DistributedOptimizer,
    /// ZeRO-3 / FSDP: everything sharded; per micro-batch the weights are all-gathered for
    /// the forward pass and again for the backward pass, and gradients reduce-scattered; two
    /// layers' gathered weights and gradients are resident at a time.
    Fsdp,
    /// FSDP that keeps the gathered weights from the forward to the backward pass (`FSDP2`
    /// `reshard_after_forward = False`): one all-gather and one reduce-scatter per
    /// micro-batch, the stage's BF16 weights resident.
    FsdpKeepGathered,
}

/// The pipeline schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineSchedule {
    /// 1F1B, interleaved over `vp` virtual stages: bubble `(pp - 1) / vp` micro-batch times.
    #[default]
    OneFOneB,
    /// `DualPipe`: micro-batches enter from both ends; needs `vp = 1`, an even `pp` and an
    /// even micro-batch count of at least `pp`.
    DualPipe,
}
