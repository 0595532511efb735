//! Per-GPU FFN time of an MoE layer (Aurora, Li et al., §4.1: `|F_i|`).

use crate::units::{Bytes, FlopPerSecond, Seconds};
use crate::{InputError, check_count, check_non_negative, check_positive};

/// The FFN time of every GPU: the bytes of tokens it receives in the dispatch all-to-all, times
/// the expert work per byte, over the GPU's FLOP/s (`|F_i| = recv_i · w / F_i`).
///
/// The expert's work is proportional to the tokens routed to it (Aurora §4.1: the FFN of GPU `i`
/// processes the tokens of the first all-to-all).
///
/// # Errors
///
/// [`InputError::CountTooSmall`] for no GPUs, [`InputError::SizeMismatch`] when the
/// vectors differ in length, `NonFinite`/`Negative` for bad bytes or work, `NotPositive` for a
/// FLOP/s that is not positive.
///
/// # Complexity
///
/// `O(n)` time for n GPUs.
///
/// # Examples
///
/// ```
/// use comm_cost_model::timeline::ffn_times_s;
/// // GPU 0 receives 2 MB at 1000 FLOP/byte on 1 TFLOP/s: 2 ms; GPU 1 half as much on half the speed.
/// let t = ffn_times_s(&[2e6, 1e6], 1e3, &[1e12, 0.5e12])?;
/// assert_eq!(t, vec![2e-3, 2e-3]);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn ffn_times_s(
    received_bytes: &[Bytes],
    flop_per_byte: f64,
    flop_per_s: &[FlopPerSecond],
) -> Result<Vec<Seconds>, InputError> {
    let n = check_count("GPUs", received_bytes.len(), 1)?;
    if flop_per_s.len() != n {
        return Err(InputError::SizeMismatch {
            what: "FLOP/s (one per GPU)",
            expected: n as u64,
            actual: flop_per_s.len() as u64,
        });
    }
    check_non_negative("FFN work (FLOP/byte)", flop_per_byte)?;
    received_bytes
        .iter()
        .zip(flop_per_s)
        .map(|(&bytes, &rate)| {
            let bytes = check_non_negative("received bytes", bytes)?;
            let rate = check_positive("GPU FLOP/s", rate)?;
            crate::check_finite_result("FFN time (s)", bytes * flop_per_byte / rate)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_inputs() {
        assert!(matches!(
            ffn_times_s(&[], 1.0, &[]),
            Err(InputError::CountTooSmall { .. })
        ));
        assert!(matches!(
            ffn_times_s(&[1.0], 1.0, &[1.0, 1.0]),
            Err(InputError::SizeMismatch {
                expected: 1,
                actual: 2,
                ..
            })
        ));
        assert!(matches!(
            ffn_times_s(&[1.0], f64::NAN, &[1.0]),
            Err(InputError::NonFinite { .. })
        ));
        assert!(matches!(
            ffn_times_s(&[-1.0], 1.0, &[1.0]),
            Err(InputError::Negative { .. })
        ));
        assert!(matches!(
            ffn_times_s(&[1.0], 1.0, &[0.0]),
            Err(InputError::NotPositive { .. })
        ));
    }
}
