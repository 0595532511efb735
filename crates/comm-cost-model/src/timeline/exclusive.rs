//! Exclusive MoE-layer inference time (Aurora, Li et al., §4.1 Eq. 1–3) and GPU utilization
//! (§8.1).

use serde::{Deserialize, Serialize};

use super::mean_ratio;
use crate::units::Seconds;
use crate::{InputError, check_finite_result, check_non_negative};

/// Per-GPU component times of one MoE layer, one entry per GPU.
///
/// Deserializes through [`ExclusiveLayer::validate`]; the fields are public, so
/// [`exclusive_time`] checks them again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ExclusiveLayerFields")]
pub struct ExclusiveLayer {
    /// Gate time `|G_i|`, seconds.
    pub gate_s: Vec<Seconds>,
    /// First (dispatch) all-to-all time `|N_i|`, seconds.
    pub dispatch_s: Vec<Seconds>,
    /// FFN (expert) time `|F_i|`, seconds.
    pub ffn_s: Vec<Seconds>,
    /// Second (combine) all-to-all time `|C_i|`, seconds.
    pub combine_s: Vec<Seconds>,
    /// Aggregation time `|A_i|`, seconds.
    pub aggregation_s: Vec<Seconds>,
}

deserialize_validated!(ExclusiveLayer, ExclusiveLayerFields {
    gate_s: Vec<Seconds>,
    dispatch_s: Vec<Seconds>,
    ffn_s: Vec<Seconds>,
    combine_s: Vec<Seconds>,
    aggregation_s: Vec<Seconds>,
});

impl ExclusiveLayer {
    /// Checks at least one GPU, one entry per GPU in every vector, and finite non-negative
    /// times.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] for zero GPUs; [`InputError::SizeMismatch`] when
    /// the vectors differ in length; `NonFinite`/`Negative` for a bad time.
    ///
    /// # Complexity
    ///
    /// `O(n)` time for n GPUs.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::timeline::ExclusiveLayer;
    /// let mut layer = ExclusiveLayer { gate_s: vec![1.0], dispatch_s: vec![1.0],
    ///     ffn_s: vec![2.0], combine_s: vec![1.0], aggregation_s: vec![1.0] };
    /// assert!(layer.validate().is_ok());
    /// layer.ffn_s.push(3.0);
    /// assert!(layer.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        let n = self.gate_s.len();
        if n == 0 {
            return Err(InputError::CountTooSmall {
                what: "GPUs",
                min: 1,
                value: 0,
            });
        }
        check_all("gate time (s)", &self.gate_s, n)?;
        check_all("dispatch time (s)", &self.dispatch_s, n)?;
        check_all("FFN time (s)", &self.ffn_s, n)?;
        check_all("combine time (s)", &self.combine_s, n)?;
        check_all("aggregation time (s)", &self.aggregation_s, n)
    }
}

/// The three barrier-separated parts of Eq. 1 and what they add up to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExclusiveTime {
    /// `max_i (|G_i| + |N_i|)`.
    pub gate_dispatch_s: Seconds,
    /// `max_j (|F_j| + |C_j|)`.
    pub ffn_combine_s: Seconds,
    /// `max_k |A_k|`.
    pub aggregation_s: Seconds,
    /// Inference time `t`, Eq. 1.
    pub inference_time_s: Seconds,
    /// Mean over GPUs of `(|G_i| + |F_i| + |A_i|) / t` (§8.1); 0 when `t = 0`.
    pub gpu_utilization: f64,
}

/// Checks that `xs` has `n` entries, each a finite non-negative time.
pub(super) fn check_all(what: &'static str, xs: &[f64], n: usize) -> Result<(), InputError> {
    if xs.len() != n {
        return Err(InputError::SizeMismatch {
            what,
            expected: n as u64,
            actual: xs.len() as u64,
        });
    }
    xs.iter()
        .try_for_each(|&x| check_non_negative(what, x).map(|_| ()))
}

fn max_sum(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x + y).fold(0.0, f64::max)
}

/// Inference time of one exclusive MoE layer, Aurora Eq. 1:
/// `t = max_i(|G_i| + |N_i|) + max_j(|F_j| + |C_j|) + max_k |A_k|`.
///
/// # Errors
///
/// As [`ExclusiveLayer::validate`]; [`InputError::NonFinite`] when the time overflows
/// `f64`.
///
/// # Complexity
///
/// `O(n)` time for n GPUs.
///
/// # Examples
///
/// ```
/// use comm_cost_model::timeline::{exclusive_time, ExclusiveLayer};
/// let layer = ExclusiveLayer {
///     gate_s: vec![1.0, 1.0],
///     dispatch_s: vec![2.0, 4.0],
///     ffn_s: vec![3.0, 5.0],
///     combine_s: vec![2.0, 4.0],
///     aggregation_s: vec![1.0, 1.0],
/// };
/// let t = exclusive_time(&layer)?;
/// // max(1+2, 1+4) + max(3+2, 5+4) + 1 = 5 + 9 + 1 = 15.
/// assert_eq!(t.inference_time_s, 15.0);
/// // Utilization: GPU 0 computes 5 s, GPU 1 7 s: mean 6 / 15.
/// assert!((t.gpu_utilization - 0.4).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn exclusive_time(layer: &ExclusiveLayer) -> Result<ExclusiveTime, InputError> {
    layer.validate()?;
    let n = layer.gate_s.len();
    let gate_dispatch_s = max_sum(&layer.gate_s, &layer.dispatch_s);
    let ffn_combine_s = max_sum(&layer.ffn_s, &layer.combine_s);
    let aggregation_s = layer.aggregation_s.iter().copied().fold(0.0, f64::max);
    let t = gate_dispatch_s + ffn_combine_s + aggregation_s;
    let busy = (0..n).map(|i| layer.gate_s[i] + layer.ffn_s[i] + layer.aggregation_s[i]);
    // The three parts are non-negative and sum to `t`.
    let t = check_finite_result("exclusive inference time (s)", t)?;
    // Each GPU's compute time is at most `t`, but their sum can overflow (issue 13).
    let gpu_utilization = if t > 0.0 {
        mean_ratio(busy.clone().sum(), busy, n, t)
    } else {
        0.0
    };
    Ok(ExclusiveTime {
        gate_dispatch_s,
        ffn_combine_s,
        aggregation_s,
        inference_time_s: t,
        gpu_utilization: check_finite_result("GPU utilization", gpu_utilization)?,
    })
}

