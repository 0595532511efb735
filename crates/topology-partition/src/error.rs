//! The error type of the crate.

use comm_cost_model::{InputError, Shown};
use thiserror::Error;

/// Everything that can be wrong with the input of a topology-partition function.
///
/// Variants name the offending quantity so a caller can print one clear line.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// Bad input in the workspace's vocabulary (comm-cost-model's [`InputError`]): a scalar's
    /// finiteness or sign, a count that is zero, an empty list (`Empty`), a matrix entry
    /// (`BadEntry`), a list or matrix of the wrong size (`SizeMismatch`), an instance above a
    /// size limit (`TooLarge`) or an overflowing size (`Overflow`).
    #[error(transparent)]
    Input(#[from] InputError),
    /// An operation that needs a symmetric alpha-beta matrix got an asymmetric one.
    #[error("{what} is asymmetric at ({row}, {col}): {} vs {}", Shown(*.forward), Shown(*.backward))]
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
    /// A line of a CSV text of link costs could not be used.
    #[error("CSV line {line}: {problem}")]
    Csv {
        /// 1-based line number (0 for the text as a whole).
        line: usize,
        /// What was wrong.
        problem: CsvProblem,
    },
    /// No group of workers can hold all experts: the cluster's total expert slots are too few.
    #[error("no feasible group: the cluster has {slots} expert slots for {experts} experts")]
    NoFeasibleGroup {
        /// Expert slots of the whole cluster.
        slots: u64,
        /// Experts to place.
        experts: u64,
    },
}

/// What is wrong with a line of link-cost CSV text ([`TopologyError::Csv`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CsvProblem {
    /// The line does not have the four fields `src,dst,alpha_s,beta_s_per_byte`.
    #[error("expected 4 fields (src,dst,alpha_s,beta_s_per_byte), got {fields}")]
    FieldCount {
        /// Fields found.
        fields: usize,
    },
    /// A worker id field is not a non-negative integer.
    #[error("`{field}` is not a worker id")]
    NotAnId {
        /// The field as written.
        field: String,
    },
    /// A cost field is not a number.
    #[error("`{field}` is not a number")]
    NotANumber {
        /// The field as written.
        field: String,
    },
    /// A worker id is not below the number of workers.
    #[error("worker {worker} out of range (n = {workers})")]
    WorkerOutOfRange {
        /// The id.
        worker: usize,
        /// Number of workers.
        workers: usize,
    },
    /// A line joins a worker to itself.
    #[error("self-pair ({worker}, {worker})")]
    SelfPair {
        /// The worker.
        worker: usize,
    },
    /// The same ordered pair appears twice.
    #[error("pair ({src}, {dst}) listed twice")]
    Duplicate {
        /// Sender.
        src: usize,
        /// Receiver.
        dst: usize,
    },
    /// A pair appears in neither direction.
    #[error("pair ({src}, {dst}) missing in both directions")]
    Missing {
        /// Sender.
        src: usize,
        /// Receiver.
        dst: usize,
    },
    /// The reader failed.
    #[error("read failed: {message}")]
    Read {
        /// The I/O error's message.
        message: String,
    },
}
