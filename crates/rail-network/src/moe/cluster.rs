//! Training systems: the [`SystemSpec`] of one GPU type and HB domain, plus what the MoE step
//! model needs beyond it (HBM bandwidth for the roofline of small expert GEMMs, FP8 peak).
//!
//! Bandwidths here are **per direction** (what one GPU can send while it receives as much),
//! unlike the rail-only presets of [`crate::system`], which follow that paper's convention of
//! the advertised bidirectional NVLink figure: an all-to-all sends and receives at once, so the
//! per-direction rate is the one that bounds it.
//!
//! | preset | K | BF16 / FP8 dense peak | HB per direction | network per GPU | HBM | HBM bandwidth | SMs | sources |
//! |---|---|---|---|---|---|---|---|---|
//! | `h100` | 8 | 989 / 1979 TFLOP/s | 450 GB/s (NVLink 4) | 400 Gbps (ConnectX-7) | 80 GB | 3.35 TB/s | 132 | NVIDIA H100 SXM datasheet; DGX H100 user guide; Hopper architecture whitepaper (132 SMs on SXM5) |
//! | `h800` | 8 | 989 / 1979 TFLOP/s | 200 GB/s (NVLink 400 GB/s bidirectional) | 400 Gbps | 80 GB | 3.35 TB/s | 132 | DeepSeek-V3 report §3.1 (H800 cluster: NVLink and 400 Gbps InfiniBand per GPU) and §3.2.2 (132 SMs) |
//! | `h200` | 8 | 989 / 1979 TFLOP/s | 450 GB/s | 400 Gbps | 141 GB | 4.8 TB/s | 132 | NVIDIA H200 datasheet; DGX H200 |
//! | `b200` | 8 | 2250 / 4500 TFLOP/s | 900 GB/s (NVLink 5) | 400 Gbps | 180 GB | 8 TB/s | 148 | NVIDIA DGX B200 datasheet (72 PFLOPS FP8 training, 1,440 GB for 8 GPUs); Blackwell architecture brief (148 SMs) |
//! | `gb200-nvl72` | 72 | 2500 / 5000 TFLOP/s | 900 GB/s (NVLink 5 switch) | 400 Gbps | 186 GB | 8 TB/s | 148 | NVIDIA GB200 NVL72 datasheet (BF16 dense peak per GPU, `HBM3e` per GPU) |
//!
//! Every preset adds `10 us` per communication step on the critical path (`latency_s`), the
//! order of NCCL's small-message latency inside a node.
//!
//! Offloading (optimizer state or activations to host memory) moves data over the GPU's host
//! link, per direction: PCIe Gen5 x16 on the x86 systems (64 GB/s; H100, H200, B200
//! datasheets: 128 GB/s bidirectional), `NVLink-C2C` on GB200 (450 GB/s; 900 GB/s
//! bidirectional); a CPU Adam step streams the offloaded state at the host memory bandwidth
//! per GPU: DGX H100 / H800 / H200 two Xeon 8480C with eight DDR5-4800 channels each
//! (614 GB/s per 8 GPUs: 77 GB/s), DGX B200 two Xeon 8570 with DDR5-5600 (717 GB/s: 90 GB/s),
//! GB200 one Grace with up to 512 GB/s `LPDDR5X` per two GPUs (256 GB/s).
//!
//! A job of `N` GPUs fills its HB domains evenly ([`TrainingSystem::job_hb_domain`]): 64 GPUs
//! of a GB200 NVL72 rack form one domain of 64, not a domain of 72 with 8 missing, so a group
//! of stride 8 inside those 64 GPUs stays on NVLink.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::system::SystemSpec;
use comm_cost_model::check_positive;
use comm_cost_model::units::{BytesPerSecond, FlopPerSecond};

/// Names of the training-system presets.
pub const TRAINING_SYSTEM_NAMES: [&str; 5] = ["h100", "h800", "h200", "b200", "gb200-nvl72"];

/// One GPU type in HB domains on a network, as the MoE step model needs it.
///
/// Deserializing runs [`TrainingSystem::validate`] and rejects unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TrainingSystemFields")]
pub struct TrainingSystem {
    /// HB-domain size, BF16 peak, per-direction HB and network bandwidth, memory, latency.
    pub system: SystemSpec,
    /// HBM bandwidth of one GPU, bytes/s (the roofline of small GEMMs).
    pub hbm_bytes_per_s: BytesPerSecond,
    /// Dense FP8 peak of one GPU, FLOP/s.
    pub fp8_peak_flop_per_s: FlopPerSecond,
    /// Streaming multiprocessors of one GPU (communication kernels that run beside compute
    /// hold some of them: [`crate::moe::StepOptions::comm_sms`]).
    pub sms: u64,
    /// GPU-to-host link of one GPU, per direction, bytes/s (offloading).
    pub host_bytes_per_s: BytesPerSecond,
    /// Host memory bandwidth available to one GPU's CPU optimizer step, bytes/s.
    pub host_memory_bytes_per_s: BytesPerSecond,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrainingSystemFields {
    system: SystemSpec,
    hbm_bytes_per_s: f64,
    fp8_peak_flop_per_s: f64,
    /// 132 (a Hopper SXM GPU) when absent, so system files written before the field load.
    #[serde(default = "hopper_sms")]
    sms: u64,
    /// A DGX H100's PCIe Gen5 link when absent.
    #[serde(default = "pcie5")]
    host_bytes_per_s: f64,
    /// A DGX H100's host memory share when absent.
    #[serde(default = "dgx_h100_host_memory")]
    host_memory_bytes_per_s: f64,
}

fn hopper_sms() -> u64 {
    132
}
fn pcie5() -> f64 {
    64e9
}
fn dgx_h100_host_memory() -> f64 {
    76.8e9
}

impl TryFrom<TrainingSystemFields> for TrainingSystem {
    type Error = RailNetworkError;

