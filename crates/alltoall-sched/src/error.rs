//! The one error type of the crate.
//!
//! Generic input checks (sizes, limits, overflow, scalar values) are comm-cost-model's helpers
//! and arrive as [`ScheduleError::Input`], or with the offending entry's position in
//! [`ScheduleError::InvalidTraffic`] and [`ScheduleError::InvalidBandwidth`].

use comm_cost_model::{InputError, check_at_most, check_non_negative, check_positive};
use thiserror::Error;

/// Everything that can be wrong with the input of a scheduling function.
///
/// Variants name the offending entry so a caller can report one clear line.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ScheduleError {
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
    /// A traffic entry is NaN, infinite or negative.
    #[error("traffic[{src}][{dst}]: {source}")]
    InvalidTraffic {
        /// Sending GPU.
        src: usize,
        /// Receiving GPU.
        dst: usize,
        /// The failed check (`NonFinite` or `Negative`, with the value).
        source: InputError,
    },
    /// A bandwidth is zero, negative, NaN or infinite.
    #[error("bandwidth of GPU {gpu}: {source}")]
    InvalidBandwidth {
        /// The GPU (0 for a uniform bandwidth).
        gpu: usize,
        /// The failed check (`NonFinite` or `NotPositive`, with the value).
        source: InputError,
    },
    /// A positive time is below the smallest normal `f64` (about 2.2e-308), so it cannot be
    /// scaled to ticks; traffic is too small for its bandwidth.
    #[error("{what} underflows: below 2.2e-308 for non-zero traffic")]
    Underflow {
        /// What underflowed.
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
    /// A placement does not put every expert on exactly one GPU.
    #[error(
        "expert {expert} is placed on {gpus} GPUs; a placement puts each expert on exactly one"
    )]
    NotAPartition {
        /// The expert.
        expert: usize,
        /// How many GPUs host it.
        gpus: usize,
    },
    /// No GPU holds a replica of an expert that a placement must serve.
    #[error("expert {expert} has no replica on any GPU")]
    NoReplica {
        /// The expert.
        expert: usize,
    },
    /// Bad input in the workspace's vocabulary (comm-cost-model's [`InputError`]): an empty
    /// traffic matrix or list of senders (`Empty`), a scalar parameter (alpha, release time,
    /// flow size, Zipf exponent, ...) that is NaN, infinite or negative, two sizes that must
    /// agree (`SizeMismatch`: a per-GPU bandwidth vector and the matrix, a plan and a matrix, a
    /// placement and a matrix, two matrices), a size above the exact integer arithmetic of a
    /// scheduler (`TooLarge`), a sum of byte counts or a time that overflows 64 bits
    /// (`Overflow`), an index (an expert of a placement) out of range (`IndexOutOfRange`).
    #[error(transparent)]
    Input(#[from] InputError),
}

impl ScheduleError {
    /// An empty traffic matrix (no GPU, no sender): the input error every scheduler returns
    /// for it, "the traffic matrix is empty".
    pub(crate) const EMPTY: Self = Self::Input(InputError::Empty {
        what: "the traffic matrix",
    });
}

/// Checks a traffic entry with [`check_non_negative`], naming its position.
pub(crate) fn check_traffic(src: usize, dst: usize, value: f64) -> Result<f64, ScheduleError> {
    check_non_negative("traffic (bytes)", value).map_err(|source| ScheduleError::InvalidTraffic {
        src,
        dst,
        source,
    })
}

/// Largest GPU count a generator, a relabeling, a dispatch or a timetable's per-GPU lists is
/// built for: an `n x n` matrix of 8-byte entries is then at most 512 MiB.
///
/// Larger sizes used to abort the process on allocation (issue 13). The limit was `2^15`, but
/// a generator at that size needs 8 GiB per matrix (twice that while it builds one) and
/// minutes, beyond the fuzz tests' time bound and 8 GB address space, which pass sizes at the
/// old limit. The schedulers take about a second at 1024 GPUs and grow with `n^2` to `n^3`, so
/// larger generated matrices could not be scheduled anyway.
pub const MAX_GPUS: usize = 1 << 13;

/// Checks a GPU count (the side of a matrix about to be allocated) against [`MAX_GPUS`].
pub(crate) fn check_gpus(what: &'static str, n: usize) -> Result<(), ScheduleError> {
    Ok(check_at_most(what, MAX_GPUS, n)?)
}

/// Checks a port bandwidth with [`check_positive`], naming its GPU.
pub(crate) fn check_bandwidth(gpu: usize, value: f64) -> Result<f64, ScheduleError> {
    check_positive("bandwidth (bytes/s)", value)
        .map_err(|source| ScheduleError::InvalidBandwidth { gpu, source })
}
