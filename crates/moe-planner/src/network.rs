//! Network planning: rail-only vs rail-optimized fabrics and LLM iteration time, with model and
//! system presets by name.
//!
//! Specs are serde types that a JSON file (or Rust code) fills in; vendor units (Gbps, GB/s,
//! TFLOP/s, GB, µs) appear only in [`SystemFile`] field names and are converted to SI on entry.
//! Model presets: `gpt-22b`, `gpt-175b`, `gpt-530b`, `gpt-1t` (Korthikanti et al. 2022, the
//! rail-only paper's Table 4) and `gpt-145.6b`, `gpt-310.1b`, `gpt-529.6b`, `gpt-1008b`
//! (Narayanan et al. 2021 Table 1); system presets `dgx-a100`, `dgx-h100`, `gh200`, documented
//! with numbers and sources in [`rail_network::system`].
//!
//! # Examples
//!
//! ```
//! use moe_planner::network::{IterationSpec, ModelRef, NetworkPlanner, NetworkSpec, ParallelSpec, SystemRef};
//! let planner = NetworkPlanner::default();
//! let fabrics = planner.compare_fabrics(&NetworkSpec::new(32768, 256, 128))?;
//! assert_eq!(fabrics.rail_only.switches, 256);
//!
//! let spec = IterationSpec {
//!     model: ModelRef::Preset("gpt-1t".into()),
//!     system: SystemRef::Preset("dgx-a100".into()),
//!     gpus: 512,
//!     parallelization: ParallelSpec { tp: 8, pp: 64, dp: None, micro_batch: 1, global_batch: 512, interleave: 1 },
//!     compute: None,
//! };
//! let plan = planner.iteration(&spec)?;
//! assert!(plan.iteration_time_s > 60.0 && plan.iteration_time_s < 80.0);
//! # Ok::<(), moe_planner::network::NetworkPlanError>(())
//! ```

use serde::{Deserialize, Serialize};
use thiserror::Error;

use comm_cost_model::units;
use rail_network::RailNetworkError;
use rail_network::compute::ComputeModel;
use rail_network::fabric::{FabricComparison, FabricParams, PriceModel, compare_fabrics};
use rail_network::iteration::{IterationModel, IterationTerms};
use rail_network::memory::{MemoryBreakdown, memory_per_gpu};
use rail_network::model::{GptModel, model_preset};
use rail_network::parallel::Parallelization;
use rail_network::search::{RankedConfig, SearchOptions, search_with_progress};
use rail_network::system::{SystemSpec, system_preset};

pub use rail_network::model::MODEL_PRESET_NAMES;
pub use rail_network::system::SYSTEM_PRESET_NAMES;

/// What can go wrong while planning a network or an iteration.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum NetworkPlanError {
    /// The algorithm crate rejected the input (the message names the failed constraint).
    #[error(transparent)]
    Rail(#[from] RailNetworkError),
    /// A spec field is out of range.
    #[error("{0}")]
    Invalid(String),
}

/// A cluster to build both fabrics for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NetworkSpec {
    /// Total GPUs `N`.
    pub gpus: u64,
    /// GPUs per HB domain `K`.
    pub hb_domain: u64,
    /// Switch radix `k`.
    pub radix: u64,
    /// USD per transceiver (default 374, the paper's).
    #[serde(default = "default_transceiver_usd")]
    pub transceiver_usd: f64,
    /// USD per switch port (default 748, the paper's).
    #[serde(default = "default_switch_port_usd")]
    pub switch_port_usd: f64,
}

fn default_transceiver_usd() -> f64 {
    PriceModel::default().transceiver_usd
}

fn default_switch_port_usd() -> f64 {
    PriceModel::default().switch_port_usd
}

