//! Communication times of the baseline schedule, S1 and S2 (Parm, Pan et al., §IV, §V).
//!
//! Every collective is an alpha-beta cost applied to the size the paper writes as its argument,
//! converted to bytes with the layer's `bytes_per_element`:
//!
//! * baseline (Eq. 1): `AG_ESP(B L M N_ESP) + AR_ESP(E T M N_ESP) + 2 A2A_EP(E T M N_ESP)`;
//! * S1 (Eq. 11/13): `2 A2A_EP&ESP(E T M N_ESP / N_MP) + AG_MP(B L M)`;
//! * S2 (Eq. 7/14): `A2A_EP&ESP(E T M N_ESP / N_MP) + SAA`, where SAA is the combine AlltoAll
//!   overlapped with `AG_MP(E T M)` (§III-D).
//!
//! A group of one GPU communicates nothing: with `N_ESP = 1` the baseline's ESP terms are zero,
//! with `N_MP = 1` the MP-AllGather is zero and S1 = S2 = `t_D` of Eq. 2.

use serde::{Deserialize, Serialize};

use super::layer::{ParmLayer, ParmVolumes};
use crate::units::Seconds;
use crate::{AlphaBeta, InputError, check_finite_result};

/// Alpha-beta cost of every collective the three schedules use, per byte of the argument the
/// paper writes for it (Parm §V-A, Eq. 12).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ParmCollectiveCosts {
    /// ESP-AllGather (argument: gathered size).
    pub ag_esp: AlphaBeta,
    /// ESP-AllReduce (argument: reduced buffer).
    pub ar_esp: AlphaBeta,
    /// EP-AlltoAll of the baseline (argument: per-GPU send buffer).
    pub a2a_ep: AlphaBeta,
    /// EP&ESP-AlltoAll of S1 and S2 (argument: per-GPU send buffer).
    pub a2a_ep_esp: AlphaBeta,
    /// MP-AllGather (argument: gathered size).
    pub ag_mp: AlphaBeta,
    /// The overlapped combine of S2 (SAA), `alpha_o + beta_o * x` with `x` the AlltoAll's
    /// per-GPU buffer (Eq. 14). `None`: ideal overlap, `max(A2A_EP&ESP, AG_MP(E T M))`.
    #[serde(default)]
    pub saa: Option<AlphaBeta>,
}

impl ParmCollectiveCosts {
    /// The same cost for every collective (and ideal SAA overlap), e.g. from one fit.
    #[must_use]
    pub fn uniform(cost: AlphaBeta) -> Self {
        Self {
            ag_esp: cost,
            ar_esp: cost,
            a2a_ep: cost,
            a2a_ep_esp: cost,
            ag_mp: cost,
            saa: None,
        }
    }

    /// Checks every cost (the fields are public, so a cost built without [`AlphaBeta::new`]
    /// may be invalid).
    ///
    /// # Errors
    ///
    /// `NonFinite`/`Negative` for an alpha or beta that is NaN, infinite or negative.
    pub fn validate(&self) -> Result<(), InputError> {
        let required = [
            self.ag_esp,
            self.ar_esp,
            self.a2a_ep,
            self.a2a_ep_esp,
            self.ag_mp,
        ];
        for ab in required.iter().chain(&self.saa) {
            ab.validated()?;
        }
        Ok(())
    }
}

/// Which Parm schedule runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Disable MP before the gate, re-enable after the combine (Fig. 3b).
    S1,
    /// Disable MP after the gate, re-enable before the combine, with SAA (Fig. 3c).
    S2,
}

/// The baseline schedule's terms (Eq. 1), in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BaselineTimes {
    /// `AG_ESP(B L M N_ESP)`.
    pub ag_esp_s: Seconds,
    /// `AR_ESP(E T M N_ESP)`.
    pub ar_esp_s: Seconds,
    /// Dispatch `A2A_EP(E T M N_ESP)`.
    pub a2a_dispatch_s: Seconds,
    /// Combine `A2A_EP(E T M N_ESP)`.
    pub a2a_combine_s: Seconds,
    /// Sum of the terms (`t_B`).
    pub total_s: Seconds,
}

