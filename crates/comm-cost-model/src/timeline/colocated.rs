//! The colocated two-model MoE-layer timeline of Aurora (Li et al., §6.1 Table 2, Eq. 4).
//!
//! Two models `a` and `b` share every GPU; their computations take turns on the GPU and their
//! all-to-alls share the port. Table 2 gives each component's start and end across the cluster
//! (maxima over GPUs). Its communication end times are cumulative *aggregated* times
//! (`|N^a + N^b|`, ...), which silently assume the port never waits for a computation. We keep
//! Table 2's dependencies and add the waits, so the timeline is right in every case and reduces
//! to Table 2 when there is no gap:
//!
//! * `E(N^b) = max(|N^a + N^b|, |G^b| + |N^b|)`;
//! * the combine phase starts at `S(C^a) = max(E(F^a), E(N^b))`, `E(C^a) = S(C^a) + |C^a|`;
//! * `E(C^b) = max(S(C^a) + |C^a + C^b|, E(F^b) + |C^b|)`.
//!
//! The aggregated times are whatever the shared port took. A contention-free schedule of the
//! summed traffic lies between the longer of the two alone and their sum (its busiest port is
//! busy at least as long as either model's and at most as long as both); a schedule run under
//! contention (a simulated baseline) can fall outside, slower than taking turns or faster than
//! one model's contended solo run, and the timeline takes it as measured.
//!
//! Inference time is the end of `G^a` (Eq. 4); [`colocated_gpu_utilization`] is the compute time
//! of both models over it, per GPU and averaged (§8.1).

use serde::{Deserialize, Serialize};

use super::exclusive::check_all;
use super::mean_ratio;
use crate::units::Seconds;
use crate::{InputError, check_count, check_finite_result, check_non_negative};

/// Component times of one model's layer (maxima over GPUs, as in Table 2).
///
/// Deserializes through [`ModelLayerTimes::validate`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ModelLayerTimesFields")]
pub struct ModelLayerTimes {
    /// Gate `|G|`, seconds.
    pub gate_s: Seconds,
    /// Dispatch all-to-all alone `|N|`, seconds.
    pub dispatch_s: Seconds,
    /// FFN `|F|`, seconds.
    pub ffn_s: Seconds,
    /// Combine all-to-all alone `|C|`, seconds.
    pub combine_s: Seconds,
    /// Aggregation `|A|`, seconds.
    pub aggregation_s: Seconds,
}

deserialize_validated!(
    ModelLayerTimes,
    ModelLayerTimesFields {
        gate_s: Seconds,
        dispatch_s: Seconds,
        ffn_s: Seconds,
        combine_s: Seconds,
        aggregation_s: Seconds,
    }
);

impl ModelLayerTimes {
    /// Checks that every time is finite and non-negative.
    ///
    /// # Errors
    ///
    /// `NonFinite`/`Negative` naming the bad time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::timeline::ModelLayerTimes;
    /// let m = ModelLayerTimes { gate_s: 1.0, dispatch_s: 2.0, ffn_s: 3.0, combine_s: 2.0,
    ///     aggregation_s: 1.0 };
    /// assert!(m.validate().is_ok());
    /// assert!(ModelLayerTimes { ffn_s: f64::NAN, ..m }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        for (what, v) in [
            ("gate time (s)", self.gate_s),
            ("dispatch time (s)", self.dispatch_s),
            ("FFN time (s)", self.ffn_s),
            ("combine time (s)", self.combine_s),
            ("aggregation time (s)", self.aggregation_s),
        ] {
            check_non_negative(what, v)?;
        }
        Ok(())
    }
}

/// Inputs of the colocated timeline: both models and the aggregated all-to-all times.
///
/// Deserializes through [`ColocatedLayer::validate`]; the fields are public, so the
/// timeline functions check them again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ColocatedLayerFields")]
pub struct ColocatedLayer {
    /// Model `a` (its gate ran in the previous period; `G^a` ends this one).
    pub a: ModelLayerTimes,
    /// Model `b`.
    pub b: ModelLayerTimes,
    /// `|N^a + N^b|`: both dispatches on the shared port (between the longer of the two and
    /// their sum when the schedule is contention-free).
    pub aggregated_dispatch_s: Seconds,
    /// `|C^a + C^b|`: both combines on the shared port.
    pub aggregated_combine_s: Seconds,
}

