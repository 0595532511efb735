//! Power-of-two rescaling, so sums of squares of extreme but finite data (1e308 bytes, 5e-324 s)
//! neither overflow nor underflow.
//!
//! Multiplying by a power of two is exact in binary floating point (away from the subnormal
//! range), so a computation run on rescaled data and scaled back gives the same bits as the
//! unscaled one whenever the latter did not overflow: the fits keep their published numbers.

/// The power of two `s` with `max * s` in `[1, 2)` for a positive finite `max` (clamped to the
/// normal range of `s`, so a subnormal `max` lands in `[2^-51, 2)` and `f64::MAX` in `[2, 4)`);
/// 1 for zero or a non-finite `max`.
pub(crate) fn pow2_scale(max: f64) -> f64 {
    if !(max.is_finite() && max > 0.0) {
        return 1.0;
    }
    // The biased exponent of `max` (0 for subnormals) and the exponent of 1 / 2^e.
    let biased = i64::try_from((max.to_bits() >> 52) & 0x7ff).unwrap_or(0);
    let exponent = (1023 - (biased - 1023)).clamp(1, 2046);
    f64::from_bits(u64::try_from(exponent).unwrap_or(1023) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_into_one_to_two() {
        for max in [1.0, 1.5, 3.0, 1e-9, 1e9, 1e300, 1e-300, f64::MIN_POSITIVE] {
            let s = pow2_scale(max);
            assert!((1.0..2.0).contains(&(max * s)), "{max} * {s}");
            assert_eq!(s.to_bits() & ((1 << 52) - 1), 0, "{s} is a power of two");
        }
        assert!((2.0..4.0).contains(&(f64::MAX * pow2_scale(f64::MAX))));
        let tiny = 5e-324 * pow2_scale(5e-324);
        assert!(tiny > 0.0 && tiny < 2.0);
        for odd in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(pow2_scale(odd), 1.0);
        }
    }
}