/// S1's terms (Eq. 11/13), in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct S1Times {
    /// Dispatch `A2A_EP&ESP(E T M N_ESP / N_MP)`.
    pub a2a_dispatch_s: Seconds,
    /// Combine `A2A_EP&ESP(E T M N_ESP / N_MP)`.
    pub a2a_combine_s: Seconds,
    /// `AG_MP(B L M)`.
    pub ag_mp_s: Seconds,
    /// Sum of the terms (`t_D1`).
    pub total_s: Seconds,
}

/// S2's terms (Eq. 7/14), in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct S2Times {
    /// Dispatch `A2A_EP&ESP(E T M N_ESP / N_MP)`.
    pub a2a_dispatch_s: Seconds,
    /// The combine AlltoAll alone (what SAA overlaps).
    pub a2a_combine_s: Seconds,
    /// `AG_MP(E T M)` alone (what SAA overlaps).
    pub ag_mp_s: Seconds,
    /// The overlapped combine, `Overlap(E T M N_ESP / N_MP)`.
    pub saa_s: Seconds,
    /// Without overlap (AAS): dispatch + combine + MP-AllGather, the right side of Eq. 7.
    pub sequential_s: Seconds,
    /// `t_D2` = dispatch + SAA.
    pub total_s: Seconds,
}

/// All three schedules of one layer and Algorithm 1's choice.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ParmTimes {
    /// The baseline (DeepSpeed-MoE) schedule.
    pub baseline: BaselineTimes,
    /// Schedule S1.
    pub s1: S1Times,
    /// Schedule S2.
    pub s2: S2Times,
    /// Algorithm 1: S1 if `t_D1 <= t_D2`, else S2.
    pub choice: Schedule,
    /// Time of the chosen schedule.
    pub parm_s: Seconds,
}

/// Time of a collective over `group` GPUs: zero for a group of one.
fn collective(cost: &AlphaBeta, group: usize, bytes: f64) -> Seconds {
    if group <= 1 { 0.0 } else { cost.time_s(bytes) }
}

/// Baseline communication time, Eq. 1, term by term.
///
/// # Errors
///
/// As [`ParmLayer::volumes`] and [`ParmCollectiveCosts::validate`] (the costs' fields are
/// public); [`InputError::NonFinite`] if a time overflows `f64` (extreme sizes or costs).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::*;
/// use comm_cost_model::AlphaBeta;
/// let layer = ParmLayer { p: 4, n_mp: 2, n_ep: 2, n_esp: 2, b: 1, l: 8, m: 4, h: 4,
///     e: 2, k: 1, f: 1.0, bytes_per_element: 1.0 };
/// let costs = ParmCollectiveCosts::uniform(AlphaBeta::new(1.0, 0.5)?);
/// let t = baseline_times(&layer, &costs)?;
/// // BLM = 32, ETM = 32: AG_ESP(64) = 33, AR_ESP(64) = 33, 2 A2A_EP(64) = 66.
/// assert_eq!(t.total_s, 33.0 + 33.0 + 66.0);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn baseline_times(
    layer: &ParmLayer,
    costs: &ParmCollectiveCosts,
) -> Result<BaselineTimes, InputError> {
    costs.validate()?;
    let t = baseline_from(layer, &layer.volumes()?, costs);
    // Every term is non-negative, so a finite total means finite terms.
    check_finite_result("baseline layer time (s)", t.total_s)?;
    Ok(t)
}

fn baseline_from(layer: &ParmLayer, v: &ParmVolumes, costs: &ParmCollectiveCosts) -> BaselineTimes {
    let esp = layer.n_esp as f64;
    let ag_esp_s = collective(
        &costs.ag_esp,
        layer.n_esp,
        layer.bytes(v.blm_elements * esp),
    );
    let ar_esp_s = collective(&costs.ar_esp, layer.n_esp, layer.bytes(v.y_elements));
    let a2a = collective(&costs.a2a_ep, layer.n_ep, layer.bytes(v.y_elements));
    BaselineTimes {
        ag_esp_s,
        ar_esp_s,
        a2a_dispatch_s: a2a,
        a2a_combine_s: a2a,
        total_s: ag_esp_s + ar_esp_s + 2.0 * a2a,
    }
}

