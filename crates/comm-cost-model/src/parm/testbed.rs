//! Parm's two testbeds as two-tier bandwidth models, Table III's configurations, and a check of
//! the paper's claims over all of them.
//!
//! The paper publishes fitted constants only for the MP-AllGather (§VI-B). To give every other
//! collective a cost we build a two-tier model of each testbed (assumptions, also in
//! `docs/algorithms.md`):
//!
//! * every collective pays the start-up `alpha` of the published MP-AllGather fit;
//! * the published `beta` (s per element) is read as the per-GPU intra-node cost of receiving
//!   one element, so the intra-node bandwidth is `bytes_per_element / beta`;
//! * testbed B's inter-node bandwidth is its 100 Gb/s NIC shared by the node's 4 GPUs;
//! * ranks are consecutive per node; MP and ESP groups are consecutive blocks (inside a node),
//!   EP groups take every `N_ESP`-th rank, and the EP&ESP-AlltoAll spans all `P` GPUs;
//! * AllGather = rail-only Eq. 1 (`AGtime`), AllReduce = twice its bandwidth term, AlltoAll =
//!   concurrent intra/inter transfers (`max` of the two, App. D Eq. 20), SAA = the same
//!   concurrent model of the overlapped collective, [`saa_pipelined_time_s`] (issue 21: the
//!   phase-by-phase [`super::saa_time_s`] against a concurrent AlltoAll compared two different
//!   transport models and made S2 slower than the plain sequence on half of testbed B's
//!   8-GPU layers).

use serde::{Deserialize, Serialize};

use super::layer::{ParmLayer, ParmVolumes};
use super::saa::{SaaSpec, saa_pipelined_time_s};
use super::schedules::{ParmCollectiveCosts, ParmTimes, Schedule, checked_times_from};
use crate::collectives::TwoTierGrid;
use crate::units::{BytesPerSecond, Seconds, gbps};
use crate::validate::check_count;
use crate::{AlphaBeta, InputError, check_non_negative, check_positive};

/// A cluster of identical nodes, described by what Parm §VI publishes about it.
///
/// Deserializes through [`Testbed::validate`]; the fields are public, so every function
/// taking a testbed checks it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TestbedFields")]
pub struct Testbed {
    /// Name for reports.
    pub name: String,
    /// GPUs per node.
    pub gpus_per_node: usize,
    /// Start-up time of every collective, seconds.
    pub alpha_s: Seconds,
    /// Intra-node time per element received by one GPU, seconds (the MP-AllGather `beta`).
    pub intra_s_per_element: f64,
    /// Per-GPU inter-node bandwidth, bytes/s (unused on a single node).
    pub inter_bytes_per_s: BytesPerSecond,
    /// Bytes of one element for the fitted constants.
    pub bytes_per_element: f64,
}

deserialize_validated!(
    Testbed,
    TestbedFields {
        name: String,
        gpus_per_node: usize,
        alpha_s: Seconds,
        intra_s_per_element: f64,
        inter_bytes_per_s: BytesPerSecond,
        bytes_per_element: f64,
    }
);

