//! Fitting `t(x) = alpha + beta * x` to measured (size, time) samples.
//!
//! Parm (Pan et al., §V-A, §VI-B) measures each collective over many message sizes and fits the
//! alpha-beta model by least squares; [`least_squares`] does that and reports R² and the
//! residuals, so a caller can see how well the line explains the data. [`two_point`] is the
//! cheaper fit through two probes (one small, one large message) that later systems use.
//!
//! Degenerate data is an error, never silent garbage: fewer than two distinct sizes, negative
//! or non-finite values, and a negative fitted `beta`. A negative fitted `alpha` (a start-up
//! cost below the noise floor) is an error from [`least_squares`]; [`least_squares_clamped`]
//! instead refits the line through the origin (`alpha = 0`, `beta = Σxt / Σx²`), which is the
//! least-squares optimum under the constraint `alpha >= 0` in that case.

use serde::{Deserialize, Serialize};

use crate::scale::pow2_scale;
use crate::units::{Bytes, Seconds};
use crate::{AlphaBeta, InputError, check_finite_result, check_non_negative};

/// One measurement: a collective moved `bytes` in `seconds`.
///
/// Deserializes through [`Sample::validate`]; the fields are public, so every function taking
/// samples checks them again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SampleFields")]
pub struct Sample {
    /// Message size, in bytes.
    pub bytes: Bytes,
    /// Measured time, in seconds.
    pub seconds: Seconds,
}

impl Sample {
    /// Checks that the size and the time are finite and non-negative.
    ///
    /// # Errors
    ///
    /// [`InputError::NonFinite`] or [`InputError::Negative`] naming the field.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::fit::Sample;
    /// assert!(Sample { bytes: 1e6, seconds: 1e-4 }.validate().is_ok());
    /// assert!(Sample { bytes: -1.0, seconds: 1e-4 }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        check_non_negative("sample size (bytes)", self.bytes)?;
        check_non_negative("sample time (s)", self.seconds)?;
        Ok(())
    }
}

deserialize_validated!(
    Sample,
    SampleFields {
        bytes: Bytes,
        seconds: Seconds
    }
);

/// The result of a least-squares alpha-beta fit.
///
/// Deserializes through [`AlphaBetaFit::validate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AlphaBetaFitFields")]
pub struct AlphaBetaFit {
    /// Fitted start-up time, in seconds.
    pub alpha_s: Seconds,
    /// Fitted inverse bandwidth, in seconds per byte.
    pub beta_s_per_byte: f64,
    /// Coefficient of determination `1 - SS_res / SS_tot` (1 when all times are equal and fitted
    /// exactly).
    pub r_squared: f64,
    /// `measured - fitted` time of every sample, in input order, in seconds.
    pub residuals_s: Vec<Seconds>,
    /// Whether `alpha` was clamped to zero (only [`least_squares_clamped`] does this).
    pub alpha_clamped: bool,
}

deserialize_validated!(AlphaBetaFit, AlphaBetaFitFields {
    alpha_s: Seconds,
    beta_s_per_byte: f64,
    r_squared: f64,
    residuals_s: Vec<Seconds>,
    alpha_clamped: bool,
});

impl AlphaBetaFit {
    /// The fitted cost as an [`AlphaBeta`].
    ///
    /// # Errors
    ///
    /// Never for a fit returned by this module (its parameters are finite and non-negative).
    pub fn alpha_beta(&self) -> Result<AlphaBeta, InputError> {
        AlphaBeta::new(self.alpha_s, self.beta_s_per_byte)
    }

