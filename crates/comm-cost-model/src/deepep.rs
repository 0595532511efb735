//! Time of DeepEP's MoE dispatch and combine kernels from the bytes they move.
//!
//! DeepEP (DeepSeek's expert-parallel communication library) has two kernel families. The
//! *normal* kernels send each token once to every rank hosting at least one of its top-k
//! experts (deduplicated per rank, then fanned out to the experts on arrival); the
//! *low-latency* kernels send one copy per selected expert. The bytes a rank sends are
//!
//! `tokens x copies x hidden x bytes_per_element`,
//!
//! with `copies = top_k` (low latency) or the expected number of distinct ranks among the
//! top-k experts when `experts / ranks` experts sit on each rank and routing is uniform:
//! `ranks x (1 - C(E - E/R, k) / C(E, k))`. Dispatch usually moves FP8 activations with one
//! FP32 scale per 128 values (`1 + 4/128` bytes per element) and combine moves BF16 (2 bytes).
//!
//! The time is an alpha-beta line in those bytes: `alpha` is the per-call overhead (kernel
//! launch, the notify/barrier round, the layout computation), which measured tables show is
//! several times NCCL's start-up, and `beta` the inverse of the bandwidth the kernels reach.

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, Seconds};
use crate::{AlphaBeta, CostModelError, check_divides, check_positive};

/// Which DeepEP kernels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DeepEpMode {
    /// High-throughput kernels: one copy per destination rank.
    Normal,
    /// Low-latency kernels: one copy per selected expert.
    LowLatency,
}

/// One dispatch (or combine) call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeepEpCall {
    /// Ranks (GPUs) of the expert-parallel group.
    pub ranks: u64,
    /// Tokens on one rank.
    pub tokens: u64,
    /// Hidden size (elements per token).
    pub hidden: u64,
    /// Experts selected per token.
    pub top_k: u64,
    /// Routed experts in total, spread evenly over the ranks.
    pub experts: u64,
    /// Bytes per element on the wire (for example `1 + 4/128` for FP8 with scales, 2 for BF16).
    pub bytes_per_element: f64,
}

/// Copies of each token one rank sends (see the module docs).
///
/// # Errors
///
/// [`CostModelError::CountTooSmall`] for a zero count or `experts < top_k`;
/// [`CostModelError::NotDivisible`] when the ranks do not divide the experts.
///
/// # Complexity
///
/// O(`top_k`).
///
/// # Examples
///
/// ```
/// use comm_cost_model::deepep::{copies_per_token, DeepEpCall, DeepEpMode};
/// let call = DeepEpCall { ranks: 8, tokens: 4096, hidden: 7168, top_k: 8, experts: 256,
///     bytes_per_element: 2.0 };
/// assert_eq!(copies_per_token(&call, DeepEpMode::LowLatency)?, 8.0);
/// // Top-8 of 256 experts on 8 ranks reaches about 5.3 distinct ranks.
/// let normal = copies_per_token(&call, DeepEpMode::Normal)?;
/// assert!((normal - 5.3).abs() < 0.05);
/// # Ok::<(), comm_cost_model::CostModelError>(())
/// ```
pub fn copies_per_token(call: &DeepEpCall, mode: DeepEpMode) -> Result<f64, CostModelError> {
    for (what, v) in [
        ("ranks", call.ranks),
        ("tokens", call.tokens),
        ("hidden", call.hidden),
        ("top_k", call.top_k),
    ] {
        if v == 0 {
            return Err(CostModelError::CountTooSmall {
                what,
                min: 1,
                value: 0,
            });
        }
    }
    if call.experts < call.top_k {
        return Err(CostModelError::CountTooSmall {
            what: "experts (at least top_k)",
            min: call.top_k,
            value: call.experts,
        });
    }
    check_divides(
        "the ranks must divide the experts",
        call.experts,
        call.ranks,
    )?;
    check_positive("bytes per element", call.bytes_per_element)?;
    Ok(match mode {
        DeepEpMode::LowLatency => call.top_k as f64,
        DeepEpMode::Normal => {
            // P(a rank hosts none of the k experts) = C(E - E/R, k) / C(E, k).
            let e = call.experts as f64;
            let away = e - e / call.ranks as f64;
            let miss = (0..call.top_k).fold(1.0, |p, i| {
                let i = i as f64;
                p * ((away - i) / (e - i)).max(0.0)
            });
            call.ranks as f64 * (1.0 - miss)
        }
    })
}

