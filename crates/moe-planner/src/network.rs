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
//! use moe_planner::network::{plan_fabrics, plan_iteration, FabricSpec, IterationSpec};
//! use moe_planner::network::{ModelRef, ParallelSpec, SystemRef};
//! let fabrics = plan_fabrics(&FabricSpec::new(32768, 256, 128))?;
//! assert_eq!(fabrics.rail_only.switches, 256);
//!
//! let spec = IterationSpec {
//!     model: ModelRef::Preset("gpt-1t".into()),
//!     system: SystemRef::Preset("dgx-a100".into()),
//!     gpus: 512,
//!     parallelization: ParallelSpec {
//!         tp: 8, pp: 64, dp: None, micro_batch: 1, global_batch: Some(512), interleave: 1,
//!     },
//!     compute: None,
//!     link_fits: None,
//! };
//! let plan = plan_iteration(&spec)?;
//! assert!(plan.iteration_time_s > 60.0 && plan.iteration_time_s < 80.0);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use serde::{Deserialize, Serialize};

use comm_cost_model::{InputError, check_count, units};
use rail_network::compute::ComputeModel;
use rail_network::fabric::{FabricCounts, FabricParams, PriceModel, compare_fabrics};
use rail_network::iteration::{IterationModel, IterationTerms};
use rail_network::memory::MemoryBreakdown;
use rail_network::model::{GptModel, model_preset};
use rail_network::parallel::Parallelization;
use rail_network::search::{RankedConfig, SearchOptions, search_with_progress};
use rail_network::sweeps::{SweepPoint, sweep_point};
use rail_network::system::{SystemSpec, system_preset};

use crate::PlanError;
use crate::fitting::CollectiveFitPlan;
use comm_cost_model::gpu_scaling::Collective;

pub use rail_network::model::MODEL_PRESET_NAMES;
pub use rail_network::system::SYSTEM_PRESET_NAMES;

/// A cluster to build both fabrics for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
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

impl FabricSpec {
    /// A spec with the paper's prices.
    #[must_use]
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
#[serde(deny_unknown_fields)]
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

impl TryFrom<SystemFile> for SystemSpec {
    type Error = PlanError;

    /// Converts to SI units, checking each rate in the unit the file gives it (so an error
    /// shows `network_gbps`, not bytes per second); the result passes [`SystemSpec::validate`].
    fn try_from(f: SystemFile) -> Result<Self, PlanError> {
        let system = SystemSpec {
            hb_domain: f.hb_domain,
            peak_flop_per_s: units::checked_tflop_per_s("peak_tflop_per_s", f.peak_tflop_per_s)?,
            hb_bytes_per_s: units::checked_gb_per_s("hb_gb_per_s", f.hb_gb_per_s)?,
            network_bytes_per_s: units::checked_gbps("network_gbps", f.network_gbps)?,
            memory_bytes: comm_cost_model::check_positive("memory_gb", f.memory_gb)? * 1e9,
            latency_s: comm_cost_model::check_non_negative("latency_us", f.latency_us)? * 1e-6,
        };
        system.validate()?;
        Ok(system)
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
#[serde(deny_unknown_fields)]
pub struct ParallelSpec {
    /// Tensor parallel degree.
    pub tp: u64,
    /// Pipeline parallel degree.
    pub pp: u64,
    /// Data parallel degree (default `N / (tp pp)`,
    /// [`Parallelization::data_parallel_degree`]).
    #[serde(default)]
    pub dp: Option<u64>,
    /// Micro-batch size (default 1).
    #[serde(default = "one")]
    pub micro_batch: u64,
    /// Global batch size (default `dp × micro_batch`: one micro-batch per data-parallel rank).
    #[serde(default)]
    pub global_batch: Option<u64>,
    /// Interleaved stages (default 1).
    #[serde(default = "one")]
    pub interleave: u64,
}

impl ParallelSpec {
    /// The configuration on `gpus` GPUs in HB domains of `hb_domain`, defaults filled in.
    fn resolve(&self, gpus: u64, hb_domain: u64) -> Result<Parallelization, PlanError> {
        let dp = match self.dp {
            Some(dp) => dp,
            None => Parallelization::data_parallel_degree(gpus, self.tp, self.pp)?,
        };
        let global_batch = match self.global_batch {
            Some(batch) => batch,
            None => dp
                .checked_mul(self.micro_batch)
                .ok_or(InputError::Overflow {
                    what: "the default global batch d b",
                })?,
        };
        Ok(Parallelization::with_default_mapping(
            self.tp,
            self.pp,
            dp,
            self.micro_batch,
            global_batch,
            self.interleave,
            hb_domain,
        )?)
    }
}

fn one() -> u64 {
    1
}

/// One iteration-time question: a model, a system, a GPU count and a parallelization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Measured link fits (`fit --json` output) replacing the system's HB-domain bandwidth and
    /// per-step latency (see [`system_with_fits`]).
    #[serde(default)]
    pub link_fits: Option<CollectiveFitPlan>,
}

/// A parallelization search: the fastest configuration for a model, system and batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Measured link fits (`fit --json` output) replacing the system's HB-domain bandwidth and
    /// per-step latency (see [`system_with_fits`]).
    #[serde(default)]
    pub link_fits: Option<CollectiveFitPlan>,
}

fn default_keep() -> usize {
    10
}

/// Both fabrics for one cluster and what rail-only saves (the rail-only paper's Table 2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FabricPlan {
    /// The cluster: `gpus`, `hb_domain`, `radix`.
    pub params: FabricParams,
    /// The rail-optimized (any-to-any Clos) fabric.
    pub rail_optimized: FabricCounts,
    /// The rail-only fabric (one Clos per rail, no spine).
    pub rail_only: FabricCounts,
    /// `1 - cost(rail-only) / cost(rail-optimized)`, a fraction.
    pub cost_reduction: f64,
}