    /// Checks what every fit of this module satisfies: finite non-negative `alpha` and `beta`
    /// (`alpha = 0` when clamped), a finite `R² <= 1` and finite residuals.
    ///
    /// # Errors
    ///
    /// `NonFinite`/`Negative` for a bad parameter or residual; [`InputError::Degenerate`]
    /// for `R² > 1` or a clamped fit with a non-zero `alpha`.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::fit::{least_squares, Sample};
    /// let s = |bytes, seconds| Sample { bytes, seconds };
    /// let mut fit = least_squares(&[s(0.0, 1.0), s(1.0, 3.0), s(2.0, 5.0)])?;
    /// assert!(fit.validate().is_ok());
    /// fit.r_squared = f64::NAN;
    /// assert!(fit.validate().is_err());
    /// # Ok::<(), comm_cost_model::InputError>(())
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        self.alpha_beta()?;
        if self.alpha_clamped && self.alpha_s != 0.0 {
            return Err(InputError::Degenerate {
                what: "a clamped fit has alpha = 0",
            });
        }
        if check_finite_result("R²", self.r_squared)? > 1.0 {
            return Err(InputError::Degenerate {
                what: "R² cannot exceed 1",
            });
        }
        for &r in &self.residuals_s {
            check_finite_result("residual (s)", r)?;
        }
        Ok(())
    }

    /// The largest `|measured - fitted|` over the samples, in seconds (0 without residuals).
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::fit::{least_squares, Sample};
    /// let s = |bytes, seconds| Sample { bytes, seconds };
    /// let fit = least_squares(&[s(0.0, 1.0), s(1.0, 3.0), s(2.0, 5.0)])?;
    /// assert!(fit.max_abs_residual_s() < 1e-12); // t = 1 + 2 x exactly
    /// # Ok::<(), comm_cost_model::InputError>(())
    /// ```
    #[must_use]
    pub fn max_abs_residual_s(&self) -> Seconds {
        self.residuals_s
            .iter()
            .fold(0.0, |m, r| f64::max(m, r.abs()))
    }
}

/// Sums of a validated sample set, centred on the means for numerical stability, computed on
/// sizes and times rescaled by powers of two (`x_scale`, `t_scale`) so that no square
/// overflows or underflows (issue 13: 1e308 bytes overflowed `Σ x²`). Power-of-two scaling is
/// exact, so ordinary data give the same bits as an unscaled computation.
struct Moments {
    n: f64,
    mean_x: f64,
    mean_t: f64,
    sxx: f64,
    sxt: f64,
    stt: f64,
    x_scale: f64,
    t_scale: f64,
}

fn validate(samples: &[Sample]) -> Result<(), InputError> {
    if samples.len() < 2 {
        return Err(InputError::CountTooSmall {
            what: "samples",
            min: 2,
            value: samples.len() as u64,
        });
    }
    samples.iter().try_for_each(Sample::validate)
}

fn moments(samples: &[Sample]) -> Result<Moments, InputError> {
    validate(samples)?;
    let n = samples.len() as f64;
    let largest = |f: fn(&Sample) -> f64| samples.iter().map(f).fold(0.0, f64::max);
    let x_scale = pow2_scale(largest(|s| s.bytes));
    let t_scale = pow2_scale(largest(|s| s.seconds));
    let scaled = |s: &Sample| (s.bytes * x_scale, s.seconds * t_scale);
    let (sum_x, sum_t) = samples
        .iter()
        .map(scaled)
        .fold((0.0, 0.0), |(x, t), (sx, st)| (x + sx, t + st));
    let (mean_x, mean_t) = (sum_x / n, sum_t / n);
    let (mut sxx, mut sxt, mut stt) = (0.0, 0.0, 0.0);
    for (x, t) in samples.iter().map(scaled) {
        let (dx, dt) = (x - mean_x, t - mean_t);
        sxx += dx * dx;
        sxt += dx * dt;
        stt += dt * dt;
    }
    // All sizes equal (up to rounding): the slope is undetermined.
    if sxx <= f64::EPSILON * mean_x * mean_x * n || sxx == 0.0 {
        return Err(InputError::Degenerate {
            what: "fewer than two distinct message sizes",
        });
    }
    Ok(Moments {
        n,
        mean_x,
        mean_t,
        sxx,
        sxt,
        stt,
        x_scale,
        t_scale,
    })
}