/// S1 communication time, Eq. 11 (Eq. 13 drops `N_ESP` from the AlltoAll argument, a typo).
///
/// # Errors
///
/// As [`ParmLayer::volumes`] and [`ParmCollectiveCosts::validate`] (the costs' fields are
/// public); [`InputError::NonFinite`] if a time overflows `f64` (extreme sizes or costs).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::*;
/// use comm_cost_model::AlphaBeta;
/// let layer = ParmLayer { p: 4, n_mp: 2, n_ep: 2, n_esp: 2, b: 1, l: 8, m: 4, h: 4,
///     e: 2, k: 1, f: 1.0, bytes_per_element: 1.0 };
/// let costs = ParmCollectiveCosts::uniform(AlphaBeta::new(1.0, 0.5)?);
/// // 2 A2A(64 / 2) = 2 * 17, AG_MP(32) = 17.
/// assert_eq!(s1_times(&layer, &costs)?.total_s, 34.0 + 17.0);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn s1_times(layer: &ParmLayer, costs: &ParmCollectiveCosts) -> Result<S1Times, InputError> {
    costs.validate()?;
    let t = s1_from(layer, &layer.volumes()?, costs);
    check_finite_result("S1 layer time (s)", t.total_s)?;
    Ok(t)
}

fn s1_from(layer: &ParmLayer, v: &ParmVolumes, costs: &ParmCollectiveCosts) -> S1Times {
    let a2a_bytes = layer.bytes(v.y_elements / layer.n_mp as f64);
    let a2a = collective(&costs.a2a_ep_esp, layer.p, a2a_bytes);
    let ag_mp_s = collective(&costs.ag_mp, layer.n_mp, layer.bytes(v.blm_elements));
    S1Times {
        a2a_dispatch_s: a2a,
        a2a_combine_s: a2a,
        ag_mp_s,
        total_s: 2.0 * a2a + ag_mp_s,
    }
}

/// S2 communication time, Eq. 7 with SAA: dispatch + `Overlap(E T M N_ESP / N_MP)`.
///
/// The overlap term is `costs.saa` applied to the AlltoAll buffer when given (Eq. 14's
/// `alpha_o + beta_o x`), else the ideal overlap `max(A2A, AG_MP(E T M))`. Eq. 14 also adds
/// `AG_MP(E T M)` on top of the overlap, which would count the overlapped AllGather twice; we
/// follow Eq. 7 and Algorithm 1, which do not (see `docs/algorithms.md`).
///
/// # Errors
///
/// As [`ParmLayer::volumes`] and [`ParmCollectiveCosts::validate`] (the costs' fields are
/// public); [`InputError::NonFinite`] if a time overflows `f64` (extreme sizes or costs).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::*;
/// use comm_cost_model::AlphaBeta;
/// let layer = ParmLayer { p: 4, n_mp: 2, n_ep: 2, n_esp: 2, b: 1, l: 8, m: 4, h: 4,
///     e: 2, k: 1, f: 1.0, bytes_per_element: 1.0 };
/// let costs = ParmCollectiveCosts::uniform(AlphaBeta::new(1.0, 0.5)?);
/// let t = s2_times(&layer, &costs)?;
/// // A2A(32) = 17, AG_MP(ETM = 32) = 17: ideal overlap max(17, 17) = 17.
/// assert_eq!((t.total_s, t.sequential_s), (34.0, 51.0));
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn s2_times(layer: &ParmLayer, costs: &ParmCollectiveCosts) -> Result<S2Times, InputError> {
    costs.validate()?;
    let t = s2_from(layer, &layer.volumes()?, costs);
    check_s2_finite(&t)?;
    Ok(t)
}

