//! Cluster systems: HB-domain size, bandwidths, GPU speed and memory, with named presets.
//!
//! | preset | K | peak (dense BF16) | HB bandwidth `C_F` | network `C_S` | memory | sources |
//! |---|---|---|---|---|---|---|
//! | `dgx-a100` | 8 | 312 TFLOP/s | 600 GB/s (NVLink 3, 12 links) | 200 Gbps HDR per GPU | 80 GB | NVIDIA A100 datasheet; DGX A100 / Selene as used by Narayanan et al. 2021 and Korthikanti et al. 2022 |
//! | `dgx-h100` | 8 | 989 TFLOP/s | 900 GB/s (NVLink 4, 18 links) | 400 Gbps ConnectX-7 per GPU | 80 GB | NVIDIA H100 SXM datasheet, DGX H100 |
//! | `gh200` | 256 | 989 TFLOP/s | 900 GB/s (NVLink switch system) | 400 Gbps ConnectX-7 per GPU | 96 GB | NVIDIA DGX GH200; rail-only paper §3.2 (7.2 Tbps HB, 400 Gbps network) |
//!
//! HB bandwidth follows the rail-only paper's own convention: the advertised per-GPU NVLink
//! figure (it writes 900 GB/s = 7.2 Tbps for NVLink 4), so the A100 gets its advertised 600 GB/s.
//! Latency is 0 in every preset (the paper's §5 model is bandwidth-only); set it to study it.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use comm_cost_model::check_count_u64;
use comm_cost_model::units::{self, Bytes, BytesPerSecond, FlopPerSecond, Seconds};
use comm_cost_model::{check_non_negative, check_positive};

/// The hardware an iteration runs on.
///
/// Deserializing runs [`SystemSpec::validate`], so a parsed system is valid.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SystemSpecFields")]
pub struct SystemSpec {
    /// GPUs per HB domain `K`.
    pub hb_domain: u64,
    /// Peak dense half-precision FLOP/s of one GPU (`F`).
    pub peak_flop_per_s: FlopPerSecond,
    /// Per-GPU bandwidth inside an HB domain (`C_F`), bytes/s.
    pub hb_bytes_per_s: BytesPerSecond,
    /// Per-GPU network bandwidth (`C_S`), bytes/s.
    pub network_bytes_per_s: BytesPerSecond,
    /// Memory of one GPU (`R`), bytes.
    pub memory_bytes: Bytes,
    /// Latency added per communication step on the critical path, seconds.
    pub latency_s: Seconds,
}

/// Names of the system presets.
pub const SYSTEM_PRESET_NAMES: [&str; 3] = ["dgx-a100", "dgx-h100", "gh200"];

/// A system preset by name (see the module table for numbers and sources).
///
/// # Errors
///
/// [`RailNetworkError::UnknownPreset`] listing the valid names.
///
/// # Examples
///
/// ```
/// use rail_network::system::system_preset;
/// let s = system_preset("gh200")?;
/// assert_eq!(s.hb_domain, 256);
/// assert_eq!(s.network_bytes_per_s, 50e9); // 400 Gbps
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn system_preset(name: &str) -> Result<SystemSpec, RailNetworkError> {
    let base = |hb_domain, tflops, hb_gb_s, net_gbps, mem_gb| SystemSpec {
        hb_domain,
        peak_flop_per_s: units::tflop_per_s(tflops),
        hb_bytes_per_s: units::gb_per_s(hb_gb_s),
        network_bytes_per_s: units::gbps(net_gbps),
        memory_bytes: mem_gb * 1e9,
        latency_s: 0.0,
    };
    match name.to_ascii_lowercase().as_str() {
        "dgx-a100" => Ok(base(8, 312.0, 600.0, 200.0, 80.0)),
        "dgx-h100" => Ok(base(8, 989.0, 900.0, 400.0, 80.0)),
        "gh200" => Ok(base(256, 989.0, 900.0, 400.0, 96.0)),
        _ => Err(RailNetworkError::UnknownPreset {
            kind: "system",
            name: name.to_string(),
            known: SYSTEM_PRESET_NAMES.join(", "),
        }),
    }
}

/// The serialized form of [`SystemSpec`], validated on the way in.
#[derive(Deserialize)]
struct SystemSpecFields {
    hb_domain: u64,
    peak_flop_per_s: FlopPerSecond,
    hb_bytes_per_s: BytesPerSecond,
    network_bytes_per_s: BytesPerSecond,
    memory_bytes: Bytes,
    latency_s: Seconds,
}

impl TryFrom<SystemSpecFields> for SystemSpec {
    type Error = RailNetworkError;

    fn try_from(f: SystemSpecFields) -> Result<Self, Self::Error> {
        let spec = Self {
            hb_domain: f.hb_domain,
            peak_flop_per_s: f.peak_flop_per_s,
            hb_bytes_per_s: f.hb_bytes_per_s,
            network_bytes_per_s: f.network_bytes_per_s,
            memory_bytes: f.memory_bytes,
            latency_s: f.latency_s,
        };
        spec.validate()?;
        Ok(spec)
    }
}

impl SystemSpec {
    /// Checks every field: positive counts, rates and memory, non-negative latency.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] naming the field.
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_count_u64("HB-domain size K", self.hb_domain, 1)?;
        check_positive("peak FLOP/s", self.peak_flop_per_s)?;
        check_positive("HB-domain bandwidth C_F (bytes/s)", self.hb_bytes_per_s)?;
        check_positive("network bandwidth C_S (bytes/s)", self.network_bytes_per_s)?;
        check_positive("GPU memory (bytes)", self.memory_bytes)?;
        check_non_negative("latency (s)", self.latency_s)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_validate_and_unknown_fails() {
        for name in SYSTEM_PRESET_NAMES {
            system_preset(name).unwrap().validate().unwrap();
        }
        assert!(system_preset("tpu").is_err());
        let mut s = system_preset("dgx-a100").unwrap();
        s.network_bytes_per_s = 0.0;
        assert!(s.validate().is_err());
    }
}