impl Testbed {
    /// Checks the constants: at least one GPU per node, a finite non-negative `alpha`, a
    /// positive element size and intra-node cost whose bandwidth is finite, and a finite
    /// non-negative inter-node bandwidth (it must be positive only where a group spans nodes,
    /// which [`Testbed::collective_costs`] checks).
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] for no GPUs per node; `NonFinite`/`Negative`/
    /// `NotPositive` naming the bad constant.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::parm::Testbed;
    /// assert!(Testbed::parm_testbed_b().validate().is_ok());
    /// let broken = Testbed { intra_s_per_element: 0.0, ..Testbed::parm_testbed_a() };
    /// assert!(broken.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        self.constants().map(|_| ())
    }

    /// `(alpha, GPUs per node, intra-node bandwidth)`, with every constant checked.
    fn constants(&self) -> Result<(Seconds, usize, BytesPerSecond), InputError> {
        let gpus_per_node = check_count("testbed GPUs per node", self.gpus_per_node, 1)?;
        let bytes_per_element =
            check_positive("testbed bytes per element", self.bytes_per_element)?;
        let intra_s = check_positive("testbed intra-node s/element", self.intra_s_per_element)?;
        let alpha_s = check_non_negative("testbed alpha (s)", self.alpha_s)?;
        let intra = check_positive(
            "HB-domain bandwidth C_F (bytes/s)",
            bytes_per_element / intra_s,
        )?;
        check_non_negative("network bandwidth C_S (bytes/s)", self.inter_bytes_per_s)?;
        Ok((alpha_s, gpus_per_node, intra))
    }

    /// Testbed A: one server with 8 RTX 4090 on PCIe 4.0; `alpha = 6.64e-4 s`,
    /// `beta = 5.38e-10 s/element` (Parm §VI-B), fp32 elements.
    #[must_use]
    pub fn parm_testbed_a() -> Self {
        Self {
            name: "A (8x RTX4090, 1 node)".into(),
            gpus_per_node: 8,
            alpha_s: 6.64e-4,
            intra_s_per_element: 5.38e-10,
            inter_bytes_per_s: gbps(100.0) / 8.0,
            bytes_per_element: 4.0,
        }
    }

    /// Testbed B: 8 nodes of 4 RTX 2080Ti (PCIe 3.0) with one 100 Gb/s ConnectX-5 each;
    /// `alpha = 1.09e-4 s`, `beta = 7.14e-10 s/element` (Parm §VI-B), fp32 elements.
    #[must_use]
    pub fn parm_testbed_b() -> Self {
        Self {
            name: "B (8 nodes x 4 RTX2080Ti, 100 Gb/s)".into(),
            gpus_per_node: 4,
            alpha_s: 1.09e-4,
            intra_s_per_element: 7.14e-10,
            inter_bytes_per_s: gbps(100.0) / 4.0,
            bytes_per_element: 4.0,
        }
    }

    /// The testbed's constants, checked once per call so the per-collective code below can
    /// skip re-validating them.
    fn links(&self, p: usize) -> Result<Links, InputError> {
        let (alpha_s, gpus_per_node, intra) = self.constants()?;
        // `p >= 1`: the layer was validated first.
        let g = gpus_per_node.min(p).max(1);
        if p % g != 0 {
            return Err(InputError::SizeMismatch {
                what: "GPUs per node must divide P (P mod g)",
                expected: 0,
                actual: (p % g) as u64,
            });
        }
        // Only groups spanning several nodes use the NIC, and those exist iff P > g.
        let inter = if p > g {
            check_positive("network bandwidth C_S (bytes/s)", self.inter_bytes_per_s)?
        } else {
            intra
        };
        Ok(Links {
            alpha_s,
            g,
            intra_bytes_per_s: intra,
            inter_bytes_per_s: inter,
        })
    }

    /// Alpha-beta costs of every collective of `layer` on this testbed.
    ///
    /// # Errors
    ///
    /// The layer's validation errors ([`ParmLayer::volumes`]); [`Testbed::validate`]'s errors;
    /// [`InputError::SizeMismatch`] when the GPUs per node do not divide `P`;
    /// [`InputError::NotPositive`] for a zero inter-node bandwidth on several nodes.
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::parm::{ParmLayer, Testbed};
    /// let layer = ParmLayer { p: 8, n_mp: 2, n_ep: 4, n_esp: 2, b: 4, l: 1024, m: 2048,
    ///     h: 4096, e: 4, k: 1, f: 1.2, bytes_per_element: 4.0 };
    /// let costs = Testbed::parm_testbed_a().collective_costs(&layer)?;
    /// // MP-AllGather over 2 GPUs: alpha + (1/2) x / (4 B / 5.38e-10 s).
    /// assert!((costs.ag_mp.beta_s_per_byte - 0.5 * 5.38e-10 / 4.0).abs() < 1e-22);
    /// # Ok::<(), comm_cost_model::InputError>(())
    /// ```
    pub fn collective_costs(&self, layer: &ParmLayer) -> Result<ParmCollectiveCosts, InputError> {
        Ok(self.volumes_and_costs(layer)?.1)
    }

    /// Baseline, S1, S2 and Algorithm 1's choice for `layer` on this testbed.
    ///
    /// # Errors
    ///
    /// As [`Testbed::collective_costs`]; [`InputError::NonFinite`] when a time overflows
    /// `f64`.
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::parm::{ParmLayer, Testbed};
    /// let layer = ParmLayer { p: 16, n_mp: 2, n_ep: 8, n_esp: 2, b: 4, l: 1024, m: 2048,
    ///     h: 4096, e: 8, k: 2, f: 1.2, bytes_per_element: 4.0 };
    /// let t = Testbed::parm_testbed_b().times(&layer)?;
    /// assert!(t.parm_s <= t.baseline.total_s);
    /// # Ok::<(), comm_cost_model::InputError>(())
    /// ```
    pub fn times(&self, layer: &ParmLayer) -> Result<ParmTimes, InputError> {
        let (v, costs) = self.volumes_and_costs(layer)?;
        checked_times_from(layer, &v, &costs)
    }

    /// The layer's volumes and collective costs, validating the layer and the testbed once
    /// each, so that [`Testbed::times`] and [`check_claims`] need not have `parm_times`
    /// validate the layer again.
    fn volumes_and_costs(
        &self,
        layer: &ParmLayer,
    ) -> Result<(ParmVolumes, ParmCollectiveCosts), InputError> {
        let v = layer.volumes()?;
        let costs = self.links(layer.p)?.costs(layer, &v)?;
        Ok((v, costs))
    }
}

