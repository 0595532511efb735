//! The iteration-time model of the rail-only paper (§5, Eq. 2–7), every term exposed.
//!
//! `T_iter = T_bubble + T_LS + T_sync` (Eq. 2) with
//!
//! * `T_bubble^comp = (p - 1) t(b) / v` (Eq. 3);
//! * `T_bubble^comm = 2 (p_l - 1) D_p / C_S + 2 p_l (p_h - 1) D_p / C_F`, `D_p = 2 b h s / t`
//!   (Eq. 4);
//! * `T_LS^comp = m t(b)` (Eq. 5);
//! * `T_LS^comm = 8 l m AGtime(2 b h s, t_h, t_l) / p + 2 m v D_p / C_*` (Eq. 6), `C_* = C_S` when
//!   the pipeline crosses the network (`p_l > 1`), else `C_F`; this crate drops the pipeline term
//!   when `p = 1` (there is no neighbour stage to talk to);
//! * `T_sync = 2 AGtime(2 l S_T / (p t), d_h, d_l)` (Eq. 7);
//! * plus `latency_s` per communication step on the critical path (ring steps of every
//!   collective and every point-to-point message), 0 in the presets, as the paper mentions
//!   propagation delay without giving it.
//!
//! `AGtime` is [`comm_cost_model::collectives::hierarchical_all_gather_time_s`] (Eq. 1) and
//! `t(b) = (M_FF + γ M_Attn) b / (F p t)` (Appendix B, Eq. 10) uses
//! [`ComputeModel`].

use serde::{Deserialize, Serialize};

use crate::compute::ComputeModel;
use crate::error::RailNetworkError;
use crate::model::GptModel;
use crate::parallel::Parallelization;
use crate::system::SystemSpec;
use comm_cost_model::collectives::{TwoTierGrid, hierarchical_all_gather_time_s};
use comm_cost_model::units::{Bytes, Seconds};
use comm_cost_model::{InputError, check_positive};

/// Every term of Eq. 2–7 for one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IterationTerms {
    /// Compute time of one micro-batch, forward and backward, `t(b)`.
    pub microbatch_compute_s: Seconds,
    /// Micro-batches per iteration `m`.
    pub micro_batches: u64,
    /// Pipeline fill and drain compute (Eq. 3).
    pub bubble_compute_s: Seconds,
    /// Pipeline fill and drain communication (Eq. 4).
    pub bubble_comm_s: Seconds,
    /// Last-stage compute (Eq. 5).
    pub last_stage_compute_s: Seconds,
    /// Last-stage tensor-parallel AllGather/ReduceScatter (Eq. 6, first term).
    pub last_stage_tp_comm_s: Seconds,
    /// Last-stage pipeline point-to-point (Eq. 6, second term).
    pub last_stage_pp_comm_s: Seconds,
    /// Data-parallel parameter synchronization (Eq. 7).
    pub sync_s: Seconds,
    /// Latency of all communication steps on the critical path.
    pub latency_s: Seconds,
    /// The sum: the iteration time (Eq. 2).
    pub iteration_time_s: Seconds,
}

/// A model, system and compute assumptions prepared for many evaluations.
///
/// Construction validates the three inputs and precomputes FLOPs; [`Self::evaluate`] then only
/// validates the parallelization and runs `O(1)` arithmetic without allocating.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterationModel {
    model: GptModel,
    system: SystemSpec,
    compute: ComputeModel,
    /// Seconds of compute per sequence on one GPU (before dividing by `p t`).
    seconds_per_sequence: Seconds,
}

