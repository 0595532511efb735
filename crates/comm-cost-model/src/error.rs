use thiserror::Error;

/// Everything that can be wrong with the input of a cost-model function.
///
/// Variants name the offending quantity (`what`) so a caller can report one clear line.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum CostModelError {
    /// A quantity was NaN or infinite.
    #[error("{what} must be finite, got {value}")]
    NonFinite {
        /// Name of the quantity, with its unit.
        what: &'static str,
        /// The value received.
        value: f64,
    },
    /// A quantity that must be at least zero was negative.
    #[error("{what} must be non-negative, got {value}")]
    Negative {
        /// Name of the quantity, with its unit.
        what: &'static str,
        /// The value received.
        value: f64,
    },
    /// A quantity that must be strictly positive was zero or negative.
    #[error("{what} must be positive, got {value}")]
    NotPositive {
        /// Name of the quantity, with its unit.
        what: &'static str,
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
}
