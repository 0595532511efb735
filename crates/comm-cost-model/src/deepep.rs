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
use crate::{AlphaBeta, InputError, check_divides, check_finite_result, check_positive};

/// Bytes per element DeepEP dispatch moves: FP8 plus one FP32 scale per 128 values.
pub const DISPATCH_BYTES_PER_ELEMENT: f64 = 1.0 + 4.0 / 128.0;
/// Bytes per element DeepEP combine moves: BF16.
pub const COMBINE_BYTES_PER_ELEMENT: f64 = 2.0;

/// Most experts per token a call may select: the distinct-rank count multiplies `top_k`
/// factors, and `top_k = 2^64 - 1` (with as many experts) looped for ever (issue 13). DeepEP
/// selects 8; 2^16 factors take well under a millisecond.
pub const MAX_TOP_K: u64 = 1 << 16;

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
///
/// Deserializes through [`DeepEpCall::validate`]; the fields are public, so every function
/// taking a call checks it again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "DeepEpCallFields")]
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

deserialize_validated!(
    DeepEpCall,
    DeepEpCallFields {
        ranks: u64,
        tokens: u64,
        hidden: u64,
        top_k: u64,
        experts: u64,
        bytes_per_element: f64,
    }
);

impl DeepEpCall {
    /// Checks the call: every count at least 1, `top_k <= experts`, `top_k <= MAX_TOP_K`,
    /// the ranks dividing the experts and a positive finite element size.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] for a zero count or `experts < top_k`;
    /// [`InputError::TooLarge`] for `top_k` above [`MAX_TOP_K`];
    /// [`InputError::NotDivisible`] when the ranks do not divide the experts;
    /// `NonFinite`/`NotPositive` for a bad element size.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::deepep::DeepEpCall;
    /// let call = DeepEpCall { ranks: 8, tokens: 128, hidden: 7168, top_k: 8, experts: 256,
    ///     bytes_per_element: 2.0 };
    /// assert!(call.validate().is_ok());
    /// assert!(DeepEpCall { experts: 260, ..call }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        for (what, v) in [
            ("ranks", self.ranks),
            ("tokens", self.tokens),
            ("hidden", self.hidden),
            ("top_k", self.top_k),
        ] {
            if v == 0 {
                return Err(InputError::CountTooSmall {
                    what,
                    min: 1,
                    value: 0,
                });
            }
        }
        if self.top_k > MAX_TOP_K {
            return Err(InputError::TooLarge {
                what: "top_k (experts per token)",
                limit: MAX_TOP_K,
                value: self.top_k,
            });
        }
        if self.experts < self.top_k {
            return Err(InputError::CountTooSmall {
                what: "experts (at least top_k)",
                min: self.top_k,
                value: self.experts,
            });
        }
        check_divides(
            "the ranks must divide the experts",
            self.experts,
            self.ranks,
        )?;
        check_positive("bytes per element", self.bytes_per_element)?;
        Ok(())
    }
}

/// Copies of each token one rank sends (see the module docs).
///
/// # Errors
///
/// As [`DeepEpCall::validate`].
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
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn copies_per_token(call: &DeepEpCall, mode: DeepEpMode) -> Result<f64, InputError> {
    call.validate()?;
    Ok(match mode {
        DeepEpMode::LowLatency => call.top_k as f64,
        DeepEpMode::Normal => call.ranks as f64 * hit_probability(call),
    })
}

/// P(a rank hosts at least one of a token's `k` experts) = `1 - C(E - E/R, k) / C(E, k)`,
/// with the miss probability as the product of `1 - (E/R) / (E - i)` for `i < k`.
///
/// Summed as logarithms (`ln_1p`, `exp_m1`): with 10^18 experts on 10^18 ranks each factor
/// rounded to 1, and `1 - miss` to 0 copies per token (issue 13); the exact value is `k / E`
/// per rank.
fn hit_probability(call: &DeepEpCall) -> f64 {
    // Exact in integers: the ranks divide the experts, and `i < k <= E`.
    let per_rank = (call.experts / call.ranks) as f64;
    let mut ln_miss = 0.0;
    for i in 0..call.top_k {
        let q = per_rank / (call.experts - i) as f64;
        if q >= 1.0 {
            // Fewer experts left than one rank holds: every rank is hit.
            return 1.0;
        }
        ln_miss += (-q).ln_1p();
    }
    -ln_miss.exp_m1()
}

/// Bytes one rank sends in a call: `tokens x copies x hidden x bytes_per_element`.
///
/// # Errors
///
/// As [`copies_per_token`]; [`InputError::NonFinite`] when the bytes overflow `f64`.
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
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn sent_bytes(call: &DeepEpCall, mode: DeepEpMode) -> Result<Bytes, InputError> {
    let copies = copies_per_token(call, mode)?;
    check_finite_result(
        "DeepEP bytes sent",
        call.tokens as f64 * copies * call.hidden as f64 * call.bytes_per_element,
    )
}

/// Time of one call on a fitted link: `alpha + beta x sent_bytes`.
///
/// # Errors
///
/// As [`sent_bytes`]; `NonFinite`/`Negative` for a link built with a bad `alpha` or `beta`
/// (its fields are public); [`InputError::NonFinite`] when the time overflows `f64`.
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
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn call_time_s(
    call: &DeepEpCall,
    mode: DeepEpMode,
    link: &AlphaBeta,
) -> Result<Seconds, InputError> {
    let link = link.validated()?;
    check_finite_result("DeepEP call time (s)", link.time_s(sent_bytes(call, mode)?))
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
            Err(InputError::CountTooSmall { what: "tokens", .. })
        ));
        let uneven = DeepEpCall {
            experts: 12,
            ..call()
        };
        assert!(matches!(
            copies_per_token(&uneven, DeepEpMode::Normal),
            Err(InputError::NotDivisible { .. })
        ));
        let few = DeepEpCall {
            experts: 1,
            ranks: 1,
            ..call()
        };
        assert!(matches!(
            copies_per_token(&few, DeepEpMode::Normal),
            Err(InputError::CountTooSmall { .. })
        ));
        let nan = DeepEpCall {
            bytes_per_element: f64::NAN,
            ..call()
        };
        assert!(matches!(
            sent_bytes(&nan, DeepEpMode::LowLatency),
            Err(InputError::NonFinite { .. })
        ));
    }
}
