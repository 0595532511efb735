//! Training planner: which Parm schedule an MoE layer should run, and alpha-beta fits of
//! collective measurements (Parm, Pan et al., §IV–V).
//!
//! # Examples
//!
//! ```
//! use moe_planner::comm_cost_model::AlphaBeta;
//! use moe_planner::comm_cost_model::parm::{ParmCollectiveCosts, ParmLayer};
//! use moe_planner::training::{plan_layer, ParmLayerSpec};
//! let spec = ParmLayerSpec {
//!     layer: ParmLayer { p: 8, n_mp: 2, n_ep: 4, n_esp: 2, b: 4, l: 1024, m: 2048, h: 4096,
//!         e: 4, k: 2, f: 1.2, bytes_per_element: 4.0 },
//!     costs: ParmCollectiveCosts::uniform(AlphaBeta::new(1e-4, 1.0 / 10e9)?),
//! };
//! let plan = plan_layer(&spec)?;
//! assert!(plan.baseline_s >= plan.s2_s);
//! # Ok::<(), moe_planner::comm_cost_model::CostModelError>(())
//! ```

use comm_cost_model::CostModelError;
use comm_cost_model::fit::{Sample, least_squares};
use comm_cost_model::parm::{ParmCollectiveCosts, ParmLayer, ParmTimes, Schedule, parm_times};
use comm_cost_model::units::Seconds;
use serde::{Deserialize, Serialize};

/// A Parm MoE layer and the alpha-beta cost of each collective (per byte of the argument Parm
/// writes for it; see `docs/cli.md` `## train`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParmLayerSpec {
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
    /// `"S1"` or `"S2"` (Algorithm 1).
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
/// # Errors
///
/// [`CostModelError`] for an invalid layer or cost.
pub fn plan_layer(spec: &ParmLayerSpec) -> Result<TrainingPlan, CostModelError> {
    let costs = &spec.costs;
    for ab in [
        costs.ag_esp,
        costs.ar_esp,
        costs.a2a_ep,
        costs.a2a_ep_esp,
        costs.ag_mp,
    ]
    .iter()
    .chain(costs.saa.iter())
    {
        comm_cost_model::AlphaBeta::new(ab.alpha_s, ab.beta_s_per_byte)?;
    }
    let t = parm_times(&spec.layer, costs)?;
    Ok(TrainingPlan {
        choice: t.choice,
        baseline_s: t.baseline.total_s,
        s1_s: t.s1.total_s,
        s2_s: t.s2.total_s,
        speedup: if t.parm_s > 0.0 {
            t.baseline.total_s / t.parm_s
        } else {
            1.0
        },
        details: t,
    })
}

/// A least-squares alpha-beta fit of (bytes, seconds) measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    /// Start-up time, seconds.
    pub alpha_s: Seconds,
    /// Inverse bandwidth, seconds per byte.
    pub beta_s_per_byte: f64,
    /// Coefficient of determination.
    pub r_squared: f64,
    /// Bandwidth `1 / beta`, bytes per second (infinite when `beta = 0`, serialized as null).
    pub bandwidth_bytes_per_s: f64,
    /// Number of samples.
    pub samples: usize,
    /// Largest absolute residual, seconds.
    pub max_abs_residual_s: Seconds,
}

/// Fits `t = alpha + beta * bytes` to measurements (Parm §V-A).
///
/// # Errors
///
/// As [`comm_cost_model::fit::least_squares`].
pub fn fit_measurements(samples: &[Sample]) -> Result<FitReport, CostModelError> {
    let fit = least_squares(samples)?;
    Ok(FitReport {
        alpha_s: fit.alpha_s,
        beta_s_per_byte: fit.beta_s_per_byte,
        r_squared: fit.r_squared,
        bandwidth_bytes_per_s: 1.0 / fit.beta_s_per_byte,
        samples: samples.len(),
        max_abs_residual_s: fit
            .residuals_s
            .iter()
            .fold(0.0, |m, r| f64::max(m, r.abs())),
    })
}
