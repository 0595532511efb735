//! One collective's time across GPU counts and sizes, fitted once and extrapolated to GPU
//! counts that were never measured.
//!
//! Per GPU count, [`crate::piecewise::piecewise_fit`] describes a measured curve. To predict a
//! GPU count nobody measured, the sizes must be put on a common scale: the *bus bytes*
//! `x · f(p)` that cross one GPU's link in a ring or pairwise algorithm, with `f(p) = (p-1)/p`
//! for AllGather, ReduceScatter and AlltoAll and `2 (p-1)/p` for AllReduce (the factors
//! nccl-tests uses to turn algorithm bandwidth into bus bandwidth). The model is
//!
//! `t(x, p) = alpha_s + alpha_per_peer_s · (p - 1) + beta_s_per_bus_byte · x f(p)`,
//!
//! piecewise in the bus bytes with breakpoints found from the data: start-up grows with the
//! peers a ring or pairwise exchange visits, and the bus bandwidth is a property of the link.

use serde::{Deserialize, Serialize};

use crate::piecewise::{PiecewiseOptions, check_r_squared, goodness};
use crate::segments::{Prefix, best_runs, check_range, check_ranges, segment_at};
use crate::units::{Bytes, Seconds};
use crate::{AlphaBeta, InputError, check_finite_result, check_non_negative, check_positive};

/// A collective, named as nccl-tests and NCCL name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Collective {
    /// AllGather (size: the gathered buffer).
    #[serde(alias = "all_gather")]
    AllGather,
    /// ReduceScatter (size: the buffer before the scatter).
    #[serde(alias = "reduce_scatter")]
    ReduceScatter,
    /// AllReduce (size: the reduced buffer).
    #[serde(alias = "all_reduce")]
    AllReduce,
    /// AlltoAll (size: one GPU's send buffer).
    #[serde(alias = "alltoall", alias = "all_to_all")]
    AllToAll,
}

impl Collective {
    /// Bytes crossing one GPU's link per byte of the collective's size on `gpus` GPUs:
    /// `(p-1)/p`, or `2 (p-1)/p` for AllReduce (nccl-tests' bus-bandwidth factor).
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] for fewer than 2 GPUs.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::gpu_scaling::Collective;
    /// assert_eq!(Collective::AllReduce.bus_factor(8)?, 1.75);
    /// assert_eq!(Collective::AllGather.bus_factor(2)?, 0.5);
    /// # Ok::<(), comm_cost_model::InputError>(())
    /// ```
    pub fn bus_factor(self, gpus: u64) -> Result<f64, InputError> {
        if gpus < 2 {
            return Err(InputError::CountTooSmall {
                what: "GPUs of a collective",
                min: 2,
                value: gpus,
            });
        }
        let p = gpus as f64;
        let ring = (p - 1.0) / p;
        Ok(match self {
            Self::AllReduce => 2.0 * ring,
            Self::AllGather | Self::ReduceScatter | Self::AllToAll => ring,
        })
    }

    /// The collective named `name` (`all_gather`, `all-gather`, `alltoall`, ...), if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "all_gather" | "allgather" => Some(Self::AllGather),
            "reduce_scatter" | "reducescatter" => Some(Self::ReduceScatter),
            "all_reduce" | "allreduce" => Some(Self::AllReduce),
            "alltoall" | "all_to_all" => Some(Self::AllToAll),
            _ => None,
        }
    }
}

/// One measurement of a collective on a number of GPUs.
///
/// Deserializes through [`GpuSample::validate`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "GpuSampleFields")]
pub struct GpuSample {
    /// GPUs taking part.
    pub gpus: u64,
    /// Size of the collective (as nccl-tests' `size` column), bytes.
    pub bytes: Bytes,
    /// Measured time, seconds.
    pub seconds: Seconds,
}

deserialize_validated!(
    GpuSample,
    GpuSampleFields {
        gpus: u64,
        bytes: Bytes,
        seconds: Seconds,
    }
);

