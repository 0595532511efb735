//! Memory per GPU of a PTD-P job (Korthikanti et al. 2022 §4, Table 2; Megatron-LM optimizer).
//!
//! * Weights, gradients and optimizer state: `bytes_per_param` bytes for each parameter held by
//!   the first pipeline stage (its `l/p` layers and the `V h` embedding), divided by `t`. The
//!   default 18 bytes is Megatron-LM's mixed-precision Adam without a distributed optimizer:
//!   2 (half weights) + 4 (fp32 gradients) + 4 (fp32 master weights) + 8 (two Adam moments).
//! * Activations per layer and micro-batch with tensor + sequence parallelism (Korthikanti
//!   Table 2): `s b h (34 + 5 a s / h) / t` with no recomputation, `34 s b h / t` with selective
//!   recomputation, `2 s b h / t` (the layer input) with full recomputation.
//! * The first stage keeps `min(p, m)` micro-batches in flight for its `l/p` layers, times
//!   `1 + (p - 1)/(p v)` under the interleaved schedule (Korthikanti §4.2.3).
//!
//! The embedding-dropout and logit-layer activation terms (under 2% for the paper's models) are
//! left out.

use serde::{Deserialize, Serialize};

use crate::error::RailNetworkError;
use crate::model::{GptModel, Recompute};
use crate::parallel::Parallelization;
use comm_cost_model::units::Bytes;
use comm_cost_model::{check_count_u64, check_finite_result, check_positive};

/// Memory of the fullest GPU (the first pipeline stage).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryBreakdown {
    /// Weights, gradients and optimizer state, bytes.
    pub weights_and_optimizer_bytes: Bytes,
    /// Stored activations, bytes.
    pub activation_bytes: Bytes,
    /// The sum, bytes.
    pub total_bytes: Bytes,
}

/// Activation bytes of one layer for one micro-batch of `b` sequences under `recompute`,
/// with `t`-way tensor and sequence parallelism (Korthikanti et al. Table 2).
///
/// # Errors
///
/// An invalid model, or a zero `b` or `t` ([`RailNetworkError::Input`], `CountTooSmall`).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::memory::layer_activation_bytes;
/// use rail_network::model::{model_preset, Recompute};
/// let m = model_preset("gpt-22b")?;
/// // 34 s b h / t = 34 * 2048 * 1 * 6144 / 8 bytes
/// let bytes = layer_activation_bytes(&m, 1, 8, Recompute::Selective)?;
/// assert_eq!(bytes, 34.0 * 2048.0 * 6144.0 / 8.0);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn layer_activation_bytes(
    model: &GptModel,
    b: u64,
    t: u64,
    recompute: Recompute,
) -> Result<Bytes, RailNetworkError> {
    model.validate()?;
    check_count_u64("micro-batch size b", b, 1)?;
    check_count_u64("tensor parallel degree t", t, 1)?;
    let (s, h, a) = (
        model.seq_len as f64,
        model.hidden as f64,
        model.heads as f64,
    );
    let sbh = s * b as f64 * h;
    let per = match recompute {
        Recompute::None => sbh * (34.0 + 5.0 * a * s / h),
        Recompute::Selective => 34.0 * sbh,
        Recompute::Full => 2.0 * sbh,
    };
    // Counts below 2^64 keep this below 2^200; checked all the same.
    Ok(check_finite_result(
        "activation bytes of a layer",
        per / t as f64,
    )?)
}

