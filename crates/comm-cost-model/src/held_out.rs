//! Held-out validation: how far predictions fall from measurements the fit never saw.
//!
//! A fit scored on its own samples says how well a curve can pass through them; a model is only
//! useful for what it predicts. These helpers split samples and summarise relative errors so a
//! reproduction report can state median and worst held-out errors.

use serde::{Deserialize, Serialize};

use crate::{InputError, check_finite_result, check_non_negative, check_positive};

/// Median, mean and worst relative error `|predicted - measured| / measured` of a set of
/// predictions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// Predictions scored.
    pub count: usize,
    /// Median relative error.
    pub median: f64,
    /// Mean relative error.
    pub mean: f64,
    /// Worst relative error.
    pub worst: f64,
}

/// Summarises the relative errors of `(predicted, measured)` pairs.
///
/// # Errors
///
/// [`InputError::CountTooSmall`] for no pairs; `NonFinite`/`Negative` for a bad prediction;
/// [`InputError::NotPositive`] for a measured value that is not positive;
/// [`InputError::NonFinite`] for a relative error beyond `f64` (a 1e308 prediction of a
/// 1e-300 measurement).
///
/// # Complexity
///
/// O(n log n).
///
/// # Examples
///
/// ```
/// use comm_cost_model::held_out::error_summary;
/// let s = error_summary(&[(1.1, 1.0), (0.8, 1.0), (2.0, 2.0)])?;
/// assert!((s.median - 0.1).abs() < 1e-12 && (s.worst - 0.2).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn error_summary(pairs: &[(f64, f64)]) -> Result<ErrorSummary, InputError> {
    if pairs.is_empty() {
        return Err(InputError::CountTooSmall {
            what: "predictions to score",
            min: 1,
            value: 0,
        });
    }
    let mut errors = Vec::with_capacity(pairs.len());
    for &(p, m) in pairs {
        let p = check_non_negative("prediction", p)?;
        let m = check_positive("measurement", m)?;
        errors.push(check_finite_result("relative error", (p - m).abs() / m)?);
    }
    errors.sort_by(f64::total_cmp);
    let n = errors.len();
    let median = if n % 2 == 1 {
        errors[n / 2]
    } else {
        mean_of(&errors[n / 2 - 1..=n / 2])
    };
    Ok(ErrorSummary {
        count: n,
        median,
        mean: mean_of(&errors),
        worst: errors[n - 1],
    })
}

/// The mean of finite non-negative values: the plain sum over the count, or, when the sum
/// overflows (errors near `f64::MAX`), the sum of each value over the count, capped by the
/// largest value (which the rounding of values at `f64::MAX` could pass).
fn mean_of(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean.is_finite() {
        return mean;
    }
    let largest = values.iter().copied().fold(0.0, f64::max);
    values.iter().map(|v| v / n).sum::<f64>().min(largest)
}

/// Splits items into (even positions, odd positions): fit on every other size, predict the
/// others.
///
/// # Complexity
///
/// O(n).
///
/// # Examples
///
/// ```
/// use comm_cost_model::held_out::every_other;
/// let (fit, held) = every_other(&[1, 2, 3, 4, 5]);
/// assert_eq!((fit, held), (vec![1, 3, 5], vec![2, 4]));
/// ```
#[must_use]
pub fn every_other<T: Clone>(items: &[T]) -> (Vec<T>, Vec<T>) {
    let even = items.iter().step_by(2).cloned().collect();
    let odd = items.iter().skip(1).step_by(2).cloned().collect();
    (even, odd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pairs_are_errors() {
        assert!(matches!(
            error_summary(&[]),
            Err(InputError::CountTooSmall { .. })
        ));
        assert!(matches!(
            error_summary(&[(1.0, 0.0)]),
            Err(InputError::NotPositive { .. })
        ));
        assert!(matches!(
            error_summary(&[(f64::NAN, 1.0)]),
            Err(InputError::NonFinite { .. })
        ));
        let s = error_summary(&[(3.0, 1.0)]).unwrap();
        assert_eq!((s.median, s.worst, s.count), (2.0, 2.0, 1));
    }
}
