//! Input checks shared by every public function of the crate (and available to the workspace).

use crate::InputError;

/// Checks that `value` is finite and `>= 0`, naming it `what` in the error.
///
/// # Errors
///
/// [`InputError::NonFinite`] for NaN or infinities, [`InputError::Negative`] below zero.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_non_negative;
/// assert_eq!(check_non_negative("bytes", 3.0), Ok(3.0));
/// assert!(check_non_negative("bytes", -1.0).is_err());
/// assert!(check_non_negative("bytes", f64::NAN).is_err());
/// ```
pub fn check_non_negative(what: &'static str, value: f64) -> Result<f64, InputError> {
    if !value.is_finite() {
        return Err(InputError::NonFinite { what, value });
    }
    if value < 0.0 {
        return Err(InputError::Negative { what, value });
    }
    Ok(value)
}

/// Checks that a computed result is finite: finite but extreme inputs (1e308 bytes, a 5e-324
/// bandwidth) can overflow a formula, and a function returns this error rather than `Ok(inf)`
/// or `Ok(NaN)`.
///
/// # Errors
///
/// [`InputError::NonFinite`] naming `what`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{check_finite_result, InputError};
/// assert_eq!(check_finite_result("time (s)", 2.0), Ok(2.0));
/// let overflow = 1e308 * 10.0;
/// assert!(matches!(check_finite_result("time (s)", overflow), Err(InputError::NonFinite { .. })));
/// ```
pub fn check_finite_result(what: &'static str, value: f64) -> Result<f64, InputError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(InputError::NonFinite { what, value })
    }
}

/// Checks that `value` is finite and `> 0`, naming it `what` in the error.
///
/// # Errors
///
/// [`InputError::NonFinite`] for NaN or infinities, [`InputError::NotPositive`] for
/// zero or below.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_positive;
/// assert_eq!(check_positive("bandwidth (bytes/s)", 1e9), Ok(1e9));
/// assert!(check_positive("bandwidth (bytes/s)", 0.0).is_err());
/// ```
pub fn check_positive(what: &'static str, value: f64) -> Result<f64, InputError> {
    if !value.is_finite() {
        return Err(InputError::NonFinite { what, value });
    }
    if value <= 0.0 {
        return Err(InputError::NotPositive { what, value });
    }
    Ok(value)
}