/// The fit of the line `alpha + beta x` on the rescaled data of `m`, in seconds and seconds
/// per byte.
fn finish(
    samples: &[Sample],
    m: &Moments,
    scaled_alpha: f64,
    scaled_beta: f64,
    alpha_clamped: bool,
) -> Result<AlphaBetaFit, InputError> {
    let alpha_s = check_finite_result("fitted alpha (s)", scaled_alpha / m.t_scale)?;
    let beta = check_finite_result("fitted beta (s/byte)", scaled_beta * m.x_scale / m.t_scale)?;
    if beta < 0.0 {
        return Err(InputError::NegativeFit {
            what: "beta (s/byte)",
            value: beta,
        });
    }
    let mut ss_res = 0.0;
    let mut residuals_s = Vec::with_capacity(samples.len());
    for s in samples {
        let r = s.seconds * m.t_scale - (scaled_alpha + scaled_beta * (s.bytes * m.x_scale));
        ss_res += r * r;
        residuals_s.push(check_finite_result("residual (s)", r / m.t_scale)?);
    }
    let r_squared = if m.stt > 0.0 {
        1.0 - ss_res / m.stt
    } else {
        1.0
    };
    Ok(AlphaBetaFit {
        alpha_s,
        beta_s_per_byte: beta,
        r_squared: check_finite_result("R²", r_squared)?,
        residuals_s,
        alpha_clamped,
    })
}

/// Ordinary least-squares fit of `t = alpha + beta * x` (Parm, Pan et al., §V-A Eq. 12).
///
/// # Errors
///
/// [`InputError::CountTooSmall`] for fewer than two samples; `NonFinite`/`Negative` for a
/// bad sample; [`InputError::Degenerate`] when all sizes are equal;
/// [`InputError::NegativeFit`] when the fitted `alpha` or `beta` is negative (use
/// [`least_squares_clamped`] to accept a zero start-up time instead);
/// [`InputError::NonFinite`] when a fitted parameter, a residual or R² does not fit in
/// `f64` (data spanning more than its range, such as a 1e300 s step over a 1e-300 byte step).
///
/// # Complexity
///
/// O(n) time, two passes over the samples plus one for the residuals; O(n) memory for them.
///
/// # Examples
///
/// ```
/// use comm_cost_model::fit::{least_squares, Sample};
/// // t = 1 ms + x / (1 GB/s), measured exactly at 1, 2 and 4 MB.
/// let samples: Vec<Sample> = [1e6, 2e6, 4e6]
///     .iter()
///     .map(|&b| Sample { bytes: b, seconds: 1e-3 + b * 1e-9 })
///     .collect();
/// let fit = least_squares(&samples)?;
/// assert!((fit.alpha_s - 1e-3).abs() < 1e-12);
/// assert!((fit.beta_s_per_byte - 1e-9).abs() < 1e-18);
/// assert!((fit.r_squared - 1.0).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn least_squares(samples: &[Sample]) -> Result<AlphaBetaFit, InputError> {
    let m = moments(samples)?;
    let beta = m.sxt / m.sxx;
    let alpha = m.mean_t - beta * m.mean_x;
    if alpha < 0.0 {
        return Err(InputError::NegativeFit {
            what: "alpha (s)",
            value: alpha / m.t_scale,
        });
    }
    finish(samples, &m, alpha, beta, false)
}

