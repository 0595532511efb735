//! The bandwidth model: one port per GPU direction, one transfer per port at a time.

use serde::{Deserialize, Serialize};

use crate::ScheduleError;
use crate::error::check_bandwidth;
use comm_cost_model::check_same_len;

/// Port bandwidths of the GPUs, in bytes per second.
///
/// Every GPU has a send port and a receive port of the same bandwidth `B_i`. A transfer
/// `i -> j` alone on its ports runs at `min(B_i, B_j)` (Aurora §5.2, Appendix B normalizes by the
/// same minimum). Values are checked by [`Bandwidth::check`], which every scheduler calls.
///
/// # Examples
///
/// ```
/// use alltoall_sched::Bandwidth;
/// let b = Bandwidth::per_gpu(vec![100.0, 50.0, 200.0])?;
/// assert_eq!(b.rate(0, 1), Some(50.0));
/// assert_eq!(b.rate(2, 0), Some(100.0));
/// assert_eq!(b.rate(3, 0), None); // no GPU 3
/// assert_eq!(Bandwidth::uniform(10.0)?.rate(3, 7), Some(10.0));
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bandwidth {
    /// Every GPU has the same port bandwidth (bytes/s).
    Uniform(f64),
    /// Port bandwidth of each GPU (bytes/s), one entry per GPU.
    PerGpu(Vec<f64>),
}

impl Bandwidth {
    /// One bandwidth (bytes/s) for every GPU.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidBandwidth`] unless the value is positive and finite.
    pub fn uniform(bytes_per_s: f64) -> Result<Self, ScheduleError> {
        check_bandwidth(0, bytes_per_s)?;
        Ok(Self::Uniform(bytes_per_s))
    }

    /// One bandwidth (bytes/s) per GPU.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidBandwidth`] naming the first value that is not positive and
    /// finite.
    pub fn per_gpu(bytes_per_s: Vec<f64>) -> Result<Self, ScheduleError> {
        for (gpu, &value) in bytes_per_s.iter().enumerate() {
            check_bandwidth(gpu, value)?;
        }
        Ok(Self::PerGpu(bytes_per_s))
    }

    /// Checks the model against a GPU count: right length, every value positive and finite.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Input`] (`SizeMismatch`) or [`ScheduleError::InvalidBandwidth`].
    pub fn check(&self, n: usize) -> Result<(), ScheduleError> {
        match self {
            Self::Uniform(b) => check_bandwidth(0, *b).map(|_| ()),
            Self::PerGpu(v) => {
                check_same_len("bandwidths (one per GPU)", v.len(), n)?;
                v.iter()
                    .enumerate()
                    .try_for_each(|(gpu, &b)| check_bandwidth(gpu, b).map(|_| ()))
            }
        }
    }

    /// Port bandwidth of GPU `gpu` (bytes/s); `None` for a GPU a per-GPU model does not list.
    #[must_use]
    pub fn port(&self, gpu: usize) -> Option<f64> {
        match self {
            Self::Uniform(b) => Some(*b),
            Self::PerGpu(v) => v.get(gpu).copied(),
        }
    }

    /// Rate of a transfer `src -> dst` alone on its ports: `min(B_src, B_dst)` (bytes/s);
    /// `None` if either GPU is not listed.
    #[must_use]
    pub fn rate(&self, src: usize, dst: usize) -> Option<f64> {
        Some(self.port(src)?.min(self.port(dst)?))
    }

    /// [`Bandwidth::port`] for a GPU the caller has checked with [`Bandwidth::check`]
    /// (NaN otherwise, which no checked caller sees).
    pub(crate) fn port_at(&self, gpu: usize) -> f64 {
        self.port(gpu).unwrap_or(f64::NAN)
    }

    /// [`Bandwidth::rate`] for GPUs the caller has checked with [`Bandwidth::check`].
    pub(crate) fn rate_at(&self, src: usize, dst: usize) -> f64 {
        self.port_at(src).min(self.port_at(dst))
    }

    /// The common bandwidth if every GPU has the same one.
    #[must_use]
    pub fn as_uniform(&self) -> Option<f64> {
        match self {
            Self::Uniform(b) => Some(*b),
            Self::PerGpu(v) => {
                let first = *v.first()?;
                v.iter().all(|&b| b == first).then_some(first)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::InputError;
    #[test]
    fn rejects_bad_values_and_lengths() {
        assert!(matches!(
            Bandwidth::uniform(0.0),
            Err(ScheduleError::InvalidBandwidth {
                gpu: 0,
                source: InputError::NotPositive { .. }
            })
        ));
        assert!(matches!(
            Bandwidth::uniform(f64::NAN),
            Err(ScheduleError::InvalidBandwidth {
                source: InputError::NonFinite { .. },
                ..
            })
        ));
        assert!(matches!(
            Bandwidth::per_gpu(vec![1.0, -1.0]),
            Err(ScheduleError::InvalidBandwidth { gpu: 1, .. })
        ));
        let b = Bandwidth::per_gpu(vec![1.0, 2.0]).unwrap();
        assert!(matches!(
            b.check(3),
            Err(ScheduleError::Input(InputError::SizeMismatch {
                expected: 3,
                actual: 2,
                ..
            }))
        ));
        assert!(matches!(
            Bandwidth::PerGpu(vec![1.0, f64::INFINITY]).check(2),
            Err(ScheduleError::InvalidBandwidth { gpu: 1, .. })
        ));
        assert_eq!(b.port(2), None);
        assert_eq!(b.rate(0, 1), Some(1.0));
        assert_eq!(Bandwidth::PerGpu(vec![3.0, 3.0]).as_uniform(), Some(3.0));
        assert_eq!(b.as_uniform(), None);
    }
}
