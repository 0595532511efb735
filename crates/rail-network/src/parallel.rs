//! A PTD-P parallelization and the constraints of the rail-only paper's Appendix C (Eq. 11–18).

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::model::GptModel;
use comm_cost_model::InputError;
use comm_cost_model::{check_count_u64, check_divides};
use comm_cost_model::{checked_product, gcd};

/// How a training job is split: tensor `t`, pipeline `p` and data `d` parallelism, each split
/// into an HB-domain part (`_hb`) and a network part (the quotient), plus the batch schedule.
///
/// Deserializing checks what needs no model or cluster: every count at least 1 and each HB
/// part dividing its degree (Eq. 14–16); [`Parallelization::validate`] checks the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "ParallelizationFields")]
pub struct Parallelization {
    /// Tensor (and sequence) parallel degree `t`.
    pub tp: u64,
    /// Pipeline parallel degree `p`.
    pub pp: u64,
    /// Data parallel degree `d`.
    pub dp: u64,
    /// Part of `t` inside an HB domain, `t_h`.
    pub tp_hb: u64,
    /// Part of `p` inside an HB domain, `p_h`.
    pub pp_hb: u64,
    /// Part of `d` inside an HB domain, `d_h`.
    pub dp_hb: u64,
    /// Micro-batch size `b`.
    pub micro_batch: u64,
    /// Global batch size `B` (sequences per iteration).
    pub global_batch: u64,
    /// Interleaved stages per GPU `v` (1 = plain 1F1B).
    pub interleave: u64,
}

/// The serialized form of [`Parallelization`], checked on the way in.
#[derive(Deserialize)]
struct ParallelizationFields {
    tp: u64,
    pp: u64,
    dp: u64,
    tp_hb: u64,
    pp_hb: u64,
    dp_hb: u64,
    micro_batch: u64,
    global_batch: u64,
    interleave: u64,
}

impl TryFrom<ParallelizationFields> for Parallelization {
    type Error = RailNetworkError;

    fn try_from(f: ParallelizationFields) -> Result<Self, Self::Error> {
        let par = Self {
            tp: f.tp,
            pp: f.pp,
            dp: f.dp,
            tp_hb: f.tp_hb,
            pp_hb: f.pp_hb,
            dp_hb: f.dp_hb,
            micro_batch: f.micro_batch,
            global_batch: f.global_batch,
            interleave: f.interleave,
        };
        par.check_intrinsic()?;
        Ok(par)
    }
}

