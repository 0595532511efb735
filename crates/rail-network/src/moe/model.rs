//! MoE (and dense) decoder descriptions: hyperparameters, parameter counts and FLOPs per token
//! by component.
//!
//! Conventions (stated once, used everywhere in [`crate::moe`]):
//!
//! * a GEMM of an `m x k` by `k x n` matrix costs `2 m k n` FLOP; the backward pass costs twice
//!   the forward (so training costs `3x` the forward FLOPs, `4x` under full recomputation);
//! * attention scores count the full `s x s` product (`4 s d` FLOP per token and head pair of
//!   QK and AV), the convention of Megatron-LM's MFU formula (Narayanan et al. 2021 §5.1), so our
//!   model TFLOP/s compare with Megatron- and NeMo-reported numbers;
//! * the gated FFN (`SwiGLU`) has three `h x f` matrices, a plain FFN two;
//! * norms, biases and the router's softmax are counted in parameters (norms and router weights)
//!   but their FLOPs beyond the router GEMM are left out (under 0.1%).

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use comm_cost_model::units::Flop;
use comm_cost_model::{InputError, check_count_u64, check_divides, check_finite_result};

/// The attention block of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Attention {
    /// Multi-head or grouped-query attention (GQA): `heads` query heads and `kv_heads` key/value
    /// heads of `head_dim` each.
    Gqa {
        /// Query heads.
        heads: u64,
        /// Key/value heads (equal to `heads` for plain multi-head attention).
        kv_heads: u64,
        /// Dimension of one head.
        head_dim: u64,
    },
    /// Multi-head latent attention (DeepSeek-V2/V3): low-rank query and key/value projections.
    Mla {
        /// Query heads.
        heads: u64,
        /// Rank of the query down-projection (0 = no query compression).
        q_lora_rank: u64,
        /// Rank of the key/value down-projection.
        kv_lora_rank: u64,
        /// Per-head query/key dimension without rotary embedding.
        qk_nope_head_dim: u64,
        /// Per-head query/key dimension with rotary embedding (the key's is shared by heads).
        qk_rope_head_dim: u64,
        /// Per-head value dimension.
        v_head_dim: u64,
    },
}

impl Attention {
    /// Query heads.
    #[must_use]
    pub fn heads(&self) -> u64 {
        match *self {
            Self::Gqa { heads, .. } | Self::Mla { heads, .. } => heads,
        }
    }

    /// Key/value head groups tensor parallelism must divide (the query heads for MLA, whose
    /// up-projected keys and values are per head).
    #[must_use]
    pub fn kv_groups(&self) -> u64 {
        match *self {
            Self::Gqa { kv_heads, .. } => kv_heads,
            Self::Mla { heads, .. } => heads,
        }
    }
}

/// Numeric format of the GEMMs and of the dispatched tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// BF16 GEMMs and all-to-all.
    #[default]
    Bf16,
    /// FP8 GEMMs (twice the BF16 peak) and FP8 dispatch (combine stays BF16), with BF16 master
    /// weights and activations kept as in Megatron-LM's FP8 recipe.
    Fp8,
}

/// A decoder-only transformer with optional Mixture-of-Experts FFN layers.
///
/// A dense model has `experts = 0` (then `top_k`, `expert_ffn` and `shared_ffn` must be 0 and
/// `first_dense_layers` is ignored). Deserializing runs [`MoeModel::validate`] and rejects
/// unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "MoeModelFields")]
pub struct MoeModel {
    /// Transformer layers.
    pub layers: u64,
    /// Hidden size `h`.
    pub hidden: u64,
    /// The attention block.
    pub attention: Attention,
    /// FFN intermediate size of the dense layers.
    pub dense_ffn: u64,
    /// FFN intermediate size of one routed expert.
    pub expert_ffn: u64,
    /// Routed experts per MoE layer `E` (0 = dense model).
    pub experts: u64,
    /// Routed experts per token `k`.
    pub top_k: u64,
    /// Total FFN intermediate size of the shared experts (0 = none).
    pub shared_ffn: u64,
    /// Leading layers that use a dense FFN instead of experts.
    pub first_dense_layers: u64,
    /// Whether the FFNs are gated (`SwiGLU`: three matrices) or plain (two).
    pub gated_ffn: bool,
    /// Vocabulary size `V`.
    pub vocab: u64,
    /// Whether the output layer shares the input embedding.
    pub tied_embeddings: bool,
    /// Training sequence length `s`.
    pub seq_len: u64,
    /// GEMM and dispatch precision.
    pub precision: Precision,
    /// Multi-token-prediction (MTP) modules trained beside the main model (DeepSeek-V3 §2.2:
    /// depth 1). Each is one more transformer block shaped like the last layer (an MoE layer
    /// in an MoE model), a `2h x h` projection with two norms, and one more pass through the
    /// shared output head; the embedding and head are shared with the main model. Their
    /// parameters are reported apart ([`ParameterCounts::mtp`]), since published totals
    /// exclude them; their FLOPs count as training work ([`TokenFlops::mtp_flop`]).
    pub mtp_modules: u64,
}

