//! The GPUs of either mode in SI units, with measured link fits applied.

use alltoall_sched::Bandwidth;
use colocation_matching::GpuSpec;
use comm_cost_model::gpu_scaling::Collective;
use comm_cost_model::{InputError, check_count, units};

use super::GpuInput;
use crate::PlanError;
use crate::fitting::CollectiveFitPlan;

/// The cluster of an inference spec, validated and in SI units.
pub(super) struct Cluster {
    /// Each GPU's FLOP/s and port bandwidth (bytes/s).
    pub(super) gpus: Vec<GpuSpec>,
    /// The port bandwidths, as the scheduler takes them.
    pub(super) bandwidth: Bandwidth,
}

impl Cluster {
    /// Converts the GPUs (TFLOP/s, Gbps) to SI; with `link_fits`, every port runs at the bus
    /// bandwidth of the AlltoAll fitted on the most GPUs measured up to the GPU count.
    pub(super) fn new(
        gpus: &[GpuInput],
        link_fits: Option<&CollectiveFitPlan>,
    ) -> Result<Self, PlanError> {
        let n = check_count("GPUs", gpus.len(), 1)?;
        let mut gpus = gpus
            .iter()
            .map(|g| {
                Ok(GpuSpec {
                    flop_per_s: units::checked_tflop_per_s("GPU TFLOP/s", g.tflop_per_s)?,
                    bandwidth_bytes_per_s: units::checked_gbps(
                        "GPU bandwidth (Gbps)",
                        g.bandwidth_gbps,
                    )?,
                })
            })
            .collect::<Result<Vec<_>, InputError>>()?;
        if let Some(fits) = link_fits {
            let fitted = fits
                .link_for(Collective::AllToAll, n as u64)?
                .bus_bandwidth_bytes_per_s()?;
            gpus.iter_mut()
                .for_each(|g| g.bandwidth_bytes_per_s = fitted);
        }
        let bandwidth = Bandwidth::per_gpu(gpus.iter().map(|g| g.bandwidth_bytes_per_s).collect())?;
        Ok(Self { gpus, bandwidth })
    }

    /// Whether every GPU has the same speed and bandwidth.
    pub(super) fn homogeneous(&self) -> bool {
        self.gpus.windows(2).all(|w| w[0] == w[1])
    }

    /// Each GPU's FLOP/s.
    pub(super) fn flop_per_s(&self) -> Vec<f64> {
        self.gpus.iter().map(|g| g.flop_per_s).collect()
    }
}
