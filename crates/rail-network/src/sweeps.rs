//! The paper's sweeps: iteration time against HB-domain size (Fig. 9), HB and network bandwidth
//! (Fig. 10) and global batch (Fig. 11), each at the best parallelization the search finds, and
//! the rail-only all-to-all slowdown (Appendix D).
//!
//! The "ideal" of Fig. 9 and 11 is one HB domain holding every GPU (`K = N`, any-to-any NVLink).

use serde::{Deserialize, Serialize};

use crate::compute::ComputeModel;
use crate::error::RailNetworkError;
use crate::iteration::IterationModel;
use crate::model::GptModel;
use crate::parallel::Parallelization;
use crate::search::{SearchOptions, search};
use crate::system::SystemSpec;
use comm_cost_model::InputError;
use comm_cost_model::collectives::{TwoTierGrid, rail_only_all_to_all_slowdown};
use comm_cost_model::units::{BytesPerSecond, Seconds};

/// One point of an HB-domain or batch sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// GPUs in the cluster.
    pub gpus: u64,
    /// HB-domain size `K`.
    pub hb_domain: u64,
    /// Global batch size `B`.
    pub global_batch: u64,
    /// HB bandwidth `C_F`, bytes/s.
    pub hb_bytes_per_s: BytesPerSecond,
    /// Network bandwidth `C_S`, bytes/s.
    pub network_bytes_per_s: BytesPerSecond,
    /// Best iteration time found.
    pub iteration_time_s: Seconds,
    /// Best iteration time with every GPU in one HB domain.
    pub ideal_time_s: Seconds,
    /// `ideal / time` (the relative performance of Fig. 11b).
    pub relative_performance: f64,
    /// The best configuration.
    pub best: Parallelization,
}

fn best_time(
    model: &GptModel,
    system: SystemSpec,
    compute: &ComputeModel,
    gpus: u64,
    global_batch: u64,
) -> Result<(Seconds, Parallelization), RailNetworkError> {
    let im = IterationModel::new(*model, system, *compute)?;
    let opts = SearchOptions {
        keep: 1,
        ..SearchOptions::default()
    };
    let r = search(&im, gpus, global_batch, &opts)?;
    Ok((r.best.terms.iteration_time_s, r.best.parallelization))
}

/// One sweep point: the best configuration on `system` and on the ideal single HB domain.
///
/// # Errors
///
/// As [`crate::search::search`].
///
/// # Complexity
///
/// Two searches.
///
/// # Examples
///
/// ```
/// use rail_network::{compute::ComputeModel, model::model_preset, system::system_preset};
/// use rail_network::sweeps::sweep_point;
/// let p = sweep_point(&model_preset("gpt-1t")?, &system_preset("gh200")?, &ComputeModel::paper(), 4096, 1024)?;
/// assert!(p.relative_performance > 0.0 && p.relative_performance <= 1.0 + 1e-12);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn sweep_point(
    model: &GptModel,
    system: &SystemSpec,
    compute: &ComputeModel,
    gpus: u64,
    global_batch: u64,
) -> Result<SweepPoint, RailNetworkError> {
    let (time, best) = best_time(model, *system, compute, gpus, global_batch)?;
    let ideal_system = with_hb_domain(system, gpus);
    let (ideal, _) = best_time(model, ideal_system, compute, gpus, global_batch)?;
    Ok(SweepPoint {
        gpus,
        hb_domain: system.hb_domain,
        global_batch,
        hb_bytes_per_s: system.hb_bytes_per_s,
        network_bytes_per_s: system.network_bytes_per_s,
        iteration_time_s: time,
        ideal_time_s: ideal,
        // A time that underflows to 0 would make this infinite.
        relative_performance: comm_cost_model::check_finite_result(
            "relative performance",
            ideal / time,
        )?,
        best,
    })
}

fn with_hb_domain(system: &SystemSpec, hb_domain: u64) -> SystemSpec {
    SystemSpec {
        hb_domain,
        ..*system
    }
}

/// Runs [`sweep_point`] for every `(system, global batch)` case, stopping at the first error.
fn sweep_cases(
    model: &GptModel,
    compute: &ComputeModel,
    gpus: u64,
    cases: impl Iterator<Item = (SystemSpec, u64)>,
) -> Result<Vec<SweepPoint>, RailNetworkError> {
    cases
        .map(|(sys, batch)| sweep_point(model, &sys, compute, gpus, batch))
        .collect()
}

/// Fig. 9: the best iteration time for each HB-domain size in `hb_domains` (each must divide
/// `gpus`).
///
/// # Errors
///
/// As [`sweep_point`], for the first failing size.
///
/// # Complexity
///
/// Two searches per size.
///
/// # Examples
///
/// ```
/// use rail_network::{compute::ComputeModel, model::model_preset, system::system_preset};
/// use rail_network::sweeps::hb_domain_sweep;
/// let pts = hb_domain_sweep(&model_preset("gpt-145.6b")?, &system_preset("gh200")?,
///                           &ComputeModel::paper(), 1024, 256, &[8, 256])?;
/// assert!(pts[1].iteration_time_s <= pts[0].iteration_time_s);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn hb_domain_sweep(
    model: &GptModel,
    system: &SystemSpec,
    compute: &ComputeModel,
    gpus: u64,
    global_batch: u64,
    hb_domains: &[u64],
) -> Result<Vec<SweepPoint>, RailNetworkError> {
    let cases = hb_domains
        .iter()
        .map(|&k| (with_hb_domain(system, k), global_batch));
    sweep_cases(model, compute, gpus, cases)
}

