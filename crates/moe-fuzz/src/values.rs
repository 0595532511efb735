//! The hostile values: edges of `f64`, `u64` and `usize`, mixed with ordinary ones.

use proptest::prelude::*;
use serde_json::{Value, json};

/// Floating-point values at the edges: NaN, the infinities, the extremes of magnitude, the
/// subnormals, both zeros and a negative.
pub const FLOAT_EXTREMES: &[f64] = &[
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MAX,
    -f64::MAX,
    1e308,
    1e300,
    f64::MIN_POSITIVE,
    5e-324,
    1e-300,
    0.0,
    -0.0,
    -1.0,
    // 2^53 + 2: the first integers `f64` cannot all hold.
    9_007_199_254_740_994.0,
];

/// `u64` values at the edges of the type and of `f64`'s exact integers.
pub const U64_EXTREMES: &[u64] = &[
    0,
    1,
    u64::MAX,
    u64::MAX - 1,
    1 << 63,
    1 << 53,
    (1 << 53) + 1,
    1 << 32,
    u32::MAX as u64,
    1_000_000_000_000_000_000,
];

/// Sizes at the edges: empty, one, the workspace's limits (2^15, 2^24) and one past them, and
/// sizes whose products or allocations overflow.
pub const SIZE_EXTREMES: &[usize] = &[
    0,
    1,
    1 << 15,
    (1 << 15) + 1,
    1 << 24,
    (1 << 24) + 1,
    1 << 32,
    1 << 53,
    usize::MAX / 2,
    usize::MAX - 1,
    usize::MAX,
];

/// Any `f64`: an edge value a third of the time, else an ordinary magnitude (0 to 10^6, or a
/// small fraction), so that functions get past their first check often enough to be tested.
pub fn f64_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => prop::sample::select(FLOAT_EXTREMES),
        1 => 0.0..1e6_f64,
        1 => 0.0..1.0_f64,
    ]
}

/// A finite `f64`: the edge values without NaN and the infinities, or an ordinary one (for the
/// functions whose input types forbid non-finite values, to get past that check).
pub fn finite_f64() -> impl Strategy<Value = f64> {
    f64_value().prop_map(|x| if x.is_finite() { x } else { f64::MAX })
}

/// Any `u64`: an edge value a third of the time, else 0 to 1000.
pub fn u64_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        1 => prop::sample::select(U64_EXTREMES),
        2 => 0_u64..1000,
    ]
}

/// A size or count: an edge value a quarter of the time, else 0 to `small` (inclusive).
pub fn count(small: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => prop::sample::select(SIZE_EXTREMES),
        3 => 0..=small,
    ]
}

/// A vector of 0 to `max_len` values of `element` (empty shapes included).
pub fn vec_of<S: Strategy>(element: S, max_len: usize) -> impl Strategy<Value = Vec<S::Value>> {
    prop::collection::vec(element, 0..=max_len)
}

/// Numbers a JSON document can carry at the edges of `f64`, `u64` and `i64` (JSON has no NaN
/// or infinities): for mutating valid documents before they are deserialized.
#[must_use]
pub fn json_extremes() -> Vec<Value> {
    vec![
        json!(0),
        json!(-0.0),
        json!(1),
        json!(2),
        json!(-1),
        json!(0.5),
        json!(5e-324),
        json!(2.2250738585072014e-308),
        json!(1e-300),
        json!(1e308),
        json!(f64::MAX),
        json!(-f64::MAX),
        json!(9_007_199_254_740_993_u64),
        json!(1_u64 << 32),
        json!(1_000_000_000_000_000_000_u64),
        json!(u64::MAX),
        json!(u64::MAX - 1),
        json!(i64::MIN),
        json!(100_000),
    ]
}
