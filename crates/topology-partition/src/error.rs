//! The error type of the crate.

use comm_cost_model::CostModelError;
use thiserror::Error;

/// Everything that can be wrong with the input of a topology-partition function.
///
/// Variants name the offending quantity so a caller can print one clear line.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// A scalar failed a finiteness or sign check, or a count was zero (wraps the cost-model
    /// check, e.g. [`CostModelError::CountTooSmall`]).
    #[error(transparent)]
    Value(#[from] CostModelError),
    /// A collection that must not be empty was empty.
    #[error("{what} must not be empty")]
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// A matrix or vector had the wrong shape.
    #[error("{what} has shape {got}, expected {expected}")]
    Shape {
        /// What had the wrong shape.
        what: &'static str,
        /// The expected shape, e.g. `4x4`.
        expected: String,
        /// The shape received.
        got: String,
    },
    /// An alpha-beta matrix entry was NaN, infinite or negative.
    #[error("{what}[{row}][{col}] must be finite and non-negative, got {value}")]
    BadEntry {
        /// Which matrix (`alpha (s)` or `beta (s/byte)`).
        what: &'static str,
        /// Row (sender) of the entry.
        row: usize,
        /// Column (receiver) of the entry.
        col: usize,
        /// The value received.
        value: f64,
    },
    /// An operation that needs a symmetric alpha-beta matrix got an asymmetric one.
    #[error("{what} is asymmetric at ({row}, {col}): {forward} vs {backward}")]
    Asymmetric {
        /// Which matrix.
        what: &'static str,
        /// Row of the first asymmetric entry.
        row: usize,
        /// Column of the first asymmetric entry.
        col: usize,
        /// Value at (row, col).
        forward: f64,
        /// Value at (col, row).
        backward: f64,
    },
    /// A worker index was out of range, or appeared twice.
    #[error("worker {worker} is {problem}")]
    BadWorker {
        /// The worker index.
        worker: usize,
        /// What is wrong with it (`out of range`, `listed twice`, `missing`).
        problem: &'static str,
    },
    /// A line of a CSV text could not be parsed.
    #[error("CSV line {line}: {message}")]
    Csv {
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// No group of workers can hold all experts: the cluster's total expert slots are too few.
    #[error("no feasible group: the cluster has {slots} expert slots for {experts} experts")]
    NoFeasibleGroup {
        /// Expert slots of the whole cluster.
        slots: u64,
        /// Experts to place.
        experts: u64,
    },
    /// A parallel configuration does not tile the cluster or violates a divisibility rule.
    #[error("invalid parallel configuration: {0}")]
    Config(String),
    /// A size computation would overflow.
    #[error("{what} overflows")]
    Overflow {
        /// What overflowed.
        what: &'static str,
    },
}
