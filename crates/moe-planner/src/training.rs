//! Training planners: which Parm schedule an MoE layer should run (Parm, Pan et al., §IV–V,
//! Algorithm 1), and the end-to-end MoE training planner ([`plan_moe_training`]: every
//! mapping of a model on a cluster, its step time term by term, memory, the expert imbalance
//! from measured or synthetic loads, and the rail-only vs rail-optimized network question),
//! which composes [`rail_network::moe`] and the placement planner.
//!
//! # Examples
//!
//! ```
//! use moe_planner::comm_cost_model::AlphaBeta;
//! use moe_planner::comm_cost_model::parm::{ParmCollectiveCosts, ParmLayer};
//! use moe_planner::training::{plan_training, TrainingSpec};
//! let spec = TrainingSpec {
//!     layer: ParmLayer { p: 8, n_mp: 2, n_ep: 4, n_esp: 2, b: 4, l: 1024, m: 2048, h: 4096,
//!         e: 4, k: 2, f: 1.2, bytes_per_element: 4.0 },
//!     costs: ParmCollectiveCosts::uniform(AlphaBeta::new(1e-4, 1.0 / 10e9)?),
//! };
//! let plan = plan_training(&spec)?;
//! assert!(plan.baseline_s >= plan.s2_s);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use comm_cost_model::AlphaBeta;
use comm_cost_model::gpu_scaling::Collective;
use comm_cost_model::parm::{ParmCollectiveCosts, ParmLayer, ParmTimes, Schedule, parm_times};
use comm_cost_model::units::Seconds;
use serde::{Deserialize, Serialize};

use crate::PlanError;
use crate::fitting::CollectiveFitPlan;

mod end_to_end;
mod imbalance;

pub use end_to_end::{
    ExpertLoads, MoeModelRef, MoeTrainingPlan, MoeTrainingSpec, TrainingConfig, TrainingSystemRef,
    plan_moe_training, plan_moe_training_with_progress, resolve_model, resolve_system,
};
pub use imbalance::{ExpertLayout, expert_imbalance, lognormal_expert_loads, zipf_loads};

/// A Parm MoE layer and the alpha-beta cost of each collective (per byte of the argument Parm
/// writes for it; see `docs/cli.md` `## train`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingSpec {
    /// The layer (`p`, `n_mp`, `n_ep`, `n_esp`, `b`, `l`, `m`, `h`, `e`, `k`, `f`,
    /// `bytes_per_element`), flattened into the spec's top level.
    #[serde(flatten)]
    pub layer: ParmLayer,
    /// Alpha-beta cost of every collective.
    pub costs: ParmCollectiveCosts,
}

/// The schedule to run and the modelled communication time of each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingPlan {
    /// `"s1"` or `"s2"` (Algorithm 1).
    pub choice: Schedule,
    /// Baseline schedule time (Eq. 1), seconds.
    pub baseline_s: Seconds,
    /// S1 time (Eq. 11), seconds.
    pub s1_s: Seconds,
    /// S2 time with SAA (Eq. 7), seconds.
    pub s2_s: Seconds,
    /// Modelled speedup of the chosen schedule over the baseline.
    pub speedup: f64,
    /// Every term of every schedule.
    pub details: ParmTimes,
}

/// Plans one layer: baseline, S1 and S2 times and Algorithm 1's choice.
///
/// The costs are [`comm_cost_model::AlphaBeta`]s, validated when they are built or
/// deserialized; [`parm_times`] validates the layer.
///
/// # Errors
///
/// [`PlanError::Input`] for an invalid layer (zero counts, `N_EP N_ESP != P`, ...), or
/// `NonFinite` when a time or the speedup overflows `f64` (costs near `1e308`).
///
/// # Complexity
///
/// O(1).
pub fn plan_training(spec: &TrainingSpec) -> Result<TrainingPlan, PlanError> {
    let t = parm_times(&spec.layer, &spec.costs)?;
    Ok(TrainingPlan {
        choice: t.choice,
        baseline_s: t.baseline.total_s,
        s1_s: t.s1.total_s,
        s2_s: t.s2.total_s,
        // A ratio of two finite times can still overflow (1e308 s over 0.5 s).
        speedup: if t.parm_s > 0.0 {
            comm_cost_model::check_finite_result("speedup", t.baseline.total_s / t.parm_s)?
        } else {
            1.0
        },
        details: t,
    })
}