impl IterationModel {
    /// Validates and prepares.
    ///
    /// # Errors
    ///
    /// An invalid model, system or compute model; [`RailNetworkError::Input`] (`NonFinite`)
    /// when the compute time of one sequence overflows `f64` (a huge model on a subnormal GPU
    /// speed).
    ///
    /// # Complexity
    ///
    /// `O(1)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::{compute::ComputeModel, iteration::IterationModel};
    /// use rail_network::{model::model_preset, system::system_preset};
    /// let im = IterationModel::new(model_preset("gpt-1t")?, system_preset("gh200")?, ComputeModel::paper())?;
    /// assert_eq!(im.system().hb_domain, 256);
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn new(
        model: GptModel,
        system: SystemSpec,
        compute: ComputeModel,
    ) -> Result<Self, RailNetworkError> {
        model.validate()?;
        system.validate()?;
        compute.validate()?;
        let (gemm, attention) = compute.weighted_flops_per_sequence(&model)?;
        let rate = compute.effective_flop_per_s(system.peak_flop_per_s, model.hidden)?;
        // Huge models on a subnormal GPU speed overflow; every finite time is positive.
        let seconds_per_sequence = check_positive(
            "compute time of one sequence (s)",
            (gemm + attention) / rate,
        )?;
        Ok(Self {
            model,
            system,
            compute,
            seconds_per_sequence,
        })
    }

    /// The model.
    #[must_use]
    pub fn model(&self) -> &GptModel {
        &self.model
    }

    /// The system.
    #[must_use]
    pub fn system(&self) -> &SystemSpec {
        &self.system
    }

    /// The compute assumptions.
    #[must_use]
    pub fn compute(&self) -> &ComputeModel {
        &self.compute
    }

    /// Iteration time of `par` with every term (Eq. 2–7).
    ///
    /// # Errors
    ///
    /// The first constraint of Eq. 11–18 that `par` violates (see
    /// [`Parallelization::validate`]); memory (Eq. 19) is not checked here.
    /// [`RailNetworkError::Input`] (`NonFinite`) if the iteration time is not finite (extreme
    /// sizes or bandwidths overflow `f64`), (`NotPositive`) if it underflows to zero.
    ///
    /// # Complexity
    ///
    /// `O(1)` time, no allocation.
    ///
    /// # Examples
    ///
    /// ```
    /// use rail_network::{compute::ComputeModel, iteration::IterationModel};
    /// use rail_network::{model::model_preset, parallel::Parallelization, system::system_preset};
    /// // GPT-1T on 512 A100s (Korthikanti et al. Table 5 measured 71.49 s).
    /// let im = IterationModel::new(model_preset("gpt-1t")?, system_preset("dgx-a100")?, ComputeModel::paper())?;
    /// let par = Parallelization::with_default_mapping(8, 64, 1, 1, 512, 1, 8)?;
    /// let terms = im.evaluate(&par)?;
    /// assert!((terms.iteration_time_s / 71.49 - 1.0).abs() < 0.1);
    /// assert_eq!(terms.sync_s, 0.0); // d = 1: nothing to synchronize
    /// # Ok::<(), rail_network::RailNetworkError>(())
    /// ```
    pub fn evaluate(&self, par: &Parallelization) -> Result<IterationTerms, RailNetworkError> {
        par.validate(&self.model, par.gpus(), self.system.hb_domain)?;
        let terms = self.evaluate_unchecked(par);
        check_iteration_time(terms.iteration_time_s)?;
        Ok(terms)
    }

    /// Eq. 2–7 without validation; callers guarantee `par` passed [`Parallelization::validate`].
    pub(crate) fn evaluate_unchecked(&self, par: &Parallelization) -> IterationTerms {
        let sys = &self.system;
        let (c_f, c_s) = (sys.hb_bytes_per_s, sys.network_bytes_per_s);
        let (h, s, l) = (
            self.model.hidden as f64,
            self.model.seq_len as f64,
            self.model.layers as f64,
        );
        let (t, p, v, b) = (
            par.tp as f64,
            par.pp as f64,
            par.interleave as f64,
            par.micro_batch as f64,
        );
        let (t_l, p_l, d_l) = par.network_parts();
        let m_count = par.micro_batches();
        let m = m_count as f64;
        let t_b = self.seconds_per_sequence * b / (p * t);
        let d_p: Bytes = 2.0 * b * h * s / t;

        let bubble_compute_s = (p - 1.0) * t_b / v;
        let (pl, ph) = (p_l as f64, par.pp_hb as f64);
        let bubble_comm_s = 2.0 * (pl - 1.0) * d_p / c_s + 2.0 * pl * (ph - 1.0) * d_p / c_f;
        let last_stage_compute_s = m * t_b;
        let tp_grid = grid(par.tp_hb, t_l, sys);
        let last_stage_tp_comm_s = 8.0 * l * m * ag_time(2.0 * b * h * s, &tp_grid) / p;
        let c_star = if p_l > 1 { c_s } else { c_f };
        let last_stage_pp_comm_s = if par.pp > 1 {
            2.0 * m * v * d_p / c_star
        } else {
            0.0
        };
        let dp_grid = grid(par.dp_hb, d_l, sys);
        let sync_bytes = 2.0 * l * self.model.params_per_layer() / (p * t);
        let sync_s = 2.0 * ag_time(sync_bytes, &dp_grid);
        let latency_s = sys.latency_s * latency_steps(par, l, m, t_l, d_l);
        let iteration_time_s = bubble_compute_s
            + bubble_comm_s
            + last_stage_compute_s
            + last_stage_tp_comm_s
            + last_stage_pp_comm_s
            + sync_s
            + latency_s;
        IterationTerms {
            microbatch_compute_s: t_b,
            micro_batches: m_count,
            bubble_compute_s,
            bubble_comm_s,
            last_stage_compute_s,
            last_stage_tp_comm_s,
            last_stage_pp_comm_s,
            sync_s,
            latency_s,
            iteration_time_s,
        }
    }
}

