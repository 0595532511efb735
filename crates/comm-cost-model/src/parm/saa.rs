//! The SAA schedule: a P-way AlltoAll overlapped with an N_MP-way AllGather (Parm §III-D,
//! Fig. 5), phase by phase, with separate intra- and inter-node bandwidths.
//!
//! GPUs are ranked consecutively, `gpus_per_node` per node, and MP groups are consecutive blocks
//! of `n_mp` ranks inside a node. Phase `j = 0..=P`:
//!
//! * AlltoAll part (`1 <= j < P`): every GPU `i` receives its slice from GPU `(i - j) mod P` and
//!   sends one to `(i + j) mod P`; phase 0 is the local slice and moves nothing over a link.
//! * AllGather part (`1 <= j <= P`): the slice received in phase `j - 1`, after the local ESP
//!   combine, is sent to the `n_mp - 1` other GPUs of the MP group, over the intra-node link.
//!
//! A phase ends when its slowest GPU is done; a GPU's intra-node and inter-node links work in
//! parallel, and transfers sharing a link add up. The time of the whole SAA is the sum of its
//! phases plus one start-up `alpha` (one fused collective launch).

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, BytesPerSecond, Seconds};
use crate::validate::check_count;
use crate::{InputError, check_non_negative, check_positive};

/// Sizes and hardware of one SAA.
///
/// Deserializes through [`SaaSpec::validate`]; the fields are public, so [`saa_phases`] and
/// [`saa_time_s`] check them again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SaaSpecFields")]
pub struct SaaSpec {
    /// GPUs in the AlltoAll (`P`).
    pub p: usize,
    /// GPUs in each MP AllGather (`N_MP`).
    pub n_mp: usize,
    /// GPUs per node.
    pub gpus_per_node: usize,
    /// AlltoAll buffer each GPU sends (and receives), bytes; `1/P` of it per peer.
    pub a2a_bytes_per_gpu: Bytes,
    /// Gathered size of the MP AllGather, bytes; each GPU contributes `1/N_MP` of it.
    pub ag_total_bytes: Bytes,
    /// Per-GPU intra-node bandwidth, bytes/s.
    pub intra_bytes_per_s: BytesPerSecond,
    /// Per-GPU inter-node bandwidth, bytes/s.
    pub inter_bytes_per_s: BytesPerSecond,
    /// Start-up time of the fused collective, seconds.
    pub alpha_s: Seconds,
}

deserialize_validated!(
    SaaSpec,
    SaaSpecFields {
        p: usize,
        n_mp: usize,
        gpus_per_node: usize,
        a2a_bytes_per_gpu: Bytes,
        ag_total_bytes: Bytes,
        intra_bytes_per_s: BytesPerSecond,
        inter_bytes_per_s: BytesPerSecond,
        alpha_s: Seconds,
    }
);

impl SaaSpec {
    /// Checks the layout and the values.
    ///
    /// # Errors
    ///
    /// `CountTooSmall` for zero counts; [`InputError::SizeMismatch`] when the GPUs per
    /// node do not divide `P` or `N_MP` does not divide the GPUs per node; value errors for
    /// sizes, bandwidths and `alpha`.
    ///
    /// # Examples
    ///
    /// ```
    /// use comm_cost_model::parm::SaaSpec;
    /// let spec = SaaSpec { p: 8, n_mp: 2, gpus_per_node: 4, a2a_bytes_per_gpu: 8e6,
    ///     ag_total_bytes: 16e6, intra_bytes_per_s: 10e9, inter_bytes_per_s: 1e9, alpha_s: 0.0 };
    /// assert!(spec.validate().is_ok());
    /// assert!(SaaSpec { n_mp: 3, ..spec }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InputError> {
        check(self).map(|_| ())
    }
}

/// One phase of the SAA schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaaPhase {
    /// Phase index `j`.
    pub index: usize,
    /// The AlltoAll shift of this phase (receive from `i - j`), if it moves data over a link.
    pub a2a_shift: Option<usize>,
    /// GPUs whose AlltoAll peer of this phase is on their own node.
    pub gpus_with_intra_peer: usize,
    /// GPUs whose AlltoAll peer of this phase is on another node.
    pub gpus_with_inter_peer: usize,
    /// Bytes of the AlltoAll slice each GPU receives in this phase.
    pub a2a_slice_bytes: Bytes,
    /// Index of the AlltoAll slice the AllGather forwards in this phase, if any.
    pub ag_of_slice: Option<usize>,
    /// AllGather bytes each GPU receives in this phase (from its `n_mp - 1` MP peers).
    pub ag_bytes_per_gpu: Bytes,
    /// Duration of the phase (bandwidth only), seconds.
    pub time_s: Seconds,
}

struct Checked {
    p: usize,
    g: usize,
    slice: f64,
    ag: f64,
    cf: f64,
    cs: f64,
}

