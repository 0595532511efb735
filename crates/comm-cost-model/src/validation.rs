//! Held-out validation of the collective and DeepEP models on measured tables: the methodology
//! behind `docs/reproduction.md`'s measured-hardware rows, so every front end scores a model
//! the same way.
//!
//! * [`every_other_size`]: per GPU count, fit on every other size and predict the rest.
//! * [`smaller_gpu_counts`]: fit across all but the largest GPU count, predict the largest.
//! * [`validate_deepep`]: DeepEP dispatch and combine predicted from the bytes they move, first
//!   with an NCCL AlltoAll link alone, then with DeepEP's own per-call overhead plus the link's
//!   cost per byte, and with DeepEP's own fit on half the model shapes, scored on the other half.
//!
//! # Examples
//!
//! ```
//! use comm_cost_model::gpu_scaling::{Collective, GpuSample};
//! use comm_cost_model::validation::every_other_size;
//! let samples: Vec<GpuSample> = (0..16)
//!     .map(|i| 1024.0 * f64::powi(2.0, i))
//!     .map(|bytes| GpuSample { gpus: 8, bytes, seconds: 5e-6 + bytes / 300e9 })
//!     .collect();
//! let score = every_other_size(&samples)?;
//! assert_eq!(score.fitted, 8);
//! assert!(score.held_out.worst < 1e-9);
//! # Ok::<(), comm_cost_model::InputError>(())
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::InputError;
use crate::deepep::{COMBINE_BYTES_PER_ELEMENT, DeepEpCall, DeepEpMode, sent_bytes};
use crate::fit::Sample;
use crate::gpu_scaling::{Collective, GpuSample, fit_scaling};
use crate::held_out::{ErrorSummary, error_summary, every_other};
use crate::piecewise::{PiecewiseFit, PiecewiseOptions, piecewise_fit};

/// How a model fitted on some samples predicts the others.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HeldOutScore {
    /// Samples fitted.
    pub fitted: usize,
    /// Errors on the samples the fit never saw.
    pub held_out: ErrorSummary,
}

/// Per GPU count, a piecewise fit ([`piecewise_fit`], default options) on every other size,
/// scored on the sizes in between.
///
/// # Errors
///
/// [`InputError`] when a GPU count has too few sizes to fit, or a time is not positive.
///
/// # Complexity
///
/// `O(n^2 k)` for `n` samples per GPU count and `k = 3` segments.
pub fn every_other_size(samples: &[GpuSample]) -> Result<HeldOutScore, InputError> {
    let mut per_gpus: BTreeMap<u64, Vec<Sample>> = BTreeMap::new();
    for s in sorted(samples) {
        per_gpus.entry(s.gpus).or_default().push(Sample {
            bytes: s.bytes,
            seconds: s.seconds,
        });
    }
    let (mut fitted, mut pairs) = (0, Vec::new());
    for samples in per_gpus.values() {
        let (fit_on, held) = every_other(samples);
        let fit = piecewise_fit(&fit_on, PiecewiseOptions::default())?;
        fitted += fit_on.len();
        for s in &held {
            pairs.push((fit.time_s(s.bytes)?, s.seconds));
        }
    }
    Ok(HeldOutScore {
        fitted,
        held_out: error_summary(&pairs)?,
    })
}

/// A scaling fit of `collective` ([`fit_scaling`], at most 3 segments of at least 6 sizes)
/// across every GPU count but the largest, scored on the largest.
///
/// # Errors
///
/// [`InputError`] for a single GPU count (nothing to extrapolate from) or too few
/// samples.
///
/// # Complexity
///
/// `O(n^2 k)` for `n` samples.
pub fn smaller_gpu_counts(
    collective: Collective,
    samples: &[GpuSample],
) -> Result<HeldOutScore, InputError> {
    let samples = sorted(samples);
    let largest = samples.iter().map(|s| s.gpus).max().unwrap_or(0);
    let fit_on: Vec<GpuSample> = samples
        .iter()
        .filter(|s| s.gpus < largest)
        .copied()
        .collect();
    let options = PiecewiseOptions {
        max_segments: 3,
        min_points: 6,
    };
    let fit = fit_scaling(collective, &fit_on, options)?;
    let pairs = samples
        .iter()
        .filter(|s| s.gpus == largest)
        .map(|s| Ok((fit.time_s(s.gpus, s.bytes)?, s.seconds)))
        .collect::<Result<Vec<_>, InputError>>()?;
    Ok(HeldOutScore {
        fitted: fit_on.len(),
        held_out: error_summary(&pairs)?,
    })
}

/// The samples by GPU count, then size.
fn sorted(samples: &[GpuSample]) -> Vec<GpuSample> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.gpus.cmp(&b.gpus).then(a.bytes.total_cmp(&b.bytes)));
    sorted
}

