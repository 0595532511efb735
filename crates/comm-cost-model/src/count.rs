//! Integer helpers on counts (GPUs, parallel degrees): greatest common divisor and checked
//! products.

use crate::InputError;

/// Greatest common divisor (`gcd(0, b) = b`).
///
/// # Complexity
///
/// `O(log min(a, b))` time.
///
/// # Examples
///
/// ```
/// assert_eq!(comm_cost_model::gcd(12, 18), 6);
/// assert_eq!(comm_cost_model::gcd(0, 5), 5);
/// ```
#[must_use]
pub fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The product of `factors`, or [`InputError::Overflow`] naming `what` if it exceeds `u64`.
///
/// # Errors
///
/// [`InputError::Overflow`] when the product does not fit in `u64`.
///
/// # Complexity
///
/// `O(len)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::checked_product;
/// assert_eq!(checked_product("t p d", &[8, 64, 6]), Ok(3072));
/// assert!(checked_product("t p d", &[u64::MAX, 2]).is_err());
/// assert_eq!(checked_product("t p d", &[u64::MAX, 2, 0]), Ok(0));
/// ```
pub fn checked_product(what: &'static str, factors: &[u64]) -> Result<u64, InputError> {
    // A zero factor makes the product 0 however large the others (a partial product that
    // overflowed before the zero used to be reported as an overflow).
    if factors.contains(&0) {
        return Ok(0);
    }
    factors
        .iter()
        .try_fold(1u64, |acc, &f| acc.checked_mul(f))
        .ok_or(InputError::Overflow { what })
}