/// Largest `P` [`saa_phases`] lists phases for: it returns `P + 1` phases and counts peers in
/// `O(P^2)` (16.8 M steps at this limit). `P = 2^53` used to abort on allocation (issue 13).
/// [`saa_time_s`] is closed-form and has no such limit.
pub const MAX_SAA_PHASE_GPUS: usize = 1 << 12;

fn check(spec: &SaaSpec) -> Result<Checked, InputError> {
    let p = check_count("AlltoAll GPUs (P)", spec.p, 1)?;
    let n_mp = check_count("MP group (N_MP)", spec.n_mp, 1)?;
    let g = check_count("GPUs per node", spec.gpus_per_node, 1)?.min(p);
    let mismatch = |what, expected: usize, actual: usize| InputError::SizeMismatch {
        what,
        expected: expected as u64,
        actual: actual as u64,
    };
    if p % g != 0 {
        return Err(mismatch("GPUs per node must divide P (P mod g)", 0, p % g));
    }
    if n_mp > g || g % n_mp != 0 {
        return Err(mismatch("N_MP must divide the GPUs per node", g, n_mp));
    }
    let a2a = check_non_negative("AlltoAll bytes per GPU", spec.a2a_bytes_per_gpu)?;
    let ag_total = check_non_negative("AllGather bytes", spec.ag_total_bytes)?;
    let cf = check_positive("intra-node bandwidth (bytes/s)", spec.intra_bytes_per_s)?;
    let cs = check_positive("inter-node bandwidth (bytes/s)", spec.inter_bytes_per_s)?;
    check_non_negative("alpha (s)", spec.alpha_s)?;
    Ok(Checked {
        p,
        g,
        slice: a2a / p as f64,
        // In floating point: `n_mp * p` can exceed `usize` (issue 13).
        ag: ag_total / (n_mp as f64 * p as f64) * (n_mp - 1) as f64,
        cf,
        cs,
    })
}

impl Checked {
    /// Whether some GPU has an intra-node / inter-node peer at shift `j` (`1 <= j < P`).
    fn peer_kinds(&self, j: usize) -> (bool, bool) {
        if self.p == self.g {
            return (true, false);
        }
        // Derived in docs/algorithms.md: a same-node peer exists iff j < g or j > P - g; with two
        // or more nodes a remote peer exists at every shift.
        (j < self.g || j > self.p - self.g, true)
    }

    fn phase_time(&self, j: usize) -> Seconds {
        if j == 0 {
            return 0.0;
        }
        if j == self.p {
            return self.ag / self.cf;
        }
        let (intra, inter) = self.peer_kinds(j);
        let mut t: f64 = 0.0;
        if intra {
            t = t.max((self.slice + self.ag) / self.cf);
        }
        if inter {
            t = t.max(self.ag / self.cf).max(self.slice / self.cs);
        }
        t
    }

    /// `(sum of phases 1..P-1, phase P)` in closed form: each distinct phase time is computed
    /// once, with the same operations as `phase_time`, and multiplied by its count.
    ///
    /// Shifts `1..g-1` and `P-g+1..P-1` are mixed (some GPUs have a same-node peer, which adds
    /// the AllGather slice to their intra-node link); `g..=P-g` are inter-only (`peer_kinds`).
    fn phase_sums_s(&self) -> (Seconds, Seconds) {
        let ag_s = self.ag / self.cf; // phase P, and the AllGather part of every other phase
        if self.p == 1 {
            return (0.0, ag_s);
        }
        let shared_s = (self.slice + self.ag) / self.cf; // slice and AllGather on one link
        if self.p == self.g {
            return ((self.p - 1) as f64 * shared_s, ag_s);
        }
        let inter_s = ag_s.max(self.slice / self.cs);
        let mixed_s = if self.g > 1 {
            shared_s.max(inter_s)
        } else {
            inter_s // no mixed shift exists; its count below is 0
        };
        let mixed = 2 * (self.g - 1);
        let inter_only = self.p - 1 - mixed;
        (mixed as f64 * mixed_s + inter_only as f64 * inter_s, ag_s)
    }
}

