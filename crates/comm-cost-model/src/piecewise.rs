//! Piecewise alpha-beta fits: one `t = alpha + beta x` line per message-size regime, with the
//! breakpoints found from the data.
//!
//! Parm (Pan et al., §V-A) fits one line per collective. Measured NCCL times are not one line:
//! below some tens of kilobytes the time is the start-up (latency-bound, `beta ~ 0`), above a
//! few megabytes it is the bandwidth (bandwidth-bound), and protocol switches (LL, LL128,
//! Simple) bend the curve in between. [`piecewise_fit`] cuts the sorted sizes into at most
//! `max_segments` runs by dynamic programming, fitting each run by relative-error least squares
//! with non-negative `alpha` and `beta`, and labels each segment by which term dominates.

use serde::{Deserialize, Serialize};

use crate::fit::Sample;
use crate::scale::pow2_scale;
use crate::segments::{Prefix, Run, best_runs, boundary, check_range, check_ranges, segment_at};
use crate::units::{Bytes, Seconds};
use crate::{AlphaBeta, InputError, check_finite_result, check_non_negative, check_positive};

/// Which term of `alpha + beta x` dominates a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Regime {
    /// The start-up `alpha` is at least the transfer time at the segment's middle size.
    LatencyBound,
    /// The transfer time `beta x` dominates at the segment's middle size.
    BandwidthBound,
}

/// One segment of a piecewise fit, valid for `min_bytes..=max_bytes`.
///
/// Deserializes through [`Segment::validate`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SegmentFields")]
pub struct Segment {
    /// Smallest measured size in the segment, bytes.
    pub min_bytes: Bytes,
    /// Largest measured size in the segment, bytes.
    pub max_bytes: Bytes,
    /// Start-up time, seconds.
    pub alpha_s: Seconds,
    /// Inverse bandwidth, seconds per byte.
    pub beta_s_per_byte: f64,
    /// Ordinary `1 - SS_res / SS_tot` of the segment's samples (1 when they are fitted exactly).
    pub r_squared: f64,
    /// Largest `|fitted - measured| / measured` over the segment's samples.
    pub max_relative_error: f64,
    /// Which term dominates.
    pub regime: Regime,
}

impl Segment {
    /// The segment's line as an [`AlphaBeta`].
    ///
    /// # Errors
    ///
    /// Never for a segment from [`piecewise_fit`] (its parameters are finite and non-negative).
    pub fn alpha_beta(&self) -> Result<AlphaBeta, InputError> {
        AlphaBeta::new(self.alpha_s, self.beta_s_per_byte)
    }

    /// `(min_bytes, max_bytes)`.
    fn range(&self) -> (f64, f64) {
        (self.min_bytes, self.max_bytes)
    }

    /// Checks what every segment of [`piecewise_fit`] satisfies: finite non-negative sizes
    /// with `min_bytes <= max_bytes`, a valid line, a finite `R² <= 1` and a finite
    /// non-negative relative error.
    ///
    /// # Errors
    ///
    /// `NonFinite`/`Negative` for a bad number; [`InputError::Degenerate`] for sizes out of
    /// order or `R² > 1`.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::piecewise::{Regime, Segment};
    /// let mut s = Segment { min_bytes: 1e3, max_bytes: 1e6, alpha_s: 1e-5,
    ///     beta_s_per_byte: 1e-10, r_squared: 0.99, max_relative_error: 0.02,
    ///     regime: Regime::LatencyBound };
    /// assert!(s.validate().is_ok());
    /// s.max_bytes = 1.0;
    /// assert!(s.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        check_range(self.range())?;
        self.alpha_beta()?;
        check_non_negative("segment max relative error", self.max_relative_error)?;
        check_r_squared(self.r_squared)
    }
}

deserialize_validated!(
    Segment,
    SegmentFields {
        min_bytes: Bytes,
        max_bytes: Bytes,
        alpha_s: Seconds,
        beta_s_per_byte: f64,
        r_squared: f64,
        max_relative_error: f64,
        regime: Regime,
    }
);