impl NetworkSpec {
    /// A spec with the paper's prices.
    pub fn new(gpus: u64, hb_domain: u64, radix: u64) -> Self {
        Self {
            gpus,
            hb_domain,
            radix,
            transceiver_usd: default_transceiver_usd(),
            switch_port_usd: default_switch_port_usd(),
        }
    }
}

/// A model: a preset name or explicit hyperparameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelRef {
    /// A preset name such as `"gpt-1t"`.
    Preset(String),
    /// Explicit hyperparameters.
    Custom(GptModel),
}

/// A system in vendor units, as a JSON file gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SystemFile {
    /// GPUs per HB domain `K`.
    pub hb_domain: u64,
    /// Peak dense half-precision TFLOP/s per GPU.
    pub peak_tflop_per_s: f64,
    /// Per-GPU HB-domain bandwidth, GB/s.
    pub hb_gb_per_s: f64,
    /// Per-GPU network bandwidth, Gbps.
    pub network_gbps: f64,
    /// GPU memory, GB.
    pub memory_gb: f64,
    /// Latency per communication step, µs (default 0).
    #[serde(default)]
    pub latency_us: f64,
}

impl From<SystemFile> for SystemSpec {
    fn from(f: SystemFile) -> Self {
        SystemSpec {
            hb_domain: f.hb_domain,
            peak_flop_per_s: units::tflop_per_s(f.peak_tflop_per_s),
            hb_bytes_per_s: units::gb_per_s(f.hb_gb_per_s),
            network_bytes_per_s: units::gbps(f.network_gbps),
            memory_bytes: f.memory_gb * 1e9,
            latency_s: f.latency_us * 1e-6,
        }
    }
}

/// A system: a preset name or explicit numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SystemRef {
    /// A preset name such as `"dgx-a100"`.
    Preset(String),
    /// Explicit numbers in vendor units.
    Custom(SystemFile),
}

/// A parallelization as a user states it; HB placement follows
/// [`Parallelization::with_default_mapping`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParallelSpec {
    /// Tensor parallel degree.
    pub tp: u64,
    /// Pipeline parallel degree.
    pub pp: u64,
    /// Data parallel degree (default `N / (tp pp)`).
    #[serde(default)]
    pub dp: Option<u64>,
    /// Micro-batch size (default 1).
    #[serde(default = "one")]
    pub micro_batch: u64,
    /// Global batch size.
    pub global_batch: u64,
    /// Interleaved stages (default 1).
    #[serde(default = "one")]
    pub interleave: u64,
}

/// `N / (t p)`, or the Eq. 11 error when `t p` does not divide `N`.
fn default_dp(gpus: u64, tp: u64, pp: u64) -> Result<u64, NetworkPlanError> {
    let tp_pp = tp.checked_mul(pp).unwrap_or(0);
    let dp = comm_cost_model::check_divides(
        "t p must divide the GPU count N (p t d = N, Eq. 11)",
        gpus,
        tp_pp,
    )
    .map_err(RailNetworkError::from)?;
    Ok(dp)
}

fn one() -> u64 {
    1
}

/// One iteration-time question: a model, a system, a GPU count and a parallelization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationSpec {
    /// The model.
    pub model: ModelRef,
    /// The system.
    pub system: SystemRef,
    /// GPUs used.
    pub gpus: u64,
    /// The parallelization.
    pub parallelization: ParallelSpec,
    /// Compute assumptions (default [`ComputeModel::paper`]).
    #[serde(default)]
    pub compute: Option<ComputeModel>,
}

/// A parallelization search: the fastest configuration for a model, system and batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSpec {
    /// The model.
    pub model: ModelRef,
    /// The system.
    pub system: SystemRef,
    /// GPUs used.
    pub gpus: u64,
    /// Global batch size.
    pub global_batch: u64,
    /// Configurations to keep in the ranked list (default 10).
    #[serde(default = "default_keep")]
    pub keep: usize,
    /// Compute assumptions (default [`ComputeModel::paper`]).
    #[serde(default)]
    pub compute: Option<ComputeModel>,
}