/// The phase-by-phase SAA schedule (Parm Fig. 5), with each phase's transfers and duration.
///
/// # Errors
///
/// As [`SaaSpec::validate`]; [`InputError::TooLarge`] when `P` exceeds
/// [`MAX_SAA_PHASE_GPUS`]; [`InputError::NonFinite`] when the time overflows `f64`.
///
/// # Complexity
///
/// `O(P^2)` time (peers are counted GPU by GPU), `O(P)` space.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::{saa_phases, SaaSpec};
/// // Fig. 5: 4-way AlltoAll, 2-way AllGather, all 4 GPUs on one node.
/// let spec = SaaSpec { p: 4, n_mp: 2, gpus_per_node: 4, a2a_bytes_per_gpu: 4e6,
///     ag_total_bytes: 8e6, intra_bytes_per_s: 1e9, inter_bytes_per_s: 1e9, alpha_s: 0.0 };
/// let phases = saa_phases(&spec)?;
/// assert_eq!(phases.len(), 5);
/// assert_eq!(phases[1].ag_of_slice, Some(0)); // phase 1 gathers what phase 0 received
/// // Phase 1: 1 MB AlltoAll slice + 1 MB AllGather slice over one 1 GB/s link = 2 ms.
/// assert!((phases[1].time_s - 2e-3).abs() < 1e-12);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn saa_phases(spec: &SaaSpec) -> Result<Vec<SaaPhase>, InputError> {
    let c = check(spec)?;
    if c.p > MAX_SAA_PHASE_GPUS {
        return Err(InputError::TooLarge {
            what: "AlltoAll GPUs (P) listed phase by phase",
            limit: MAX_SAA_PHASE_GPUS as u64,
            value: c.p as u64,
        });
    }
    let node = |i: usize| i / c.g;
    let phases = (0..=c.p)
        .map(|j| {
            let moves = (1..c.p).contains(&j);
            let intra = if moves {
                (0..c.p)
                    .filter(|&i| node(i) == node((i + c.p - j) % c.p))
                    .count()
            } else {
                0
            };
            SaaPhase {
                index: j,
                a2a_shift: moves.then_some(j),
                gpus_with_intra_peer: intra,
                gpus_with_inter_peer: if moves { c.p - intra } else { 0 },
                a2a_slice_bytes: if moves { c.slice } else { 0.0 },
                ag_of_slice: (j >= 1 && c.ag > 0.0).then(|| j - 1),
                ag_bytes_per_gpu: if j >= 1 { c.ag } else { 0.0 },
                time_s: c.phase_time(j),
            }
        })
        .collect::<Vec<SaaPhase>>();
    // Phase times are non-negative: a finite sum means finite phases.
    let total: f64 = phases.iter().map(|p| p.time_s).sum();
    crate::check_finite_result("SAA time (s)", total)?;
    Ok(phases)
}

/// Time of the SAA collective: `alpha` plus the sum of its phases (closed form, no allocation).
///
/// # Errors
///
/// As [`SaaSpec::validate`]; [`InputError::NonFinite`] when the time overflows `f64`.
///
/// # Complexity
///
/// `O(1)` time: phases fall into three classes (mixed, inter-only, AllGather-only) of known counts.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::{saa_phases, saa_time_s, SaaSpec};
/// let spec = SaaSpec { p: 8, n_mp: 2, gpus_per_node: 4, a2a_bytes_per_gpu: 8e6,
///     ag_total_bytes: 16e6, intra_bytes_per_s: 10e9, inter_bytes_per_s: 1e9, alpha_s: 1e-4 };
/// let sum: f64 = saa_phases(&spec)?.iter().map(|p| p.time_s).sum();
/// assert!((saa_time_s(&spec)? - (1e-4 + sum)).abs() < 1e-15);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn saa_time_s(spec: &SaaSpec) -> Result<Seconds, InputError> {
    let (body, last) = check(spec)?.phase_sums_s();
    crate::check_finite_result("SAA time (s)", spec.alpha_s + body + last)
}