impl Parallelization {
    /// A parallelization with the usual placement: tensor parallelism fills the HB domain
    /// first, then data, then pipeline parallelism (each taking the largest common factor).
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`CountTooSmall`) for a zero degree, micro-batch, global
    /// batch, interleaving or HB-domain size.
    ///
    /// # Complexity
    ///
    /// `O(log K)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::parallel::Parallelization;
    /// // GPT-1T on 512 A100s (Korthikanti et al.): t = 8 fills a DGX, p = 64 crosses the network.
    /// let par = Parallelization::with_default_mapping(8, 64, 1, 1, 512, 1, 8)?;
    /// assert_eq!((par.tp_hb, par.pp_hb, par.dp_hb), (8, 1, 1));
    /// assert_eq!(par.micro_batches(), 512);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn with_default_mapping(
        tp: u64,
        pp: u64,
        dp: u64,
        micro_batch: u64,
        global_batch: u64,
        interleave: u64,
        hb_domain: u64,
    ) -> Result<Self, RailNetworkError> {
        check_count_u64("tensor parallel degree t", tp, 1)?;
        check_count_u64("pipeline parallel degree p", pp, 1)?;
        check_count_u64("data parallel degree d", dp, 1)?;
        check_count_u64("HB-domain size K", hb_domain, 1)?;
        let tp_hb = gcd(tp, hb_domain);
        let dp_hb = gcd(dp, hb_domain / tp_hb);
        let pp_hb = gcd(pp, hb_domain / (tp_hb * dp_hb));
        let par = Self {
            tp,
            pp,
            dp,
            tp_hb,
            pp_hb,
            dp_hb,
            micro_batch,
            global_batch,
            interleave,
        };
        par.check_counts()?;
        Ok(par)
    }

    /// Every degree, HB part, batch size and interleaving is at least 1 (Eq. 17).
    pub(crate) fn check_counts(&self) -> Result<(), InputError> {
        for (what, v) in [
            ("tensor parallel degree t", self.tp),
            ("pipeline parallel degree p", self.pp),
            ("data parallel degree d", self.dp),
            ("t_h", self.tp_hb),
            ("p_h", self.pp_hb),
            ("d_h", self.dp_hb),
            ("micro-batch size b", self.micro_batch),
            ("global batch size B", self.global_batch),
            ("interleaved stages v", self.interleave),
        ] {
            check_count_u64(what, v, 1)?;
        }
        Ok(())
    }

    /// What needs no model or cluster: [`Self::check_counts`] and [`Self::check_hb_parts`].
    pub(crate) fn check_intrinsic(&self) -> Result<(), InputError> {
        self.check_counts()?;
        self.check_hb_parts()
    }

    /// Each HB part divides its degree (Eq. 14–16).
    fn check_hb_parts(&self) -> Result<(), InputError> {
        check_divides("t_h must divide t (Eq. 15)", self.tp, self.tp_hb)?;
        check_divides("p_h must divide p (Eq. 16)", self.pp, self.pp_hb)?;
        check_divides("d_h must divide d (Eq. 14)", self.dp, self.dp_hb)?;
        Ok(())
    }

    /// The data parallel degree Eq. 11 leaves for `gpus` GPUs: `d = N / (t p)`.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] wrapping [`InputError::CountTooSmall`] for a zero degree,
    /// [`InputError::Overflow`] if `t p` overflows, and [`InputError::NotDivisible`]
    /// (naming Eq. 11) unless `t p` divides `N`.
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::InputError;
    /// use rail_network::{parallel::Parallelization, RailNetworkError};
    /// assert_eq!(Parallelization::data_parallel_degree(512, 8, 16)?, 4);
    /// assert!(matches!(
    ///     Parallelization::data_parallel_degree(500, 8, 16),
    ///     Err(RailNetworkError::Input(InputError::NotDivisible { divisor: 128, .. }))
    /// ));
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn data_parallel_degree(gpus: u64, tp: u64, pp: u64) -> Result<u64, RailNetworkError> {
        check_count_u64("tensor parallel degree t", tp, 1)?;
        check_count_u64("pipeline parallel degree p", pp, 1)?;
        let tp_pp = tp
            .checked_mul(pp)
            .ok_or(InputError::Overflow { what: "t p" })?;
        Ok(check_divides(
            "t p must divide the GPU count N (p t d = N, Eq. 11)",
            gpus,
            tp_pp,
        )?)
    }

    /// GPUs used, `p t d`.
    #[must_use]
    pub fn gpus(&self) -> u64 {
        self.tp.saturating_mul(self.pp).saturating_mul(self.dp)
    }

    /// Micro-batches per iteration, `m = B / (d b)` (Eq. 13).
    #[must_use]
    pub fn micro_batches(&self) -> u64 {
        // Saturating is exact here: a product above `u64::MAX` exceeds any global batch.
        self.global_batch / self.dp.saturating_mul(self.micro_batch).max(1)
    }

    /// Network parts `(t_l, p_l, d_l)` (Eq. 14–16).
    #[must_use]
    pub fn network_parts(&self) -> (u64, u64, u64) {
        (
            self.tp / self.tp_hb.max(1),
            self.pp / self.pp_hb.max(1),
            self.dp / self.dp_hb.max(1),
        )
    }

    /// Checks Eq. 11–18 for `model` on `gpus` GPUs in HB domains of `hb_domain`.
    ///
    /// # Errors
    ///
    /// The first violated constraint, named, as [`RailNetworkError::Input`]: `CountTooSmall`
    /// (Eq. 17), `SizeMismatch` (Eq. 11, 12: the product found against the count it must
    /// equal), `NotDivisible` (Eq. 13–16, 18, and `K | N`).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::{model::model_preset, parallel::Parallelization};
    /// let m = model_preset("gpt-1t")?;
    /// let mut par = Parallelization::with_default_mapping(8, 64, 1, 1, 512, 1, 8)?;
    /// par.validate(&m, 512, 8)?;
    /// par.interleave = 3; // 128 layers / (64 stages * 3) is not an integer
    /// assert!(par.validate(&m, 512, 8).is_err());
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn validate(
        &self,
        model: &GptModel,
        gpus: u64,
        hb_domain: u64,
    ) -> Result<(), RailNetworkError> {
        model.validate()?;
        self.check_counts()?;
        check_count_u64("GPU count N", gpus, 1)?;
        check_count_u64("HB-domain size K", hb_domain, 1)?;
        check_divides(
            "HB-domain size K must divide the GPU count N",
            gpus,
            hb_domain,
        )?;
        product("p t d = N (Eq. 11)", &[self.pp, self.tp, self.dp], gpus)?;
        let hb = [self.dp_hb, self.tp_hb, self.pp_hb];
        product("d_h t_h p_h = K (Eq. 12)", &hb, hb_domain)?;
        self.check_hb_parts()?;
        let local = check_divides(
            "d must divide the global batch B (Eq. 18)",
            self.global_batch,
            self.dp,
        )?;
        check_divides(
            "b must divide the local batch B/d (Eq. 13)",
            local,
            self.micro_batch,
        )?;
        let per_stage =
            check_divides("p must divide the layers l (Eq. 18)", model.layers, self.pp)?;
        check_divides("v must divide l/p (Eq. 18)", per_stage, self.interleave)?;
        check_divides(
            "t must divide the hidden size h (Eq. 18)",
            model.hidden,
            self.tp,
        )?;
        check_divides(
            "t must divide the sequence length s (Eq. 18)",
            model.seq_len,
            self.tp,
        )?;
        check_divides("t must divide the attention heads", model.heads, self.tp)?;
        Ok(())
    }
}

