//! Units of the workspace: SI quantities in `f64`, named by suffix.
//!
//! Every public name or serde field that carries a physical quantity says its unit: `_s` for
//! seconds, `_bytes`, `_bytes_per_s`, `_flop`, `_flop_per_s`. The type aliases below document
//! intent in signatures; they are plain `f64`, so arithmetic needs no ceremony. Vendor units
//! (Gbps for links, GB/s for memory and NVLink, TFLOP/s for accelerators) are converted to SI
//! exactly once, at the edge (CLI, specs, presets), with the functions of this module.
//!
//! Decimal prefixes throughout: 1 GB = 10^9 bytes, 1 Gbps = 10^9 bit/s, as network and GPU
//! vendors quote them.
//!
//! # Examples
//!
//! ```
//! use comm_cost_model::units;
//! assert_eq!(units::gbps(400.0), 50e9);          // a 400 Gbps NIC moves 50 GB/s
//! assert_eq!(units::gb_per_s(25.0), 25e9);
//! assert_eq!(units::tflop_per_s(312.0), 312e12); // A100 dense bf16
//! assert_eq!(units::to_gbps(units::gbps(100.0)), 100.0);
//! ```

/// A duration in seconds.
pub type Seconds = f64;
/// An amount of data in bytes.
pub type Bytes = f64;
/// A data rate in bytes per second.
pub type BytesPerSecond = f64;
/// An amount of floating-point work in FLOP.
pub type Flop = f64;
/// A compute rate in FLOP per second.
pub type FlopPerSecond = f64;

/// Bytes per second of a link quoted in gigabits per second (10^9 bit/s).
#[must_use]
pub fn gbps(gigabits_per_s: f64) -> BytesPerSecond {
    gigabits_per_s * 1e9 / 8.0
}

/// Gigabits per second of a rate given in bytes per second (inverse of [`gbps`]).
#[must_use]
pub fn to_gbps(bytes_per_s: BytesPerSecond) -> f64 {
    bytes_per_s * 8.0 / 1e9
}

/// Bytes per second of a rate quoted in gigabytes per second (10^9 byte/s).
#[must_use]
pub fn gb_per_s(gigabytes_per_s: f64) -> BytesPerSecond {
    gigabytes_per_s * 1e9
}

/// FLOP per second of an accelerator quoted in TFLOP/s (10^12 FLOP/s).
#[must_use]
pub fn tflop_per_s(teraflop_per_s: f64) -> FlopPerSecond {
    teraflop_per_s * 1e12
}

/// Bytes of a size quoted in megabytes (10^6 bytes).
#[must_use]
pub fn megabytes(mb: f64) -> Bytes {
    mb * 1e6
}

/// Seconds of a duration quoted in milliseconds.
#[must_use]
pub fn millis(ms: f64) -> Seconds {
    ms * 1e-3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip() {
        assert_eq!(gbps(8.0), 1e9);
        assert_eq!(to_gbps(1e9), 8.0);
        assert_eq!(gb_per_s(1.5), 1.5e9);
        assert_eq!(tflop_per_s(1.0), 1e12);
        assert_eq!(megabytes(2.0), 2e6);
        assert_eq!(millis(3.0), 3e-3);
    }
}
