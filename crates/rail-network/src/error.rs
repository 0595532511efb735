//! The error type of the crate: every bad input names the constraint it breaks.

use comm_cost_model::InputError;
use thiserror::Error;

/// Everything that can be wrong with the input of a `rail-network` function.
///
/// Each variant says which constraint failed, with the offending values, so a caller can print
/// one clear line.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum RailNetworkError {
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
    /// An entry of a job traffic matrix breaks its structure.
    #[error("traffic entry {index} ({src} -> {dst}) {problem}")]
    BadTrafficEntry {
        /// Position of the entry in the list.
        index: u64,
        /// Its sending GPU.
        src: u64,
        /// Its receiving GPU.
        dst: u64,
        /// What is wrong with it.
        problem: &'static str,
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
    /// Bad input in the workspace's vocabulary (comm-cost-model's [`InputError`]): NaN,
    /// infinite, negative or zero where it must be positive (`NonFinite`, `Negative`,
    /// `NotPositive`), a count that is zero or too small (`CountTooSmall`), a divisibility rule
    /// (`NotDivisible`, e.g. Eq. 13–18), a product that must equal a count (`SizeMismatch`,
    /// Eq. 11–12), a GPU, domain or rank index outside the fabric (`IndexOutOfRange`), an
    /// instance above a size limit (`TooLarge`) or an overflowing count (`Overflow`).
    #[error(transparent)]
    Input(#[from] InputError),
}
