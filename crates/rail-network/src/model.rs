//! GPT models: hyperparameters, the paper's presets, parameter counts and FLOPs.
//!
//! FLOP formulas follow Narayanan et al. 2021 (Megatron-LM, §5.1) and Korthikanti et al. 2022
//! (§6 and Appendix): per iteration of `B` sequences of length `s` through `l` layers of hidden
//! size `h` and a vocabulary of `V`,
//!
//! * model FLOPs `72 B s l h^2 (1 + s/(6h) + V/(12 h l))` (forward and backward, no recompute);
//! * hardware FLOPs with selective recomputation `72 B s l h^2 (1 + s/(3h) + V/(12 h l))`
//!   (Korthikanti et al.; it reproduces their published HFU / MFU ratios);
//! * hardware FLOPs with full recomputation `96 B s l h^2 (1 + s/(6h) + V/(16 l h))`
//!   (Narayanan et al. Eq. 3).
//!
//! [`flop_split`] divides the hardware FLOPs into feed-forward GEMMs (MLP and logits) and the
//! attention block (QKV and output projections plus the `s^2` score terms), the `M_FF` and
//! `M_Attn` of the rail-only paper's Appendix B.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use comm_cost_model::units::Flop;
use comm_cost_model::{check_count_u64, check_divides, check_finite_result};

/// A GPT-style decoder: the hyperparameters every formula needs.
///
/// Deserializing runs [`GptModel::validate`], so a parsed model is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "GptModelFields")]
pub struct GptModel {
    /// Attention heads `a`.
    pub heads: u64,
    /// Hidden size `h`.
    pub hidden: u64,
    /// Transformer layers `l`.
    pub layers: u64,
    /// Sequence length `s`.
    pub seq_len: u64,
    /// Vocabulary size `V`.
    pub vocab: u64,
}

/// The serialized form of [`GptModel`], validated on the way in.
#[derive(Deserialize)]
struct GptModelFields {
    heads: u64,
    hidden: u64,
    layers: u64,
    seq_len: u64,
    vocab: u64,
}

impl TryFrom<GptModelFields> for GptModel {
    type Error = RailNetworkError;

    fn try_from(f: GptModelFields) -> Result<Self, Self::Error> {
        let model = Self {
            heads: f.heads,
            hidden: f.hidden,
            layers: f.layers,
            seq_len: f.seq_len,
            vocab: f.vocab,
        };
        model.validate()?;
        Ok(model)
    }
}

/// How activations are recomputed in the backward pass.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Recompute {
    /// Store everything.
    None,
    /// Recompute only the attention core (Korthikanti et al. §5).
    #[default]
    Selective,
    /// Recompute every layer from its input (Megatron-LM, Narayanan et al.).
    Full,
}

/// Hardware FLOPs of one iteration, split as the rail-only paper's Appendix B needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlopSplit {
    /// MLP GEMMs and the logit layer (`M_FF`), FLOP.
    pub feed_forward_flop: Flop,
    /// QKV and output projections (GEMMs inside the attention block), FLOP.
    pub attention_projection_flop: Flop,
    /// The `s^2` terms: scores, softmax and attention over values, FLOP.
    pub attention_score_flop: Flop,
}

impl FlopSplit {
    /// All hardware FLOPs.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`NonFinite`) when the sum is not finite (a split built by
    /// hand with parts near `f64::MAX`; [`flop_split`] never returns one).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::model::FlopSplit;
    /// let f = FlopSplit { feed_forward_flop: 2.0, attention_projection_flop: 1.0, attention_score_flop: 0.5 };
    /// assert_eq!(f.total_flop()?, 3.5);
    /// assert!(FlopSplit { feed_forward_flop: f64::MAX, ..f }.total_flop().is_ok());
    /// assert!(FlopSplit { feed_forward_flop: f64::MAX, attention_projection_flop: f64::MAX, ..f }.total_flop().is_err());
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn total_flop(&self) -> Result<Flop, RailNetworkError> {
        let total =
            self.feed_forward_flop + self.attention_projection_flop + self.attention_score_flop;
        Ok(check_finite_result("hardware FLOPs", total)?)
    }
}

/// Names of the model presets, in the order of [`model_preset`]'s table.
pub const MODEL_PRESET_NAMES: [&str; 8] = [
    "gpt-22b",
    "gpt-175b",
    "gpt-530b",
    "gpt-1t",
    "gpt-145.6b",
    "gpt-310.1b",
    "gpt-529.6b",
    "gpt-1008b",
];

const fn gpt(heads: u64, hidden: u64, layers: u64) -> GptModel {
    // Every model of both sources uses s = 2048 and V = 51200.
    GptModel {
        heads,
        hidden,
        layers,
        seq_len: 2048,
        vocab: 51200,
    }
}

