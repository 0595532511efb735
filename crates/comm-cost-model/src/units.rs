//! Units of the workspace: SI quantities in `f64`, named by suffix.
//!
//! Every public name or serde field that carries a physical quantity says its unit: `_s` for
//! seconds, `_bytes`, `_bytes_per_s`, `_flop`, `_flop_per_s`. The type aliases below document
//! intent in signatures; they are plain `f64`, so arithmetic needs no ceremony. Vendor units
//! (Gbps for links, GB/s for memory and NVLink, TFLOP/s for accelerators) are converted to SI
//! exactly once, at the edge (CLI, specs, presets), with the functions of this module.
//!
//! Decimal prefixes throughout: 1 GB = 10^9 bytes, 1 Gbps = 10^9 bit/s, as network and GPU
//! vendors quote them.
//!
//! # Examples
//!
//! ```
//! use comm_cost_model::units;
//! assert_eq!(units::gbps(400.0), 50e9);          // a 400 Gbps NIC moves 50 GB/s
//! assert_eq!(units::gb_per_s(25.0), 25e9);
//! assert_eq!(units::tflop_per_s(312.0), 312e12); // A100 dense bf16
//! assert_eq!(units::to_gbps(units::gbps(100.0)), 100.0);
//! ```

use crate::{InputError, check_positive};

/// A duration in seconds.
pub type Seconds = f64;
/// An amount of data in bytes.
pub type Bytes = f64;
/// A data rate in bytes per second.
pub type BytesPerSecond = f64;
/// An amount of floating-point work in FLOP.
pub type Flop = f64;
/// A compute rate in FLOP per second.
pub type FlopPerSecond = f64;

/// Bytes per second of a link quoted in gigabits per second (10^9 bit/s).
#[must_use]
pub fn gbps(gigabits_per_s: f64) -> BytesPerSecond {
    gigabits_per_s * 1e9 / 8.0
}

/// Gigabits per second of a rate given in bytes per second (inverse of [`gbps`]).
#[must_use]
pub fn to_gbps(bytes_per_s: BytesPerSecond) -> f64 {
    bytes_per_s * 8.0 / 1e9
}

/// Bytes per second of a rate quoted in gigabytes per second (10^9 byte/s).
#[must_use]
pub fn gb_per_s(gigabytes_per_s: f64) -> BytesPerSecond {
    gigabytes_per_s * 1e9
}

/// FLOP per second of an accelerator quoted in TFLOP/s (10^12 FLOP/s).
#[must_use]
pub fn tflop_per_s(teraflop_per_s: f64) -> FlopPerSecond {
    teraflop_per_s * 1e12
}

/// Bytes of a size quoted in megabytes (10^6 bytes).
#[must_use]
pub fn megabytes(mb: f64) -> Bytes {
    mb * 1e6
}

/// Seconds of a duration quoted in milliseconds.
#[must_use]
pub fn millis(ms: f64) -> Seconds {
    ms * 1e-3
}

/// [`gbps`] of a user-given bandwidth, checked in the user's unit: positive, finite, and small
/// enough that the rate in bytes per second is finite. Errors name the value in Gbps, as the
/// user wrote it, never the converted bytes per second.
///
/// # Errors
///
/// [`InputError::NonFinite`] or [`InputError::NotPositive`] for a bad value;
/// [`InputError::AboveMaximum`] above `f64::MAX / 1.25e8` Gbps (about 1.4e300).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::units::checked_gbps;
/// assert_eq!(checked_gbps("bandwidth (Gbps)", 400.0), Ok(50e9));
/// let e = checked_gbps("bandwidth (Gbps)", -3.0).unwrap_err();
/// assert_eq!(e.to_string(), "bandwidth (Gbps) must be positive, got -3");
/// ```
pub fn checked_gbps(what: &'static str, gigabits_per_s: f64) -> Result<BytesPerSecond, InputError> {
    checked_scale(what, gigabits_per_s, 1e9 / 8.0)
}

/// [`gb_per_s`] of a user-given rate in GB/s, checked like [`checked_gbps`].
///
/// # Errors
///
/// As [`checked_gbps`], with the maximum `f64::MAX / 1e9` GB/s.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::units::checked_gb_per_s;
/// assert_eq!(checked_gb_per_s("NVLink (GB/s)", 450.0), Ok(450e9));
/// assert!(checked_gb_per_s("NVLink (GB/s)", 1e308).is_err());
/// ```
pub fn checked_gb_per_s(
    what: &'static str,
    gigabytes_per_s: f64,
) -> Result<BytesPerSecond, InputError> {
    checked_scale(what, gigabytes_per_s, 1e9)
}

/// [`tflop_per_s`] of a user-given compute rate in TFLOP/s, checked like [`checked_gbps`].
///
/// # Errors
///
/// As [`checked_gbps`], with the maximum `f64::MAX / 1e12` TFLOP/s.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::units::checked_tflop_per_s;
/// assert_eq!(checked_tflop_per_s("GPU (TFLOP/s)", 312.0), Ok(312e12));
/// assert!(checked_tflop_per_s("GPU (TFLOP/s)", 0.0).is_err());
/// ```
pub fn checked_tflop_per_s(
    what: &'static str,
    teraflop_per_s: f64,
) -> Result<FlopPerSecond, InputError> {
    checked_scale(what, teraflop_per_s, 1e12)
}

/// `value * factor` for a positive, finite `value` whose product stays finite.
fn checked_scale(what: &'static str, value: f64, factor: f64) -> Result<f64, InputError> {
    let value = check_positive(what, value)?;
    let scaled = value * factor;
    if scaled.is_finite() {
        Ok(scaled)
    } else {
        // Checked on the product: `value <= f64::MAX / factor` can still round up to infinity.
        let max = f64::MAX / factor;
        Err(InputError::AboveMaximum { what, max, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_conversions_speak_the_users_unit() {
        assert_eq!(checked_gbps("b (Gbps)", 8.0), Ok(1e9));
        assert!(matches!(
            checked_gbps("b (Gbps)", 0.0),
            Err(InputError::NotPositive {
                what: "b (Gbps)",
                ..
            })
        ));
        assert!(matches!(
            checked_gbps("b (Gbps)", f64::NAN),
            Err(InputError::NonFinite { .. })
        ));
        let e = checked_gbps("b (Gbps)", 1e308).unwrap_err();
        assert!(matches!(e, InputError::AboveMaximum { value, .. } if value == 1e308));
        assert!(
            e.to_string().starts_with("b (Gbps) must be at most 1.4"),
            "{e}"
        );
        // The largest accepted value converts to a finite rate.
        let max = f64::MAX / 1.25e8;
        assert!(checked_gbps("b", max).is_ok_and(f64::is_finite));
        assert!(checked_tflop_per_s("t", 1e296).is_ok_and(f64::is_finite));
        assert!(matches!(
            checked_gb_per_s("g", f64::MAX),
            Err(InputError::AboveMaximum { .. })
        ));
    }

    #[test]
    fn conversions_round_trip() {
        assert_eq!(gbps(8.0), 1e9);
        assert_eq!(to_gbps(1e9), 8.0);
        assert_eq!(gb_per_s(1.5), 1.5e9);
        assert_eq!(tflop_per_s(1.0), 1e12);
        assert_eq!(megabytes(2.0), 2e6);
        assert_eq!(millis(3.0), 3e-3);
    }
}
