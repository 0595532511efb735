//! How fast a GPU turns FLOPs into time: the micro-batch compute time `t(b)` (Appendix B, Eq. 10)
//! and the efficiency parameters the accuracy study calibrates.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::model::{GptModel, Recompute, flop_split};
use comm_cost_model::units::{Flop, FlopPerSecond};
use comm_cost_model::{check_count_u64, check_finite_result, check_positive};

/// Which FLOPs the attention slowdown `γ` of Appendix B applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionScope {
    /// The whole attention block: QKV and output projections plus the score terms.
    #[default]
    Block,
    /// Only the `s^2` score terms (projections run at GEMM speed).
    Scores,
}

/// Compute assumptions: recomputation, attention slowdown and GEMM efficiency.
///
/// The GPU runs GEMMs at `peak * gemm_efficiency * h / (h + half_efficiency_hidden)`: a
/// saturating curve in the hidden size, because small GEMMs use the GPU less well (the paper
/// notes `t(b)` is best profiled; this is the smallest model of that effect). Attention FLOPs
/// run `attention_slowdown` times slower (the paper: `γ = 1/0.4`, from FlashAttention-2).
///
/// Deserializing runs [`ComputeModel::validate`], so a parsed model is valid.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ComputeModelFields")]
pub struct ComputeModel {
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Attention slowdown `γ` (at least 1).
    pub attention_slowdown: f64,
    /// Which FLOPs `γ` applies to.
    pub attention_scope: AttentionScope,
    /// Fraction of peak reached by large GEMMs, in (0, 1].
    pub gemm_efficiency: f64,
    /// Hidden size at which GEMM efficiency is half its maximum (0 = no size effect).
    pub half_efficiency_hidden: f64,
    /// Bytes of weights, gradients and optimizer state per parameter (18 for Megatron-LM).
    pub bytes_per_param: f64,
}

/// The serialized form of [`ComputeModel`], validated on the way in.
#[derive(Deserialize)]
struct ComputeModelFields {
    recompute: Recompute,
    attention_slowdown: f64,
    attention_scope: AttentionScope,
    gemm_efficiency: f64,
    half_efficiency_hidden: f64,
    bytes_per_param: f64,
}

impl TryFrom<ComputeModelFields> for ComputeModel {
    type Error = RailNetworkError;

    fn try_from(f: ComputeModelFields) -> Result<Self, Self::Error> {
        let model = Self {
            recompute: f.recompute,
            attention_slowdown: f.attention_slowdown,
            attention_scope: f.attention_scope,
            gemm_efficiency: f.gemm_efficiency,
            half_efficiency_hidden: f.half_efficiency_hidden,
            bytes_per_param: f.bytes_per_param,
        };
        model.validate()?;
        Ok(model)
    }
}

impl Default for ComputeModel {
    fn default() -> Self {
        Self::paper()
    }
}

impl ComputeModel {
    /// The assumption set used to reproduce Table 4 (see docs/reproduction.md): selective
    /// recomputation, `γ = 2.5` on the whole attention block, GEMMs at peak, 18 bytes/param.
    #[must_use]
    pub fn paper() -> Self {
        Self {
            recompute: Recompute::Selective,
            attention_slowdown: 2.5,
            attention_scope: AttentionScope::Block,
            gemm_efficiency: 1.0,
            half_efficiency_hidden: 0.0,
            bytes_per_param: 18.0,
        }
    }

    /// The calibration on the nine in-sample published runs
    /// ([`crate::accuracy::published_runs`], DGX A100): GEMMs at 75.7% of peak with half
    /// efficiency at hidden 3199, `γ = 1.23` on the attention block, selective recomputation.
    ///
    /// The values are what [`crate::accuracy::calibrate`] returns on those runs (a test checks
    /// it). Valid range, from held-out runs (docs/reproduction.md): Megatron-LM-style stacks
    /// with hidden size at least 6144; below, the size curve over-penalises small models.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::compute::ComputeModel;
    /// let c = ComputeModel::calibrated();
    /// assert!(c.validate().is_ok() && c.gemm_efficiency < 1.0);
    /// ```
    #[must_use]
    pub fn calibrated() -> Self {
        Self {
            recompute: Recompute::Selective,
            attention_slowdown: 1.233_496_120_420_657,
            attention_scope: AttentionScope::Block,
            gemm_efficiency: 0.756_849_467_232_648_9,
            half_efficiency_hidden: 3_199.271_939_144_043_7,
            bytes_per_param: 18.0,
        }
    }