/// A preset by name: GPT-22B/175B/530B/1T of Korthikanti et al. 2022 Table 3 (the rail-only
/// paper's Table 4 / Appendix E) and GPT-145.6B/310.1B/529.6B/1008B of Narayanan et al. 2021
/// Table 1. All use `s = 2048`, `V = 51200`.
///
/// # Errors
///
/// [`RailNetworkError::UnknownPreset`] listing the valid names.
///
/// # Examples
///
/// ```
/// use rail_network::model::model_preset;
/// let m = model_preset("gpt-1t")?;
/// assert_eq!((m.heads, m.hidden, m.layers), (160, 25600, 128));
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn model_preset(name: &str) -> Result<GptModel, RailNetworkError> {
    let table = [
        gpt(64, 6144, 48),
        gpt(96, 12288, 96),
        gpt(128, 20480, 105),
        gpt(160, 25600, 128),
        gpt(96, 12288, 80),
        gpt(128, 16384, 96),
        gpt(128, 20480, 105),
        gpt(160, 25600, 128),
    ];
    let key = name.to_ascii_lowercase();
    MODEL_PRESET_NAMES
        .iter()
        .position(|n| *n == key)
        .map(|i| table[i])
        .ok_or_else(|| RailNetworkError::UnknownPreset {
            kind: "model",
            name: name.to_string(),
            known: MODEL_PRESET_NAMES.join(", "),
        })
}

impl GptModel {
    /// Checks that every count is positive and the heads divide the hidden size.
    ///
    /// # Errors
    ///
    /// [`RailNetworkError::Input`] (`CountTooSmall` or `NotDivisible`).
    pub fn validate(&self) -> Result<(), RailNetworkError> {
        check_count_u64("attention heads", self.heads, 1)?;
        check_count_u64("hidden size", self.hidden, 1)?;
        check_count_u64("layers", self.layers, 1)?;
        check_count_u64("sequence length", self.seq_len, 1)?;
        check_count_u64("vocabulary size", self.vocab, 1)?;
        check_divides(
            "attention heads must divide the hidden size",
            self.hidden,
            self.heads,
        )?;
        Ok(())
    }

    /// Parameters of one transformer layer, `S_T = 12 h^2 + 13 h`.
    ///
    /// Always finite: `h < 2^64` bounds it below `2^132`.
    #[must_use]
    pub fn params_per_layer(&self) -> f64 {
        let h = self.hidden as f64;
        12.0 * h * h + 13.0 * h
    }

    /// All parameters, `l S_T + (V + s) h` (Narayanan et al. §5.1).
    ///
    /// Always finite: counts below `2^64` bound it below `2^197`.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::model::model_preset;
    /// let p = model_preset("gpt-1008b")?.parameters();
    /// assert!((p / 1e9 - 1008.0).abs() < 1.0);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    #[must_use]
    pub fn parameters(&self) -> f64 {
        let (h, s, v) = (self.hidden as f64, self.seq_len as f64, self.vocab as f64);
        self.layers as f64 * self.params_per_layer() + (v + s) * h
    }

    /// `B s l h^2`, the unit every FLOP formula scales.
    fn unit(&self, batch: f64) -> f64 {
        let h = self.hidden as f64;
        batch * self.seq_len as f64 * self.layers as f64 * h * h
    }
}

/// Model FLOPs of one iteration of `batch` sequences, `72 B s l h^2 (1 + s/(6h) + V/(12hl))`
/// (Korthikanti et al. 2022 §6; the numerator of MFU).
///
/// # Errors
///
/// An invalid model, or a non-finite or negative batch; [`RailNetworkError::Input`]
/// (`NonFinite`) when the FLOPs overflow `f64` (a batch near `f64::MAX`, or a huge batch of a
/// huge model).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::model::{model_flops, model_preset};
/// let m = model_preset("gpt-22b")?;
/// // 72 * 4 * 2048 * 48 * 6144^2 * (1 + 2048/36864 + 51200/3538944)
/// let expected = 72.0 * 4.0 * 2048.0 * 48.0 * 6144f64.powi(2)
///     * (1.0 + 2048.0 / 36864.0 + 51200.0 / 3538944.0);
/// assert!((model_flops(&m, 4.0)? / expected - 1.0).abs() < 1e-12);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn model_flops(model: &GptModel, batch: f64) -> Result<Flop, RailNetworkError> {
    model.validate()?;
    comm_cost_model::check_non_negative("batch (sequences)", batch)?;
    let (h, s, l, v) = dims(model);
    let flop = 72.0 * model.unit(batch) * (1.0 + s / (6.0 * h) + v / (12.0 * h * l));
    Ok(check_finite_result("model FLOPs", flop)?)
}

/// Hardware FLOPs of one iteration under `recompute` (the numerator of HFU): see the module
/// documentation for the three formulas and their sources.
///
/// # Errors
///
/// As [`model_flops`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::model::{hardware_flops, model_flops, model_preset, Recompute};
/// let m = model_preset("gpt-175b")?;
/// // Korthikanti et al. Table 5 reports MFU 51.4% and HFU 52.8% for this model: ratio 1.027.
/// let ratio = hardware_flops(&m, 64.0, Recompute::Selective)? / model_flops(&m, 64.0)?;
/// assert!((ratio - 52.8 / 51.4).abs() < 0.002);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn hardware_flops(
    model: &GptModel,
    batch: f64,
    recompute: Recompute,
) -> Result<Flop, RailNetworkError> {
    flop_split(model, batch, recompute)?.total_flop()
}

