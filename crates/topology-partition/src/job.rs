//! The parallel job whose traffic is computed: model dimensions and a PTD-P (+EP/ESP)
//! configuration (rail-only, Wang et al., §2.3, §3, Appendix C).

use serde::{Deserialize, Serialize};

use crate::TopologyError;
use comm_cost_model::check_count;

/// The dimensions of a GPT-style transformer that set the size of its messages.
///
/// Only what traffic needs: the model zoo with FLOP and memory formulas lives elsewhere (the
/// `rail-network` crate); this crate stays independent of it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GptDims {
    /// Hidden size `h`.
    pub hidden: usize,
    /// Transformer layers `l`.
    pub layers: usize,
    /// Sequence length `s`, tokens.
    pub seq_len: usize,
    /// Bytes per activation and gradient element (2 for FP16/BF16).
    pub bytes_per_element: f64,
}

impl GptDims {
    /// GPT-1T of MegatronLM Table 1 (Narayanan et al.), as used by rail-only §3:
    /// `h = 25600`, `l = 128`, `s = 2048`, 16-bit elements.
    pub fn gpt_1t() -> Self {
        Self {
            hidden: 25600,
            layers: 128,
            seq_len: 2048,
            bytes_per_element: 2.0,
        }
    }

    /// Parameters of one transformer layer, `12 h²` (attention `4h²` + MLP `8h²`; biases and
    /// layer norms are below 0.01% at these sizes and left out).
    pub fn params_per_layer(&self) -> f64 {
        12.0 * (self.hidden as f64).powi(2)
    }

    pub(crate) fn validated(&self) -> Result<Self, TopologyError> {
        check_count("hidden size h", self.hidden, 1)?;
        check_count("layers l", self.layers, 1)?;
        check_count("sequence length s", self.seq_len, 1)?;
        comm_cost_model::check_positive("bytes per element", self.bytes_per_element)?;
        Ok(*self)
    }
}

/// A parallel degree split into the part inside an HB domain and the part across the network
/// (`t = t_h · t_l` of rail-only Eq. 14–16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    /// Ranks of the dimension inside one HB domain (`_h`).
    pub hb: usize,
    /// HB domains the dimension spans (`_l`).
    pub network: usize,
}

impl Split {
    /// `hb` ranks inside a domain times `network` domains.
    pub fn new(hb: usize, network: usize) -> Self {
        Self { hb, network }
    }

    /// The whole degree, `hb · network`.
    pub fn degree(&self) -> usize {
        self.hb.saturating_mul(self.network)
    }
}

/// Expert parallelism of the MoE layers (Parm §II, §IV-B): EP groups are `ep` consecutive
/// data-parallel ranks; ESP groups shard each expert over `esp` consecutive tensor-parallel ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpertConfig {
    /// Expert-parallel degree `N_EP` (divides the data-parallel degree).
    pub ep: usize,
    /// Expert-sharding degree `N_ESP` (divides the tensor-parallel degree).
    pub esp: usize,
    /// Every `moe_every`-th transformer layer is an MoE layer.
    pub moe_every: usize,
    /// Experts each token is routed to (`k` of top-k).
    pub top_k: usize,
}

/// Which collective algorithm carries TP, DP and ESP collectives and EP AlltoAll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CollectiveAlgorithm {
    /// NCCL's ring over the group in rank order; AlltoAll sends directly to every peer.
    Ring,
    /// Two-tier algorithms (rail-only Eq. 1, Appendix D): rings along rails and inside HB
    /// domains; AlltoAll forwards inside the domain, then along the rail. Groups that do not
    /// form a grid over HB domains fall back to the ring.
    Hierarchical,
}