/// Checks that an R² is finite and at most 1.
pub(crate) fn check_r_squared(r_squared: f64) -> Result<(), InputError> {
    if check_finite_result("R²", r_squared)? > 1.0 {
        return Err(InputError::Degenerate {
            what: "R² cannot exceed 1",
        });
    }
    Ok(())
}

/// Options of [`piecewise_fit`].
///
/// Deserializes through [`PiecewiseOptions::validate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PiecewiseOptionsFields")]
pub struct PiecewiseOptions {
    /// Most segments (1 gives Parm's single line, fitted by relative error).
    pub max_segments: usize,
    /// Fewest samples in a segment (at least 2).
    pub min_points: usize,
}

deserialize_validated!(
    PiecewiseOptions,
    PiecewiseOptionsFields {
        max_segments: usize,
        min_points: usize,
    }
);

impl PiecewiseOptions {
    /// Checks `max_segments >= 1` and `min_points >= 2`.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] naming the option.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::piecewise::PiecewiseOptions;
    /// assert!(PiecewiseOptions::default().validate().is_ok());
    /// assert!(PiecewiseOptions { max_segments: 0, min_points: 3 }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        if self.max_segments < 1 {
            return Err(InputError::CountTooSmall {
                what: "max_segments",
                min: 1,
                value: self.max_segments as u64,
            });
        }
        if self.min_points < 2 {
            return Err(InputError::CountTooSmall {
                what: "min_points",
                min: 2,
                value: self.min_points as u64,
            });
        }
        Ok(())
    }
}

impl Default for PiecewiseOptions {
    /// Three segments (latency, protocol switch, bandwidth) of at least three sizes each.
    fn default() -> Self {
        Self {
            max_segments: 3,
            min_points: 3,
        }
    }
}

/// A piecewise alpha-beta fit: segments in increasing size order.
///
/// Deserializes through [`PiecewiseFit::validate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PiecewiseFitFields")]
pub struct PiecewiseFit {
    /// The segments, by increasing size.
    pub segments: Vec<Segment>,
}

deserialize_validated!(PiecewiseFit, PiecewiseFitFields {
    segments: Vec<Segment>,
});

impl PiecewiseFit {
    /// Checks what every fit of [`piecewise_fit`] satisfies: at least one segment, each valid
    /// ([`Segment::validate`]), in increasing size order without overlap.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] without segments; the first invalid segment's error;
    /// [`InputError::Degenerate`] for segments out of order.
    ///
    /// # Complexity
    ///
    /// `O(segments)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::piecewise::PiecewiseFit;
    /// assert!(PiecewiseFit { segments: vec![] }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        self.segments.iter().try_for_each(Segment::validate)?;
        check_ranges(&self.segments, Segment::range)
    }

    /// The segment a message of `bytes` falls in: cut at the geometric mean between one
    /// segment's largest size and the next one's smallest; sizes outside the measured range use
    /// the first or last segment.
    #[must_use]
    pub fn segment_for(&self, bytes: Bytes) -> Option<&Segment> {
        segment_at(&self.segments, bytes, Segment::range).ok()
    }

    /// Predicted time of a message of `bytes`, seconds.
    ///
    /// # Errors
    ///
    /// `NonFinite`/`Negative` for a bad size; [`InputError::CountTooSmall`] for a fit
    /// without segments; [`InputError::NonFinite`] when the time overflows `f64` (a size
    /// far beyond the measured ones, or a segment built with extreme values).
    ///
    /// # Complexity
    ///
    /// `O(segments)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::fit::Sample;
    /// use comm_cost_model::piecewise::{piecewise_fit, PiecewiseOptions};
    /// let samples: Vec<Sample> = (0..12)
    ///     .map(|i| 1e3 * f64::powi(2.0, i))
    ///     .map(|bytes| Sample { bytes, seconds: 5e-6 + bytes / 100e9 })
    ///     .collect();
    /// let fit = piecewise_fit(&samples, PiecewiseOptions::default())?;
    /// assert!((fit.time_s(1e6)? - (5e-6 + 1e6 / 100e9)).abs() < 1e-12);
    /// # Ok::<(), comm_cost_model::InputError>(())
    /// ```
    pub fn time_s(&self, bytes: Bytes) -> Result<Seconds, InputError> {
        let bytes = check_non_negative("size (bytes)", bytes)?;
        let s = segment_at(&self.segments, bytes, Segment::range)?;
        check_finite_result("piecewise time (s)", s.alpha_s + s.beta_s_per_byte * bytes)
    }

    /// The last (largest-size) segment, the one bandwidth-bound planners want.
    #[must_use]
    pub fn largest(&self) -> Option<&Segment> {
        self.segments.last()
    }
}

