//! Alpha-beta fits of collective measurements (Parm, Pan et al., §V-A), single-line and
//! piecewise by message-size regime, per collective and GPU count.
//!
//! # Examples
//!
//! ```
//! use moe_planner::comm_cost_model::fit::Sample;
//! use moe_planner::fitting::{plan_fit, FitSpec};
//! // 10 us start-up, 10 GB/s.
//! let samples = [1e6, 4e6, 16e6].map(|bytes| Sample { bytes, seconds: 1e-5 + bytes / 1e10 });
//! let fit = plan_fit(&FitSpec { samples: samples.to_vec() })?;
//! assert!((fit.bandwidth_bytes_per_s.unwrap() / 1e10 - 1.0).abs() < 1e-9);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use std::collections::BTreeMap;

use comm_cost_model::fit::{Sample, least_squares};
use comm_cost_model::gpu_scaling::{Collective, link_gpus};
use comm_cost_model::piecewise::{PiecewiseOptions, Regime, Segment, piecewise_fit};
use comm_cost_model::units::Seconds;
use comm_cost_model::{AlphaBeta, InputError};
use serde::{Deserialize, Serialize};

use crate::PlanError;

/// Measurements of one collective: (bytes, seconds) samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitSpec {
    /// The samples, in any order.
    pub samples: Vec<Sample>,
}

/// A least-squares alpha-beta fit of (bytes, seconds) measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitPlan {
    /// Start-up time, seconds.
    pub alpha_s: Seconds,
    /// Inverse bandwidth, seconds per byte.
    pub beta_s_per_byte: f64,
    /// Coefficient of determination.
    pub r_squared: f64,
    /// Bandwidth `1 / beta`, bytes per second; `None` when the fitted `beta` is 0 (the data do
    /// not determine a bandwidth).
    pub bandwidth_bytes_per_s: Option<f64>,
    /// Number of samples.
    pub samples: usize,
    /// Largest absolute residual, seconds.
    pub max_abs_residual_s: Seconds,
    /// The piecewise fit, breakpoints found from the data (empty with fewer than three
    /// samples or a zero time); bus bandwidths are null because the GPU count is unknown.
    pub segments: Vec<SegmentPlan>,
}

/// Fits `t = alpha + beta * bytes` to measurements by least squares (Parm §V-A).
///
/// # Errors
///
/// [`PlanError::Input`] as [`comm_cost_model::fit::least_squares`]: fewer than two distinct
/// sizes, negative or non-finite values, a negative fitted alpha or beta.
///
/// # Complexity
///
/// O(samples).
///
/// # Examples
///
/// ```
/// use moe_planner::comm_cost_model::{fit::Sample, InputError};
/// use moe_planner::fitting::{plan_fit, FitSpec};
/// use moe_planner::PlanError;
/// let one_size = FitSpec { samples: vec![Sample { bytes: 1e6, seconds: 1e-4 }; 3] };
/// assert!(matches!(plan_fit(&one_size), Err(PlanError::Input(InputError::Degenerate { .. }))));
/// ```
pub fn plan_fit(spec: &FitSpec) -> Result<FitPlan, PlanError> {
    let fit = least_squares(&spec.samples)?;
    let options = PiecewiseOptions::default();
    // The piecewise fit is relative-error based and needs positive times; the single line
    // does not, so data it accepts keeps working (with no segments).
    let positive = spec.samples.iter().all(|s| s.seconds > 0.0);
    let segments = if positive && spec.samples.len() >= options.min_points {
        piecewise_fit(&spec.samples, options)?
            .segments
            .iter()
            .map(|s| segment_plan(s, None))
            .collect()
    } else {
        Vec::new()
    };
    Ok(FitPlan {
        alpha_s: fit.alpha_s,
        beta_s_per_byte: fit.beta_s_per_byte,
        r_squared: fit.r_squared,
        bandwidth_bytes_per_s: (fit.beta_s_per_byte > 0.0)
            .then(|| 1.0 / fit.beta_s_per_byte)
            .filter(|b| b.is_finite()),
        samples: spec.samples.len(),
        max_abs_residual_s: fit.max_abs_residual_s(),
        segments,
    })
}