/// `total_s` and `sequential_s` together cover every term of S2.
fn check_s2_finite(t: &S2Times) -> Result<(), InputError> {
    check_finite_result("S2 layer time (s)", t.total_s)?;
    check_finite_result("S2 sequential layer time (s)", t.sequential_s)?;
    Ok(())
}

fn s2_from(layer: &ParmLayer, v: &ParmVolumes, costs: &ParmCollectiveCosts) -> S2Times {
    let a2a_bytes = layer.bytes(v.y_elements / layer.n_mp as f64);
    let a2a = collective(&costs.a2a_ep_esp, layer.p, a2a_bytes);
    let ag_mp_s = collective(&costs.ag_mp, layer.n_mp, layer.bytes(v.etm_elements));
    let saa_s = match (&costs.saa, layer.n_mp) {
        // Nothing to overlap: SAA is the plain AlltoAll.
        (_, 1) => a2a,
        (Some(o), _) => collective(o, layer.p, a2a_bytes),
        (None, _) => a2a.max(ag_mp_s),
    };
    S2Times {
        a2a_dispatch_s: a2a,
        a2a_combine_s: a2a,
        ag_mp_s,
        saa_s,
        sequential_s: 2.0 * a2a + ag_mp_s,
        total_s: a2a + saa_s,
    }
}

/// All three schedules and Algorithm 1's choice (Parm §V-B): S1 when `t_D1 <= t_D2`.
///
/// # Errors
///
/// As [`ParmLayer::volumes`] and [`ParmCollectiveCosts::validate`];
/// [`InputError::NonFinite`] if a time overflows `f64` (extreme sizes or costs).
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::*;
/// use comm_cost_model::AlphaBeta;
/// let layer = ParmLayer { p: 4, n_mp: 2, n_ep: 2, n_esp: 2, b: 1, l: 8, m: 4, h: 4,
///     e: 2, k: 1, f: 1.0, bytes_per_element: 1.0 };
/// let costs = ParmCollectiveCosts::uniform(AlphaBeta::new(1.0, 0.5)?);
/// let t = parm_times(&layer, &costs)?;
/// assert_eq!(t.choice, Schedule::S2); // 34 < 51
/// assert_eq!(t.parm_s, 34.0);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn parm_times(layer: &ParmLayer, costs: &ParmCollectiveCosts) -> Result<ParmTimes, InputError> {
    costs.validate()?;
    checked_times_from(layer, &layer.volumes()?, costs)
}

/// [`times_from`], or `NonFinite` if a time overflows `f64`.
pub(super) fn checked_times_from(
    layer: &ParmLayer,
    v: &ParmVolumes,
    costs: &ParmCollectiveCosts,
) -> Result<ParmTimes, InputError> {
    let t = times_from(layer, v, costs);
    check_finite_result("baseline layer time (s)", t.baseline.total_s)?;
    check_finite_result("S1 layer time (s)", t.s1.total_s)?;
    check_s2_finite(&t.s2)?;
    Ok(t)
}

/// [`parm_times`] of a layer already validated into its volumes `v`.
fn times_from(layer: &ParmLayer, v: &ParmVolumes, costs: &ParmCollectiveCosts) -> ParmTimes {
    let baseline = baseline_from(layer, v, costs);
    let s1 = s1_from(layer, v, costs);
    let s2 = s2_from(layer, v, costs);
    let (choice, parm_s) = if s1.total_s <= s2.total_s {
        (Schedule::S1, s1.total_s)
    } else {
        (Schedule::S2, s2.total_s)
    };
    ParmTimes {
        baseline,
        s1,
        s2,
        choice,
        parm_s,
    }
}