/// Memory of the first pipeline stage's GPUs (the fullest) for `par` (Appendix C, Eq. 19).
///
/// Only the degrees and batch sizes of `par` are checked here (all at least 1); the
/// constraints of Eq. 11–18 are the caller's ([`Parallelization::validate`]).
///
/// # Errors
///
/// An invalid model, a zero degree, micro-batch, global batch or interleaving, or bytes per
/// parameter that are not positive and finite ([`RailNetworkError::Input`]);
/// (`NonFinite`) when the memory overflows `f64` (e.g. 1e308 bytes per parameter).
///
/// # Complexity
///
/// `O(1)` time, no allocation.
///
/// # Examples
///
/// ```
/// use rail_network::memory::memory_per_gpu;
/// use rail_network::model::{model_preset, Recompute};
/// use rail_network::parallel::Parallelization;
/// let m = model_preset("gpt-1t")?;
/// let par = Parallelization::with_default_mapping(8, 64, 1, 1, 512, 1, 8)?;
/// let mem = memory_per_gpu(&m, &par, Recompute::Selective, 18.0)?;
/// assert!(mem.total_bytes < 80e9); // fits an 80 GB A100, as Korthikanti et al. ran it
/// assert!(memory_per_gpu(&m, &par, Recompute::Selective, 1e308).is_err());
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn memory_per_gpu(
    model: &GptModel,
    par: &Parallelization,
    recompute: Recompute,
    bytes_per_param: f64,
) -> Result<MemoryBreakdown, RailNetworkError> {
    check_positive("bytes per parameter", bytes_per_param)?;
    par.check_counts()?;
    let (p, t, v) = (par.pp as f64, par.tp as f64, par.interleave as f64);
    let l = model.layers as f64;
    // In floating point: the integer product of two input sizes can wrap (issue 13).
    let embedding = model.vocab as f64 * model.hidden as f64;
    let params = ((l / p) * model.params_per_layer() + embedding) / t;
    let weights = params * bytes_per_param;
    let in_flight = (par.pp.min(par.micro_batches().max(1))) as f64;
    let interleave = if par.interleave > 1 {
        1.0 + (p - 1.0) / (p * v)
    } else {
        1.0
    };
    let per_layer = layer_activation_bytes(model, par.micro_batch, par.tp, recompute)?;
    let activation = per_layer * (l / p) * in_flight * interleave;
    // Both parts are non-negative: a finite total means finite parts.
    let total_bytes = check_finite_result("memory per GPU (bytes)", weights + activation)?;
    Ok(MemoryBreakdown {
        weights_and_optimizer_bytes: weights,
        activation_bytes: activation,
        total_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::model_preset;

    #[test]
    fn korthikanti_table2_per_layer_formulas() {
        // GPT-22B, b = 1, t = 8: no recompute adds 5 a s / h = 5*64*2048/6144 = 106.67.
        let m = model_preset("gpt-22b").unwrap();
        let sbh = 2048.0 * 6144.0;
        let none = layer_activation_bytes(&m, 1, 8, Recompute::None).unwrap();
        assert!((none - sbh * (34.0 + 5.0 * 64.0 * 2048.0 / 6144.0) / 8.0).abs() < 1.0);
        assert_eq!(
            layer_activation_bytes(&m, 1, 8, Recompute::Full).unwrap(),
            2.0 * sbh / 8.0
        );
    }

    #[test]
    fn the_published_table4_runs_fit_in_80_gb() {
        // Korthikanti et al. ran every Table 4 configuration on 80 GB A100s.
        for (name, t, p, b, big_b, v) in [
            ("gpt-22b", 8, 1, 4, 4, 1),
            ("gpt-175b", 8, 8, 1, 64, 3),
            ("gpt-530b", 8, 35, 1, 280, 3),
            ("gpt-1t", 8, 64, 1, 512, 1),
        ] {
            let m = model_preset(name).unwrap();
            let par = Parallelization::with_default_mapping(t, p, 1, b, big_b, v, 8).unwrap();
            let mem = memory_per_gpu(&m, &par, Recompute::Selective, 18.0).unwrap();
            assert!(mem.total_bytes < 80e9, "{name}: {}", mem.total_bytes);
            assert!(mem.total_bytes > 40e9, "{name}: {}", mem.total_bytes);
        }
    }

    #[test]
    fn gpt_1t_by_hand() {
        // Weights: (2 * (12 h^2 + 13 h) + V h) / 8 params * 18 bytes; activations:
        // 34 s h / 8 bytes per layer * 2 layers * 64 micro-batches in flight.
        let m = model_preset("gpt-1t").unwrap();
        let par = Parallelization::with_default_mapping(8, 64, 1, 1, 512, 1, 8).unwrap();
        let mem = memory_per_gpu(&m, &par, Recompute::Selective, 18.0).unwrap();
        let h = 25600.0;
        let w = (2.0 * (12.0 * h * h + 13.0 * h) + 51200.0 * h) / 8.0 * 18.0;
        let a = 34.0 * 2048.0 * h / 8.0 * 128.0;
        assert!((mem.weights_and_optimizer_bytes - w).abs() < 1.0);
        assert!((mem.activation_bytes - a).abs() < 1.0);
    }
}