deserialize_validated!(
    ColocatedLayer,
    ColocatedLayerFields {
        a: ModelLayerTimes,
        b: ModelLayerTimes,
        aggregated_dispatch_s: Seconds,
        aggregated_combine_s: Seconds,
    }
);

impl ColocatedLayer {
    /// Checks both models ([`ModelLayerTimes::validate`]) and the aggregated times.
    ///
    /// # Errors
    ///
    /// `NonFinite`/`Negative` naming the bad time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::timeline::{ColocatedLayer, ModelLayerTimes};
    /// let m = ModelLayerTimes { gate_s: 1.0, dispatch_s: 2.0, ffn_s: 3.0, combine_s: 2.0,
    ///     aggregation_s: 1.0 };
    /// let layer = ColocatedLayer { a: m, b: m, aggregated_dispatch_s: 3.0,
    ///     aggregated_combine_s: -3.0 };
    /// assert!(layer.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        self.a.validate()?;
        self.b.validate()?;
        check_non_negative("aggregated dispatch time (s)", self.aggregated_dispatch_s)?;
        check_non_negative("aggregated combine time (s)", self.aggregated_combine_s)?;
        Ok(())
    }
}

/// Which model a component belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelId {
    /// Model `a`.
    A,
    /// Model `b`.
    B,
}

/// What a component is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ComponentKind {
    /// Gate (compute).
    Gate,
    /// First all-to-all (port).
    Dispatch,
    /// FFN (compute).
    Ffn,
    /// Second all-to-all (port).
    Combine,
    /// Aggregation (compute).
    Aggregation,
}

impl ComponentKind {
    /// Whether the component runs on the GPU's compute (else on its port).
    #[must_use]
    pub fn is_compute(self) -> bool {
        matches!(self, Self::Gate | Self::Ffn | Self::Aggregation)
    }
}

/// One row of Table 2.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// The model.
    pub model: ModelId,
    /// The component.
    pub kind: ComponentKind,
    /// Start time, seconds.
    pub start_s: Seconds,
    /// End time, seconds.
    pub end_s: Seconds,
}

/// The colocated timeline: every component in Table 2's order and the inference time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColocatedTimeline {
    /// `G^b, N^a, F^a, N^b, F^b, C^a, A^a, C^b, A^b, G^a`.
    pub components: Vec<Component>,
    /// Eq. 4: `E(A^b) + |G^a|`.
    pub inference_time_s: Seconds,
}

/// The colocated two-model timeline of Aurora Table 2 with every component's start and end,
/// and the inference time of Eq. 4.
///
/// # Errors
///
/// As [`ColocatedLayer::validate`]; [`InputError::NonFinite`] when the time overflows
/// `f64`.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::timeline::{colocated_timeline, ColocatedLayer, ModelLayerTimes};
/// let m = ModelLayerTimes { gate_s: 1.0, dispatch_s: 2.0, ffn_s: 3.0, combine_s: 2.0,
///     aggregation_s: 1.0 };
/// let layer = ColocatedLayer { a: m, b: m, aggregated_dispatch_s: 3.0,
///     aggregated_combine_s: 3.0 };
/// let t = colocated_timeline(&layer)?;
/// // G^b [0,1], N^a [0,2], F^a [2,5], N^b ends max(3, 1+2) = 3, F^b [5,8],
/// // C^a [5,7], A^a [8,9], C^b ends max(5+3, 8+2) = 10, A^b [10,11], G^a [11,12].
/// assert_eq!(t.inference_time_s, 12.0);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn colocated_timeline(layer: &ColocatedLayer) -> Result<ColocatedTimeline, InputError> {
    layer.validate()?;
    let (a, b) = (&layer.a, &layer.b);
    let c = |model, kind, start_s: f64, end_s: f64| Component {
        model,
        kind,
        start_s,
        end_s,
    };
    use ComponentKind::*;
    use ModelId::{A, B};
    let gb = c(B, Gate, 0.0, b.gate_s);
    let na = c(A, Dispatch, 0.0, a.dispatch_s);
    let s_fa = gb.end_s.max(na.end_s);
    let fa = c(A, Ffn, s_fa, s_fa + a.ffn_s);
    let e_nb = layer.aggregated_dispatch_s.max(gb.end_s + b.dispatch_s);
    let nb = c(B, Dispatch, e_nb - b.dispatch_s, e_nb);
    let s_fb = fa.end_s.max(nb.end_s);
    let fb = c(B, Ffn, s_fb, s_fb + b.ffn_s);
    let s_ca = fa.end_s.max(nb.end_s);
    let ca = c(A, Combine, s_ca, s_ca + a.combine_s);
    let s_aa = fb.end_s.max(ca.end_s);
    let aa = c(A, Aggregation, s_aa, s_aa + a.aggregation_s);
    let e_cb = (s_ca + layer.aggregated_combine_s).max(fb.end_s + b.combine_s);
    let cb = c(B, Combine, e_cb - b.combine_s, e_cb);
    let s_ab = aa.end_s.max(cb.end_s);
    let ab = c(B, Aggregation, s_ab, s_ab + b.aggregation_s);
    let ga = c(A, Gate, ab.end_s, ab.end_s + a.gate_s);
    // The last component ends after every other one: finite here means finite everywhere.
    check_finite_result("co-located inference time (s)", ga.end_s)?;
    Ok(ColocatedTimeline {
        components: vec![gb, na, fa, nb, fb, ca, aa, cb, ab, ga],
        inference_time_s: ga.end_s,
    })
}

