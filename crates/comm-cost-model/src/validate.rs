//! Input checks shared by every public function of the crate (and available to the workspace).

use crate::CostModelError;

/// Checks that `value` is finite and `>= 0`, naming it `what` in the error.
///
/// # Errors
///
/// [`CostModelError::NonFinite`] for NaN or infinities, [`CostModelError::Negative`] below zero.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_non_negative;
/// assert_eq!(check_non_negative("bytes", 3.0), Ok(3.0));
/// assert!(check_non_negative("bytes", -1.0).is_err());
/// assert!(check_non_negative("bytes", f64::NAN).is_err());
/// ```
pub fn check_non_negative(what: &'static str, value: f64) -> Result<f64, CostModelError> {
    if !value.is_finite() {
        return Err(CostModelError::NonFinite { what, value });
    }
    if value < 0.0 {
        return Err(CostModelError::Negative { what, value });
    }
    Ok(value)
}

/// Checks that a computed result is finite: finite but extreme inputs (1e308 bytes, a 5e-324
/// bandwidth) can overflow a formula, and a function returns this error rather than `Ok(inf)`
/// or `Ok(NaN)`.
///
/// # Errors
///
/// [`CostModelError::NonFinite`] naming `what`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{check_finite_result, CostModelError};
/// assert_eq!(check_finite_result("time (s)", 2.0), Ok(2.0));
/// let overflow = 1e308 * 10.0;
/// assert!(matches!(check_finite_result("time (s)", overflow), Err(CostModelError::NonFinite { .. })));
/// ```
pub fn check_finite_result(what: &'static str, value: f64) -> Result<f64, CostModelError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(CostModelError::NonFinite { what, value })
    }
}

/// Checks that `value` is finite and `> 0`, naming it `what` in the error.
///
/// # Errors
///
/// [`CostModelError::NonFinite`] for NaN or infinities, [`CostModelError::NotPositive`] for
/// zero or below.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_positive;
/// assert_eq!(check_positive("bandwidth (bytes/s)", 1e9), Ok(1e9));
/// assert!(check_positive("bandwidth (bytes/s)", 0.0).is_err());
/// ```
pub fn check_positive(what: &'static str, value: f64) -> Result<f64, CostModelError> {
    if !value.is_finite() {
        return Err(CostModelError::NonFinite { what, value });
    }
    if value <= 0.0 {
        return Err(CostModelError::NotPositive { what, value });
    }
    Ok(value)
}

/// Checks that a count (of GPUs, layers, samples, ...) is at least `min`, naming it `what`.
///
/// # Errors
///
/// [`CostModelError::CountTooSmall`] if `value < min`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_count;
/// assert_eq!(check_count("GPUs", 8, 1), Ok(8));
/// assert!(check_count("GPUs", 0, 1).is_err());
/// ```
pub fn check_count(what: &'static str, value: usize, min: usize) -> Result<usize, CostModelError> {
    if value < min {
        return Err(CostModelError::CountTooSmall {
            what,
            min: min as u64,
            value: value as u64,
        });
    }
    Ok(value)
}

/// As [`check_count`] for `u64` counts (GPUs, parallel degrees, batch sizes).
///
/// # Errors
///
/// [`CostModelError::CountTooSmall`] if `value < min`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_count_u64;
/// assert_eq!(check_count_u64("GPUs", 4096, 1), Ok(4096));
/// assert!(check_count_u64("GPUs", 0, 1).is_err());
/// ```
pub fn check_count_u64(what: &'static str, value: u64, min: u64) -> Result<u64, CostModelError> {
    if value < min {
        return Err(CostModelError::CountTooSmall { what, min, value });
    }
    Ok(value)
}

/// Checks that `divisor` divides `value` and returns the quotient; `what` names the constraint.
///
/// # Errors
///
/// [`CostModelError::NotDivisible`] if `divisor` is 0 or leaves a remainder.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_divides;
/// assert_eq!(check_divides("K must divide N", 4096, 256), Ok(16));
/// assert!(check_divides("K must divide N", 4096, 384).is_err());
/// assert!(check_divides("K must divide N", 4096, 0).is_err());
/// ```
pub fn check_divides(what: &'static str, value: u64, divisor: u64) -> Result<u64, CostModelError> {
    if divisor == 0 || value % divisor != 0 {
        Err(CostModelError::NotDivisible {
            what,
            value,
            divisor,
        })
    } else {
        Ok(value / divisor)
    }
}