    /// Checks the parameters.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] naming a non-finite, non-positive or out-of-range field.
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_positive("attention slowdown", self.attention_slowdown)?;
        check_positive("GEMM efficiency", self.gemm_efficiency)?;
        comm_cost_model::check_non_negative(
            "half-efficiency hidden size",
            self.half_efficiency_hidden,
        )?;
        check_positive("bytes per parameter", self.bytes_per_param)?;
        if self.gemm_efficiency > 1.0 {
            return Err(comm_cost_model::InputError::NotPositive {
                what: "1 - GEMM efficiency (efficiency must be at most 1)",
                value: 1.0 - self.gemm_efficiency,
            }
            .into());
        }
        Ok(())
    }

    /// FLOP/s a GPU of `peak_flop_per_s` reaches on GEMMs of a model of hidden size `hidden`,
    /// `peak * gemm_efficiency * h / (h + half_efficiency_hidden)`.
    ///
    /// # Errors
    ///
    /// An invalid compute model, a peak that is not positive and finite, a zero hidden size
    /// ([`RailNetworkError::Input`]), or a rate that underflows to zero (`NotPositive`, e.g. a
    /// subnormal peak).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::compute::ComputeModel;
    /// let c = ComputeModel { gemm_efficiency: 0.8, half_efficiency_hidden: 1000.0, ..ComputeModel::paper() };
    /// // Half of 80% of peak at the half-efficiency hidden size.
    /// assert_eq!(c.effective_flop_per_s(100.0, 1000)?, 40.0);
    /// assert!(c.effective_flop_per_s(5e-324, 1000).is_err());
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn effective_flop_per_s(
        &self,
        peak_flop_per_s: FlopPerSecond,
        hidden: u64,
    ) -> Result<FlopPerSecond, RailNetworkError> {
        self.validate()?;
        check_positive("peak FLOP/s", peak_flop_per_s)?;
        check_count_u64("hidden size", hidden, 1)?;
        let h = hidden as f64;
        // The size factor is at most 1 and the efficiency at most 1: the rate never exceeds the
        // (finite) peak, whereas `peak * h` first could overflow.
        let rate = peak_flop_per_s * self.gemm_efficiency * (h / (h + self.half_efficiency_hidden));
        Ok(check_positive("effective GEMM FLOP/s", rate)?)
    }

    /// Per-sequence FLOPs at GEMM speed and (already multiplied by `γ`) attention FLOPs.
    ///
    /// # Errors
    ///
    /// An invalid model or compute model; [`RailNetworkError::Input`] (`NonFinite`) when the
    /// slowed-down attention FLOPs overflow `f64` (a huge `γ`).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::{compute::ComputeModel, model::model_preset};
    /// let m = model_preset("gpt-22b")?;
    /// let (gemm, attention) = ComputeModel::paper().weighted_flops_per_sequence(&m)?;
    /// let one = ComputeModel { attention_slowdown: 1.0, ..ComputeModel::paper() };
    /// let (gemm_1, attention_1) = one.weighted_flops_per_sequence(&m)?;
    /// assert_eq!(gemm_1, gemm);
    /// assert!((attention / attention_1 - 2.5).abs() < 1e-12); // γ = 2.5
    /// assert!(ComputeModel { attention_slowdown: f64::MAX, ..one }.weighted_flops_per_sequence(&m).is_err());
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn weighted_flops_per_sequence(
        &self,
        model: &GptModel,
    ) -> Result<(Flop, Flop), RailNetworkError> {
        self.validate()?;
        let f = flop_split(model, 1.0, self.recompute)?;
        let (gemm, attention) = match self.attention_scope {
            AttentionScope::Block => (
                f.feed_forward_flop,
                f.attention_projection_flop + f.attention_score_flop,
            ),
            AttentionScope::Scores => (
                f.feed_forward_flop + f.attention_projection_flop,
                f.attention_score_flop,
            ),
        };
        let attention = check_finite_result(
            "attention FLOPs per sequence times the slowdown",
            attention * self.attention_slowdown,
        )?;
        check_finite_result("FLOPs per sequence", gemm + attention)?;
        Ok((gemm, attention))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::model_preset;

    #[test]
    fn efficiency_curve_and_validation() {
        let c = ComputeModel {
            half_efficiency_hidden: 1000.0,
            gemm_efficiency: 0.8,
            ..ComputeModel::paper()
        };
        assert!((c.effective_flop_per_s(100.0, 1000).unwrap() - 40.0).abs() < 1e-12);
        assert!(
            ComputeModel {
                gemm_efficiency: 1.5,
                ..c
            }
            .validate()
            .is_err()
        );
        assert!(
            ComputeModel {
                attention_slowdown: f64::NAN,
                ..c
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn gamma_weights_the_attention_block() {
        let m = model_preset("gpt-22b").unwrap();
        let one = ComputeModel {
            attention_slowdown: 1.0,
            ..ComputeModel::paper()
        };
        let (g1, a1) = one.weighted_flops_per_sequence(&m).unwrap();
        let (g2, a2) = ComputeModel::paper()
            .weighted_flops_per_sequence(&m)
            .unwrap();
        assert_eq!(g1, g2);
        assert!((a2 / a1 - 2.5).abs() < 1e-12);
    }
}