fn default_keep() -> usize {
    10
}

/// The predicted iteration of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IterationPlan {
    /// The configuration, with its HB placement.
    pub parallelization: Parallelization,
    /// Predicted iteration time (Eq. 2).
    pub iteration_time_s: f64,
    /// Every term of Eq. 3–7.
    pub terms: IterationTerms,
    /// Memory of the fullest GPU.
    pub memory: MemoryBreakdown,
    /// Whether that memory fits the GPU (Eq. 19).
    pub fits_in_memory: bool,
}

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchPlan {
    /// The fastest configuration.
    pub best: IterationPlan,
    /// The fastest configurations, fastest first.
    pub ranked: Vec<IterationPlan>,
    /// Configurations evaluated.
    pub evaluated: u64,
    /// `(p, t, d)` shapes considered.
    pub shapes: u64,
}

/// Looks up a model preset.
///
/// # Errors
///
/// [`RailNetworkError::UnknownPreset`] listing the names.
pub fn model_by_name(name: &str) -> Result<GptModel, NetworkPlanError> {
    Ok(model_preset(name)?)
}

/// Looks up a system preset.
///
/// # Errors
///
/// [`RailNetworkError::UnknownPreset`] listing the names.
pub fn system_by_name(name: &str) -> Result<SystemSpec, NetworkPlanError> {
    Ok(system_preset(name)?)
}

fn resolve_model(m: &ModelRef) -> Result<GptModel, NetworkPlanError> {
    match m {
        ModelRef::Preset(name) => model_by_name(name),
        ModelRef::Custom(model) => Ok(*model),
    }
}

fn resolve_system(s: &SystemRef) -> Result<SystemSpec, NetworkPlanError> {
    match s {
        SystemRef::Preset(name) => system_by_name(name),
        SystemRef::Custom(file) => Ok((*file).into()),
    }
}

fn plan(ranked: &RankedConfig, capacity_bytes: f64) -> IterationPlan {
    IterationPlan {
        parallelization: ranked.parallelization,
        iteration_time_s: ranked.terms.iteration_time_s,
        terms: ranked.terms,
        memory: ranked.memory,
        fits_in_memory: ranked.memory.total_bytes <= capacity_bytes,
    }
}

/// Plans fabrics and iterations; holds the default compute assumptions.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct NetworkPlanner {
    /// Compute assumptions used when a spec gives none.
    pub compute: ComputeModel,
}

impl NetworkPlanner {
    /// Both fabrics and the cost reduction of rail-only (Table 2).
    ///
    /// # Errors
    ///
    /// The failed constraint: `K` not dividing `N`, a radix too small, a bad price.
    pub fn compare_fabrics(
        &self,
        spec: &NetworkSpec,
    ) -> Result<FabricComparison, NetworkPlanError> {
        let params = FabricParams::new(spec.gpus, spec.hb_domain, spec.radix);
        let prices = PriceModel {
            transceiver_usd: spec.transceiver_usd,
            switch_port_usd: spec.switch_port_usd,
        };
        Ok(compare_fabrics(&params, &prices)?)
    }

    /// The iteration time of one configuration with every term (Eq. 2–7) and its memory.
    ///
    /// # Errors
    ///
    /// An unknown preset, an invalid model or system, or the first violated constraint of
    /// Eq. 11–18 (including `p t d != N`).
    pub fn iteration(&self, spec: &IterationSpec) -> Result<IterationPlan, NetworkPlanError> {
        let model = resolve_model(&spec.model)?;
        let system = resolve_system(&spec.system)?;
        let compute = spec.compute.unwrap_or(self.compute);
        let im = IterationModel::new(model, system, compute)?;
        let ps = &spec.parallelization;
        let dp = match ps.dp {
            Some(dp) => dp,
            None => default_dp(spec.gpus, ps.tp, ps.pp)?,
        };
        let par = Parallelization::with_default_mapping(
            ps.tp,
            ps.pp,
            dp,
            ps.micro_batch,
            ps.global_batch,
            ps.interleave,
            system.hb_domain,
        )?;
        par.validate(&model, spec.gpus, system.hb_domain)?;
        let terms = im.evaluate(&par)?;
        let memory = memory_per_gpu(&model, &par, compute.recompute, compute.bytes_per_param);
        let ranked = RankedConfig {
            parallelization: par,
            terms,
            memory,
        };
        Ok(plan(&ranked, system.memory_bytes))
    }

