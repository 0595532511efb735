use thiserror::Error;

use crate::Shown;

/// The workspace's one vocabulary for bad input: what every crate's error says about a value,
/// a size or a shape the user gave.
///
/// Every function of this crate returns it, and every other crate's error enum embeds it the
/// same way, as an `Input(#[from] InputError)` variant with a transparent message, keeping
/// variants of its own only for what is not a generic input check (an infeasible instance, an
/// exhausted budget, a constraint of its domain). Variants name the offending quantity
/// (`what`: the user's field or flag, with its unit) and show the value given, so a caller can
/// report one clear line. Counts and sizes are `u64` whatever the caller's integer type; the
/// check helpers ([`crate::check_same_len`], [`crate::check_at_most`], [`crate::check_entry`],
/// ...) and the constructors ([`InputError::size_mismatch`], [`InputError::too_large`],
/// [`InputError::index_out_of_range`]) take `usize`.
///
/// # Examples
///
/// ```
/// use comm_cost_model::{check_same_len, InputError};
/// let err = check_same_len("bandwidth_gbps", 1, 2).unwrap_err();
/// assert_eq!(err, InputError::SizeMismatch { what: "bandwidth_gbps", expected: 2, actual: 1 });
/// assert_eq!(err.to_string(), "bandwidth_gbps: expected 2, got 1");
/// ```
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum InputError {
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
    /// An integer computation on counts (or a sum of byte counts) would overflow 64 bits.
    #[error("{what} overflows 64-bit arithmetic")]
    Overflow {
        /// What overflowed.
        what: &'static str,
    },
    /// An input that must hold at least one element is empty.
    #[error("{what} is empty")]
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// Entry `index` of a list (loads, FLOP/s, weights) is NaN, infinite or negative.
    #[error("{what}[{index}] = {} is not a finite non-negative number", Shown(*.value))]
    InvalidEntry {
        /// Which list.
        what: &'static str,
        /// Position of the entry in the list (row-major for a matrix given flat).
        index: usize,
        /// The value received.
        value: f64,
    },
    /// Entry `index` of a list that must be strictly positive (FLOP/s, bandwidths) is zero.
    #[error("{what}[{index}] = {} must be positive", Shown(*.value))]
    NotPositiveEntry {
        /// Which list.
        what: &'static str,
        /// Position of the entry in the list.
        index: usize,
        /// The value received.
        value: f64,
    },
    /// An index the user gave (an expert id, a GPU, a neighbour) is outside its range.
    #[error("{what}: index {index} is out of range for size {size}")]
    IndexOutOfRange {
        /// Which index.
        what: &'static str,
        /// The index received.
        index: u64,
        /// The size of the range (valid indices are below it).
        size: u64,
    },
}

impl InputError {
    /// [`InputError::SizeMismatch`] from `usize` sizes.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::InputError;
    /// let e = InputError::size_mismatch("loads", 8, 7);
    /// assert_eq!(e.to_string(), "loads: expected 8, got 7");
    /// ```
    #[must_use]
    pub fn size_mismatch(what: &'static str, expected: usize, actual: usize) -> Self {
        Self::SizeMismatch {
            what,
            expected: count(expected),
            actual: count(actual),
        }
    }

    /// [`InputError::TooLarge`] from `usize` sizes.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::InputError;
    /// let e = InputError::too_large("GPUs", 8192, 10_000);
    /// assert_eq!(e.to_string(), "GPUs = 10000 exceeds the limit 8192");
    /// ```
    #[must_use]
    pub fn too_large(what: &'static str, limit: usize, value: usize) -> Self {
        Self::TooLarge {
            what,
            limit: count(limit),
            value: count(value),
        }
    }

    /// [`InputError::IndexOutOfRange`] from `usize` indices.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::InputError;
    /// let e = InputError::index_out_of_range("expert id", 9, 8);
    /// assert_eq!(e.to_string(), "expert id: index 9 is out of range for size 8");
    /// ```
    #[must_use]
    pub fn index_out_of_range(what: &'static str, index: usize, size: usize) -> Self {
        Self::IndexOutOfRange {
            what,
            index: count(index),
            size: count(size),
        }
    }

    /// [`InputError::NotDivisible`] from `usize` counts.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::InputError;
    /// let e = InputError::not_divisible("num_replicas must be a multiple of num_gpus", 10, 4);
    /// assert_eq!(e.to_string(), "num_replicas must be a multiple of num_gpus: 4 does not divide 10");
    /// ```
    #[must_use]
    pub fn not_divisible(what: &'static str, value: usize, divisor: usize) -> Self {
        Self::NotDivisible {
            what,
            value: count(value),
            divisor: count(divisor),
        }
    }
}

/// A `usize` as the `u64` the variants hold (lossless on every supported target; saturating
/// on a hypothetical wider `usize`).
pub(crate) fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