/// Aurora Eq. 3, the homogeneous reduction of Eq. 1:
/// `t = |G| + max|N_i| + max|F_i| + max|C_i| + |A|`.
///
/// Equal to [`exclusive_time`] when gate and aggregation times are the same on every GPU and
/// the largest dispatch, FFN and combine times fall on the same GPU (§4.1 observations 1–3);
/// otherwise it is an upper bound of Eq. 1.
///
/// # Errors
///
/// `NonFinite`/`Negative` for a bad time.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::timeline::exclusive_time_eq3;
/// assert_eq!(exclusive_time_eq3(1.0, 4.0, 5.0, 4.0, 1.0)?, 15.0);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn exclusive_time_eq3(
    gate_s: Seconds,
    max_dispatch_s: Seconds,
    max_ffn_s: Seconds,
    max_combine_s: Seconds,
    aggregation_s: Seconds,
) -> Result<Seconds, InputError> {
    let mut t = 0.0;
    for (what, v) in [
        ("gate time (s)", gate_s),
        ("dispatch time (s)", max_dispatch_s),
        ("FFN time (s)", max_ffn_s),
        ("combine time (s)", max_combine_s),
        ("aggregation time (s)", aggregation_s),
    ] {
        t += check_non_negative(what, v)?;
    }
    crate::check_finite_result("exclusive inference time (s)", t)
}

/// A model of several exclusive layers run back to back (a strict barrier between layers):
/// total inference time and compute-weighted utilization.
///
/// # Errors
///
/// As [`exclusive_time`] for any layer; `CountTooSmall` for no layers.
///
/// # Complexity
///
/// `O(total GPUs × layers)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::timeline::{model_exclusive_time, ExclusiveLayer};
/// let layer = ExclusiveLayer { gate_s: vec![1.0], dispatch_s: vec![1.0], ffn_s: vec![2.0],
///     combine_s: vec![1.0], aggregation_s: vec![1.0] };
/// let t = model_exclusive_time(&[layer.clone(), layer])?;
/// assert_eq!(t.inference_time_s, 12.0);
/// assert!((t.gpu_utilization - 8.0 / 12.0).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn model_exclusive_time(layers: &[ExclusiveLayer]) -> Result<ExclusiveTime, InputError> {
    if layers.is_empty() {
        return Err(InputError::CountTooSmall {
            what: "layers",
            min: 1,
            value: 0,
        });
    }
    let mut total = ExclusiveTime {
        gate_dispatch_s: 0.0,
        ffn_combine_s: 0.0,
        aggregation_s: 0.0,
        inference_time_s: 0.0,
        gpu_utilization: 0.0,
    };
    let mut compute = 0.0;
    for layer in layers {
        let t = exclusive_time(layer)?;
        total.gate_dispatch_s += t.gate_dispatch_s;
        total.ffn_combine_s += t.ffn_combine_s;
        total.aggregation_s += t.aggregation_s;
        total.inference_time_s += t.inference_time_s;
        compute += t.gpu_utilization * t.inference_time_s;
    }
    crate::check_finite_result("model inference time (s)", total.inference_time_s)?;
    if total.inference_time_s > 0.0 {
        total.gpu_utilization =
            crate::check_finite_result("GPU utilization", compute / total.inference_time_s)?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq3_equals_eq1_under_its_assumptions() {
        // Same gate (0.5) and aggregation (0.25) everywhere; GPU 2 has the largest N, F, C.
        let layer = ExclusiveLayer {
            gate_s: vec![0.5; 3],
            dispatch_s: vec![1.0, 2.0, 3.0],
            ffn_s: vec![2.0, 3.0, 4.0],
            combine_s: vec![1.0, 2.0, 3.0],
            aggregation_s: vec![0.25; 3],
        };
        let t1 = exclusive_time(&layer).unwrap().inference_time_s;
        // 0.5 + 3 + 4 + 3 + 0.25 = 10.75.
        assert_eq!(t1, 10.75);
        assert_eq!(exclusive_time_eq3(0.5, 3.0, 4.0, 3.0, 0.25).unwrap(), t1);
    }

    #[test]
    fn rejects_bad_shapes() {
        let mut layer = ExclusiveLayer {
            gate_s: vec![1.0],
            dispatch_s: vec![1.0],
            ffn_s: vec![1.0],
            combine_s: vec![1.0],
            aggregation_s: vec![1.0, 2.0],
        };
        assert!(exclusive_time(&layer).is_err());
        layer.aggregation_s = vec![f64::NAN];
        assert!(exclusive_time(&layer).is_err());
        assert!(model_exclusive_time(&[]).is_err());
    }
}