/// The largest-size segment of `collective` on exactly `gpus` GPUs; free on one GPU.
fn fitted_cost(
    fits: &CollectiveFitPlan,
    collective: Collective,
    gpus: usize,
) -> Result<AlphaBeta, PlanError> {
    if gpus <= 1 {
        return Ok(AlphaBeta::new(0.0, 0.0)?);
    }
    fits.get(collective, gpus as u64)?.largest()
}

/// Parm's collective costs from measured fits (`fit --json` output): ESP-AllGather and
/// ESP-AllReduce on `N_ESP` GPUs, EP-AlltoAll on `N_EP`, EP&ESP-AlltoAll on `P`, MP-AllGather
/// on `N_MP`, each the bandwidth-bound (largest-size) segment of the fit of that collective
/// and GPU count; a group of one GPU costs nothing; SAA overlap is ideal.
///
/// The fitted `beta` is per byte of the collective's size as nccl-tests counts it (gathered
/// size, reduced buffer, per-GPU send buffer), which is the argument Parm writes for each.
///
/// # Errors
///
/// [`PlanError::MissingField`] when the fits lack a (collective, GPU count) the layer needs;
/// [`PlanError::Input`] for a hand-edited fit with negative constants.
///
/// # Complexity
///
/// O(fits).
///
/// # Examples
///
/// ```
/// use moe_planner::comm_cost_model::gpu_scaling::Collective;
/// use moe_planner::comm_cost_model::parm::ParmLayer;
/// use moe_planner::fitting::{plan_collective_fits, CollectiveFitSpec, Measurement};
/// use moe_planner::training::parm_costs_from_fits;
/// let mut measurements = Vec::new();
/// for (collective, gpus) in [(Collective::AllGather, 2), (Collective::AllReduce, 2),
///     (Collective::AllToAll, 4), (Collective::AllToAll, 8)] {
///     for i in 0..8 {
///         let bytes = 1e6 * f64::powi(2.0, i);
///         measurements.push(Measurement { collective, gpus, bytes, seconds: 2e-5 + bytes / 1e11 });
///     }
/// }
/// let fits = plan_collective_fits(&CollectiveFitSpec { measurements, options: None })?;
/// let layer = ParmLayer { p: 8, n_mp: 2, n_ep: 4, n_esp: 2, b: 4, l: 1024, m: 2048, h: 4096,
///     e: 4, k: 2, f: 1.2, bytes_per_element: 4.0 };
/// let costs = parm_costs_from_fits(&fits, &layer)?;
/// assert!((costs.a2a_ep.bandwidth_bytes_per_s() / 1e11 - 1.0).abs() < 1e-6);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn parm_costs_from_fits(
    fits: &CollectiveFitPlan,
    layer: &ParmLayer,
) -> Result<ParmCollectiveCosts, PlanError> {
    Ok(ParmCollectiveCosts {
        ag_esp: fitted_cost(fits, Collective::AllGather, layer.n_esp)?,
        ar_esp: fitted_cost(fits, Collective::AllReduce, layer.n_esp)?,
        a2a_ep: fitted_cost(fits, Collective::AllToAll, layer.n_ep)?,
        a2a_ep_esp: fitted_cost(fits, Collective::AllToAll, layer.p)?,
        ag_mp: fitted_cost(fits, Collective::AllGather, layer.n_mp)?,
        saa: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::{AlphaBeta, InputError};

    fn spec(cost: AlphaBeta) -> TrainingSpec {
        TrainingSpec {
            layer: ParmLayer {
                p: 8,
                n_mp: 2,
                n_ep: 4,
                n_esp: 2,
                b: 4,
                l: 1024,
                m: 2048,
                h: 4096,
                e: 4,
                k: 2,
                f: 1.2,
                bytes_per_element: 4.0,
            },
            costs: ParmCollectiveCosts::uniform(cost),
        }
    }

    #[test]
    fn bad_layers_and_costs_are_cost_errors() {
        let ok = AlphaBeta::new(1e-4, 1e-10).unwrap();
        let plan = plan_training(&spec(ok)).unwrap();
        assert!(plan.speedup >= 1.0);
        // A cost written as a literal (or read from JSON) is checked by comm-cost-model.
        let negative = AlphaBeta {
            alpha_s: -1e-4,
            beta_s_per_byte: 1e-10,
        };
        assert!(matches!(
            plan_training(&spec(negative)),
            Err(PlanError::Input(InputError::Negative { .. }))
        ));
        let mut bad_layer = spec(ok);
        bad_layer.layer.n_ep = 3; // N_EP N_ESP != P
        assert!(matches!(
            plan_training(&bad_layer),
            Err(PlanError::Input(InputError::SizeMismatch { .. }))
        ));
    }
}