/// Fits a piecewise alpha-beta model with breakpoints found from the data (improves on Parm
/// §V-A's single line; see the module docs).
///
/// Samples are sorted by size; equal sizes stay together only if they are adjacent after the
/// sort, so repeated measurements of one size are fine.
///
/// # Errors
///
/// [`InputError::CountTooSmall`] for `min_points < 2`, `max_segments < 1` or fewer samples
/// than `min_points`; `NonFinite`/`Negative` for a bad size, [`InputError::NotPositive`]
/// for a zero or negative time (relative errors need positive times);
/// [`InputError::Degenerate`] for fewer than two distinct sizes;
/// [`InputError::TooLarge`] above 1024 samples; [`InputError::NonFinite`] when a
/// coefficient or a goodness figure does not fit in `f64` (times or sizes spanning more than
/// its range).
///
/// # Complexity
///
/// O(n log n + n^2 k) time and O(n^2) memory for `n` samples and `k = max_segments`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::fit::Sample;
/// use comm_cost_model::piecewise::{piecewise_fit, PiecewiseOptions, Regime};
/// // 10 us flat up to 64 kB, then 20 us + x / (200 GB/s).
/// let samples: Vec<Sample> = (0..20)
///     .map(|i| 1e3 * f64::powi(2.0, i))
///     .map(|bytes| {
///         let seconds = if bytes <= 64e3 { 10e-6 } else { 20e-6 + bytes / 200e9 };
///         Sample { bytes, seconds }
///     })
///     .collect();
/// let fit = piecewise_fit(&samples, PiecewiseOptions::default())?;
/// assert_eq!(fit.segments.len(), 2);
/// assert_eq!(fit.segments[0].regime, Regime::LatencyBound);
/// assert_eq!(fit.segments[1].regime, Regime::BandwidthBound);
/// assert!((1.0 / fit.segments[1].beta_s_per_byte / 200e9 - 1.0).abs() < 1e-6);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn piecewise_fit(
    samples: &[Sample],
    options: PiecewiseOptions,
) -> Result<PiecewiseFit, InputError> {
    let sorted = sorted_samples(samples, options)?;
    let rows: Vec<[f64; 2]> = sorted.iter().map(|s| [1.0, s.bytes]).collect();
    let times: Vec<f64> = sorted.iter().map(|s| s.seconds).collect();
    let prefix = Prefix::new(&rows, &times);
    let runs = best_runs(
        &prefix,
        rows.len(),
        options.max_segments,
        options.min_points,
    )?;
    let segments = runs.iter().map(|run| segment(&sorted, run)).collect();
    let fit = PiecewiseFit { segments };
    // Extreme but finite data can still overflow a coefficient when it is scaled back.
    fit.validate()?;
    Ok(fit)
}

/// Validates the options and samples and returns the samples sorted by size.
pub(crate) fn sorted_samples(
    samples: &[Sample],
    options: PiecewiseOptions,
) -> Result<Vec<Sample>, InputError> {
    options.validate()?;
    for s in samples {
        check_non_negative("sample size (bytes)", s.bytes)?;
        check_positive("sample time (s)", s.seconds)?;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.bytes.total_cmp(&b.bytes));
    match (sorted.first(), sorted.last()) {
        (Some(a), Some(b)) if a.bytes < b.bytes => Ok(sorted),
        _ => Err(InputError::Degenerate {
            what: "fewer than two distinct message sizes",
        }),
    }
}