/// An iteration time is usable when it is finite and positive: every term is non-negative, so a
/// finite total means finite terms (NaN fails too), and the last-stage compute is positive, so
/// a zero total can only be an underflow.
pub(crate) fn check_iteration_time(seconds: Seconds) -> Result<Seconds, InputError> {
    check_positive("iteration time (s)", seconds)
}

fn grid(x: u64, y: u64, sys: &SystemSpec) -> TwoTierGrid {
    TwoTierGrid {
        // A size above `usize` makes the grid invalid, so its time infinite (never ranked).
        x: usize::try_from(x.max(1)).unwrap_or(usize::MAX),
        y: usize::try_from(y.max(1)).unwrap_or(usize::MAX),
        hb_bytes_per_s: sys.hb_bytes_per_s,
        network_bytes_per_s: sys.network_bytes_per_s,
    }
}

/// `AGtime` of Eq. 1; inputs are validated upstream, so an error cannot occur and would be
/// reported as an infinitely slow collective rather than a panic.
fn ag_time(bytes: Bytes, grid: &TwoTierGrid) -> Seconds {
    hierarchical_all_gather_time_s(bytes, grid).unwrap_or(f64::INFINITY)
}

/// Communication steps on the critical path: ring steps of every collective, one per message.
fn latency_steps(par: &Parallelization, l: f64, m: f64, t_l: u64, d_l: u64) -> f64 {
    let ring = |x: u64, y: u64| (x.saturating_sub(1) + y.saturating_sub(1)) as f64;
    let p = par.pp as f64;
    let bubble = 2.0 * (p - 1.0);
    let tp = 8.0 * l * m / p * ring(par.tp_hb, t_l);
    let pp = if par.pp > 1 {
        2.0 * m * par.interleave as f64
    } else {
        0.0
    };
    bubble + tp + pp + 2.0 * ring(par.dp_hb, d_l)
}