    /// The fastest configurations (Appendix C), reporting `progress(done, total)` as it goes.
    ///
    /// # Errors
    ///
    /// An unknown preset, an invalid model or system, `K` not dividing `N`, or no configuration
    /// fitting in memory.
    pub fn search(
        &self,
        spec: &SearchSpec,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<SearchPlan, NetworkPlanError> {
        let model = resolve_model(&spec.model)?;
        let system = resolve_system(&spec.system)?;
        if spec.keep == 0 {
            return Err(NetworkPlanError::Invalid("keep must be at least 1".into()));
        }
        let compute = spec.compute.unwrap_or(self.compute);
        let im = IterationModel::new(model, system, compute)?;
        let opts = SearchOptions {
            keep: spec.keep,
            ..SearchOptions::default()
        };
        let r = search_with_progress(&im, spec.gpus, spec.global_batch, &opts, progress)?;
        Ok(SearchPlan {
            best: plan(&r.best, system.memory_bytes),
            ranked: r
                .ranked
                .iter()
                .map(|c| plan(c, system.memory_bytes))
                .collect(),
            evaluated: r.evaluated,
            shapes: r.shapes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_json_round_trip_and_presets() {
        let spec: IterationSpec = serde_json_like();
        let plan = NetworkPlanner::default().iteration(&spec).unwrap();
        assert_eq!(plan.parallelization.dp, 1);
        assert!(plan.fits_in_memory);
        for name in MODEL_PRESET_NAMES {
            model_by_name(name).unwrap();
        }
        for name in SYSTEM_PRESET_NAMES {
            system_by_name(name).unwrap();
        }
        assert!(model_by_name("gpt-9000").is_err());
    }

    fn serde_json_like() -> IterationSpec {
        IterationSpec {
            model: ModelRef::Preset("gpt-175b".into()),
            system: SystemRef::Custom(SystemFile {
                hb_domain: 8,
                peak_tflop_per_s: 312.0,
                hb_gb_per_s: 600.0,
                network_gbps: 200.0,
                memory_gb: 80.0,
                latency_us: 0.0,
            }),
            gpus: 64,
            parallelization: ParallelSpec {
                tp: 8,
                pp: 8,
                dp: None,
                micro_batch: 1,
                global_batch: 64,
                interleave: 3,
            },
            compute: None,
        }
    }

    #[test]
    fn wrong_gpu_count_names_eq_11() {
        let mut spec = serde_json_like();
        spec.parallelization.dp = Some(2);
        let e = NetworkPlanner::default().iteration(&spec).unwrap_err();
        assert!(e.to_string().contains("Eq. 11"), "{e}");
    }

    #[test]
    fn search_finds_something_at_least_as_fast_as_the_published_config() {
        let given = NetworkPlanner::default()
            .iteration(&serde_json_like())
            .unwrap();
        let spec = SearchSpec {
            model: ModelRef::Preset("gpt-175b".into()),
            system: SystemRef::Preset("dgx-a100".into()),
            gpus: 64,
            global_batch: 64,
            keep: 3,
            compute: None,
        };
        let found = NetworkPlanner::default().search(&spec, &|_, _| {}).unwrap();
        assert!(found.best.iteration_time_s <= given.iteration_time_s);
        assert_eq!(found.ranked.len(), 3);
    }
}
