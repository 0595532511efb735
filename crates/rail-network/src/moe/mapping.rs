//! How an MoE training job is split over GPUs, and the rules a mapping must obey.
//!
//! Attention and dense layers use tensor (`tp`, with sequence parallelism), context (`cp`),
//! pipeline (`pp`, with `vp` virtual stages per GPU) and data parallelism (`dp`, with a
//! distributed optimizer); the MoE layers of the same pipeline stage re-split the same
//! `N / pp` GPUs into expert tensor (`etp`, Parm's ESP), expert (`ep`) and expert-data
//! parallelism (`edp`). This is MoE parallel folding (Liu et al. 2025, *MoE Parallel Folding*,
//! §3): `tp cp dp = etp ep edp = N / pp`, so attention and experts may use different TP.
//!
//! Rank order (innermost first): `tp`, `cp`, `dp` for attention and `etp`, `ep`, `edp` for
//! experts, then `pp`; a group whose product of inner degrees fits the HB domain of `K` GPUs
//! stays inside it (see [`MoeMapping::hb_part`]).

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::model::Recompute;
use crate::moe::model::MoeModel;
use comm_cost_model::{InputError, check_count_u64, check_divides, checked_product, gcd};

/// One mapping of an MoE training job: the parallel degrees, micro-batch and recomputation.
///
/// Deserializing rejects unknown fields and zero degrees; [`MoeMapping::validate`] checks the
/// rest against a model, GPU count and batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "MoeMappingFields")]
pub struct MoeMapping {
    /// Tensor parallelism of attention and dense layers (with sequence parallelism).
    pub tp: u64,
    /// Context parallelism.
    pub cp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Virtual pipeline stages per GPU (interleaved 1F1B; 1 = plain 1F1B).
    pub vp: u64,
    /// Expert parallelism.
    pub ep: u64,
    /// Expert tensor parallelism (Parm's expert sharding, ESP).
    pub etp: u64,
    /// Sequences per micro-batch.
    pub micro_batch: u64,
    /// Activation recomputation: `none` stores the layer activations (flash attention never
    /// stores the `s x s` scores); `selective` re-runs norms, activation functions and MLA's
    /// up-projections in the backward pass (see [`crate::moe::memory`]); `full` stores only each
    /// layer's input and recomputes the forward pass.
    pub recompute: Recompute,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MoeMappingFields {
    tp: u64,
    #[serde(default = "one")]
    cp: u64,
    pp: u64,
    #[serde(default = "one")]
    vp: u64,
    #[serde(default = "one")]
    ep: u64,
    #[serde(default = "one")]
    etp: u64,
    micro_batch: u64,
    #[serde(default)]
    recompute: Recompute,
}

fn one() -> u64 {
    1
}

impl TryFrom<MoeMappingFields> for MoeMapping {
    type Error = RailNetworkError;

    fn try_from(f: MoeMappingFields) -> Result<Self, Self::Error> {
        let m = Self {
            tp: f.tp,
            cp: f.cp,
            pp: f.pp,
            vp: f.vp,
            ep: f.ep,
            etp: f.etp,
            micro_batch: f.micro_batch,
            recompute: f.recompute,
        };
        m.check_counts()?;
        Ok(m)
    }
}

/// The degrees a valid mapping implies for a GPU count and global batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DerivedDegrees {
    /// Data parallelism of attention and dense layers, `N / (tp cp pp)`.
    pub dp: u64,
    /// Expert data parallelism, `N / (etp ep pp)`.
    pub edp: u64,
    /// Micro-batches per step per pipeline, `B / (dp b)`.
    pub micro_batches: u64,
    /// Layers of the busiest GPU, `vp ceil(l / (pp vp))`.
    pub stage_layers: u64,
}

impl MoeMapping {
    /// Every degree at least 1.
    pub(crate) fn check_counts(&self) -> Result<(), InputError> {
        for (what, v) in [
            ("tp", self.tp),
            ("cp", self.cp),
            ("pp", self.pp),
            ("vp", self.vp),
            ("ep", self.ep),
            ("etp", self.etp),
            ("micro_batch", self.micro_batch),
        ] {
            check_count_u64(what, v, 1)?;
        }
        Ok(())
    }