/// A testbed's constants checked for a cluster of `P` GPUs, so that the per-collective code
/// below needs no further validation.
#[derive(Debug, Clone, Copy)]
struct Links {
    /// Start-up time of every collective, seconds.
    alpha_s: Seconds,
    /// GPUs per node, at most `P` and at least 1; divides `P`.
    g: usize,
    /// Per-GPU intra-node bandwidth, bytes/s (positive, finite).
    intra_bytes_per_s: BytesPerSecond,
    /// Per-GPU inter-node bandwidth, bytes/s (positive, finite; the intra-node one on a single
    /// node, where it is never used).
    inter_bytes_per_s: BytesPerSecond,
}

impl Links {
    /// The `(GPUs per node, nodes)` shape of a group of `size` ranks taken every `stride`-th
    /// rank, with the bandwidths it communicates over.
    fn grid(&self, size: usize, stride: usize) -> TwoTierGrid {
        let span = size * stride; // consecutive ranks the group spreads over
        let (local, nodes) = if span <= self.g {
            (size, 1)
        } else {
            let local = (self.g / stride).max(1);
            (local, size.div_ceil(local))
        };
        // Both counts are at least 1 and both bandwidths were checked by `Testbed::links`.
        TwoTierGrid {
            x: local,
            y: nodes,
            hb_bytes_per_s: self.intra_bytes_per_s,
            network_bytes_per_s: if nodes > 1 {
                self.inter_bytes_per_s
            } else {
                self.intra_bytes_per_s
            },
        }
    }

    /// MP/ESP-AllGather per gathered byte: the bandwidth term of
    /// [`hierarchical_all_gather_time_s`]`(1.0, grid)`, written out (same operations, same
    /// bits; tested) because the grid needs no re-validation here.
    ///
    /// [`hierarchical_all_gather_time_s`]: crate::collectives::hierarchical_all_gather_time_s
    fn all_gather(&self, grid: &TwoTierGrid) -> Result<AlphaBeta, InputError> {
        let (x, y) = (grid.x as f64, grid.y as f64);
        let beta =
            (y - 1.0) / (x * y * grid.network_bytes_per_s) + (x - 1.0) / (x * grid.hb_bytes_per_s);
        AlphaBeta::new(self.alpha_s, beta)
    }

    /// AlltoAll per byte of each GPU's send buffer: [`full_bisection_all_to_all_time_s`] of
    /// one `1/n` shard, written out like [`Links::all_gather`].
    ///
    /// [`full_bisection_all_to_all_time_s`]: crate::collectives::full_bisection_all_to_all_time_s
    fn all_to_all(&self, grid: &TwoTierGrid) -> Result<AlphaBeta, InputError> {
        let (x, y) = (grid.x as f64, grid.y as f64);
        let shard = 1.0 / (grid.x * grid.y) as f64;
        let hb = (x - 1.0) * shard / grid.hb_bytes_per_s;
        let net = x * (y - 1.0) * shard / grid.network_bytes_per_s;
        AlphaBeta::new(self.alpha_s, hb.max(net))
    }