/// Bytes one rank sends in a call: `tokens x copies x hidden x bytes_per_element`.
///
/// # Errors
///
/// As [`copies_per_token`].
///
/// # Complexity
///
/// O(`top_k`).
///
/// # Examples
///
/// ```
/// use comm_cost_model::deepep::{sent_bytes, DeepEpCall, DeepEpMode};
/// let call = DeepEpCall { ranks: 8, tokens: 128, hidden: 7168, top_k: 8, experts: 256,
///     bytes_per_element: 2.0 };
/// assert_eq!(sent_bytes(&call, DeepEpMode::LowLatency)?, 128.0 * 8.0 * 7168.0 * 2.0);
/// # Ok::<(), comm_cost_model::CostModelError>(())
/// ```
pub fn sent_bytes(call: &DeepEpCall, mode: DeepEpMode) -> Result<Bytes, CostModelError> {
    let copies = copies_per_token(call, mode)?;
    crate::check_finite_result(
        "DeepEP bytes sent",
        call.tokens as f64 * copies * call.hidden as f64 * call.bytes_per_element,
    )
}

/// Time of one call on a fitted link: `alpha + beta x sent_bytes`.
///
/// # Errors
///
/// As [`copies_per_token`].
///
/// # Complexity
///
/// O(`top_k`).
///
/// # Examples
///
/// ```
/// use comm_cost_model::AlphaBeta;
/// use comm_cost_model::deepep::{call_time_s, DeepEpCall, DeepEpMode};
/// let call = DeepEpCall { ranks: 8, tokens: 1, hidden: 7168, top_k: 8, experts: 256,
///     bytes_per_element: 2.0 };
/// let link = AlphaBeta::new(25e-6, 1.0 / 300e9)?;
/// let t = call_time_s(&call, DeepEpMode::LowLatency, &link)?;
/// assert!((t - (25e-6 + 8.0 * 7168.0 * 2.0 / 300e9)).abs() < 1e-15);
/// # Ok::<(), comm_cost_model::CostModelError>(())
/// ```
pub fn call_time_s(
    call: &DeepEpCall,
    mode: DeepEpMode,
    link: &AlphaBeta,
) -> Result<Seconds, CostModelError> {
    crate::check_finite_result("DeepEP call time (s)", link.time_s(sent_bytes(call, mode)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> DeepEpCall {
        DeepEpCall {
            ranks: 8,
            tokens: 16,
            hidden: 4096,
            top_k: 2,
            experts: 8,
            bytes_per_element: 2.0,
        }
    }

    #[test]
    fn distinct_ranks_match_hand_count() {
        // 8 experts on 8 ranks, top-2: always 2 distinct ranks.
        assert!((copies_per_token(&call(), DeepEpMode::Normal).unwrap() - 2.0).abs() < 1e-12);
        // 16 experts on 8 ranks, top-2: P(miss rank) = C(14,2)/C(16,2) = 91/120, so
        // 8 x (1 - 91/120) = 29/15.
        let c = DeepEpCall {
            experts: 16,
            ..call()
        };
        let copies = copies_per_token(&c, DeepEpMode::Normal).unwrap();
        assert!((copies - 29.0 / 15.0).abs() < 1e-12);
        // All experts on one rank: one copy.
        let one = DeepEpCall { ranks: 1, ..call() };
        assert!((copies_per_token(&one, DeepEpMode::Normal).unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bad_calls_are_typed_errors() {
        let zero = DeepEpCall {
            tokens: 0,
            ..call()
        };
        assert!(matches!(
            copies_per_token(&zero, DeepEpMode::Normal),
            Err(CostModelError::CountTooSmall { what: "tokens", .. })
        ));
        let uneven = DeepEpCall {
            experts: 12,
            ..call()
        };
        assert!(matches!(
            copies_per_token(&uneven, DeepEpMode::Normal),
            Err(CostModelError::NotDivisible { .. })
        ));
        let few = DeepEpCall {
            experts: 1,
            ranks: 1,
            ..call()
        };
        assert!(matches!(
            copies_per_token(&few, DeepEpMode::Normal),
            Err(CostModelError::CountTooSmall { .. })
        ));
        let nan = DeepEpCall {
            bytes_per_element: f64::NAN,
            ..call()
        };
        assert!(matches!(
            sent_bytes(&nan, DeepEpMode::LowLatency),
            Err(CostModelError::NonFinite { .. })
        ));
    }
}