/// GPU utilization of a colocated layer (Aurora §8.1), defined as for an exclusive layer
/// ([`crate::timeline::ExclusiveTime::gpu_utilization`]): each GPU's own compute time over the
/// layer's inference time, averaged over GPUs.
///
/// GPU `g` computes both models' gate and aggregation and its own FFN of each,
/// `ffn_a_s[g]` and `ffn_b_s[g]`; the inference time is [`colocated_timeline`]'s. Table 2 works
/// with maxima over GPUs, so charging every GPU the slowest FFN would overstate the figure.
///
/// # Errors
///
/// As [`colocated_timeline`]; [`InputError::CountTooSmall`] for no GPUs,
/// [`InputError::SizeMismatch`] for vectors of different lengths, `NonFinite`/`Negative`
/// for a bad FFN time, [`InputError::Degenerate`] when a GPU's FFN time exceeds its model's
/// `|F|` (the maximum over GPUs).
///
/// # Complexity
///
/// `O(n)` time for n GPUs.
///
/// # Examples
///
/// ```
/// use comm_cost_model::timeline::{colocated_gpu_utilization, ColocatedLayer, ModelLayerTimes};
/// let m = ModelLayerTimes { gate_s: 1.0, dispatch_s: 2.0, ffn_s: 3.0, combine_s: 2.0,
///     aggregation_s: 1.0 };
/// let layer = ColocatedLayer { a: m, b: m, aggregated_dispatch_s: 3.0,
///     aggregated_combine_s: 3.0 };
/// // The layer takes 12 s (see colocated_timeline). GPU 0 runs both FFNs for 3 s: it computes
/// // 4 + 3 + 3 = 10 s; GPU 1's FFNs take 1 s each: 6 s. Mean (10/12 + 6/12) / 2 = 2/3.
/// let u = colocated_gpu_utilization(&layer, &[3.0, 1.0], &[3.0, 1.0])?;
/// assert!((u - 2.0 / 3.0).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn colocated_gpu_utilization(
    layer: &ColocatedLayer,
    ffn_a_s: &[Seconds],
    ffn_b_s: &[Seconds],
) -> Result<f64, InputError> {
    let t = colocated_timeline(layer)?.inference_time_s;
    let n = check_count("GPUs", ffn_a_s.len(), 1)?;
    for (ffn, max) in [(ffn_a_s, layer.a.ffn_s), (ffn_b_s, layer.b.ffn_s)] {
        check_all("FFN time (s)", ffn, n)?;
        if ffn.iter().any(|&f| f > max) {
            return Err(InputError::Degenerate {
                what: "a GPU's FFN time exceeds its model's |F| (the maximum over GPUs)",
            });
        }
    }
    let (a, b) = (&layer.a, &layer.b);
    let fixed = a.gate_s + a.aggregation_s + b.gate_s + b.aggregation_s;
    if t <= 0.0 {
        return Ok(0.0);
    }
    // Each GPU computes at most `t`, but the sum (and `t n`) can overflow (issue 13).
    let busy = ffn_a_s.iter().zip(ffn_b_s).map(|(x, y)| fixed + x + y);
    check_finite_result(
        "co-located GPU utilization",
        mean_ratio(busy.clone().sum(), busy, n, t),
    )
}