/// Summary statistics of fitted `predicted` against `measured` times: (R², worst relative error).
///
/// Both are scale-free, so the times are rescaled by a power of two first (exact): squares of
/// 1e300 s times would overflow.
pub(crate) fn goodness(pairs: impl Iterator<Item = (f64, f64)> + Clone) -> (f64, f64) {
    let s = pow2_scale(pairs.clone().map(|(_, m)| m).fold(0.0, f64::max));
    let pairs = pairs.map(|(p, m)| (p * s, m * s));
    let n = pairs.clone().count() as f64;
    let mean = pairs.clone().map(|(_, m)| m).sum::<f64>() / n;
    let (mut ss_res, mut ss_tot, mut worst) = (0.0, 0.0, 0.0f64);
    for (p, m) in pairs {
        ss_res += (m - p) * (m - p);
        ss_tot += (m - mean) * (m - mean);
        worst = worst.max((p - m).abs() / m);
    }
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    (r2, worst)
}

fn segment(sorted: &[Sample], run: &Run<2>) -> Segment {
    let part = &sorted[run.start..run.end];
    let [alpha_s, beta] = run.coefficients;
    let (r_squared, max_relative_error) =
        goodness(part.iter().map(|s| (alpha_s + beta * s.bytes, s.seconds)));
    let (min_bytes, max_bytes) = (part[0].bytes, part[part.len() - 1].bytes);
    let middle = boundary(min_bytes, max_bytes);
    let regime = if alpha_s >= beta * middle {
        Regime::LatencyBound
    } else {
        Regime::BandwidthBound
    };
    Segment {
        min_bytes,
        max_bytes,
        alpha_s,
        beta_s_per_byte: beta,
        r_squared,
        max_relative_error,
        regime,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(bytes: f64, seconds: f64) -> Sample {
        Sample { bytes, seconds }
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let o = PiecewiseOptions::default();
        assert!(matches!(
            piecewise_fit(&[s(1.0, 1.0); 5], o),
            Err(InputError::Degenerate { .. })
        ));
        assert!(matches!(
            piecewise_fit(&[s(1.0, 0.0), s(2.0, 1.0), s(3.0, 1.0)], o),
            Err(InputError::NotPositive { .. })
        ));
        assert!(matches!(
            piecewise_fit(&[s(f64::NAN, 1.0), s(2.0, 1.0)], o),
            Err(InputError::NonFinite { .. })
        ));
        assert!(matches!(
            piecewise_fit(&[s(1.0, 1.0), s(2.0, 1.0)], o),
            Err(InputError::CountTooSmall { .. })
        ));
        let zero = PiecewiseOptions {
            max_segments: 0,
            min_points: 3,
        };
        assert!(matches!(
            piecewise_fit(&[s(1.0, 1.0), s(2.0, 2.0), s(3.0, 3.0)], zero),
            Err(InputError::CountTooSmall {
                what: "max_segments",
                ..
            })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// A two-regime curve with a kink anywhere in the sizes is fitted exactly, the kink is
        /// found, and predictions at every sample are exact.
        #[test]
        fn recovers_a_kinked_curve(kink in 4usize..16, alpha in 1e-6f64..1e-4, gbps in 10.0f64..900.0) {
            let beta = 1.0 / (gbps * 1e9);
            let sizes: Vec<f64> = (0..20).map(|i| 256.0 * f64::powi(2.0, i)).collect();
            let flat = alpha + beta * sizes[kink];
            let samples: Vec<Sample> = sizes
                .iter()
                .enumerate()
                .map(|(i, &b)| s(b, if i <= kink { flat } else { alpha + beta * b }))
                .collect();
            let fit = piecewise_fit(&samples, PiecewiseOptions::default()).unwrap();
            for x in &samples {
                prop_assert!((fit.time_s(x.bytes).unwrap() - x.seconds).abs() / x.seconds < 1e-6);
            }
            prop_assert!(fit.segments.len() <= 2);
        }
    }
}
