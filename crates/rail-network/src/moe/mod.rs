//! End-to-end MoE training: models, mappings, memory, step time term by term, and the search
//! over every valid mapping.
//!
//! | module | what | sources |
//! |---|---|---|
//! | [`model`], [`presets`] | MoE and dense decoders, parameters and FLOPs per token by component | model papers and configs (see [`presets`]) |
//! | [`cluster`] | H100, H800, H200, B200, GB200 NVL72 training systems | NVIDIA datasheets; DeepSeek-V3 report |
//! | [`mapping`] | TP, CP, PP+VP, DP, EP, ETP, expert DP with MoE parallel folding; validity | Liu et al. 2025 (MoE Parallel Folding); Megatron-LM |
//! | [`efficiency`] | GEMM efficiency, attention slowdown, roofline of small expert GEMMs | FlashAttention-3; datasheets |
//! | [`memory`] | memory of the busiest GPU | Korthikanti et al. 2022; Megatron-LM distributed optimizer; `ZeRO`; `PyTorch` FSDP |
//! | [`strategy`] | parameter sharding (ZeRO-1, FSDP) and pipeline schedule (1F1B, `DualPipe`) | `ZeRO`; `PyTorch` FSDP; DeepSeek-V3 §3.2 |
//! | [`step`] | the step time, term by term, with Parm's schedules when `etp > 1` | rail-only §5, App. D; Parm §IV-V |
//! | [`parm_compute`] | Parm's layer with its expert compute: end-to-end speedups on the paper's testbeds | Parm §III-A, §VI-C, Table II |
//! | [`search`] | every valid mapping, ranked, with a work limit; fabric comparison of the winner | rail-only App. C, Table 2 |
//! | [`validation`] | published MoE training runs, calibration and held-out error | see `docs/reproduction.md` |
//!
//! # Examples
//!
//! ```
//! use rail_network::moe::*;
//! let sm = StepModel::new(moe_model_preset("mixtral-8x7b")?, training_system_preset("h100")?,
//!     StepOptions::default())?;
//! let result = search_mappings(&sm, 64, 256, &MoeSearchOptions::default())?;
//! let best = &result.ranked[0];
//! assert!(best.fits && best.mfu > 0.1);
//! # Ok::<(), rail_network::RailNetworkError>(())
//! ```

pub mod cluster;
pub mod efficiency;
pub mod mapping;
pub mod memory;
pub mod model;
pub mod parm_compute;
pub mod presets;
pub mod search;
pub mod step;
pub mod strategy;
pub mod validation;

pub use cluster::{TRAINING_SYSTEM_NAMES, TrainingSystem, training_system_preset};
pub use efficiency::ComputeEfficiency;
pub use mapping::{DerivedDegrees, MoeMapping};
pub use memory::{MemoryInput, MoeMemory, moe_memory};
pub use model::{Attention, MoeModel, ParameterCounts, Precision, TokenFlops};
pub use presets::{
    ActiveConvention, MOE_MODEL_PRESET_NAMES, PUBLISHED_PARAMETERS, PublishedSize,
    VALIDATION_MODEL_NAMES, moe_model_preset,
};
pub use search::{
    FabricCost, MoeSearchOptions, MoeSearchResult, fabric_cost, search_mappings,
    search_mappings_with_progress,
};
pub use step::{
    DEFAULT_RESERVE_BYTES, EpAllToAllFit, MoeEvaluation, StepModel, StepOptions, StepTerms,
};
pub use strategy::{ParamSharding, PipelineSchedule};