/// The predicted iteration of one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IterationPlan {
    /// The configuration, with its HB placement.
    pub parallelization: Parallelization,
    /// Predicted iteration time (Eq. 2), seconds.
    pub iteration_time_s: f64,
    /// Every term of Eq. 3–7.
    pub terms: IterationTerms,
    /// Memory of the fullest GPU.
    pub memory: MemoryBreakdown,
    /// Whether that memory fits the GPU (Eq. 19).
    pub fits_in_memory: bool,
}

impl IterationPlan {
    fn new(config: &RankedConfig, system: &SystemSpec) -> Self {
        Self {
            parallelization: config.parallelization,
            iteration_time_s: config.terms.iteration_time_s,
            terms: config.terms,
            memory: config.memory,
            fits_in_memory: config.fits_in_memory(system),
        }
    }
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
/// [`PlanError::Rail`] (`UnknownPreset`, listing the names).
///
/// # Examples
///
/// ```
/// use moe_planner::network::model_by_name;
/// assert_eq!(model_by_name("gpt-1t")?.layers, 128);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn model_by_name(name: &str) -> Result<GptModel, PlanError> {
    Ok(model_preset(name)?)
}

/// Looks up a system preset.
///
/// # Errors
///
/// [`PlanError::Rail`] (`UnknownPreset`, listing the names).
///
/// # Examples
///
/// ```
/// use moe_planner::network::system_by_name;
/// assert_eq!(system_by_name("gh200")?.hb_domain, 256);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn system_by_name(name: &str) -> Result<SystemSpec, PlanError> {
    Ok(system_preset(name)?)
}

impl ModelRef {
    /// The model's hyperparameters: a preset looked up by name, or the custom model.
    ///
    /// # Errors
    ///
    /// [`PlanError::Rail`] (`UnknownPreset`) for a preset name that does not exist.
    pub fn resolve(&self) -> Result<GptModel, PlanError> {
        match self {
            ModelRef::Preset(name) => model_by_name(name),
            ModelRef::Custom(model) => Ok(*model),
        }
    }
}

impl SystemRef {
    /// The system in SI units: a preset looked up by name, or the custom file converted and
    /// checked in its own units.
    ///
    /// # Errors
    ///
    /// An unknown preset name (see [`system_by_name`]); for a custom file, the first value that
    /// is not positive and finite, named by its file field (`network_gbps`).
    pub fn resolve(&self) -> Result<SystemSpec, PlanError> {
        match self {
            SystemRef::Preset(name) => system_by_name(name),
            SystemRef::Custom(file) => SystemSpec::try_from(*file),
        }
    }
}

/// Names of the compute-model presets of [`compute_by_name`].
pub const COMPUTE_PRESET_NAMES: [&str; 2] = ["paper", "calibrated"];

/// A compute model by name: `paper` ([`ComputeModel::paper`], the rail-only paper's
/// assumptions) or `calibrated` ([`ComputeModel::calibrated`], fitted on nine published runs;
/// see docs/reproduction.md for its held-out accuracy and valid range).
///
/// # Errors
///
/// [`PlanError::Rail`] (`UnknownPreset`) listing the valid names.
///
/// # Examples
///
/// ```
/// use moe_planner::network::compute_by_name;
/// assert!(compute_by_name("calibrated")?.gemm_efficiency < 1.0);
/// assert!(compute_by_name("measured").is_err());
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn compute_by_name(name: &str) -> Result<ComputeModel, PlanError> {
    match name.to_ascii_lowercase().as_str() {
        "paper" => Ok(ComputeModel::paper()),
        "calibrated" => Ok(ComputeModel::calibrated()),
        _ => Err(rail_network::RailNetworkError::UnknownPreset {
            kind: "compute model",
            name: name.to_string(),
            known: COMPUTE_PRESET_NAMES.join(", "),
        }
        .into()),
    }
}