/// The serialized form of [`MoeModel`], validated on the way in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MoeModelFields {
    layers: u64,
    hidden: u64,
    attention: Attention,
    dense_ffn: u64,
    #[serde(default)]
    expert_ffn: u64,
    #[serde(default)]
    experts: u64,
    #[serde(default)]
    top_k: u64,
    #[serde(default)]
    shared_ffn: u64,
    #[serde(default)]
    first_dense_layers: u64,
    gated_ffn: bool,
    vocab: u64,
    tied_embeddings: bool,
    seq_len: u64,
    #[serde(default)]
    precision: Precision,
    #[serde(default)]
    mtp_modules: u64,
}

impl TryFrom<MoeModelFields> for MoeModel {
    type Error = RailNetworkError;

    fn try_from(f: MoeModelFields) -> Result<Self, Self::Error> {
        let m = Self {
            layers: f.layers,
            hidden: f.hidden,
            attention: f.attention,
            dense_ffn: f.dense_ffn,
            expert_ffn: f.expert_ffn,
            experts: f.experts,
            top_k: f.top_k,
            shared_ffn: f.shared_ffn,
            first_dense_layers: f.first_dense_layers,
            gated_ffn: f.gated_ffn,
            vocab: f.vocab,
            tied_embeddings: f.tied_embeddings,
            seq_len: f.seq_len,
            precision: f.precision,
            mtp_modules: f.mtp_modules,
        };
        m.validate()?;
        Ok(m)
    }
}

/// Parameters of a model by component (counts, as `f64`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ParameterCounts {
    /// Input embedding (and the output layer when tied).
    pub embedding: f64,
    /// Output layer when untied (0 when tied).
    pub output: f64,
    /// Attention blocks of all layers, with their norms.
    pub attention: f64,
    /// Dense FFNs of the dense layers, with their norms.
    pub dense_ffn: f64,
    /// Routers of the MoE layers.
    pub router: f64,
    /// Shared experts of the MoE layers, with the MoE layers' norms.
    pub shared_experts: f64,
    /// Routed experts of all MoE layers.
    pub routed_experts: f64,
    /// Everything.
    pub total: f64,
    /// Parameters one token uses: all but the routed experts it is not sent to.
    pub active: f64,
    /// `active` without the input embedding (a table lookup, no arithmetic): the convention
    /// of DeepSeek's activated counts (DeepSeek-V3 `README_WEIGHTS.md`: 36.6B for the main
    /// model, its 0.9B output head included).
    pub active_without_embedding: f64,
    /// The MTP modules' own parameters (their blocks, projections and norms; the shared
    /// embedding and head are not counted again), not part of `total` or `active`.
    pub mtp: f64,
}

/// Forward FLOPs of one token by component (multiply by 3 for training, 4 with full
/// recomputation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TokenFlops {
    /// QKV (or MLA down/up) and output projections, all layers.
    pub attention_projection_flop: Flop,
    /// Attention scores and attention over values (full `s x s`), all layers.
    pub attention_score_flop: Flop,
    /// Dense FFNs of the dense layers.
    pub dense_ffn_flop: Flop,
    /// Router GEMMs.
    pub router_flop: Flop,
    /// Shared experts.
    pub shared_expert_flop: Flop,
    /// The `k` routed experts a token visits in every MoE layer.
    pub routed_expert_flop: Flop,
    /// Output (logit) layer.
    pub logits_flop: Flop,
    /// The MTP modules: their blocks (scores included), projections and output-head passes.
    pub mtp_flop: Flop,
    /// The sum.
    pub total_flop: Flop,
}