impl GpuSample {
    /// Checks at least 2 GPUs and a finite non-negative size and time.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] for fewer than 2 GPUs; `NonFinite`/`Negative` for a
    /// bad size or time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::gpu_scaling::GpuSample;
    /// assert!(GpuSample { gpus: 8, bytes: 1e6, seconds: 1e-4 }.validate().is_ok());
    /// assert!(GpuSample { gpus: 1, bytes: 1e6, seconds: 1e-4 }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        Collective::AllGather.bus_factor(self.gpus)?;
        check_non_negative("sample size (bytes)", self.bytes)?;
        check_non_negative("sample time (s)", self.seconds)?;
        Ok(())
    }
}

/// One segment of a [`ScalingFit`], valid for bus bytes in `min_bus_bytes..=max_bus_bytes`.
///
/// Deserializes through [`ScalingSegment::validate`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ScalingSegmentFields")]
pub struct ScalingSegment {
    /// Smallest measured bus bytes in the segment.
    pub min_bus_bytes: Bytes,
    /// Largest measured bus bytes in the segment.
    pub max_bus_bytes: Bytes,
    /// Start-up independent of the GPU count, seconds.
    pub alpha_s: Seconds,
    /// Start-up per peer (`p - 1`), seconds.
    pub alpha_per_peer_s: Seconds,
    /// Seconds per bus byte (the inverse bus bandwidth).
    pub beta_s_per_bus_byte: f64,
}

deserialize_validated!(
    ScalingSegment,
    ScalingSegmentFields {
        min_bus_bytes: Bytes,
        max_bus_bytes: Bytes,
        alpha_s: Seconds,
        alpha_per_peer_s: Seconds,
        beta_s_per_bus_byte: f64,
    }
);

impl ScalingSegment {
    /// `(min_bus_bytes, max_bus_bytes)`.
    fn range(&self) -> (f64, f64) {
        (self.min_bus_bytes, self.max_bus_bytes)
    }

    /// Checks finite non-negative bus bytes with `min_bus_bytes <= max_bus_bytes` and finite
    /// non-negative coefficients.
    ///
    /// # Errors
    ///
    /// `NonFinite`/`Negative` for a bad number; [`InputError::Degenerate`] for bus bytes
    /// out of order.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::gpu_scaling::ScalingSegment;
    /// let s = ScalingSegment { min_bus_bytes: 0.0, max_bus_bytes: 1e9, alpha_s: 1e-5,
    ///     alpha_per_peer_s: 1e-6, beta_s_per_bus_byte: 1e-11 };
    /// assert!(s.validate().is_ok());
    /// assert!(ScalingSegment { alpha_per_peer_s: -1.0, ..s }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        check_range(self.range())?;
        AlphaBeta::new(self.alpha_s, self.beta_s_per_bus_byte)?;
        check_non_negative("alpha per peer (s)", self.alpha_per_peer_s)?;
        Ok(())
    }
}

/// A collective's piecewise model across GPU counts (see the module docs).
///
/// Deserializes through [`ScalingFit::validate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ScalingFitFields")]
pub struct ScalingFit {
    /// The collective.
    pub collective: Collective,
    /// Segments by increasing bus bytes.
    pub segments: Vec<ScalingSegment>,
    /// R² of the fit on its own samples.
    pub r_squared: f64,
}

deserialize_validated!(ScalingFit, ScalingFitFields {
    collective: Collective,
    segments: Vec<ScalingSegment>,
    r_squared: f64,
});