/// One measurement of a collective on a number of GPUs, as the measured CSVs and nccl-tests
/// give it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// The collective.
    pub collective: Collective,
    /// GPUs taking part.
    pub gpus: u64,
    /// Size (nccl-tests' `size` column), bytes.
    pub bytes: f64,
    /// Measured time, seconds.
    pub seconds: Seconds,
}

/// Measurements of any collectives and GPU counts, fitted per (collective, GPU count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveFitSpec {
    /// The measurements, in any order.
    pub measurements: Vec<Measurement>,
    /// Segments and their minimum size (default: at most 3 segments of at least 3 sizes).
    #[serde(default)]
    pub options: Option<PiecewiseOptions>,
}

/// One segment of a piecewise fit, with the bus bandwidth it implies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentPlan {
    /// Smallest measured size in the segment, bytes.
    pub min_bytes: f64,
    /// Largest measured size in the segment, bytes.
    pub max_bytes: f64,
    /// Start-up time, seconds.
    pub alpha_s: Seconds,
    /// Inverse bandwidth, seconds per byte of the collective's size.
    pub beta_s_per_byte: f64,
    /// R² of the segment's samples.
    pub r_squared: f64,
    /// Largest relative residual of the segment's samples.
    pub max_relative_error: f64,
    /// `latency-bound` or `bandwidth-bound`.
    pub regime: Regime,
    /// Bus bandwidth `f(p) / beta` (nccl-tests' `busbw`), bytes/s; null when the GPU count is
    /// unknown or `beta = 0`.
    pub bus_bandwidth_bytes_per_s: Option<f64>,
}

/// The piecewise fit of one (collective, GPU count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveFit {
    /// The collective.
    pub collective: Collective,
    /// GPUs taking part.
    pub gpus: u64,
    /// Samples fitted.
    pub samples: usize,
    /// Segments by increasing size.
    pub segments: Vec<SegmentPlan>,
}

impl CollectiveFit {
    /// The segment of the largest sizes as an [`AlphaBeta`] (per byte of the collective's
    /// size): the bandwidth-bound constants planners of large messages want.
    ///
    /// # Errors
    ///
    /// [`PlanError::MissingField`] for a fit without segments; [`PlanError::Input`] for a
    /// hand-edited segment with negative or non-finite constants.
    pub fn largest(&self) -> Result<AlphaBeta, PlanError> {
        let s = self.segments.last().ok_or(PlanError::MissingField {
            field: "segments",
            needed_by: "a fitted collective",
        })?;
        Ok(AlphaBeta::new(s.alpha_s, s.beta_s_per_byte)?)
    }
}

/// Every (collective, GPU count) fit of a measurement set: the `fit --json` output for
/// measured tables and nccl-tests files, and what `train`, `infer` and `iteration` accept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveFitPlan {
    /// One fit per (collective, GPU count), sorted by collective then GPUs.
    pub fits: Vec<CollectiveFit>,
}

impl CollectiveFitPlan {
    /// The fit of `collective` on exactly `gpus` GPUs.
    ///
    /// # Errors
    ///
    /// [`PlanError::MissingField`] when the plan has no such fit.
    pub fn get(&self, collective: Collective, gpus: u64) -> Result<&CollectiveFit, PlanError> {
        self.fits
            .iter()
            .find(|f| f.collective == collective && f.gpus == gpus)
            .ok_or(PlanError::MissingField {
                field: "fits[] with that collective and GPU count",
                needed_by: "fitted link constants",
            })
    }
}

impl CollectiveFitPlan {
    /// The fit of `collective` on the most GPUs not above `max_gpus`: the link constants of a
    /// group of `max_gpus` when that exact count was not measured.
    ///
    /// # Errors
    ///
    /// [`PlanError::MissingField`] when no fit of `collective` has at most `max_gpus` GPUs.
    pub fn link_for(
        &self,
        collective: Collective,
        max_gpus: u64,
    ) -> Result<&CollectiveFit, PlanError> {
        let of_collective = || self.fits.iter().filter(move |f| f.collective == collective);
        link_gpus(of_collective().map(|f| f.gpus), max_gpus)
            .and_then(|gpus| of_collective().find(|f| f.gpus == gpus))
            .ok_or(PlanError::MissingField {
                field: "fits[] of the collective with at most the group's GPUs",
                needed_by: "fitted link constants",
            })
    }
}