/// Fig. 10: the best iteration time for every pair of HB and network bandwidths.
///
/// # Errors
///
/// As [`sweep_point`].
///
/// # Complexity
///
/// Two searches per pair.
///
/// # Examples
///
/// ```
/// use rail_network::{compute::ComputeModel, model::model_preset, system::system_preset};
/// use rail_network::sweeps::bandwidth_sweep;
/// let pts = bandwidth_sweep(&model_preset("gpt-1t")?, &system_preset("gh200")?,
///                           &ComputeModel::paper(), 4096, 1024, &[300e9, 1200e9], &[50e9])?;
/// assert!(pts[1].iteration_time_s <= pts[0].iteration_time_s);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn bandwidth_sweep(
    model: &GptModel,
    system: &SystemSpec,
    compute: &ComputeModel,
    gpus: u64,
    global_batch: u64,
    hb_bytes_per_s: &[BytesPerSecond],
    network_bytes_per_s: &[BytesPerSecond],
) -> Result<Vec<SweepPoint>, RailNetworkError> {
    let cases = network_bytes_per_s.iter().flat_map(|&net| {
        hb_bytes_per_s.iter().map(move |&hb| {
            let sys = SystemSpec {
                hb_bytes_per_s: hb,
                network_bytes_per_s: net,
                ..*system
            };
            (sys, global_batch)
        })
    });
    sweep_cases(model, compute, gpus, cases)
}

/// Fig. 11: the best iteration time and relative performance for every HB-domain size and
/// global batch.
///
/// # Errors
///
/// As [`sweep_point`].
///
/// # Complexity
///
/// Two searches per pair.
///
/// # Examples
///
/// ```
/// use rail_network::{compute::ComputeModel, model::model_preset, system::system_preset};
/// use rail_network::sweeps::batch_sweep;
/// let pts = batch_sweep(&model_preset("gpt-1t")?, &system_preset("gh200")?,
///                       &ComputeModel::paper(), 2048, &[8], &[256, 2048])?;
/// assert!(pts[1].relative_performance >= pts[0].relative_performance);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn batch_sweep(
    model: &GptModel,
    system: &SystemSpec,
    compute: &ComputeModel,
    gpus: u64,
    hb_domains: &[u64],
    global_batches: &[u64],
) -> Result<Vec<SweepPoint>, RailNetworkError> {
    let cases = hb_domains.iter().flat_map(|&k| {
        let sys = with_hb_domain(system, k);
        global_batches.iter().map(move |&batch| (sys, batch))
    });
    sweep_cases(model, compute, gpus, cases)
}

/// One row of the Appendix D table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AllToAllPoint {
    /// GPUs per HB domain `x`.
    pub hb_domain: u64,
    /// HB domains `y`.
    pub domains: u64,
    /// `C_F / C_S`.
    pub bandwidth_ratio: f64,
    /// `(T_rail-only - T_full-bisection) / T_full-bisection` (Eq. 20–22).
    pub slowdown: f64,
}

/// Appendix D: the all-to-all slowdown of rail-only over a full-bisection network for each
/// HB-domain size, using the hierarchical algorithm of comm-cost-model (Eq. 20, 21).
///
/// # Errors
///
/// A zero count or a non-positive bandwidth; `Overflow` when `x y` exceeds `usize`;
/// [`RailNetworkError::Input`] (`NonFinite`) when the bandwidth ratio or the slowdown
/// overflows `f64`.
///
/// # Complexity
///
/// `O(len)` time.
///
/// # Examples
///
/// ```
/// use rail_network::sweeps::all_to_all_slowdown_sweep;
/// let pts = all_to_all_slowdown_sweep(&[8, 256], 256, 900e9, 50e9)?;
/// // The forwarding hop through the HB domain costs about C_S / C_F = 5.6%.
/// assert!(pts.iter().all(|p| p.slowdown > 0.0 && p.slowdown < 0.1));
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn all_to_all_slowdown_sweep(
    hb_domains: &[u64],
    domains: u64,
    hb_bytes_per_s: BytesPerSecond,
    network_bytes_per_s: BytesPerSecond,
) -> Result<Vec<AllToAllPoint>, RailNetworkError> {
    hb_domains
        .iter()
        .map(|&x| {
            let grid = TwoTierGrid::new(
                usize::try_from(x).map_err(|_| InputError::Overflow {
                    what: "HB-domain size as usize",
                })?,
                usize::try_from(domains).map_err(|_| InputError::Overflow {
                    what: "HB domains as usize",
                })?,
                hb_bytes_per_s,
                network_bytes_per_s,
            )?;
            // 1e308 over 1e-308 overflows although both bandwidths are valid.
            let bandwidth_ratio = comm_cost_model::check_finite_result(
                "bandwidth ratio C_F / C_S",
                hb_bytes_per_s / network_bytes_per_s,
            )?;
            Ok(AllToAllPoint {
                hb_domain: x,
                domains,
                bandwidth_ratio,
                slowdown: rail_only_all_to_all_slowdown(1e6, &grid)?,
            })
        })
        .collect()
}