impl ScalingFit {
    /// Predicted time of the collective of `bytes` on `gpus` GPUs, seconds.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] for fewer than 2 GPUs or a fit without segments;
    /// `NonFinite`/`Negative` for a bad size; [`InputError::NonFinite`] when the bus bytes
    /// or the time overflow `f64`.
    ///
    /// # Complexity
    ///
    /// `O(segments)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::gpu_scaling::{Collective, ScalingFit, ScalingSegment};
    /// let fit = ScalingFit { collective: Collective::AllReduce, r_squared: 1.0,
    ///     segments: vec![ScalingSegment { min_bus_bytes: 0.0, max_bus_bytes: 1e9,
    ///     alpha_s: 1e-5, alpha_per_peer_s: 0.0, beta_s_per_bus_byte: 1e-10 }] };
    /// // 8 GPUs: bus bytes 2 * 7/8 * 1e6 = 1.75e6, at 1e-10 s each.
    /// assert!((fit.time_s(8, 1e6)? - (1e-5 + 1.75e-4)).abs() < 1e-15);
    /// assert!(fit.time_s(8, f64::MAX).is_err());
    /// # Ok::<(), comm_cost_model::InputError>(())
    /// ```
    pub fn time_s(&self, gpus: u64, bytes: Bytes) -> Result<Seconds, InputError> {
        let bus = bus_bytes(self.collective, gpus, bytes)?;
        let s = segment_at(&self.segments, bus, ScalingSegment::range)?;
        check_finite_result(
            "scaling-fit time (s)",
            s.alpha_s + s.alpha_per_peer_s * (gpus as f64 - 1.0) + s.beta_s_per_bus_byte * bus,
        )
    }

    /// Checks what every fit of [`fit_scaling`] satisfies: at least one segment, each valid
    /// ([`ScalingSegment::validate`]), in increasing order of bus bytes, and a finite
    /// `R² <= 1`.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] without segments; the first invalid segment's error;
    /// [`InputError::Degenerate`] for segments out of order or `R² > 1`;
    /// [`InputError::NonFinite`] for a non-finite R².
    ///
    /// # Complexity
    ///
    /// `O(segments)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::gpu_scaling::{Collective, ScalingFit};
    /// let empty = ScalingFit { collective: Collective::AllGather, segments: vec![], r_squared: 1.0 };
    /// assert!(empty.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        self.segments
            .iter()
            .try_for_each(ScalingSegment::validate)?;
        check_ranges(&self.segments, ScalingSegment::range)?;
        check_r_squared(self.r_squared)
    }
}

/// The bytes crossing one GPU's link: `bytes` times the collective's bus factor on `gpus`.
fn bus_bytes(collective: Collective, gpus: u64, bytes: Bytes) -> Result<Bytes, InputError> {
    let factor = collective.bus_factor(gpus)?;
    // Up to twice the size (AllReduce): 1e308 bytes overflow.
    check_finite_result(
        "bus bytes",
        check_non_negative("size (bytes)", bytes)? * factor,
    )
}