/// Checks that a count (of GPUs, layers, samples, ...) is at least `min`, naming it `what`.
///
/// # Errors
///
/// [`InputError::CountTooSmall`] if `value < min`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_count;
/// assert_eq!(check_count("GPUs", 8, 1), Ok(8));
/// assert!(check_count("GPUs", 0, 1).is_err());
/// ```
pub fn check_count(what: &'static str, value: usize, min: usize) -> Result<usize, InputError> {
    if value < min {
        return Err(InputError::CountTooSmall {
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
/// [`InputError::CountTooSmall`] if `value < min`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_count_u64;
/// assert_eq!(check_count_u64("GPUs", 4096, 1), Ok(4096));
/// assert!(check_count_u64("GPUs", 0, 1).is_err());
/// ```
pub fn check_count_u64(what: &'static str, value: u64, min: u64) -> Result<u64, InputError> {
    if value < min {
        return Err(InputError::CountTooSmall { what, min, value });
    }
    Ok(value)
}

/// Checks that `divisor` divides `value` and returns the quotient; `what` names the constraint.
///
/// # Errors
///
/// [`InputError::NotDivisible`] if `divisor` is 0 or leaves a remainder.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_divides;
/// assert_eq!(check_divides("K must divide N", 4096, 256), Ok(16));
/// assert!(check_divides("K must divide N", 4096, 384).is_err());
/// assert!(check_divides("K must divide N", 4096, 0).is_err());
/// ```
pub fn check_divides(what: &'static str, value: u64, divisor: u64) -> Result<u64, InputError> {
    if divisor == 0 || value % divisor != 0 {
        Err(InputError::NotDivisible {
            what,
            value,
            divisor,
        })
    } else {
        Ok(value / divisor)
    }
}

/// Checks that a length `actual` equals `expected`, naming the input `what`.
///
/// # Errors
///
/// [`InputError::SizeMismatch`] otherwise.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_same_len;
/// assert_eq!(check_same_len("loads", 4, 4), Ok(()));
/// let err = check_same_len("loads", 3, 4).unwrap_err();
/// assert_eq!(err.to_string(), "loads: expected 4, got 3");
/// ```
pub fn check_same_len(
    what: &'static str,
    actual: usize,
    expected: usize,
) -> Result<(), InputError> {
    if actual == expected {
        Ok(())
    } else {
        Err(InputError::size_mismatch(what, expected, actual))
    }
}

/// Checks a size against its documented limit (before anything of that size is allocated),
/// naming it `what`.
///
/// # Errors
///
/// [`InputError::TooLarge`] if `value > limit`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_at_most;
/// assert_eq!(check_at_most("GPUs", 8192, 8192), Ok(()));
/// let err = check_at_most("GPUs", 8192, 8193).unwrap_err();
/// assert_eq!(err.to_string(), "GPUs = 8193 exceeds the limit 8192");
/// ```
pub fn check_at_most(what: &'static str, limit: usize, value: usize) -> Result<(), InputError> {
    if value <= limit {
        Ok(())
    } else {
        Err(InputError::too_large(what, limit, value))
    }
}

/// Checks that entry `index` of the list `what` is finite and `>= 0`.
///
/// # Errors
///
/// [`InputError::InvalidEntry`] (with the index and the value) otherwise.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_entry;
/// assert_eq!(check_entry("loads", 0, 2.5), Ok(2.5));
/// let err = check_entry("loads", 3, -1.0).unwrap_err();
/// assert_eq!(err.to_string(), "loads[3] = -1 is not a finite non-negative number");
/// ```
pub fn check_entry(what: &'static str, index: usize, value: f64) -> Result<f64, InputError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(InputError::InvalidEntry { what, index, value })
    }
}

/// Checks that every entry of `values` is finite and `>= 0` ([`check_entry`]).
///
/// # Errors
///
/// [`InputError::InvalidEntry`] for the first entry that is not.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_entries;
/// assert!(check_entries("loads", &[1.0, 0.0]).is_ok());
/// assert!(check_entries("loads", &[1.0, f64::NAN]).is_err());
/// ```
pub fn check_entries(what: &'static str, values: &[f64]) -> Result<(), InputError> {
    values
        .iter()
        .enumerate()
        .try_for_each(|(index, &value)| check_entry(what, index, value).map(|_| ()))
}

/// Checks that every entry of `values` is finite and `> 0`.
///
/// # Errors
///
/// [`InputError::InvalidEntry`] for NaN, infinities or negative entries,
/// [`InputError::NotPositiveEntry`] for zero; the first offending entry is named.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_positive_entries;
/// assert!(check_positive_entries("FLOP/s", &[1e12, 2e12]).is_ok());
/// let err = check_positive_entries("FLOP/s", &[1e12, 0.0]).unwrap_err();
/// assert_eq!(err.to_string(), "FLOP/s[1] = 0 must be positive");
/// ```
pub fn check_positive_entries(what: &'static str, values: &[f64]) -> Result<(), InputError> {
    for (index, &value) in values.iter().enumerate() {
        if check_entry(what, index, value)? <= 0.0 {
            return Err(InputError::NotPositiveEntry { what, index, value });
        }
    }
    Ok(())
}

/// Checks that `index` is below `size`, naming the index `what`.
///
/// # Errors
///
/// [`InputError::IndexOutOfRange`] otherwise.
///
/// # Examples
///
/// ```
/// use comm_cost_model::check_index;
/// assert_eq!(check_index("expert id", 7, 8), Ok(7));
/// assert!(check_index("expert id", 8, 8).is_err());
/// ```
pub fn check_index(what: &'static str, index: usize, size: usize) -> Result<usize, InputError> {
    if index < size {
        Ok(index)
    } else {
        Err(InputError::index_out_of_range(what, index, size))
    }
}