    /// [`Testbed::collective_costs`] of a validated layer with volumes `v`.
    fn costs(&self, layer: &ParmLayer, v: &ParmVolumes) -> Result<ParmCollectiveCosts, InputError> {
        let p = layer.p;
        let all = self.grid(p, 1);
        let ag_esp = self.all_gather(&self.grid(layer.n_esp, 1))?;
        let ar_esp = AlphaBeta::new(self.alpha_s, 2.0 * ag_esp.beta_s_per_byte)?;
        // SAA on this layer's sizes; linear in them, so one (alpha_o, beta_o) pair is exact.
        let a2a_bytes = layer.bytes(v.y_elements / layer.n_mp as f64);
        let saa_s = saa_pipelined_time_s(&SaaSpec {
            p,
            n_mp: layer.n_mp,
            gpus_per_node: self.g,
            a2a_bytes_per_gpu: a2a_bytes,
            ag_total_bytes: layer.bytes(v.etm_elements),
            intra_bytes_per_s: all.hb_bytes_per_s,
            inter_bytes_per_s: all.network_bytes_per_s,
            alpha_s: 0.0,
        })?;
        Ok(ParmCollectiveCosts {
            ag_esp,
            ar_esp,
            a2a_ep: self.all_to_all(&self.grid(layer.n_ep, layer.n_esp))?,
            a2a_ep_esp: self.all_to_all(&all)?,
            ag_mp: self.all_gather(&self.grid(layer.n_mp, 1))?,
            saa: Some(AlphaBeta::new(self.alpha_s, saa_s / a2a_bytes)?),
        })
    }
}