/// One measured DeepEP configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeepEpMeasurement {
    /// Normal or low-latency kernels.
    pub mode: DeepEpMode,
    /// The call; `bytes_per_element` is that of dispatch.
    pub call: DeepEpCall,
    /// Measured dispatch time, seconds.
    pub dispatch_s: f64,
    /// Measured combine time, seconds.
    pub combine_s: f64,
}

/// Held-out error of one DeepEP kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeepEpValidationRow {
    /// Normal or low-latency kernels.
    pub mode: DeepEpMode,
    /// `dispatch` or `combine`.
    pub phase: String,
    /// Every configuration predicted from the NCCL AlltoAll fit alone (no DeepEP data).
    pub link_only: ErrorSummary,
    /// The structural fix with one DeepEP constant: the per-call overhead (the fastest call of
    /// the fitted shapes) plus the NCCL AlltoAll's bandwidth-bound cost per byte, scored on the
    /// held-out shapes.
    pub overhead_plus_link: ErrorSummary,
    /// The per-call overhead used by `overhead_plus_link`, seconds.
    pub overhead_s: f64,
    /// DeepEP's own piecewise fit on half the model shapes, scored on the other half.
    pub held_out: ErrorSummary,
    /// The fit on half the shapes (per-call overhead and bandwidth by regime).
    pub fit: PiecewiseFit,
}

/// Bytes one rank sends and the measured time of one phase.
fn phase_samples(rows: &[&DeepEpMeasurement], combine: bool) -> Result<Vec<Sample>, InputError> {
    rows.iter()
        .map(|m| {
            let mut call = m.call;
            let seconds = if combine {
                call.bytes_per_element = COMBINE_BYTES_PER_ELEMENT;
                m.combine_s
            } else {
                m.dispatch_s
            };
            Ok(Sample {
                bytes: sent_bytes(&call, m.mode)?,
                seconds,
            })
        })
        .collect()
}

/// Held-out validation of the DeepEP model: for each mode and phase, the error of predicting
/// from `alltoall` (an NCCL AlltoAll fit of the same GPU count) and of DeepEP's own fit on every
/// other model shape `(hidden, top_k, experts)`, scored on the rest.
///
/// # Errors
///
/// [`InputError`] for an invalid configuration (experts not divisible by ranks, ...) or a
/// split with too few samples.
///
/// # Complexity
///
/// `O(n^2 k)` for `n` configurations per mode.
pub fn validate_deepep(
    measured: &[DeepEpMeasurement],
    alltoall: &PiecewiseFit,
) -> Result<Vec<DeepEpValidationRow>, InputError> {
    let mut out = Vec::new();
    for mode in [DeepEpMode::Normal, DeepEpMode::LowLatency] {
        let rows: Vec<&DeepEpMeasurement> = measured.iter().filter(|m| m.mode == mode).collect();
        let mut shapes: Vec<(u64, u64, u64)> = rows
            .iter()
            .map(|m| (m.call.hidden, m.call.top_k, m.call.experts))
            .collect();
        shapes.sort_unstable();
        shapes.dedup();
        let (fit_shapes, _) = every_other(&shapes);
        let (fit_rows, held_rows): (Vec<&DeepEpMeasurement>, Vec<&DeepEpMeasurement>) = rows
            .iter()
            .partition(|m| fit_shapes.contains(&(m.call.hidden, m.call.top_k, m.call.experts)));
        for (phase, combine) in [("dispatch", false), ("combine", true)] {
            let all = phase_samples(&rows, combine)?;
            let link: Vec<(f64, f64)> = all
                .iter()
                .map(|s| Ok((alltoall.time_s(s.bytes)?, s.seconds)))
                .collect::<Result<_, InputError>>()?;
            let fit_samples = phase_samples(&fit_rows, combine)?;
            let held_samples = phase_samples(&held_rows, combine)?;
            let fit = piecewise_fit(&fit_samples, PiecewiseOptions::default())?;
            let held: Vec<(f64, f64)> = held_samples
                .iter()
                .map(|s| Ok((fit.time_s(s.bytes)?, s.seconds)))
                .collect::<Result<_, InputError>>()?;
            let overhead_s = fit_samples
                .iter()
                .map(|s| s.seconds)
                .fold(f64::INFINITY, f64::min);
            let beta = alltoall.largest().map_or(0.0, |s| s.beta_s_per_byte);
            let fixed: Vec<(f64, f64)> = held_samples
                .iter()
                .map(|s| (overhead_s + beta * s.bytes, s.seconds))
                .collect();
            out.push(DeepEpValidationRow {
                mode,
                phase: phase.to_string(),
                link_only: error_summary(&link)?,
                overhead_plus_link: error_summary(&fixed)?,
                overhead_s,
                held_out: error_summary(&held)?,
                fit,
            });
        }
    }
    Ok(out)
}
