//! The bandwidth model: one port per GPU direction, one transfer per port at a time.

use serde::{Deserialize, Serialize};

use crate::ScheduleError;

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
/// assert_eq!(b.rate(0, 1), 50.0);
/// assert_eq!(b.rate(2, 0), 100.0);
/// assert_eq!(Bandwidth::uniform(10.0)?.rate(3, 7), 10.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
    /// [`ScheduleError::BadBandwidth`] unless the value is positive and finite.
    pub fn uniform(bytes_per_s: f64) -> Result<Self, ScheduleError> {
        check_value(0, bytes_per_s)?;
        Ok(Self::Uniform(bytes_per_s))
    }

    /// One bandwidth (bytes/s) per GPU.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::BadBandwidth`] naming the first value that is not positive and finite.
    pub fn per_gpu(bytes_per_s: Vec<f64>) -> Result<Self, ScheduleError> {
        for (gpu, &value) in bytes_per_s.iter().enumerate() {
            check_value(gpu, value)?;
        }
        Ok(Self::PerGpu(bytes_per_s))
    }

    /// Checks the model against a GPU count: right length, every value positive and finite.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::BandwidthLength`] or [`ScheduleError::BadBandwidth`].
    pub fn check(&self, n: usize) -> Result<(), ScheduleError> {
        match self {
            Self::Uniform(b) => check_value(0, *b),
            Self::PerGpu(v) if v.len() != n => Err(ScheduleError::BandwidthLength {
                expected: n,
                got: v.len(),
            }),
            Self::PerGpu(v) => v
                .iter()
                .enumerate()
                .try_for_each(|(gpu, &b)| check_value(gpu, b)),
        }
    }

    /// Port bandwidth of GPU `gpu` (bytes/s).
    pub fn port(&self, gpu: usize) -> f64 {
        match self {
            Self::Uniform(b) => *b,
            Self::PerGpu(v) => v.get(gpu).copied().unwrap_or(f64::NAN),
        }
    }

    /// Rate of a transfer `src -> dst` alone on its ports: `min(B_src, B_dst)` (bytes/s).
    pub fn rate(&self, src: usize, dst: usize) -> f64 {
        self.port(src).min(self.port(dst))
    }

    /// The common bandwidth if every GPU has the same one.
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

fn check_value(gpu: usize, value: f64) -> Result<(), ScheduleError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(ScheduleError::BadBandwidth { gpu, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_values_and_lengths() {
        assert!(Bandwidth::uniform(0.0).is_err());
        assert!(Bandwidth::uniform(f64::NAN).is_err());
        assert!(Bandwidth::per_gpu(vec![1.0, -1.0]).is_err());
        let b = Bandwidth::per_gpu(vec![1.0, 2.0]).unwrap();
        assert_eq!(
            b.check(3),
            Err(ScheduleError::BandwidthLength {
                expected: 3,
                got: 2
            })
        );
        assert!(
            Bandwidth::PerGpu(vec![1.0, f64::INFINITY])
                .check(2)
                .is_err()
        );
        assert_eq!(Bandwidth::PerGpu(vec![3.0, 3.0]).as_uniform(), Some(3.0));
        assert_eq!(b.as_uniform(), None);
    }
}