impl MoeModel {
    /// Checks every count and the relations between them.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] naming the field: `CountTooSmall` for a zero layer count,
    /// hidden size, head count, head dimension, FFN size, vocabulary or sequence length;
    /// `SizeMismatch` when `top_k` exceeds the experts, when a dense model sets MoE fields, or
    /// when `first_dense_layers` reaches `layers`; `NotDivisible` when key/value heads do not
    /// divide the query heads; `TooLarge` for counts above `2^32` (sizes whose products could
    /// overflow).
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_count_u64("layers", self.layers, 1)?;
        check_count_u64("hidden size", self.hidden, 1)?;
        check_count_u64("vocabulary size", self.vocab, 1)?;
        check_count_u64("sequence length", self.seq_len, 1)?;
        for (what, v) in [
            ("layers", self.layers),
            ("hidden size", self.hidden),
            ("vocabulary size", self.vocab),
            ("sequence length", self.seq_len),
            ("dense FFN size", self.dense_ffn),
            ("expert FFN size", self.expert_ffn),
            ("experts", self.experts),
            ("shared expert FFN size", self.shared_ffn),
            ("mtp_modules", self.mtp_modules),
        ] {
            if v > LIMIT {
                return Err(too_large(what, v));
            }
        }
        match self.attention {
            Attention::Gqa {
                heads,
                kv_heads,
                head_dim,
            } => {
                check_count_u64("attention heads", heads, 1)?;
                check_count_u64("key/value heads", kv_heads, 1)?;
                check_count_u64("head dimension", head_dim, 1)?;
                check_divides(
                    "key/value heads must divide the attention heads",
                    heads,
                    kv_heads,
                )?;
                for (what, v) in [("attention heads", heads), ("head dimension", head_dim)] {
                    if v > LIMIT {
                        return Err(too_large(what, v));
                    }
                }
            }
            Attention::Mla {
                heads,
                q_lora_rank,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
            } => {
                check_count_u64("attention heads", heads, 1)?;
                check_count_u64("MLA kv_lora_rank", kv_lora_rank, 1)?;
                check_count_u64("MLA qk_nope_head_dim", qk_nope_head_dim, 1)?;
                check_count_u64("MLA v_head_dim", v_head_dim, 1)?;
                for (what, v) in [
                    ("attention heads", heads),
                    ("MLA q_lora_rank", q_lora_rank),
                    ("MLA kv_lora_rank", kv_lora_rank),
                    ("MLA qk_nope_head_dim", qk_nope_head_dim),
                    ("MLA qk_rope_head_dim", qk_rope_head_dim),
                    ("MLA v_head_dim", v_head_dim),
                ] {
                    if v > LIMIT {
                        return Err(too_large(what, v));
                    }
                }
            }
        }
        if self.experts == 0 {
            for (what, v) in [
                ("top_k of a dense model (experts = 0)", self.top_k),
                ("expert_ffn of a dense model (experts = 0)", self.expert_ffn),
                ("shared_ffn of a dense model (experts = 0)", self.shared_ffn),
            ] {
                if v != 0 {
                    return Err(InputError::SizeMismatch {
                        what,
                        expected: 0,
                        actual: v,
                    }
                    .into());
                }
            }
            check_count_u64("dense FFN size", self.dense_ffn, 1)?;
        } else {
            check_count_u64("top_k", self.top_k, 1)?;
            check_count_u64("expert FFN size", self.expert_ffn, 1)?;
            if self.top_k > self.experts {
                return Err(InputError::SizeMismatch {
                    what: "top_k must be at most the experts",
                    expected: self.experts,
                    actual: self.top_k,
                }
                .into());
            }
            if self.first_dense_layers >= self.layers {
                return Err(InputError::SizeMismatch {
                    what: "first_dense_layers must be below the layer count",
                    expected: self.layers - 1,
                    actual: self.first_dense_layers,
                }
                .into());
            }
            if self.first_dense_layers > 0 {
                check_count_u64("dense FFN size", self.dense_ffn, 1)?;
            }
        }
        Ok(())
    }

    /// Whether the model has routed experts.
    #[must_use]
    pub fn is_moe(&self) -> bool {
        self.experts > 0
    }

    /// Layers with routed experts.
    #[must_use]
    pub fn moe_layers(&self) -> u64 {
        if self.is_moe() {
            self.layers.saturating_sub(self.first_dense_layers)
        } else {
            0
        }
    }

    /// Layers with a dense FFN.
    #[must_use]
    pub fn dense_layers(&self) -> u64 {
        self.layers - self.moe_layers()
    }

    /// FFN matrices: 3 when gated, 2 otherwise.
    pub(crate) fn ffn_matrices(&self) -> f64 {
        if self.gated_ffn { 3.0 } else { 2.0 }
    }

    /// Attention weights of one layer (projections only).
    pub(crate) fn attention_weights_per_layer(&self) -> f64 {
        let h = self.hidden as f64;
        match self.attention {
            Attention::Gqa {
                heads,
                kv_heads,
                head_dim,
            } => {
                let (q, kv) = ((heads * head_dim) as f64, (kv_heads * head_dim) as f64);
                h * q + 2.0 * h * kv + q * h
            }
            Attention::Mla {
                heads,
                q_lora_rank,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
            } => {
                let n = heads as f64;
                let qk = (qk_nope_head_dim + qk_rope_head_dim) as f64;
                let (qr, kvr) = (q_lora_rank as f64, kv_lora_rank as f64);
                let q = if q_lora_rank == 0 {
                    h * n * qk
                } else {
                    h * qr + qr + qr * n * qk
                };
                let kv_down = h * (kvr + qk_rope_head_dim as f64) + kvr;
                let kv_up = kvr * n * (qk_nope_head_dim + v_head_dim) as f64;
                let out = n * v_head_dim as f64 * h;
                q + kv_down + kv_up + out
            }
        }
    }

    /// Weights of one routed expert.
    pub(crate) fn expert_weights(&self) -> f64 {
        self.ffn_matrices() * self.hidden as f64 * self.expert_ffn as f64
    }

    /// `(all, active)` weights of one block shaped like the last layer (norms included): an
    /// MoE layer in an MoE model, a dense layer otherwise.
    fn last_block_weights(&self) -> (f64, f64) {
        let h = self.hidden as f64;
        let attention = self.attention_weights_per_layer() + h;
        let m = self.ffn_matrices();
        if self.is_moe() {
            let dense = m * h * self.shared_ffn as f64 + h * self.experts as f64 + h;
            (
                attention + dense + self.experts as f64 * self.expert_weights(),
                attention + dense + self.top_k as f64 * self.expert_weights(),
            )
        } else {
            let w = attention + m * h * self.dense_ffn as f64 + h;
            (w, w)
        }
    }

    /// Attention-score FLOPs of one token in one layer (forward, full `s x s`).
    fn score_flop_per_layer(&self) -> f64 {
        let s = self.seq_len as f64;
        match self.attention {
            Attention::Gqa {
                heads, head_dim, ..
            } => 4.0 * s * (heads * head_dim) as f64,
            Attention::Mla {
                heads,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
                ..
            } => 2.0 * s * heads as f64 * (qk_nope_head_dim + qk_rope_head_dim + v_head_dim) as f64,
        }
    }

    /// Parameters by component, total and active.
    ///
    /// Always finite: [`MoeModel::validate`] bounds every size by `2^32`.
    ///
    /// # Errors
    ///
    /// An invalid model (see [`MoeModel::validate`]).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::moe::moe_model_preset;
    /// let p = moe_model_preset("mixtral-8x7b")?.parameters()?;
    /// assert!((p.total / 46.7e9 - 1.0).abs() < 0.01);
    /// assert!((p.active / 12.9e9 - 1.0).abs() < 0.01);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn parameters(&self) -> Result<ParameterCounts, RailNetworkError> {
        self.validate()?;
        let h = self.hidden as f64;
        let (l, moe) = (self.layers as f64, self.moe_layers() as f64);
        let dense_layers = l - moe;
        let norm = h; // one RMSNorm / LayerNorm gain per block
        let embedding = self.vocab as f64 * h;
        let output = if self.tied_embeddings { 0.0 } else { embedding } + norm;
        let attention = l * (self.attention_weights_per_layer() + norm);
        let m = self.ffn_matrices();
        let dense_ffn = dense_layers * (m * h * self.dense_ffn as f64 + norm);
        let router = moe * h * self.experts as f64;
        let shared_experts = moe * (m * h * self.shared_ffn as f64 + norm);
        let routed_experts = moe * self.experts as f64 * self.expert_weights();
        let total =
            embedding + output + attention + dense_ffn + router + shared_experts + routed_experts;
        let active = total - moe * (self.experts - self.top_k) as f64 * self.expert_weights();
        let total = check_finite_result("parameters", total)?;
        // One MTP module: a block like the last layer, a 2h x h projection and two norms.
        let (block, _) = self.last_block_weights();
        let mtp = self.mtp_modules as f64 * (block + 2.0 * h * h + 2.0 * norm);
        Ok(ParameterCounts {
            embedding,
            output,
            attention,
            dense_ffn,
            router,
            shared_experts,
            routed_experts,
            total,
            active,
            active_without_embedding: active - embedding,
            mtp,
        })
    }

    /// Forward FLOPs of one token by component (see the module conventions).
    ///
    /// # Errors
    ///
    /// An invalid model (see [`MoeModel::validate`]).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::moe::moe_model_preset;
    /// let m = moe_model_preset("deepseek-v3")?;
    /// let f = m.token_flops()?;
    /// // Linear layers of the main model cost 2 FLOP per active weight (the input embedding
    /// // is a lookup); the MTP module (depth 1) is counted apart.
    /// let p = m.parameters()?;
    /// let linear = f.total_flop - f.attention_score_flop - f.mtp_flop;
    /// assert!((linear / (2.0 * p.active_without_embedding) - 1.0).abs() < 0.01);
    /// assert!(f.mtp_flop > f.logits_flop);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn token_flops(&self) -> Result<TokenFlops, RailNetworkError> {
        self.validate()?;
        let h = self.hidden as f64;
        let (l, moe) = (self.layers as f64, self.moe_layers() as f64);
        let m = self.ffn_matrices();
        let attention_projection_flop = 2.0 * l * self.attention_weights_per_layer();
        let attention_score_flop = l * self.score_flop_per_layer();
        let dense_ffn_flop = 2.0 * (l - moe) * m * h * self.dense_ffn as f64;
        let router_flop = 2.0 * moe * h * self.experts as f64;
        let shared_expert_flop = 2.0 * moe * m * h * self.shared_ffn as f64;
        let routed_expert_flop = 2.0 * moe * self.top_k as f64 * self.expert_weights();
        let logits_flop = 2.0 * h * self.vocab as f64;
        let (_, block_active) = self.last_block_weights();
        let mtp_flop = self.mtp_modules as f64
            * (2.0 * block_active + self.score_flop_per_layer() + 2.0 * 2.0 * h * h + logits_flop);
        let total_flop = attention_projection_flop
            + attention_score_flop
            + dense_ffn_flop
            + router_flop
            + shared_expert_flop
            + routed_expert_flop
            + logits_flop
            + mtp_flop;
        Ok(TokenFlops {
            attention_projection_flop,
            attention_score_flop,
            dense_ffn_flop,
            router_flop,
            shared_expert_flop,
            routed_expert_flop,
            logits_flop,
            mtp_flop,
            total_flop: check_finite_result("FLOPs per token", total_flop)?,
        })
    }

    /// Model FLOPs of training on one token (forward and backward, no recomputation): the
    /// numerator of MFU and of model TFLOP/s.
    ///
    /// # Errors
    ///
    /// An invalid model.
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::moe::moe_model_preset;
    /// let m = moe_model_preset("mixtral-8x7b")?;
    /// assert_eq!(m.training_flop_per_token()?, 3.0 * m.token_flops()?.total_flop);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn training_flop_per_token(&self) -> Result<Flop, RailNetworkError> {
        Ok(3.0 * self.token_flops()?.total_flop)
    }
}

/// The largest size accepted for any count (products of a few stay far below `f64::MAX`).
const LIMIT: u64 = 1 << 32;

fn too_large(what: &'static str, value: u64) -> RailNetworkError {
    InputError::TooLarge {
        what,
        limit: LIMIT,
        value,
    }
    .into()
}