/// Iteration time of `par` for `model` on `system` under `compute` (Eq. 2–7).
///
/// # Errors
///
/// As [`IterationModel::new`] and [`IterationModel::evaluate`].
///
/// # Complexity
///
/// `O(1)` time.
///
/// # Examples
///
/// ```
/// use rail_network::{compute::ComputeModel, iteration::iteration_time};
/// use rail_network::{model::model_preset, parallel::Parallelization, system::system_preset};
/// let par = Parallelization::with_default_mapping(8, 8, 1, 1, 64, 3, 8)?;
/// let t = iteration_time(&model_preset("gpt-175b")?, &system_preset("dgx-a100")?,
///                        &ComputeModel::paper(), &par)?;
/// assert!(t.iteration_time_s > 10.0 && t.iteration_time_s < 14.0);
/// # Ok::<(), rail_network::RailNetworkError>(())
/// ```
pub fn iteration_time(
    model: &GptModel,
    system: &SystemSpec,
    compute: &ComputeModel,
    par: &Parallelization,
) -> Result<IterationTerms, RailNetworkError> {
    IterationModel::new(*model, *system, *compute)?.evaluate(par)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::model_preset;
    use crate::system::system_preset;

    /// Terms of `model` on a DGX A100 cluster under the paper's assumptions.
    fn a100(model: &str, (t, p, d, b, batch, v): (u64, u64, u64, u64, u64, u64)) -> IterationTerms {
        let par = Parallelization::with_default_mapping(t, p, d, b, batch, v, 8).unwrap();
        let m = model_preset(model).unwrap();
        let sys = system_preset("dgx-a100").unwrap();
        iteration_time(&m, &sys, &ComputeModel::paper(), &par).unwrap()
    }

    #[test]
    fn gpt_22b_by_hand() {
        // GPT-22B on one DGX A100: t = 8, p = d = 1, B = b = 4, so m = 1 and only Eq. 5 and the
        // TP term of Eq. 6 are non-zero.
        let t = a100("gpt-22b", (8, 1, 1, 4, 4, 1));
        let (h, s, l, v) = (6144.0, 2048.0, 48.0, 51200.0);
        let u = 4.0 * s * l * h * h; // B s l h^2
        // Feed-forward: 48 u + 6 B s h V; attention block: 24 u + 24 u s / h, times 2.5.
        let ff = 48.0 * u + 6.0 * 4.0 * s * h * v;
        let attn = 24.0 * u + 24.0 * u * s / h;
        let compute = (ff + 2.5 * attn) / (312e12 * 8.0);
        assert!((t.last_stage_compute_s / compute - 1.0).abs() < 1e-12);
        // AGtime(2 b h s, 8, 1) = 7/8 * D / C_F, 8 l of them.
        let ag = 7.0 / 8.0 * (2.0 * 4.0 * h * s) / 600e9;
        assert!((t.last_stage_tp_comm_s / (8.0 * l * ag) - 1.0).abs() < 1e-12);
        assert_eq!(t.bubble_compute_s + t.bubble_comm_s + t.sync_s, 0.0);
        assert_eq!(t.last_stage_pp_comm_s, 0.0);
    }

    #[test]
    fn sync_matches_eq7_by_hand() {
        // GPT-530B on 2240 GPUs: d = 8 across the network, d_h = 1.
        let t = a100("gpt-530b", (8, 35, 8, 1, 2240, 3));
        let h: f64 = 20480.0;
        let dd = 2.0 * 105.0 * (12.0 * h * h + 13.0 * h) / (35.0 * 8.0);
        let expected = 2.0 * 7.0 / 8.0 * dd / 25e9;
        assert!((t.sync_s / expected - 1.0).abs() < 1e-12);
    }

    #[test]
    fn latency_adds_a_term() {
        let m = model_preset("gpt-175b").unwrap();
        let mut sys = system_preset("dgx-a100").unwrap();
        let par = Parallelization::with_default_mapping(8, 8, 1, 1, 64, 3, 8).unwrap();
        let base = iteration_time(&m, &sys, &ComputeModel::paper(), &par).unwrap();
        sys.latency_s = 5e-6;
        let slow = iteration_time(&m, &sys, &ComputeModel::paper(), &par).unwrap();
        assert_eq!(base.latency_s, 0.0);
        assert!(slow.latency_s > 0.0);
        assert!((slow.iteration_time_s - base.iteration_time_s - slow.latency_s).abs() < 1e-9);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            #[test]
            fn more_hb_bandwidth_never_slows(scale in 1.0f64..16.0, pp_exp in 0u32..4, dp_exp in 0u32..3) {
                let m = model_preset("gpt-175b").unwrap();
                let mut sys = system_preset("dgx-a100").unwrap();
                let (pp, dp) = (1u64 << pp_exp, 1u64 << dp_exp);
                let par = Parallelization::with_default_mapping(8, pp, dp, 1, 64 * dp, 1, 8).unwrap();
                let base = iteration_time(&m, &sys, &ComputeModel::paper(), &par).unwrap();
                sys.hb_bytes_per_s *= scale;
                let fast = iteration_time(&m, &sys, &ComputeModel::paper(), &par).unwrap();
                prop_assert!(fast.iteration_time_s <= base.iteration_time_s * (1.0 + 1e-12));
            }
        }
    }
}
