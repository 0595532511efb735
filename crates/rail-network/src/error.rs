//! The error type of the crate: every bad input names the constraint it breaks.

use comm_cost_model::CostModelError;
use thiserror::Error;

/// Everything that can be wrong with the input of a `rail-network` function.
///
/// Each variant says which constraint failed, with the offending values, so a caller can print
/// one clear line.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum RailNetworkError {
    /// A count (GPUs, radix, heads, layers, batch, ...) was zero.
    #[error("{what} must be at least 1, got 0")]
    Zero {
        /// Name of the count.
        what: &'static str,
    },
    /// `divisor` does not divide `value` although the constraint requires it.
    #[error("{constraint}: {divisor} does not divide {value}")]
    NotDivisible {
        /// The constraint, in words (for example "HB-domain size K must divide the GPU count N").
        constraint: &'static str,
        /// The value that should be a multiple.
        value: u64,
        /// The value that should divide it.
        divisor: u64,
    },
    /// Two quantities whose product must equal a third do not.
    #[error("{constraint}: product is {product}, expected {expected}")]
    ProductMismatch {
        /// The constraint, in words (for example "p * t * d = N (Eq. 11)").
        constraint: &'static str,
        /// The product found.
        product: u64,
        /// The value it must equal.
        expected: u64,
    },
    /// The switch radix cannot build any folded Clos for this many endpoints.
    #[error(
        "switch radix {radix} cannot connect {endpoints} endpoints in at most {max_tiers} tiers (radix must be even and at least 2)"
    )]
    RadixTooSmall {
        /// The switch radix.
        radix: u64,
        /// Endpoints to connect.
        endpoints: u64,
        /// The largest number of tiers considered.
        max_tiers: u32,
    },
    /// A GPU, domain or rank index outside the fabric.
    #[error("{what} {index} is out of range (fabric has {limit})")]
    OutOfRange {
        /// What was indexed.
        what: &'static str,
        /// The index received.
        index: u64,
        /// The number of valid indices.
        limit: u64,
    },
    /// A fabric too large to build as an explicit graph.
    #[error("fabric with {gpus} GPUs is too large to build as a graph (limit {limit})")]
    GraphTooLarge {
        /// GPUs requested.
        gpus: u64,
        /// The largest GPU count accepted.
        limit: u64,
    },
    /// An intermediate count overflowed `u64`.
    #[error("{what} overflows a 64-bit count")]
    Overflow {
        /// The quantity that overflowed.
        what: &'static str,
    },
    /// A parallel configuration does not fit in GPU memory (Appendix C, Eq. 19).
    #[error(
        "memory constraint (Eq. 19): configuration needs {needed_bytes:.3e} bytes per GPU, GPU has {capacity_bytes:.3e}"
    )]
    OutOfMemory {
        /// Bytes the configuration needs on the fullest GPU.
        needed_bytes: f64,
        /// Bytes of GPU memory.
        capacity_bytes: f64,
    },
    /// No parallel configuration satisfies the constraints of Appendix C.
    #[error(
        "no valid parallelization: {valid_shapes} configurations satisfy Eq. 11-18 and none fits in memory (smallest needs {min_memory_bytes:.3e} bytes, GPU has {capacity_bytes:.3e})"
    )]
    NoFeasibleConfiguration {
        /// Configurations that pass the divisibility constraints (Eq. 11–18).
        valid_shapes: u64,
        /// Smallest per-GPU memory among them (infinite when there is none).
        min_memory_bytes: f64,
        /// Bytes of GPU memory.
        capacity_bytes: f64,
    },
    /// An unknown preset name.
    #[error("unknown {kind} preset `{name}` (known: {known})")]
    UnknownPreset {
        /// "model" or "system".
        kind: &'static str,
        /// The name received.
        name: String,
        /// The valid names, comma separated.
        known: String,
    },
    /// Too few data points for a fit.
    #[error("{what}: need at least {min} runs, got {got}")]
    TooFewRuns {
        /// The fit.
        what: &'static str,
        /// Runs needed.
        min: usize,
        /// Runs given.
        got: usize,
    },
    /// A real-valued input was NaN, infinite, negative or zero where it must be positive.
    #[error(transparent)]
    Value(#[from] CostModelError),
}

/// Checks that a count is positive.
pub(crate) fn nonzero(what: &'static str, value: u64) -> Result<u64, RailNetworkError> {
    if value == 0 {
        Err(RailNetworkError::Zero { what })
    } else {
        Ok(value)
    }
}

/// Checks that `divisor` divides `value` (both positive).
pub(crate) fn divides(
    constraint: &'static str,
    value: u64,
    divisor: u64,
) -> Result<u64, RailNetworkError> {
    if divisor == 0 || value % divisor != 0 {
        Err(RailNetworkError::NotDivisible {
            constraint,
            value,
            divisor,
        })
    } else {
        Ok(value / divisor)
    }
}
