//! Numbers in error messages: readable at every magnitude.
//!
//! Rust's `Display` for `f64` never uses an exponent, so `1e308` prints as 309 digits and
//! `5e-324` as 324; error messages show such values in scientific notation instead.

use std::fmt;

/// An `f64` as an error message shows it: plainly between `1e-4` and `1e16` (and for zero,
/// the infinities and NaN), in scientific notation otherwise; always enough digits to
/// round-trip.
///
/// # Examples
///
/// ```
/// use comm_cost_model::Shown;
/// assert_eq!(Shown(-3.0).to_string(), "-3");
/// assert_eq!(Shown(0.125).to_string(), "0.125");
/// assert_eq!(Shown(1e308).to_string(), "1e308");
/// assert_eq!(Shown(5e-324).to_string(), "5e-324");
/// assert_eq!(Shown(f64::NAN).to_string(), "NaN");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown(pub f64);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.0;
        let magnitude = x.abs();
        if x == 0.0 || !x.is_finite() || (1e-4..1e16).contains(&magnitude) {
            write!(f, "{x}")
        } else {
            write!(f, "{x:e}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_magnitude_is_short_and_exact() {
        for (x, s) in [
            (1e308, "1e308"),
            (f64::MAX, "1.7976931348623157e308"),
            (-1e20, "-1e20"),
            (123_456.5, "123456.5"),
            (1e-5, "1e-5"),
            (f64::INFINITY, "inf"),
            (-0.0, "-0"),
        ] {
            assert_eq!(Shown(x).to_string(), s);
            if x.is_finite() {
                assert_eq!(s.parse::<f64>().ok(), Some(x));
            }
        }
    }
}