/// Fits one collective's time across GPU counts and sizes (ours; see the module docs).
///
/// With a single GPU count the per-peer start-up is not identifiable and comes out zero.
///
/// # Errors
///
/// As [`crate::piecewise::piecewise_fit`]; [`InputError::CountTooSmall`] for a sample on
/// fewer than 2 GPUs; [`InputError::NonFinite`] when a sample's bus bytes overflow `f64`.
///
/// # Complexity
///
/// O(n log n + n^2 k) time, O(n^2) memory.
///
/// # Examples
///
/// ```
/// use comm_cost_model::gpu_scaling::{fit_scaling, Collective, GpuSample};
/// use comm_cost_model::piecewise::PiecewiseOptions;
/// // 2 us + 1 us per peer + bus bytes at 100 GB/s, measured on 2 and 4 GPUs.
/// let truth = |gpus: u64, bytes: f64| {
///     let f = (gpus as f64 - 1.0) / gpus as f64;
///     2e-6 + 1e-6 * (gpus as f64 - 1.0) + bytes * f / 100e9
/// };
/// let samples: Vec<GpuSample> = [2u64, 4]
///     .iter()
///     .flat_map(|&gpus| (10..20).map(move |i| f64::powi(2.0, i)).map(move |bytes| {
///         GpuSample { gpus, bytes, seconds: truth(gpus, bytes) }
///     }))
///     .collect();
/// let fit = fit_scaling(Collective::AllGather, &samples, PiecewiseOptions::default())?;
/// // Extrapolated to 8 GPUs, never measured.
/// let t8 = fit.time_s(8, 1e6)?;
/// assert!((t8 / truth(8, 1e6) - 1.0).abs() < 1e-6);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn fit_scaling(
    collective: Collective,
    samples: &[GpuSample],
    options: PiecewiseOptions,
) -> Result<ScalingFit, InputError> {
    options.validate()?;
    let mut keyed = Vec::with_capacity(samples.len());
    for s in samples {
        let bus = bus_bytes(collective, s.gpus, s.bytes)?;
        check_positive("sample time (s)", s.seconds)?;
        keyed.push((bus, s));
    }
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    match (keyed.first(), keyed.last()) {
        (Some(a), Some(b)) if a.0 < b.0 => {}
        _ => {
            return Err(InputError::Degenerate {
                what: "fewer than two distinct message sizes",
            });
        }
    }
    let rows: Vec<[f64; 3]> = keyed
        .iter()
        .map(|(bus, s)| [1.0, s.gpus as f64 - 1.0, *bus])
        .collect();
    let times: Vec<f64> = keyed.iter().map(|(_, s)| s.seconds).collect();
    let runs = best_runs(
        &Prefix::new(&rows, &times),
        rows.len(),
        options.max_segments,
        options.min_points,
    )?;
    let segments: Vec<ScalingSegment> = runs
        .iter()
        .map(|run| ScalingSegment {
            min_bus_bytes: keyed[run.start].0,
            max_bus_bytes: keyed[run.end - 1].0,
            alpha_s: run.coefficients[0],
            alpha_per_peer_s: run.coefficients[1],
            beta_s_per_bus_byte: run.coefficients[2],
        })
        .collect();
    let mut fit = ScalingFit {
        collective,
        segments,
        r_squared: 1.0,
    };
    let predicted: Vec<(f64, f64)> = samples
        .iter()
        .map(|s| Ok((fit.time_s(s.gpus, s.bytes)?, s.seconds)))
        .collect::<Result<_, InputError>>()?;
    fit.r_squared = goodness(predicted.iter().copied()).0;
    // Extreme but finite data can still overflow a coefficient when it is scaled back.
    fit.validate()?;
    Ok(fit)
}

/// Which measured GPU count's link constants stand for a group of `max_gpus` GPUs: the
/// largest measured count not above it (a link measured on more GPUs than the group would
/// count contention the group does not have); `None` when every count is larger.
///
/// # Complexity
///
/// `O(m)` time for `m` measured counts.
///
/// # Examples
///
/// ```
/// use comm_cost_model::gpu_scaling::link_gpus;
/// assert_eq!(link_gpus([2, 4, 8], 6), Some(4));
/// assert_eq!(link_gpus([2, 4, 8], 64), Some(8));
/// assert_eq!(link_gpus([2, 4, 8], 1), None);
/// ```
pub fn link_gpus(measured: impl IntoIterator<Item = u64>, max_gpus: u64) -> Option<u64> {
    measured.into_iter().filter(|&g| g <= max_gpus).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_errors() {
        assert_eq!(
            Collective::from_name("alltoall"),
            Some(Collective::AllToAll)
        );
        assert_eq!(
            Collective::from_name("all-reduce"),
            Some(Collective::AllReduce)
        );
        assert_eq!(Collective::from_name("broadcast"), None);
        assert!(matches!(
            Collective::AllGather.bus_factor(1),
            Err(InputError::CountTooSmall { .. })
        ));
        let one_gpu = [GpuSample {
            gpus: 1,
            bytes: 1.0,
            seconds: 1.0,
        }];
        assert!(matches!(
            fit_scaling(Collective::AllGather, &one_gpu, PiecewiseOptions::default()),
            Err(InputError::CountTooSmall { .. })
        ));
    }
}