impl CollectiveFit {
    /// Bus bandwidth of the largest-size segment, bytes/s (the per-GPU link bandwidth the
    /// collective reaches on large messages).
    ///
    /// # Errors
    ///
    /// [`PlanError::MissingField`] for a fit without segments or with `beta = 0`.
    pub fn bus_bandwidth_bytes_per_s(&self) -> Result<f64, PlanError> {
        self.segments
            .last()
            .and_then(|s| s.bus_bandwidth_bytes_per_s)
            .filter(|b| b.is_finite() && *b > 0.0)
            .ok_or(PlanError::MissingField {
                field: "segments[].bus_bandwidth_bytes_per_s",
                needed_by: "fitted link bandwidth",
            })
    }

    /// Start-up of the smallest-size segment, seconds (the latency of a tiny collective).
    ///
    /// # Errors
    ///
    /// [`PlanError::MissingField`] for a fit without segments.
    pub fn small_message_latency_s(&self) -> Result<Seconds, PlanError> {
        self.segments
            .first()
            .map(|s| s.alpha_s)
            .ok_or(PlanError::MissingField {
                field: "segments",
                needed_by: "fitted link latency",
            })
    }
}

fn segment_plan(s: &Segment, bus_factor: Option<f64>) -> SegmentPlan {
    SegmentPlan {
        min_bytes: s.min_bytes,
        max_bytes: s.max_bytes,
        alpha_s: s.alpha_s,
        beta_s_per_byte: s.beta_s_per_byte,
        r_squared: s.r_squared,
        max_relative_error: s.max_relative_error,
        regime: s.regime,
        bus_bandwidth_bytes_per_s: bus_factor
            .filter(|_| s.beta_s_per_byte > 0.0)
            .map(|f| f / s.beta_s_per_byte),
    }
}

/// Fits every (collective, GPU count) of a measurement set piecewise, breakpoints found from
/// the data ([`comm_cost_model::piecewise::piecewise_fit`]).
///
/// # Errors
///
/// [`PlanError::Input`] as [`comm_cost_model::piecewise::piecewise_fit`] for any group (too few
/// sizes, a non-positive time, ...) or [`Collective::bus_factor`] for fewer than 2 GPUs;
/// [`PlanError::Input`] (`CountTooSmall`) for no measurements.
///
/// # Complexity
///
/// O(n log n + sum over groups of g^2 k) for groups of `g` sizes and `k` segments.
///
/// # Examples
///
/// ```
/// use moe_planner::comm_cost_model::gpu_scaling::Collective;
/// use moe_planner::fitting::{plan_collective_fits, CollectiveFitSpec, Measurement};
/// let measurements = (0..12)
///     .map(|i| 1e3 * f64::powi(2.0, i))
///     .map(|bytes| Measurement {
///         collective: Collective::AllGather, gpus: 8, bytes,
///         seconds: 10e-6 + bytes * 0.875 / 300e9,
///     })
///     .collect();
/// let plan = plan_collective_fits(&CollectiveFitSpec { measurements, options: None })?;
/// let bus = plan.fits[0].segments[0].bus_bandwidth_bytes_per_s.unwrap();
/// assert!((bus / 300e9 - 1.0).abs() < 1e-6);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn plan_collective_fits(spec: &CollectiveFitSpec) -> Result<CollectiveFitPlan, PlanError> {
    if spec.measurements.is_empty() {
        return Err(InputError::CountTooSmall {
            what: "measurements",
            min: 1,
            value: 0,
        }
        .into());
    }
    let options = spec.options.unwrap_or_default();
    let mut groups: BTreeMap<(Collective, u64), Vec<Sample>> = BTreeMap::new();
    for m in &spec.measurements {
        groups
            .entry((m.collective, m.gpus))
            .or_default()
            .push(Sample {
                bytes: m.bytes,
                seconds: m.seconds,
            });
    }
    let mut fits = Vec::with_capacity(groups.len());
    for ((collective, gpus), samples) in groups {
        let factor = collective.bus_factor(gpus)?;
        let fit = piecewise_fit(&samples, options)?;
        fits.push(CollectiveFit {
            collective,
            gpus,
            samples: samples.len(),
            segments: fit
                .segments
                .iter()
                .map(|s| segment_plan(s, Some(factor)))
                .collect(),
        });
    }
    Ok(CollectiveFitPlan { fits })
}