/// Every Table III configuration for `P` GPUs: `N_MP, N_ESP ∈ {1,2,4}`, `B ∈ {2,4,8}`,
/// `L ∈ {512,1024,2048}`, `H/N_ESP, M/N_ESP ∈ {1024,2048,4096}`, `f ∈ {1.2,2.4}`, `k ∈ {1,2}`,
/// with `E = N_EP = P / N_ESP` (one expert per EP rank; `E` cancels out of every volume).
///
/// Only valid layers are listed ([`ParmLayer::validate`]): for a `P` that `N_MP` or `N_ESP`
/// does not divide, or with `E < k`, those configurations are left out (they used to be listed
/// and made [`check_claims`] fail), and a bad `bytes_per_element` leaves none.
///
/// # Complexity
///
/// `O(1)` time per `P`: at most 2916 layers.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::table3_layers;
/// assert_eq!(table3_layers(8, 4.0).len(), 3 * 3 * 3 * 3 * 3 * 3 * 2 * 2);
/// ```
#[must_use]
pub fn table3_layers(p: usize, bytes_per_element: f64) -> Vec<ParmLayer> {
    let mut out = Vec::with_capacity(2916);
    for n_mp in [1, 2, 4] {
        for n_esp in [1, 2, 4] {
            for b in [2, 4, 8] {
                for l in [512, 1024, 2048] {
                    for h in [1024, 2048, 4096] {
                        for m in [1024, 2048, 4096] {
                            for f in [1.2, 2.4] {
                                for k in [1, 2] {
                                    let layer = ParmLayer {
                                        p,
                                        n_mp,
                                        n_ep: p / n_esp,
                                        n_esp,
                                        b,
                                        l,
                                        m: m * n_esp,
                                        h: h * n_esp,
                                        e: p / n_esp,
                                        k,
                                        f,
                                        bytes_per_element,
                                    };
                                    if layer.validate().is_ok() {
                                        out.push(layer);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// A configuration where one of Parm's claims fails inside the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counterexample {
    /// Which claim fails.
    pub claim: String,
    /// The layer.
    pub layer: ParmLayer,
    /// Its modelled times.
    pub times: ParmTimes,
}

/// Tally of Parm's claims over a set of layers on one testbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimReport {
    /// Layers evaluated.
    pub layers: usize,
    /// Layers where Algorithm 1 picks S1.
    pub s1_chosen: usize,
    /// Layers where Algorithm 1 picks S2.
    pub s2_chosen: usize,
    /// Violations of "S2 is never slower than the baseline" (Eq. 6 + Eq. 10).
    pub s2_slower_than_baseline: usize,
    /// Violations of "with `N_MP` = 1, S1 and S2 are never slower than the baseline" (Eq. 6).
    pub nmp1_slower_than_baseline: usize,
    /// Layers with `N_MP` > 1 where S1 is slower than the baseline (the paper observes none).
    pub s1_slower_than_baseline: usize,
    /// Layers where Algorithm 1 as printed picks the other schedule than the consistent model.
    pub printed_algorithm_disagrees: usize,
    /// The first counterexample of each failing claim.
    pub counterexamples: Vec<Counterexample>,
}

/// Evaluates every layer on `testbed` and counts where Parm's claims hold and fail.
///
/// # Errors
///
/// As [`Testbed::times`] for the first layer that fails.
///
/// # Complexity
///
/// `O(n)` time for n layers.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::{check_claims, table3_layers, Testbed};
/// let r = check_claims(&Testbed::parm_testbed_a(), &table3_layers(8, 4.0))?;
/// assert_eq!(r.layers, 2916);
/// assert_eq!(r.s1_chosen + r.s2_chosen, r.layers);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn check_claims(testbed: &Testbed, layers: &[ParmLayer]) -> Result<ClaimReport, InputError> {
    let mut r = ClaimReport {
        layers: layers.len(),
        s1_chosen: 0,
        s2_chosen: 0,
        s2_slower_than_baseline: 0,
        nmp1_slower_than_baseline: 0,
        s1_slower_than_baseline: 0,
        printed_algorithm_disagrees: 0,
        counterexamples: Vec::new(),
    };
    for layer in layers {
        let (v, costs) = testbed.volumes_and_costs(layer)?;
        // Checked: a counterexample must not carry an infinite time (issue 13).
        let t = checked_times_from(layer, &v, &costs)?;
        match t.choice {
            Schedule::S1 => r.s1_chosen += 1,
            Schedule::S2 => r.s2_chosen += 1,
        }
        if super::algorithm1_as_printed(layer, &costs)? != t.choice {
            r.printed_algorithm_disagrees += 1;
        }
        let base = t.baseline.total_s;
        let mut fail = |count: &mut usize, claim: &str| {
            if *count == 0 {
                r.counterexamples.push(Counterexample {
                    claim: claim.into(),
                    layer: *layer,
                    times: t,
                });
            }
            *count += 1;
        };
        if t.s2.total_s > base {
            fail(
                &mut r.s2_slower_than_baseline,
                "S2 never slower than baseline",
            );
        }
        if layer.n_mp == 1 && t.s1.total_s.max(t.s2.total_s) > base {
            fail(
                &mut r.nmp1_slower_than_baseline,
                "N_MP = 1: S1/S2 never slower",
            );
        }
        if layer.n_mp > 1 && t.s1.total_s > base {
            fail(
                &mut r.s1_slower_than_baseline,
                "S1 never slower than baseline",
            );
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {

    /// Parm's Eq. 7: S2 with SAA is never slower than the same collectives one after another,
    /// on every Table III layer of both testbeds (issue 21).
    #[test]
    fn s2_with_saa_is_never_slower_than_the_sequence() {
        let mut checked = 0;
        for (testbed, sizes) in [
            (Testbed::parm_testbed_a(), vec![8]),
            (Testbed::parm_testbed_b(), vec![8, 16, 32]),
        ] {
            for p in sizes {
                for layer in table3_layers(p, 4.0) {
                    let t = testbed.times(&layer).unwrap();
                    assert!(
                        t.s2.total_s <= t.s2.sequential_s * (1.0 + 1e-12),
                        "{layer:?}: S2 {} > sequential {}",
                        t.s2.total_s,
                        t.s2.sequential_s
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000);
    }
    use super::*;
    use crate::collectives::{full_bisection_all_to_all_time_s, hierarchical_all_gather_time_s};
    use crate::parm::parm_times;

    #[test]
    fn written_out_formulas_match_collectives_bit_for_bit() {
        let links = Links {
            alpha_s: 1e-4,
            g: 8,
            intra_bytes_per_s: 7.3e9,
            inter_bytes_per_s: 3.1e9,
        };
        for x in 1..=8 {
            for y in 1..=8 {
                let grid =
                    TwoTierGrid::new(x, y, 7.3e9, if y > 1 { 3.1e9 } else { 7.3e9 }).unwrap();
                let ag = hierarchical_all_gather_time_s(1.0, &grid).unwrap();
                let a2a = full_bisection_all_to_all_time_s(1.0 / (x * y) as f64, &grid).unwrap();
                assert_eq!(links.all_gather(&grid).unwrap().beta_s_per_byte, ag);
                assert_eq!(links.all_to_all(&grid).unwrap().beta_s_per_byte, a2a);
            }
        }
    }

    #[test]
    fn times_equal_parm_times_of_collective_costs() {
        // The validate-once path of `Testbed::times` against the public two-step API.
        for (testbed, p) in [
            (Testbed::parm_testbed_a(), 8),
            (Testbed::parm_testbed_b(), 16),
        ] {
            for layer in table3_layers(p, 4.0) {
                let costs = testbed.collective_costs(&layer).unwrap();
                assert_eq!(
                    testbed.times(&layer).unwrap(),
                    parm_times(&layer, &costs).unwrap()
                );
            }
        }
    }
}
