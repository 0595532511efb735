//! How fast a GPU runs the GEMMs and attention of an MoE layer: a calibrated fraction of peak,
//! a slowdown for attention scores, and a roofline for expert GEMMs with few tokens.
//!
//! * Large GEMMs run at `gemm_efficiency x` the BF16 peak, or `fp8_gemm_efficiency x` the FP8
//!   peak for FP8 models (the two constants [`crate::moe::validation`] fits on a named subset
//!   of published runs).
//! * Attention scores (flash attention, forward and backward) run `attention_slowdown` times
//!   slower than GEMMs; the default 1.4 is the ratio of H100 BF16 GEMM throughput (about
//!   750 TFLOP/s) to FlashAttention-3's forward-plus-backward throughput at head dimension 128
//!   (about 540 TFLOP/s), Shah et al. 2024, *FlashAttention-3*, Fig. 5-6.
//! * A grouped expert GEMM with `n` tokens per expert (input `n x h`, weights `h x f`) does
//!   about `n` FLOP per byte of weights read when `n << h, f`; below the GPU's ridge point
//!   `peak / HBM bandwidth` (295 tokens on an H100, from its datasheet) it is memory bound. The
//!   smooth roofline `n / (n + ridge)` scales the GEMM rate: half speed at the ridge point,
//!   full speed for `n >> ridge`. Its constants come from datasheets, not from a fit.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use comm_cost_model::check_positive;

/// The compute-efficiency constants of the MoE step model.
///
/// Deserializing runs [`ComputeEfficiency::validate`] and rejects unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ComputeEfficiencyFields")]
pub struct ComputeEfficiency {
    /// Fraction of the BF16 peak that large BF16 GEMMs reach, in (0, 1].
    pub gemm_efficiency: f64,
    /// Fraction of the FP8 peak that large FP8 GEMMs reach (quantization and scaling
    /// included), in (0, 1].
    pub fp8_gemm_efficiency: f64,
    /// How many times slower attention-score FLOPs run than GEMM FLOPs (at least 1).
    pub attention_slowdown: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ComputeEfficiencyFields {
    gemm_efficiency: f64,
    fp8_gemm_efficiency: f64,
    attention_slowdown: f64,
}

impl TryFrom<ComputeEfficiencyFields> for ComputeEfficiency {
    type Error = RailNetworkError;

    fn try_from(f: ComputeEfficiencyFields) -> Result<Self, Self::Error> {
        let e = Self {
            gemm_efficiency: f.gemm_efficiency,
            fp8_gemm_efficiency: f.fp8_gemm_efficiency,
            attention_slowdown: f.attention_slowdown,
        };
        e.validate()?;
        Ok(e)
    }
}

impl Default for ComputeEfficiency {
    fn default() -> Self {
        Self::calibrated()
    }
}

impl ComputeEfficiency {
    /// The constants fitted on the calibration subset of [`crate::moe::validation`] (a test
    /// checks that the fit returns this value), with the stated attention slowdown.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::moe::ComputeEfficiency;
    /// assert!(ComputeEfficiency::calibrated().validate().is_ok());
    /// ```
    #[must_use]
    pub fn calibrated() -> Self {
        Self {
            gemm_efficiency: CALIBRATED_GEMM_EFFICIENCY,
            fp8_gemm_efficiency: CALIBRATED_FP8_GEMM_EFFICIENCY,
            attention_slowdown: 1.4,
        }
    }

    /// Checks the constants.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] naming a non-finite or out-of-range field.
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_positive("attention_slowdown", self.attention_slowdown)?;
        for (what, value) in [
            ("gemm_efficiency", self.gemm_efficiency),
            ("fp8_gemm_efficiency", self.fp8_gemm_efficiency),
        ] {
            check_positive(what, value)?;
            if value > 1.0 {
                return Err(comm_cost_model::InputError::AboveMaximum {
                    what,
                    value,
                    max: 1.0,
                }
                .into());
            }
        }
        if self.attention_slowdown < 1.0 {
            return Err(comm_cost_model::InputError::NotPositive {
                what: "attention_slowdown - 1 (the slowdown must be at least 1)",
                value: self.attention_slowdown - 1.0,
            }
            .into());
        }
        Ok(())
    }

    /// The roofline factor `n / (n + ridge)` of a GEMM with `tokens` rows on a GPU whose ridge
    /// point is `ridge_tokens`; 1 when `ridge_tokens` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::moe::ComputeEfficiency;
    /// assert_eq!(ComputeEfficiency::roofline(295.0, 295.0), 0.5);
    /// assert!(ComputeEfficiency::roofline(1e6, 295.0) > 0.999);
    /// ```
    #[must_use]
    pub fn roofline(tokens: f64, ridge_tokens: f64) -> f64 {
        if tokens + ridge_tokens <= 0.0 {
            return 1.0;
        }
        tokens / (tokens + ridge_tokens)
    }
}

/// The BF16 GEMM efficiency fitted on the calibration subset (see `docs/reproduction.md`).
pub(crate) const CALIBRATED_GEMM_EFFICIENCY: f64 = 0.740_562_496_636_934_3;

/// The FP8 GEMM efficiency fitted on the calibration subset (see `docs/reproduction.md`).
pub(crate) const CALIBRATED_FP8_GEMM_EFFICIENCY: f64 = 0.344_375_937_937_389_74;