    /// Checks the mapping against a model, GPU count and global batch (sequences), and returns
    /// the degrees it implies.
    ///
    /// Rules: `tp cp pp | N` and `etp ep pp | N` (folding); `tp` divides the query heads and the
    /// key/value groups; `tp cp` divides the sequence length; `ep` divides the experts and
    /// `etp` the expert FFN size (a dense model needs `ep = etp = 1`); `pp vp <= layers`
    /// (uneven stages allowed: the busiest holds `vp ceil(l/(pp vp))` layers); `vp > 1` needs
    /// `pp > 1` and a micro-batch count divisible by `pp` (Megatron's interleaved schedule);
    /// `dp b | B`.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] naming the field: `CountTooSmall` for a zero degree, GPU
    /// count or batch; `NotDivisible` for a rule above; `SizeMismatch` for `ep`/`etp > 1` on a
    /// dense model, `pp vp > layers` or `vp > 1` without pipelining; `Overflow` for degree
    /// products beyond `u64`.
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::moe::{moe_model_preset, MoeMapping};
    /// use rail_network::model::Recompute;
    /// // Megatron-Core's reference mapping of Mixtral 8x7B on 64 H100: TP1 EP8 PP4 VP8.
    /// let m = MoeMapping { tp: 1, cp: 1, pp: 4, vp: 8, ep: 8, etp: 1, micro_batch: 1,
    ///     recompute: Recompute::None };
    /// let d = m.validate(&moe_model_preset("mixtral-8x7b")?, 64, 256)?;
    /// assert_eq!((d.dp, d.edp, d.micro_batches, d.stage_layers), (16, 2, 16, 8));
    /// let bad = MoeMapping { ep: 3, ..m };
    /// assert!(bad.validate(&moe_model_preset("mixtral-8x7b")?, 64, 256).is_err());
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn validate(
        &self,
        model: &MoeModel,
        gpus: u64,
        global_batch: u64,
    ) -> Result<DerivedDegrees, RailNetworkError> {
        self.check_counts()?;
        check_count_u64("GPU count", gpus, 1)?;
        check_count_u64("global batch (sequences)", global_batch, 1)?;
        let attention = checked_product("tp cp pp", &[self.tp, self.cp, self.pp])?;
        let dp = check_divides("tp * cp * pp must divide the GPU count", gpus, attention)?;
        let expert = checked_product("etp ep pp", &[self.etp, self.ep, self.pp])?;
        let edp = check_divides("etp * ep * pp must divide the GPU count", gpus, expert)?;
        check_divides(
            "tp must divide the attention heads",
            model.attention.heads(),
            self.tp,
        )?;
        check_divides(
            "tp must divide the key/value heads",
            model.attention.kv_groups(),
            self.tp,
        )?;
        let tp_cp = checked_product("tp cp", &[self.tp, self.cp])?;
        check_divides(
            "tp * cp must divide the sequence length",
            model.seq_len,
            tp_cp,
        )?;
        if model.is_moe() {
            check_divides("ep must divide the routed experts", model.experts, self.ep)?;
            check_divides(
                "etp must divide the expert FFN size",
                model.expert_ffn,
                self.etp,
            )?;
        } else if self.ep * self.etp != 1 {
            return Err(InputError::SizeMismatch {
                what: "ep * etp of a dense model (no experts)",
                expected: 1,
                actual: self.ep.saturating_mul(self.etp),
            }
            .into());
        }
        let chunks = checked_product("pp vp", &[self.pp, self.vp])?;
        if chunks > model.layers {
            return Err(InputError::SizeMismatch {
                what: "pp * vp must be at most the layers",
                expected: model.layers,
                actual: chunks,
            }
            .into());
        }
        if self.vp > 1 && self.pp == 1 {
            return Err(InputError::SizeMismatch {
                what: "vp > 1 needs pp > 1 (pp)",
                expected: 2,
                actual: 1,
            }
            .into());
        }
        let per_step = checked_product("dp micro_batch", &[dp, self.micro_batch])?;
        let micro_batches = check_divides(
            "dp * micro_batch must divide the global batch",
            global_batch,
            per_step,
        )?;
        if self.vp > 1 {
            check_divides(
                "pp must divide the micro-batch count under interleaving (vp > 1)",
                micro_batches,
                self.pp,
            )?;
        }
        let stage_layers = self.vp * model.layers.div_ceil(chunks);
        Ok(DerivedDegrees {
            dp,
            edp,
            micro_batches,
            stage_layers,
        })
    }

    /// `(inside, across)`: the part of a group of `degree` ranks with stride `inner` (the
    /// product of the degrees ordered before it) that lies inside one HB domain of `hb_domain`
    /// GPUs, and the number of HB domains it spans.
    #[must_use]
    pub fn hb_part(inner: u64, degree: u64, hb_domain: u64) -> (u64, u64) {
        let room = hb_domain.checked_div(inner).unwrap_or(1).max(1);
        let inside = gcd(degree, room).max(1);
        (inside, degree / inside)
    }
}