/// The iteration model of a model, a system and compute assumptions (the paper's by default).
fn iteration_model(
    model: &ModelRef,
    system: &SystemRef,
    compute: Option<ComputeModel>,
    link_fits: Option<&CollectiveFitPlan>,
) -> Result<IterationModel, PlanError> {
    let compute = compute.unwrap_or_default();
    let mut system = system.resolve()?;
    if let Some(fits) = link_fits {
        system = system_with_fits(system, fits)?;
    }
    Ok(IterationModel::new(model.resolve()?, system, compute)?)
}

/// A system whose HB-domain bandwidth and per-step latency come from measured fits: the bus
/// bandwidth of the bandwidth-bound AllGather segment and the start-up of its smallest-size
/// segment, on the most GPUs measured that fit in one HB domain. The network (scale-out)
/// bandwidth is kept: the measured tables are single-node.
///
/// # Errors
///
/// [`PlanError::MissingField`] when the fits have no AllGather on at most `hb_domain` GPUs or
/// its bandwidth is unknown; [`PlanError::Rail`] for an invalid base system.
///
/// # Complexity
///
/// O(fits).
///
/// # Examples
///
/// ```
/// use moe_planner::comm_cost_model::gpu_scaling::Collective;
/// use moe_planner::fitting::{plan_collective_fits, CollectiveFitSpec, Measurement};
/// use moe_planner::network::{system_by_name, system_with_fits};
/// let measurements = (0..12)
///     .map(|i| 1e3 * f64::powi(2.0, i))
///     .map(|bytes| Measurement { collective: Collective::AllGather, gpus: 8, bytes,
///         seconds: 10e-6 + bytes * 0.875 / 200e9 })
///     .collect();
/// let fits = plan_collective_fits(&CollectiveFitSpec { measurements, options: None })?;
/// let sys = system_with_fits(system_by_name("dgx-a100")?, &fits)?;
/// assert!((sys.hb_bytes_per_s / 200e9 - 1.0).abs() < 1e-6);
/// assert!((sys.latency_s - 10e-6).abs() < 1e-9);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn system_with_fits(
    system: SystemSpec,
    fits: &CollectiveFitPlan,
) -> Result<SystemSpec, PlanError> {
    system.validate()?;
    let fit = fits.link_for(Collective::AllGather, system.hb_domain)?;
    let fitted = SystemSpec {
        hb_bytes_per_s: fit.bus_bandwidth_bytes_per_s()?,
        latency_s: fit.small_message_latency_s()?,
        ..system
    };
    fitted.validate()?;
    Ok(fitted)
}

/// Both fabrics and the cost reduction of rail-only (the rail-only paper's §6.5, Table 2).
///
/// # Errors
///
/// [`PlanError::Rail`] naming the failed constraint: `K` not dividing `N`, a radix too small,
/// a bad price.
///
/// # Complexity
///
/// O(tiers), see [`rail_network::fabric::compare_fabrics`].
///
/// # Examples
///
/// ```
/// use moe_planner::network::{plan_fabrics, FabricSpec};
/// // 65,536 GPUs in HB domains of 256 on radix-64 switches: rail-only saves 37.5%.
/// let plan = plan_fabrics(&FabricSpec::new(65536, 256, 64))?;
/// assert!((plan.cost_reduction - 0.375).abs() < 1e-12);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn plan_fabrics(spec: &FabricSpec) -> Result<FabricPlan, PlanError> {
    let params = FabricParams::new(spec.gpus, spec.hb_domain, spec.radix);
    let prices = PriceModel {
        transceiver_usd: spec.transceiver_usd,
        switch_port_usd: spec.switch_port_usd,
    };
    let c = compare_fabrics(&params, &prices)?;
    Ok(FabricPlan {
        params: c.params,
        rail_optimized: c.rail_optimized,
        rail_only: c.rail_only,
        cost_reduction: c.cost_reduction,
    })
}