    fn try_from(f: TrainingSystemFields) -> Result<Self, Self::Error> {
        let s = Self {
            system: f.system,
            hbm_bytes_per_s: f.hbm_bytes_per_s,
            fp8_peak_flop_per_s: f.fp8_peak_flop_per_s,
            sms: f.sms,
            host_bytes_per_s: f.host_bytes_per_s,
            host_memory_bytes_per_s: f.host_memory_bytes_per_s,
        };
        s.validate()?;
        Ok(s)
    }
}

impl TrainingSystem {
    /// Checks every field.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] naming the field (non-finite, zero or negative).
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        self.system.validate()?;
        check_positive("HBM bandwidth (bytes/s)", self.hbm_bytes_per_s)?;
        check_positive("FP8 peak FLOP/s", self.fp8_peak_flop_per_s)?;
        comm_cost_model::check_count_u64("sms", self.sms, 1)?;
        check_positive("host link (bytes/s)", self.host_bytes_per_s)?;
        check_positive(
            "host memory bandwidth (bytes/s)",
            self.host_memory_bytes_per_s,
        )?;
        Ok(())
    }

    /// GPUs per HB domain of a job of `gpus` GPUs: the job spreads evenly over the fewest
    /// domains it needs, `gpus / D` GPUs in each of `D >= ceil(gpus / K)` domains, `D` the
    /// first count from there that divides `gpus` (64 GPUs on NVL72 racks: one domain of 64;
    /// 256: four of 64; 2,048 on 8-GPU nodes: 256 of 8). When no such `D` lies within 1,024
    /// steps of the start (a large prime GPU count), `gcd(gpus, K)`.
    ///
    /// # Complexity
    ///
    /// `O(1)`: at most 1,024 divisibility tests.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::moe::training_system_preset;
    /// let nvl72 = training_system_preset("gb200-nvl72")?;
    /// assert_eq!(nvl72.job_hb_domain(64), 64);
    /// assert_eq!(nvl72.job_hb_domain(256), 64);
    /// assert_eq!(nvl72.job_hb_domain(144), 72);
    /// assert_eq!(training_system_preset("h100")?.job_hb_domain(2048), 8);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    #[must_use]
    pub fn job_hb_domain(&self, gpus: u64) -> u64 {
        let k = self.system.hb_domain.max(1);
        let gpus = gpus.max(1);
        if gpus <= k {
            return gpus;
        }
        let first = gpus.div_ceil(k);
        (first..first.saturating_add(1024))
            .find(|d| gpus % d == 0)
            .map_or_else(|| comm_cost_model::gcd(gpus, k).max(1), |d| gpus / d)
    }
}

/// A training-system preset by name (numbers and sources in the module table).
///
/// # Errors
///
/// [`RailNetworkError::UnknownPreset`] listing the valid names.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::moe::training_system_preset;
/// let s = training_system_preset("gb200-nvl72")?;
/// assert_eq!(s.system.hb_domain, 72);
/// assert!(training_system_preset("tpu-v5").is_err());
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn training_system_preset(name: &str) -> Result<TrainingSystem, RailNetworkError> {
    let make = |k: u64, tflops: f64, hb_gb_s: f64, mem_gb: f64, hbm_tb_s: f64, sms: u64| {
        let (host, host_memory) = match k {
            72 => (450e9, 256e9),
            _ if tflops > 2000.0 => (64e9, 89.6e9),
            _ => (64e9, 76.8e9),
        };
        TrainingSystem {
            system: SystemSpec {
                hb_domain: k,
                peak_flop_per_s: tflops * 1e12,
                hb_bytes_per_s: hb_gb_s * 1e9,
                network_bytes_per_s: 400e9 / 8.0,
                memory_bytes: mem_gb * 1e9,
                latency_s: 10e-6,
            },
            hbm_bytes_per_s: hbm_tb_s * 1e12,
            fp8_peak_flop_per_s: 2.0 * tflops * 1e12,
            sms,
            host_bytes_per_s: host,
            host_memory_bytes_per_s: host_memory,
        }
    };
    match name.to_ascii_lowercase().as_str() {
        "h100" => Ok(make(8, 989.0, 450.0, 80.0, 3.35, 132)),
        "h800" => Ok(make(8, 989.0, 200.0, 80.0, 3.35, 132)),
        "h200" => Ok(make(8, 989.0, 450.0, 141.0, 4.8, 132)),
        "b200" => Ok(make(8, 2250.0, 900.0, 180.0, 8.0, 148)),
        "gb200-nvl72" => Ok(make(72, 2500.0, 900.0, 186.0, 8.0, 148)),
        _ => Err(RailNetworkError::UnknownPreset {
            kind: "training system",
            name: name.to_string(),
            known: TRAINING_SYSTEM_NAMES.join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_validate() {
        for name in TRAINING_SYSTEM_NAMES {
            training_system_preset(name).unwrap().validate().unwrap();
        }
        let mut s = training_system_preset("h100").unwrap();
        s.hbm_bytes_per_s = f64::NAN;
        assert!(s.validate().is_err());
    }
}