/// A multi-layer colocated model: the layers' periods run back to back.
///
/// # Errors
///
/// As [`colocated_timeline`]; `CountTooSmall` for no layers.
///
/// # Complexity
///
/// `O(layers)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::timeline::{model_colocated_time_s, ColocatedLayer, ModelLayerTimes};
/// let m = ModelLayerTimes { gate_s: 1.0, dispatch_s: 2.0, ffn_s: 3.0, combine_s: 2.0,
///     aggregation_s: 1.0 };
/// let layer = ColocatedLayer { a: m, b: m, aggregated_dispatch_s: 3.0,
///     aggregated_combine_s: 3.0 };
/// assert_eq!(model_colocated_time_s(&[layer, layer])?, 24.0);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn model_colocated_time_s(layers: &[ColocatedLayer]) -> Result<Seconds, InputError> {
    if layers.is_empty() {
        return Err(InputError::CountTooSmall {
            what: "layers",
            min: 1,
            value: 0,
        });
    }
    let total: Seconds = layers
        .iter()
        .map(|l| colocated_timeline(l).map(|t| t.inference_time_s))
        .sum::<Result<Seconds, InputError>>()?;
    check_finite_result("model inference time (s)", total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reduces_to_table2_without_gaps() {
        // Short computations: the port never waits, so the ends are Table 2's aggregated sums.
        let a = ModelLayerTimes {
            gate_s: 0.1,
            dispatch_s: 4.0,
            ffn_s: 0.5,
            combine_s: 4.0,
            aggregation_s: 0.1,
        };
        let b = ModelLayerTimes {
            gate_s: 0.1,
            dispatch_s: 3.0,
            ffn_s: 0.5,
            combine_s: 3.0,
            aggregation_s: 0.1,
        };
        let layer = ColocatedLayer {
            a,
            b,
            aggregated_dispatch_s: 5.0,
            aggregated_combine_s: 5.0,
        };
        let t = colocated_timeline(&layer).unwrap();
        let end = |m, k| {
            t.components
                .iter()
                .find(|c| c.model == m && c.kind == k)
                .unwrap()
                .end_s
        };
        use ComponentKind::*;
        // E(N^a) = |N^a| = 4; E(N^b) = |N^a + N^b| = 5; E(C^a) = 5 + |C^a| = 9.
        assert_eq!(end(ModelId::A, Dispatch), 4.0);
        assert_eq!(end(ModelId::B, Dispatch), 5.0);
        assert_eq!(end(ModelId::A, Combine), 9.0);
        // E(C^b) = 5 + |C^a + C^b| = 10; A^b = [10, 10.1]; t = 10.1 + 0.1 (Eq. 4).
        assert_eq!(end(ModelId::B, Combine), 10.0);
        assert!((t.inference_time_s - 10.2).abs() < 1e-12);
    }

    fn unit_model() -> ModelLayerTimes {
        ModelLayerTimes {
            gate_s: 1.0,
            dispatch_s: 2.0,
            ffn_s: 1.0,
            combine_s: 2.0,
            aggregation_s: 1.0,
        }
    }

    #[test]
    fn contended_aggregates_are_taken_as_measured() {
        let m = unit_model();
        let layer = |aggregated_dispatch_s| ColocatedLayer {
            a: m,
            b: m,
            aggregated_dispatch_s,
            aggregated_combine_s: 3.0,
        };
        // A shared dispatch slower than taking turns (5 > 2 + 2) delays N^b to 5: F^b [5, 6],
        // C^b ends at max(S(C^a) + 3, 6 + 2) = max(5 + 3, 8) = 8, A^b [8, 9], G^a [9, 10].
        assert_eq!(
            colocated_timeline(&layer(5.0)).unwrap().inference_time_s,
            10.0
        );
        // One faster than a solo run (1 < 2) cannot end N^b before G^b + |N^b| = 3.
        let fast = colocated_timeline(&layer(1.0)).unwrap();
        let nb = fast.components[3];
        assert_eq!(
            (nb.model, nb.kind, nb.end_s),
            (ModelId::B, ComponentKind::Dispatch, 3.0)
        );
        assert!(matches!(
            colocated_timeline(&layer(-1.0)),
            Err(InputError::Negative { .. })
        ));
        assert!(matches!(
            colocated_timeline(&layer(f64::NAN)),
            Err(InputError::NonFinite { .. })
        ));
    }

    #[test]
    fn utilization_is_per_gpu_and_checks_its_input() {
        let m = unit_model();
        let layer = ColocatedLayer {
            a: m,
            b: m,
            aggregated_dispatch_s: 3.0,
            aggregated_combine_s: 3.0,
        };
        let t = colocated_timeline(&layer).unwrap().inference_time_s;
        // Both GPUs at the maximum FFN: every GPU computes 2 + 1 + 2 + 1 = 6 s.
        let full = colocated_gpu_utilization(&layer, &[1.0, 1.0], &[1.0, 1.0]).unwrap();
        assert!((full - 6.0 / t).abs() < 1e-12);
        // GPU 1 has no FFN work: it computes 4 s.
        let half = colocated_gpu_utilization(&layer, &[1.0, 0.0], &[1.0, 0.0]).unwrap();
        assert!((half - (6.0 + 4.0) / 2.0 / t).abs() < 1e-12);
        assert!(matches!(
            colocated_gpu_utilization(&layer, &[], &[]),
            Err(InputError::CountTooSmall { .. })
        ));
        assert!(matches!(
            colocated_gpu_utilization(&layer, &[1.0], &[1.0, 1.0]),
            Err(InputError::SizeMismatch { .. })
        ));
        assert!(matches!(
            colocated_gpu_utilization(&layer, &[2.0], &[1.0]),
            Err(InputError::Degenerate { .. })
        ));
        assert!(matches!(
            colocated_gpu_utilization(&layer, &[f64::NAN], &[1.0]),
            Err(InputError::NonFinite { .. })
        ));
    }

    fn times() -> impl Strategy<Value = ModelLayerTimes> {
        (
            0.0f64..5.0,
            0.0f64..5.0,
            0.0f64..5.0,
            0.0f64..5.0,
            0.0f64..5.0,
        )
            .prop_map(|(gate_s, dispatch_s, ffn_s, combine_s, aggregation_s)| {
                ModelLayerTimes {
                    gate_s,
                    dispatch_s,
                    ffn_s,
                    combine_s,
                    aggregation_s,
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Compute components never overlap; the dispatch phase ends before the combine phase
        /// starts on the port; each model's components follow its data dependencies.
        #[test]
        fn no_overlap_and_causal(a in times(), b in times(), wd in 0.0f64..2.0, wc in 0.0f64..2.0) {
            // Aggregates from 0 to twice the sum: contention-free ones and contended ones alike.
            let layer = ColocatedLayer {
                a, b,
                aggregated_dispatch_s: wd * (a.dispatch_s + b.dispatch_s),
                aggregated_combine_s: wc * (a.combine_s + b.combine_s),
            };
            let t = colocated_timeline(&layer).unwrap();
            let eps = 1e-9;
            let mut compute: Vec<_> = t.components.iter().filter(|c| c.kind.is_compute()).collect();
            compute.sort_by(|x, y| x.start_s.total_cmp(&y.start_s));
            for w in compute.windows(2) {
                prop_assert!(w[0].end_s <= w[1].start_s + eps);
            }
            let port = |k: ComponentKind| t.components.iter().filter(move |c| c.kind == k);
            let dispatch_end = port(ComponentKind::Dispatch).map(|c| c.end_s).fold(0.0, f64::max);
            let combine_start = port(ComponentKind::Combine).map(|c| c.start_s).fold(f64::INFINITY, f64::min);
            prop_assert!(dispatch_end <= combine_start + eps);
            for model in [ModelId::A, ModelId::B] {
                let of = |k| t.components.iter().find(|c| c.model == model && c.kind == k).unwrap();
                use ComponentKind::*;
                prop_assert!(of(Dispatch).end_s <= of(Ffn).start_s + eps);
                prop_assert!(of(Ffn).end_s <= of(Combine).start_s + eps);
                prop_assert!(of(Combine).end_s <= of(Aggregation).start_s + eps);
                for c in &t.components {
                    prop_assert!(c.start_s >= -eps && c.end_s >= c.start_s - eps);
                }
            }
            let u = colocated_gpu_utilization(&layer, &[a.ffn_s], &[b.ffn_s]).unwrap();
            prop_assert!((0.0..=1.0 + eps).contains(&u));
        }
    }
}
