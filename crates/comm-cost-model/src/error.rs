use thiserror::Error;

use crate::Shown;

/// Everything that can be wrong with the input of a cost-model function.
///
/// Variants name the offending quantity (`what`) so a caller can report one clear line.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum CostModelError {
    /// A quantity was NaN or infinite.
    #[error("{what} must be finite, got {}", Shown(*.value))]
    NonFinite {
        /// Name of the quantity, with its unit.
        what: &'static str,
        /// The value received.
        value: f64,
    },
    /// A quantity that must be at least zero was negative.
    #[error("{what} must be non-negative, got {}", Shown(*.value))]
    Negative {
        /// Name of the quantity, with its unit.
        what: &'static str,
        /// The value received.
        value: f64,
    },
    /// A quantity that must be strictly positive was zero or negative.
    #[error("{what} must be positive, got {}", Shown(*.value))]
    NotPositive {
        /// Name of the quantity, with its unit.
        what: &'static str,
        /// The value received.
        value: f64,
    },
    /// A quantity was larger than the computation can represent (a bandwidth whose conversion
    /// to bytes per second would overflow `f64`), stated in the unit the user gave.
    #[error("{what} must be at most {}, got {}", Shown(*.max), Shown(*.value))]
    AboveMaximum {
        /// Name of the quantity, with its unit.
        what: &'static str,
        /// The largest accepted value.
        max: f64,
        /// The value received.
        value: f64,
    },
    /// A count (of GPUs, samples, layers, ...) was outside its valid range.
    #[error("{what} must be at least {min}, got {value}")]
    CountTooSmall {
        /// Name of the count.
        what: &'static str,
        /// The smallest valid value.
        min: u64,
        /// The value received.
        value: u64,
    },
    /// Two inputs that must have the same length (or agree) did not: the shared shape of every
    /// size mismatch in the workspace.
    #[error("{what}: expected {expected}, got {actual}")]
    SizeMismatch {
        /// What disagreed.
        what: &'static str,
        /// The expected length or value.
        expected: u64,
        /// The length or value received.
        actual: u64,
    },
    /// The data cannot determine what was asked (for example, fewer than two distinct sizes
    /// for a line fit).
    #[error("degenerate input: {what}")]
    Degenerate {
        /// Why the input is degenerate.
        what: &'static str,
    },
    /// A least-squares fit produced a parameter outside its physical range.
    #[error("fitted {what} is negative ({}); the data do not follow t = alpha + beta * x", Shown(*.value))]
    NegativeFit {
        /// The parameter (`alpha (s)` or `beta (s/byte)`).
        what: &'static str,
        /// The fitted value.
        value: f64,
    },
    /// An instance is larger than a computation accepts (an exhaustive enumeration, an explicit
    /// graph, a matrix): the shared shape of every size limit in the workspace.
    #[error("{what} = {value} exceeds the limit {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// The limit.
        limit: u64,
        /// The value received.
        value: u64,
    },
    /// A matrix entry was NaN, infinite or negative.
    #[error("{what}[{row}][{col}] must be finite and non-negative, got {}", Shown(*.value))]
    BadEntry {
        /// Which matrix.
        what: &'static str,
        /// Row of the entry.
        row: usize,
        /// Column of the entry.
        col: usize,
        /// The value received.
        value: f64,
    },
    /// `divisor` does not divide `value` although a constraint requires it.
    #[error("{what}: {divisor} does not divide {value}")]
    NotDivisible {
        /// The constraint, in words (for example "HB-domain size K must divide the GPU count N").
        what: &'static str,
        /// The value that should be a multiple.
        value: u64,
        /// The value that should divide it.
        divisor: u64,
    },
    /// An integer computation on counts would overflow 64 bits.
    #[error("{what} overflows a 64-bit count")]
    Overflow {
        /// What overflowed.
        what: &'static str,
    },
}