/// Least-squares fit with `alpha >= 0`: the ordinary fit when its `alpha` is non-negative, else
/// the line through the origin `beta = Σ x t / Σ x²` (flagged by `alpha_clamped`).
///
/// When the unconstrained optimum has `alpha < 0`, the constrained optimum of this convex
/// problem lies on the boundary `alpha = 0`, so the refit is the exact constrained
/// least-squares solution, not an ad-hoc clamp.
///
/// # Errors
///
/// As [`least_squares`], except that a negative `alpha` is not an error.
///
/// # Complexity
///
/// O(n).
///
/// # Examples
///
/// ```
/// use comm_cost_model::fit::{least_squares_clamped, Sample};
/// let samples = [
///     Sample { bytes: 1.0, seconds: 0.5 },
///     Sample { bytes: 2.0, seconds: 2.0 },
/// ];
/// // The free line is t = -1 + 1.5 x; constrained: beta = (0.5 + 4) / (1 + 4) = 0.9.
/// let fit = least_squares_clamped(&samples)?;
/// assert!(fit.alpha_clamped && fit.alpha_s == 0.0);
/// assert!((fit.beta_s_per_byte - 0.9).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn least_squares_clamped(samples: &[Sample]) -> Result<AlphaBetaFit, InputError> {
    let m = moments(samples)?;
    let beta = m.sxt / m.sxx;
    let alpha = m.mean_t - beta * m.mean_x;
    if alpha >= 0.0 {
        return finish(samples, &m, alpha, beta, false);
    }
    // Σx² and Σxt from the centred moments: Σx² = Sxx + n x̄², Σxt = Sxt + n x̄ t̄.
    let sum_xx = m.sxx + m.n * m.mean_x * m.mean_x;
    let sum_xt = m.sxt + m.n * m.mean_x * m.mean_t;
    finish(samples, &m, 0.0, sum_xt / sum_xx, true)
}