fn dims(model: &GptModel) -> (f64, f64, f64, f64) {
    (
        model.hidden as f64,
        model.seq_len as f64,
        model.layers as f64,
        model.vocab as f64,
    )
}

/// Hardware FLOPs of one iteration split into feed-forward GEMMs, attention projections and
/// attention scores (the `M_FF` / `M_Attn` of Appendix B, Eq. 10).
///
/// Per layer the forward pass runs `24 B s h^2` GEMM FLOPs (a third in the attention
/// projections) and `4 B s^2 h` score FLOPs; training triples the GEMMs (quadruples them under
/// full recomputation) and the score terms carry the multiplier that makes the totals equal the
/// module-level formulas. The logit layer (`6 B s h V`) is never recomputed.
///
/// # Errors
///
/// As [`model_flops`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::model::{flop_split, model_preset, Recompute};
/// let m = model_preset("gpt-1t")?;
/// let f = flop_split(&m, 1.0, Recompute::Selective)?;
/// assert!((f.attention_projection_flop * 2.0 - (f.feed_forward_flop - 6.0 * 2048.0 * 25600.0 * 51200.0)).abs() < 1e3);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn flop_split(
    model: &GptModel,
    batch: f64,
    recompute: Recompute,
) -> Result<FlopSplit, RailNetworkError> {
    model.validate()?;
    comm_cost_model::check_non_negative("batch (sequences)", batch)?;
    let (h, s, _, v) = dims(model);
    let u = model.unit(batch);
    let (gemm, score) = match recompute {
        Recompute::None => (72.0, 72.0 / 6.0),
        Recompute::Selective => (72.0, 72.0 / 3.0),
        Recompute::Full => (96.0, 96.0 / 6.0),
    };
    let logits = 6.0 * batch * s * h * v;
    let split = FlopSplit {
        feed_forward_flop: gemm * u * 2.0 / 3.0 + logits,
        attention_projection_flop: gemm * u / 3.0,
        attention_score_flop: score * u * s / h,
    };
    // The parts are non-negative: a finite total means finite parts.
    split.total_flop()?;
    Ok(split)
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::InputError;

    #[test]
    fn presets_have_the_published_sizes() {
        // Parameter counts of Narayanan et al. Table 1 (billions).
        for (name, billions) in [
            ("gpt-145.6b", 145.6),
            ("gpt-310.1b", 310.1),
            ("gpt-529.6b", 529.6),
            ("gpt-1008b", 1008.0),
        ] {
            let p = model_preset(name).unwrap().parameters() / 1e9;
            assert!((p - billions).abs() / billions < 0.002, "{name}: {p}");
        }
        // The Korthikanti models are named by rounded size.
        let p = model_preset("gpt-175b").unwrap().parameters() / 1e9;
        assert!((p - 175.0).abs() < 3.0, "{p}");
        assert!(model_preset("gpt-2").is_err());
    }

    #[test]
    fn hardware_over_model_flops_matches_korthikanti_table5() {
        // HFU / MFU published in Korthikanti et al. Table 5: 43.7/41.5, 52.8/51.4, 57.0/56.0,
        // 57.0/56.3 for 22B, 175B, 530B, 1T (batch cancels).
        for (name, hfu, mfu) in [
            ("gpt-22b", 43.7, 41.5),
            ("gpt-175b", 52.8, 51.4),
            ("gpt-530b", 57.0, 56.0),
            ("gpt-1t", 57.0, 56.3),
        ] {
            let m = model_preset(name).unwrap();
            let ratio = hardware_flops(&m, 1.0, Recompute::Selective).unwrap()
                / model_flops(&m, 1.0).unwrap();
            assert!((ratio - hfu / mfu).abs() < 0.004, "{name}: {ratio}");
        }
    }

    #[test]
    fn full_recompute_is_narayanan_eq3() {
        let m = model_preset("gpt-145.6b").unwrap();
        let (b, s, l, h, v) = (2304.0, 2048.0, 80.0, 12288.0, 51200.0);
        let eq3 = 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
        let ours = hardware_flops(&m, b, Recompute::Full).unwrap();
        assert!((ours / eq3 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn rejects_bad_models() {
        let mut m = model_preset("gpt-22b").unwrap();
        m.heads = 7;
        assert!(matches!(
            m.validate(),
            Err(RailNetworkError::Input(InputError::NotDivisible { .. }))
        ));
        m.heads = 0;
        assert!(matches!(
            m.validate(),
            Err(RailNetworkError::Input(InputError::CountTooSmall { .. }))
        ));
        assert!(model_flops(&model_preset("gpt-22b").unwrap(), f64::NAN).is_err());
    }
}
