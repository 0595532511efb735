use thiserror::Error;

/// Everything that can be wrong with the input of a scheduling function.
///
/// Variants name the offending entry so a caller can report one clear line.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The traffic matrix has no rows.
    #[error("the traffic matrix is empty")]
    Empty,
    /// A row of the traffic matrix does not have `n` entries.
    #[error("row {row} of the traffic matrix has {len} entries, expected {n}")]
    NotSquare {
        /// Index of the offending row.
        row: usize,
        /// Its number of entries.
        len: usize,
        /// The number of rows (GPUs).
        n: usize,
    },
    /// A traffic entry is NaN or infinite.
    #[error("traffic[{src}][{dst}] must be finite, got {value}")]
    NonFiniteTraffic {
        /// Sending GPU.
        src: usize,
        /// Receiving GPU.
        dst: usize,
        /// The value received.
        value: f64,
    },
    /// A traffic entry is negative.
    #[error("traffic[{src}][{dst}] must be non-negative, got {value}")]
    NegativeTraffic {
        /// Sending GPU.
        src: usize,
        /// Receiving GPU.
        dst: usize,
        /// The value received.
        value: f64,
    },
    /// A per-GPU bandwidth vector does not have one entry per GPU.
    #[error("{got} bandwidths given for {expected} GPUs")]
    BandwidthLength {
        /// Number of GPUs of the matrix.
        expected: usize,
        /// Number of bandwidths given.
        got: usize,
    },
    /// A bandwidth is zero, negative, NaN or infinite.
    #[error("bandwidth of GPU {gpu} must be a positive finite number of bytes/s, got {value}")]
    BadBandwidth {
        /// The GPU (0 for a uniform bandwidth).
        gpu: usize,
        /// The value received.
        value: f64,
    },
    /// A sum of byte counts or a time in ticks does not fit in 64 bits.
    #[error("traffic too large: {what} overflows 64-bit arithmetic")]
    Overflow {
        /// What overflowed.
        what: &'static str,
    },
    /// A send order names a GPU that does not exist.
    #[error("send order of GPU {src} names GPU {dst}, but there are only {n} GPUs")]
    UnknownGpu {
        /// Sending GPU.
        src: usize,
        /// The out-of-range destination.
        dst: usize,
        /// Number of GPUs.
        n: usize,
    },
    /// A parameter (alpha, release time, flow size, ...) is NaN, infinite or negative.
    #[error("{what} must be a finite non-negative number, got {value}")]
    BadParameter {
        /// Name of the parameter, with its unit.
        what: &'static str,
        /// The value received.
        value: f64,
    },
    /// A plan and a matrix (or a plan and a bandwidth model) have different GPU counts.
    #[error("the plan covers {plan} GPUs but the matrix has {matrix}")]
    SizeMismatch {
        /// GPUs in the plan.
        plan: usize,
        /// GPUs in the matrix.
        matrix: usize,
    },
}