/// The iteration time of one configuration with every term (the rail-only paper's Eq. 2–7)
/// and its memory per GPU.
///
/// # Errors
///
/// [`PlanError::Rail`]: an unknown preset, an invalid model or system, or the first violated
/// constraint of Eq. 11–18 (including `p t d != N`).
///
/// # Complexity
///
/// O(1).
///
/// # Examples
///
/// ```
/// use moe_planner::network::{plan_iteration, IterationSpec, ModelRef, ParallelSpec, SystemRef};
/// // GPT-175B on 64 A100s, t = 8 and p = 8: d defaults to 64 / 64 = 1, B to d b = 1.
/// let spec = IterationSpec {
///     model: ModelRef::Preset("gpt-175b".into()),
///     system: SystemRef::Preset("dgx-a100".into()),
///     gpus: 64,
///     parallelization: ParallelSpec {
///         tp: 8, pp: 8, dp: None, micro_batch: 1, global_batch: None, interleave: 1,
///     },
///     compute: None,
///     link_fits: None,
/// };
/// let plan = plan_iteration(&spec)?;
/// assert_eq!((plan.parallelization.dp, plan.parallelization.global_batch), (1, 1));
/// assert!(plan.fits_in_memory);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn plan_iteration(spec: &IterationSpec) -> Result<IterationPlan, PlanError> {
    let im = iteration_model(
        &spec.model,
        &spec.system,
        spec.compute,
        spec.link_fits.as_ref(),
    )?;
    let hb_domain = im.system().hb_domain;
    let parallelization = spec.parallelization.resolve(spec.gpus, hb_domain)?;
    let config = RankedConfig::evaluate(&im, spec.gpus, parallelization)?;
    Ok(IterationPlan::new(&config, im.system()))
}

/// The fastest configurations (the rail-only paper's Appendix C): [`plan_search_with_progress`]
/// without progress reports.
///
/// # Errors
///
/// As [`plan_search_with_progress`].
///
/// # Complexity
///
/// As [`rail_network::search::search`].
///
/// # Examples
///
/// ```
/// use moe_planner::network::{plan_search, ModelRef, SearchSpec, SystemRef};
/// let spec = SearchSpec {
///     model: ModelRef::Preset("gpt-22b".into()),
///     system: SystemRef::Preset("dgx-a100".into()),
///     gpus: 64,
///     global_batch: 64,
///     keep: 3,
///     compute: None,
///     link_fits: None,
/// };
/// let plan = plan_search(&spec)?;
/// assert_eq!(plan.ranked.len(), 3);
/// assert!(plan.ranked.iter().all(|c| c.iteration_time_s >= plan.best.iteration_time_s));
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn plan_search(spec: &SearchSpec) -> Result<SearchPlan, PlanError> {
    plan_search_with_progress(spec, &|_, _| {})
}

/// The fastest configurations (the rail-only paper's Appendix C), calling
/// `progress(done, total)` after each `(p, t, d)` shape.
///
/// # Errors
///
/// [`PlanError::Input`] for `keep = 0`; [`PlanError::Rail`]: an unknown preset, an invalid model
/// or system, `K` not dividing `N`, or no configuration fitting in memory.
///
/// # Complexity
///
/// As [`rail_network::search::search_with_progress`].
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use moe_planner::network::{plan_search_with_progress, ModelRef, SearchSpec, SystemRef};
/// let spec = SearchSpec {
///     model: ModelRef::Preset("gpt-22b".into()),
///     system: SystemRef::Preset("dgx-a100".into()),
///     gpus: 64,
///     global_batch: 64,
///     keep: 1,
///     compute: None,
///     link_fits: None,
/// };
/// let shapes = AtomicU64::new(0);
/// let plan = plan_search_with_progress(&spec, &|_, _| {
///     shapes.fetch_add(1, Ordering::Relaxed);
/// })?;
/// assert_eq!(shapes.into_inner(), plan.shapes);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn plan_search_with_progress(
    spec: &SearchSpec,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<SearchPlan, PlanError> {
    let im = iteration_model(
        &spec.model,
        &spec.system,
        spec.compute,
        spec.link_fits.as_ref(),
    )?;
    let options = SearchOptions {
        keep: check_count("configurations to keep", spec.keep, 1)?,
        ..SearchOptions::default()
    };
    let r = search_with_progress(&im, spec.gpus, spec.global_batch, &options, progress)?;
    let plan = |c: &RankedConfig| IterationPlan::new(c, im.system());
    Ok(SearchPlan {
        best: plan(&r.best),
        ranked: r.ranked.iter().map(plan).collect(),
        evaluated: r.evaluated,
        shapes: r.shapes,
    })
}