/// A PTD-P (+EP/ESP) configuration of one training iteration (rail-only Appendix C).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ParallelConfig {
    /// Tensor (and sequence) parallelism `t = t_h · t_l`.
    pub tensor: Split,
    /// Pipeline parallelism `p = p_h · p_l`.
    pub pipeline: Split,
    /// Data parallelism `d = d_h · d_l`.
    pub data: Split,
    /// Micro-batch size `b`, sequences.
    pub micro_batch: usize,
    /// Micro-batches per iteration `m` (so the global batch is `m b d`, Eq. 13).
    pub micro_batches: usize,
    /// Interleaved pipeline stages per GPU `v` (1 = plain 1F1B).
    pub interleave: usize,
    /// Expert parallelism of the MoE layers, if the model has any.
    pub expert: Option<ExpertConfig>,
}

impl ParallelConfig {
    /// Checks rail-only Eq. 11–18 (the divisibility rules) for `gpus` GPUs in HB domains of
    /// `hb_domain_size`, plus the EP/ESP rules.
    pub(crate) fn check(
        &self,
        gpus: usize,
        hb_domain_size: usize,
        model: &GptDims,
    ) -> Result<(), TopologyError> {
        let bad = |msg: String| Err(TopologyError::Config(msg));
        for (name, s) in [
            ("tensor", self.tensor),
            ("pipeline", self.pipeline),
            ("data", self.data),
        ] {
            if s.hb == 0 || s.network == 0 {
                return bad(format!(
                    "{name} split {}x{} has a zero part",
                    s.hb, s.network
                ));
            }
        }
        check_count("micro-batch size b", self.micro_batch, 1)?;
        check_count("micro-batches m", self.micro_batches, 1)?;
        check_count("interleaved stages v", self.interleave, 1)?;
        let hb = product(&[self.tensor.hb, self.data.hb, self.pipeline.hb])?;
        if hb != hb_domain_size {
            return bad(format!(
                "t_h d_h p_h = {hb} must equal the HB domain size K = {hb_domain_size} (Eq. 12)"
            ));
        }
        let net = product(&[
            self.tensor.network,
            self.data.network,
            self.pipeline.network,
        ])?;
        if product(&[hb, net])? != gpus {
            return bad(format!(
                "t p d = {} must equal N = {gpus} (Eq. 11)",
                hb * net
            ));
        }
        let (t, p) = (self.tensor.degree(), self.pipeline.degree());
        if model.hidden % t != 0 || model.seq_len % t != 0 {
            return bad(format!("t = {t} must divide h and s (Eq. 18)"));
        }
        let stages = product(&[p, self.interleave])?;
        if model.layers % stages != 0 {
            return bad(format!(
                "p v = {stages} must divide l = {} (Eq. 18)",
                model.layers
            ));
        }
        if let Some(e) = self.expert {
            self.check_expert(&e, model)?;
        }
        Ok(())
    }

    fn check_expert(&self, e: &ExpertConfig, model: &GptDims) -> Result<(), TopologyError> {
        check_count("EP degree", e.ep, 1)?;
        check_count("ESP degree", e.esp, 1)?;
        check_count("MoE layer frequency", e.moe_every, 1)?;
        check_count("top-k", e.top_k, 1)?;
        let (t, d, p) = (
            self.tensor.degree(),
            self.data.degree(),
            self.pipeline.degree(),
        );
        if d % e.ep != 0 || t % e.esp != 0 {
            return Err(TopologyError::Config(format!(
                "EP = {} must divide d = {d} and ESP = {} must divide t = {t}",
                e.ep, e.esp
            )));
        }
        if (model.layers / p) % e.moe_every != 0 {
            return Err(TopologyError::Config(format!(
                "the MoE frequency {} must divide the layers per stage {}",
                e.moe_every,
                model.layers / p
            )));
        }
        Ok(())
    }
}

/// Product of counts, or an overflow error.
pub(crate) fn product(values: &[usize]) -> Result<usize, TopologyError> {
    values
        .iter()
        .try_fold(1usize, |acc, &v| acc.checked_mul(v))
        .ok_or(TopologyError::Overflow {
            what: "parallel degree",
        })
}