/// The line through two measurements `(x1, t1)` and `(x2, t2)`:
/// `beta = (t2 - t1) / (x2 - x1)`, `alpha = t1 - beta x1`.
///
/// # Errors
///
/// `NonFinite`/`Negative` for a bad sample; [`InputError::Degenerate`] if the sizes are
/// equal; [`InputError::NegativeFit`] if `alpha` or `beta` comes out negative (the larger
/// message was faster, or the small one is below the line's start-up time);
/// [`InputError::NonFinite`] when the slope does not fit in `f64`.
///
/// # Complexity
///
/// O(1).
///
/// # Examples
///
/// ```
/// use comm_cost_model::fit::{two_point, Sample};
/// let ab = two_point(
///     Sample { bytes: 1e3, seconds: 10e-6 + 1e3 / 25e9 },
///     Sample { bytes: 1e9, seconds: 10e-6 + 1e9 / 25e9 },
/// )?;
/// assert!((ab.alpha_s - 10e-6).abs() < 1e-12);
/// assert!((ab.bandwidth_bytes_per_s() - 25e9).abs() / 25e9 < 1e-6);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn two_point(small: Sample, large: Sample) -> Result<AlphaBeta, InputError> {
    validate(&[small, large])?;
    let dx = large.bytes - small.bytes;
    if dx == 0.0 {
        return Err(InputError::Degenerate {
            what: "two-point fit needs two distinct sizes",
        });
    }
    // A slope beyond `f64` (a time step over a subnormal size step) has no finite cost.
    let beta = check_finite_result("fitted beta (s/byte)", (large.seconds - small.seconds) / dx)?;
    let alpha = small.seconds - beta * small.bytes;
    if beta < 0.0 {
        return Err(InputError::NegativeFit {
            what: "beta (s/byte)",
            value: beta,
        });
    }
    if alpha < 0.0 {
        return Err(InputError::NegativeFit {
            what: "alpha (s)",
            value: alpha,
        });
    }
    AlphaBeta::new(alpha, beta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(bytes: f64, seconds: f64) -> Sample {
        Sample { bytes, seconds }
    }

    #[test]
    fn hand_computed_fit() {
        // Points (0, 1), (1, 3), (2, 4): x̄ = 1, t̄ = 8/3, Sxx = 2, Sxt = (-1)(-5/3) + 0 + (1)(4/3) = 3.
        // beta = 3/2, alpha = 8/3 - 3/2 = 7/6. Residuals: 1 - 7/6 = -1/6, 3 - 8/3 = 1/3,
        // 4 - 25/6 = -1/6. SS_res = 1/36 + 4/36 + 1/36 = 1/6; SS_tot = 25/9 + 1/9 + 16/9 = 14/3;
        // R² = 1 - (1/6)/(14/3) = 1 - 1/28.
        let fit = least_squares(&[s(0.0, 1.0), s(1.0, 3.0), s(2.0, 4.0)]).unwrap();
        assert!((fit.beta_s_per_byte - 1.5).abs() < 1e-12);
        assert!((fit.alpha_s - 7.0 / 6.0).abs() < 1e-12);
        assert!((fit.r_squared - (1.0 - 1.0 / 28.0)).abs() < 1e-12);
        let expected = [-1.0 / 6.0, 1.0 / 3.0, -1.0 / 6.0];
        for (r, e) in fit.residuals_s.iter().zip(expected) {
            assert!((r - e).abs() < 1e-12);
        }
    }

    #[test]
    fn paper_constants_round_trip() {
        // Parm §VI-B, testbed B MP-AllGather: alpha = 1.09e-4 s, beta = 7.14e-10 s/element,
        // i.e. 1.785e-10 s/byte for 4-byte elements.
        let beta = 7.14e-10 / 4.0;
        let samples: Vec<Sample> = (1..=20)
            .map(|i| {
                let x = f64::from(i) * 1e6;
                s(x, 1.09e-4 + beta * x)
            })
            .collect();
        let fit = least_squares(&samples).unwrap();
        assert!((fit.alpha_s - 1.09e-4).abs() < 1e-12);
        assert!((fit.beta_s_per_byte - beta).abs() / beta < 1e-9);
    }

    #[test]
    fn degenerate_inputs_are_errors() {
        assert!(matches!(
            least_squares(&[s(1.0, 1.0)]),
            Err(InputError::CountTooSmall { .. })
        ));
        assert!(matches!(
            least_squares(&[s(1.0, 1.0), s(1.0, 2.0)]),
            Err(InputError::Degenerate { .. })
        ));
        assert!(least_squares(&[s(1.0, f64::NAN), s(2.0, 1.0)]).is_err());
        assert!(least_squares(&[s(-1.0, 1.0), s(2.0, 1.0)]).is_err());
        // Time falls with size: negative beta.
        assert!(matches!(
            least_squares(&[s(1.0, 2.0), s(2.0, 1.0)]),
            Err(InputError::NegativeFit {
                what: "beta (s/byte)",
                ..
            })
        ));
        assert!(matches!(
            least_squares(&[s(1.0, 0.5), s(2.0, 2.0)]),
            Err(InputError::NegativeFit {
                what: "alpha (s)",
                ..
            })
        ));
        assert!(two_point(s(1.0, 1.0), s(1.0, 2.0)).is_err());
        assert!(two_point(s(1.0, 2.0), s(2.0, 1.0)).is_err());
    }

    /// A deterministic uniform noise source in [-1, 1) (SplitMix64), so the test needs no RNG
    /// crate and every proptest case is reproducible from its seed.
    fn noise(state: &mut u64) -> f64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// 1000 samples with ±1% multiplicative noise recover alpha and beta within 1%.
        #[test]
        fn recovers_truth_from_noisy_samples(
            alpha in 1e-6f64..1e-3,
            bw_gbps in 1.0f64..400.0,
            seed in any::<u64>(),
        ) {
            let beta = 1.0 / (bw_gbps * 1e9 / 8.0);
            let mut state = seed;
            // Sizes up to where the bandwidth term is 10x the start-up, so both are visible.
            let x_max = 10.0 * alpha / beta;
            let samples: Vec<Sample> = (0..1000)
                .map(|i| {
                    let x = f64::from(i) / 999.0 * x_max;
                    let t = (alpha + beta * x) * (1.0 + 0.01 * noise(&mut state));
                    s(x, t)
                })
                .collect();
            let fit = least_squares_clamped(&samples).unwrap();
            prop_assert!((fit.beta_s_per_byte - beta).abs() / beta < 0.01);
            prop_assert!((fit.alpha_s - alpha).abs() / alpha < 0.01);
            prop_assert!(fit.r_squared > 0.99);
        }
    }
}