/// The rail-only paper's Fig. 9 for a search spec: at every HB-domain size in `hb_domains`
/// (each dividing `spec.gpus`), the best iteration time and the ideal one (every GPU in one HB
/// domain). With `spec.link_fits` each size's HB bandwidth and latency come from the fit on
/// the most GPUs measured up to that size ([`system_with_fits`]), as [`plan_search`] does for
/// the spec's own size (a size of 1 has no HB link and keeps the system's constants);
/// `spec.keep` plays no part (one configuration per size).
///
/// # Errors
///
/// As [`plan_search`], for the first failing size; [`PlanError::MissingField`] when the fits
/// have no AllGather on at most a swept size's GPUs.
///
/// # Complexity
///
/// Two searches per size (as [`rail_network::sweeps::sweep_point`]).
///
/// # Examples
///
/// ```
/// use moe_planner::network::{plan_hb_domain_sweep, ModelRef, SearchSpec, SystemRef};
/// let spec = SearchSpec {
///     model: ModelRef::Preset("gpt-22b".into()),
///     system: SystemRef::Preset("dgx-a100".into()),
///     gpus: 64,
///     global_batch: 64,
///     keep: 1,
///     compute: None,
///     link_fits: None,
/// };
/// let points = plan_hb_domain_sweep(&spec, &[8, 64])?;
/// assert_eq!(points.iter().map(|p| p.hb_domain).collect::<Vec<_>>(), [8, 64]);
/// assert!(points[1].iteration_time_s <= points[0].iteration_time_s);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn plan_hb_domain_sweep(
    spec: &SearchSpec,
    hb_domains: &[u64],
) -> Result<Vec<SweepPoint>, PlanError> {
    let model = spec.model.resolve()?;
    let base = spec.system.resolve()?;
    let compute = spec.compute.unwrap_or_default();
    hb_domains
        .iter()
        .map(|&hb_domain| {
            let mut system = SystemSpec { hb_domain, ..base };
            // An HB domain of one GPU has no HB link to take from a fit.
            if let Some(fits) = &spec.link_fits
                && hb_domain > 1
            {
                system = system_with_fits(system, fits)?;
            }
            Ok(sweep_point(
                &model,
                &system,
                &compute,
                spec.gpus,
                spec.global_batch,
            )?)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::InputError;
    use rail_network::RailNetworkError;

    #[test]
    fn spec_json_round_trip_and_presets() {
        let spec: IterationSpec = serde_json_like();
        let plan = plan_iteration(&spec).unwrap();
        assert_eq!(plan.parallelization.dp, 1);
        assert!(plan.fits_in_memory);
        for name in MODEL_PRESET_NAMES {
            model_by_name(name).unwrap();
        }
        for name in SYSTEM_PRESET_NAMES {
            system_by_name(name).unwrap();
        }
        assert!(matches!(
            model_by_name("gpt-9000"),
            Err(PlanError::Rail(RailNetworkError::UnknownPreset { .. }))
        ));
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
                global_batch: Some(64),
                interleave: 3,
            },
            compute: None,
            link_fits: None,
        }
    }

    fn search_spec(keep: usize) -> SearchSpec {
        SearchSpec {
            model: ModelRef::Preset("gpt-175b".into()),
            system: SystemRef::Preset("dgx-a100".into()),
            gpus: 64,
            global_batch: 64,
            keep,
            compute: None,
            link_fits: None,
        }
    }

    #[test]
    fn wrong_gpu_count_names_eq_11() {
        let mut spec = serde_json_like();
        spec.parallelization.dp = Some(2);
        let e = plan_iteration(&spec).unwrap_err();
        assert!(matches!(
            e,
            PlanError::Rail(RailNetworkError::Input(InputError::SizeMismatch {
                actual: 128,
                expected: 64,
                ..
            }))
        ));
        assert!(e.to_string().contains("Eq. 11"), "{e}");
        // Without dp, t p must divide N (the default d = N / (t p), Eq. 11).
        spec.parallelization.dp = None;
        spec.gpus = 96;
        assert!(matches!(
            plan_iteration(&spec),
            Err(PlanError::Rail(RailNetworkError::Input(
                InputError::NotDivisible {
                    value: 96,
                    divisor: 64,
                    ..
                }
            )))
        ));
        // keep = 0 is a count error.
        assert!(matches!(
            plan_search(&search_spec(0)),
            Err(PlanError::Input(InputError::CountTooSmall { .. }))
        ));
    }

    #[test]
    fn search_finds_something_at_least_as_fast_as_the_published_config() {
        let given = plan_iteration(&serde_json_like()).unwrap();
        let found = plan_search(&search_spec(3)).unwrap();
        assert!(found.best.iteration_time_s <= given.iteration_time_s);
        assert_eq!(found.ranked.len(), 3);
    }
}