/// Time of the SAA collective without phase barriers (issue 21's decision): the AlltoAll's
/// transfers are all posted at once, as a plain AlltoAll's are, and each slice is all-gathered
/// as soon as it arrives, so every link carries its total load once and only the last slice's
/// AllGather trails the AlltoAll:
/// `alpha + max(((g-1) s + P a) / C_intra, (P-g) s / C_inter + a / C_intra)` for slices `s`
/// of the AlltoAll and per-phase AllGather bytes `a`.
///
/// The phase-by-phase model ([`saa_time_s`], Fig. 5 as drawn) charges every phase its slowest
/// GPU, so a phase in which any GPU talks across nodes costs a full inter-node slice; the plain
/// AlltoAll it is compared with (rail-only App. D Eq. 20) runs intra- and inter-node traffic
/// concurrently. Comparing the two made S2 with SAA slower than the plain sequence on 323 of
/// 648 testbed-B layers at 8 GPUs, against Parm's Eq. 7. Modelled like the plain AlltoAll,
/// SAA is never slower than the AlltoAll followed by the AllGather (one start-up instead of
/// two; a test checks it on every Table III layer).
///
/// # Errors
///
/// As [`SaaSpec::validate`]; [`InputError::NonFinite`] when the time overflows `f64`.
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use comm_cost_model::parm::{saa_pipelined_time_s, saa_time_s, SaaSpec};
/// // 8 GPUs in 2 nodes: 1 MB AlltoAll slices and 1 MB of AllGather per GPU and phase.
/// let spec = SaaSpec { p: 8, n_mp: 2, gpus_per_node: 4, a2a_bytes_per_gpu: 8e6,
///     ag_total_bytes: 16e6, intra_bytes_per_s: 10e9, inter_bytes_per_s: 1e9, alpha_s: 0.0 };
/// // Intra: (3 x 1 MB + 8 x 1 MB) / 10 GB/s = 1.1 ms; inter: 4 MB / 1 GB/s + 1 MB / 10 GB/s.
/// assert!((saa_pipelined_time_s(&spec)? - 4.1e-3).abs() < 1e-12);
/// assert!(saa_pipelined_time_s(&spec)? < saa_time_s(&spec)?);
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
pub fn saa_pipelined_time_s(spec: &SaaSpec) -> Result<Seconds, InputError> {
    let c = check(spec)?;
    let (p, g) = (c.p as f64, c.g as f64);
    let intra = ((g - 1.0) * c.slice + p * c.ag) / c.cf;
    let inter = if c.p == c.g {
        0.0
    } else {
        (p - g) * c.slice / c.cs + c.ag / c.cf
    };
    crate::check_finite_result("SAA time (s)", spec.alpha_s + intra.max(inter))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec(p: usize, n_mp: usize, g: usize) -> SaaSpec {
        SaaSpec {
            p,
            n_mp,
            gpus_per_node: g,
            a2a_bytes_per_gpu: 1e6 * p as f64,
            ag_total_bytes: 3e6 * p as f64,
            intra_bytes_per_s: 8e9,
            inter_bytes_per_s: 2e9,
            alpha_s: 0.0,
        }
    }

    #[test]
    fn two_nodes_hand_computed() {
        // P = 4, g = 2, N_MP = 2: slice = 1 MB, AG per phase = 3*4 MB / (2*4) * 1 = 1.5 MB.
        // Shift 1: GPUs 1, 3 have intra peers ((2.5 MB)/8 GB/s = 0.3125 ms), GPUs 0, 2 remote
        // (max(1.5/8, 1/2) ms = 0.5 ms) -> 0.5 ms. Shift 2: all remote -> 0.5 ms.
        // Shift 3: GPUs 0, 2 intra -> 0.5 ms. Phase 4: 1.5 MB / 8 GB/s = 0.1875 ms.
        let phases = saa_phases(&spec(4, 2, 2)).unwrap();
        assert_eq!(phases[1].gpus_with_intra_peer, 2);
        assert_eq!(phases[2].gpus_with_intra_peer, 0);
        let total: f64 = phases.iter().map(|p| p.time_s).sum();
        assert!((total - (1.5e-3 + 0.1875e-3)).abs() < 1e-15);
        assert!((saa_time_s(&spec(4, 2, 2)).unwrap() - total).abs() < 1e-15);
    }

    /// Issue 13: `P = 2^53` aborted allocating its phase list; the closed form still works.
    #[test]
    fn huge_p_lists_no_phases_but_has_a_time() {
        let huge = spec(1 << 53, 2, 1 << 20);
        assert!(matches!(
            saa_phases(&huge),
            Err(InputError::TooLarge { .. })
        ));
        assert!(saa_time_s(&huge).unwrap().is_finite());
        let wide = spec(usize::MAX, 1, 1);
        assert!(saa_time_s(&wide).unwrap().is_finite());
    }

    #[test]
    fn rejects_bad_layouts() {
        assert!(saa_time_s(&spec(6, 2, 4)).is_err());
        assert!(saa_time_s(&spec(8, 3, 4)).is_err());
        let mut s = spec(8, 2, 4);
        s.inter_bytes_per_s = 0.0;
        assert!(saa_time_s(&s).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The closed form equals the phase list; SAA is never slower than running the
        /// phase-wise AlltoAll and then the AllGather (AAS), and never faster than either alone.
        #[test]
        fn closed_form_matches_phases(nodes in 1usize..5, g_pow in 0u32..4, mp_pow in 0u32..3) {
            let g = 1usize << g_pow;
            let n_mp = 1usize << mp_pow.min(g_pow);
            let s = spec(g * nodes, n_mp, g);
            let sum: f64 = saa_phases(&s).unwrap().iter().map(|p| p.time_s).sum();
            let t = saa_time_s(&s).unwrap();
            prop_assert!((t - sum).abs() <= 1e-12 * t.max(1e-12));
            let a2a_only = saa_time_s(&SaaSpec { ag_total_bytes: 0.0, ..s }).unwrap();
            let ag_only = s.ag_total_bytes * (n_mp - 1) as f64 / n_mp as f64 / s.intra_bytes_per_s;
            prop_assert!(t <= a2a_only + ag_only + 1e-12);
            prop_assert!(t + 1e-12 >= a2a_only.max(ag_only));
        }
    }
}