/// Algorithm 1 exactly as printed: `T = k f B L M / E` (so `y = E T M N_ESP` carries `M²`),
/// `t_D2 = A2A(y / N_MP) + alpha_o + beta_o y` with no MP-AllGather term.
///
/// Kept to measure how often the printed algorithm disagrees with the consistent model of
/// [`parm_times`]; when `costs.saa` is `None`, `(alpha_o, beta_o)` is taken as the
/// EP&ESP-AlltoAll's.
///
/// # Errors
///
/// As [`ParmLayer::volumes`] and [`ParmCollectiveCosts::validate`];
/// [`InputError::NonFinite`] if a time overflows `f64`.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::*;
/// use comm_cost_model::AlphaBeta;
/// let layer = ParmLayer { p: 4, n_mp: 2, n_ep: 2, n_esp: 2, b: 1, l: 8, m: 4, h: 4,
///     e: 2, k: 1, f: 1.0, bytes_per_element: 1.0 };
/// let costs = ParmCollectiveCosts::uniform(AlphaBeta::new(1.0, 0.5)?);
/// assert_eq!(algorithm1_as_printed(&layer, &costs)?, Schedule::S1);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn algorithm1_as_printed(
    layer: &ParmLayer,
    costs: &ParmCollectiveCosts,
) -> Result<Schedule, InputError> {
    costs.validate()?;
    let v = layer.volumes()?;
    let m = layer.m as f64;
    let x = layer.bytes(v.blm_elements);
    // Printed line 2 multiplies T by M once more.
    let y = layer.bytes(v.y_elements * m);
    let mp = layer.n_mp as f64;
    let overlap = costs.saa.unwrap_or(costs.a2a_ep_esp);
    let t_d1 = 2.0 * costs.a2a_ep_esp.time_s(y / mp) + costs.ag_mp.time_s(x);
    let t_d2 = costs.a2a_ep_esp.time_s(y / mp) + overlap.time_s(y);
    // Comparing two infinities would pick S1 for no reason.
    check_finite_result("Algorithm 1 t_D1 (s)", t_d1)?;
    check_finite_result("Algorithm 1 t_D2 (s)", t_d2)?;
    Ok(if t_d1 <= t_d2 {
        Schedule::S1
    } else {
        Schedule::S2
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::*;
    use crate::parm::{Testbed, check_claims, table3_layers};
    use proptest::prelude::*;

    #[test]
    fn costs_built_without_the_constructor_are_checked() {
        let ok = AlphaBeta::new(1e-4, 1e-10).unwrap();
        let mut costs = ParmCollectiveCosts::uniform(ok);
        costs.saa = Some(AlphaBeta {
            alpha_s: -1.0,
            beta_s_per_byte: 1e-10,
        });
        assert!(matches!(
            parm_times(&layer(2, 2), &costs),
            Err(InputError::Negative {
                what: "alpha (s)",
                ..
            })
        ));
        costs.saa = None;
        costs.ag_mp.beta_s_per_byte = f64::NAN;
        assert!(matches!(
            parm_times(&layer(2, 2), &costs),
            Err(InputError::NonFinite { .. })
        ));
    }

    fn layer(n_mp: usize, n_esp: usize) -> ParmLayer {
        ParmLayer {
            p: 8,
            n_mp,
            n_ep: 8 / n_esp,
            n_esp,
            b: 2,
            l: 16,
            m: 8,
            h: 8,
            e: 8 / n_esp,
            k: 2,
            f: 1.0,
            bytes_per_element: 2.0,
        }
    }

    #[test]
    fn n_mp_one_makes_s1_equal_s2() {
        // N_MP = 1: t_D = 2 A2A_EP&ESP(E T M N_ESP) for both (Eq. 2).
        // BLM = 256 elements; ETM = k f B L M = 512; y = 1024 elements = 2048 bytes.
        let costs = ParmCollectiveCosts::uniform(AlphaBeta::new(1e-3, 1e-6).unwrap());
        let t = parm_times(&layer(1, 2), &costs).unwrap();
        let a2a = 1e-3 + 1e-6 * 2048.0;
        assert!((t.s1.total_s - 2.0 * a2a).abs() < 1e-15);
        assert_eq!(t.s1.total_s, t.s2.total_s);
        assert_eq!(t.s1.ag_mp_s, 0.0);
        // Baseline: AG_ESP(BLM N_ESP = 1024 B) + AR_ESP(2048 B) + 2 A2A_EP(2048 B).
        let expected = (1e-3 + 1e-6 * 1024.0) + a2a + 2.0 * a2a;
        assert!((t.baseline.total_s - expected).abs() < 1e-15);
    }

    #[test]
    fn invalid_layers_are_rejected() {
        let costs = ParmCollectiveCosts::uniform(AlphaBeta::new(0.0, 1.0).unwrap());
        let mut bad = layer(2, 2);
        bad.n_ep = 3;
        assert!(parm_times(&bad, &costs).is_err());
        let mut bad = layer(3, 2);
        bad.n_mp = 3;
        assert!(parm_times(&bad, &costs).is_err());
        let mut bad = layer(2, 2);
        bad.f = f64::NAN;
        assert!(parm_times(&bad, &costs).is_err());
        let mut bad = layer(2, 2);
        bad.bytes_per_element = 0.0;
        assert!(parm_times(&bad, &costs).is_err());
    }

    #[test]
    fn table3_claims_hold_except_documented() {
        // docs/reproduction.md `## Parm`: S2 <= baseline and the N_MP = 1 claim hold on all
        // 11664 configurations; S1 > baseline on 15 small testbed-A layers.
        let a = check_claims(&Testbed::parm_testbed_a(), &table3_layers(8, 4.0)).unwrap();
        assert_eq!(
            (a.s2_slower_than_baseline, a.nmp1_slower_than_baseline),
            (0, 0)
        );
        assert_eq!(a.s1_slower_than_baseline, 15);
        for p in [8, 16, 32] {
            let b = check_claims(&Testbed::parm_testbed_b(), &table3_layers(p, 4.0)).unwrap();
            assert_eq!(b.s2_slower_than_baseline + b.nmp1_slower_than_baseline, 0);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Collective costs and schedule times never fall when the size grows or the bandwidth
        /// shrinks.
        #[test]
        fn costs_are_monotone(
            bytes in 0.0f64..1e9, grow in 1.0f64..10.0, bw in 1e8f64..1e11, slow in 1.0f64..10.0,
            n in 1usize..16, x in 1usize..8, y in 1usize..8,
        ) {
            let fast = AlphaBeta::from_latency_bandwidth(1e-5, bw).unwrap();
            let slower = AlphaBeta::from_latency_bandwidth(1e-5, bw / slow).unwrap();
            for f in [ring_all_gather_time_s, ring_all_reduce_time_s, pairwise_all_to_all_time_s, flat_all_to_all_time_s] {
                let t = f(bytes, n, &fast).unwrap();
                prop_assert!(f(bytes * grow, n, &fast).unwrap() >= t);
                prop_assert!(f(bytes, n, &slower).unwrap() >= t);
            }
            let g = TwoTierGrid::new(x, y, bw * 4.0, bw).unwrap();
            let gs = TwoTierGrid::new(x, y, bw * 4.0 / slow, bw / slow).unwrap();
            for f in [hierarchical_all_gather_time_s, full_bisection_all_to_all_time_s, rail_only_all_to_all_time_s] {
                let t = f(bytes, &g).unwrap();
                prop_assert!(f(bytes * grow, &g).unwrap() >= t);
                prop_assert!(f(bytes, &gs).unwrap() >= t);
            }
            let costs = ParmCollectiveCosts::uniform(fast);
            let slow_costs = ParmCollectiveCosts::uniform(slower);
            let base = parm_times(&layer(2, 2), &costs).unwrap();
            let mut big = layer(2, 2);
            big.b *= 2;
            let bigger = parm_times(&big, &costs).unwrap();
            prop_assert!(bigger.baseline.total_s >= base.baseline.total_s);
            prop_assert!(bigger.parm_s >= base.parm_s);
            prop_assert!(parm_times(&layer(2, 2), &slow_costs).unwrap().parm_s >= base.parm_s);
        }
    }
}