/// Expert parallelism of the MoE layers (Parm §II, §IV-B): EP groups are `ep` consecutive
/// data-parallel ranks; ESP groups shard each expert over `esp` consecutive tensor-parallel
/// ranks.
///
/// Deserializing checks that every count is at least 1; [`ExpertParallelism::validate`]
/// checks the divisibility rules against a parallelization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ExpertParallelismFields")]
pub struct ExpertParallelism {
    /// Expert-parallel degree `N_EP` (divides the data-parallel degree `d`).
    pub ep: u64,
    /// Expert-sharding degree `N_ESP` (divides the tensor-parallel degree `t`).
    pub esp: u64,
    /// Every `moe_every`-th transformer layer is an MoE layer (divides the layers per stage).
    pub moe_every: u64,
    /// Experts each token is routed to (`k` of top-k).
    pub top_k: u64,
}

/// The serialized form of [`ExpertParallelism`], checked on the way in.
#[derive(Deserialize)]
struct ExpertParallelismFields {
    ep: u64,
    esp: u64,
    moe_every: u64,
    top_k: u64,
}

impl TryFrom<ExpertParallelismFields> for ExpertParallelism {
    type Error = RailNetworkError;

    fn try_from(f: ExpertParallelismFields) -> Result<Self, Self::Error> {
        let expert = Self {
            ep: f.ep,
            esp: f.esp,
            moe_every: f.moe_every,
            top_k: f.top_k,
        };
        expert.check_counts()?;
        Ok(expert)
    }
}

impl ExpertParallelism {
    fn check_counts(&self) -> Result<(), InputError> {
        check_count_u64("EP degree", self.ep, 1)?;
        check_count_u64("ESP degree", self.esp, 1)?;
        check_count_u64("MoE layer frequency", self.moe_every, 1)?;
        check_count_u64("top-k", self.top_k, 1)?;
        Ok(())
    }

    /// Checks the EP/ESP rules against a parallelization of `model`: `ep | d`, `esp | t`,
    /// `moe_every | l / p`, all counts positive.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`CountTooSmall` or `NotDivisible`) naming the rule.
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::{model::model_preset, parallel::{ExpertParallelism, Parallelization}};
    /// let m = model_preset("gpt-1t")?;
    /// let par = Parallelization::with_default_mapping(8, 8, 8, 1, 64, 1, 8)?;
    /// let ep = ExpertParallelism { ep: 8, esp: 2, moe_every: 2, top_k: 2 };
    /// ep.validate(&par, &m)?;
    /// assert!(ExpertParallelism { ep: 3, ..ep }.validate(&par, &m).is_err()); // 3 does not divide d = 8
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn validate(
        &self,
        par: &Parallelization,
        model: &GptModel,
    ) -> Result<(), RailNetworkError> {
        self.check_counts()?;
        check_divides("EP must divide the data-parallel degree d", par.dp, self.ep)?;
        check_divides(
            "ESP must divide the tensor-parallel degree t",
            par.tp,
            self.esp,
        )?;
        let per_stage = check_divides("p must divide the layers l (Eq. 18)", model.layers, par.pp)?;
        check_divides(
            "the MoE frequency must divide the layers per stage l/p",
            per_stage,
            self.moe_every,
        )?;
        Ok(())
    }
}

fn product(
    constraint: &'static str,
    factors: &[u64],
    expected: u64,
) -> Result<(), RailNetworkError> {
    let product = checked_product(constraint, factors)?;
    if product == expected {
        Ok(())
    } else {
        Err(InputError::SizeMismatch {
            what: constraint,
            expected,
            actual: product,
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::model_preset;

    #[test]
    fn each_constraint_is_named() {
        let m = model_preset("gpt-175b").unwrap();
        let ok = Parallelization::with_default_mapping(8, 8, 1, 1, 64, 3, 8).unwrap();
        ok.validate(&m, 64, 8).unwrap();
        let err = |p: Parallelization, n| p.validate(&m, n, 8).unwrap_err().to_string();
        assert!(err(ok, 128).contains("Eq. 11"));
        assert!(
            err(
                Parallelization {
                    micro_batch: 3,
                    ..ok
                },
                64
            )
            .contains("local batch")
        );
        assert!(
            err(
                Parallelization {
                    interleave: 5,
                    ..ok
                },
                64
            )
            .contains("v must divide")
        );
        assert!(err(Parallelization { tp_hb: 4, ..ok }, 64).contains("Eq. 12"));
        assert!(err(ok, 60).contains("K must divide"));
        let t3 = Parallelization::with_default_mapping(3, 8, 8, 1, 64, 1, 8).unwrap();
        assert!(
            t3.validate(&m, 192, 8)
                .unwrap_err()
                .to_string()
                .contains("t must divide")
        );
    }
}
