//! Alpha-beta fits of collective measurements (Parm, Pan et al., §V-A).
//!
//! # Examples
//!
//! ```
//! use moe_planner::comm_cost_model::fit::Sample;
//! use moe_planner::fitting::{plan_fit, FitSpec};
//! // 10 us start-up, 10 GB/s.
//! let samples = [1e6, 4e6, 16e6].map(|bytes| Sample { bytes, seconds: 1e-5 + bytes / 1e10 });
//! let fit = plan_fit(&FitSpec { samples: samples.to_vec() })?;
//! assert!((fit.bandwidth_bytes_per_s / 1e10 - 1.0).abs() < 1e-9);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use comm_cost_model::fit::{Sample, least_squares};
use comm_cost_model::units::Seconds;
use serde::{Deserialize, Serialize};

use crate::PlanError;

/// Measurements of one collective: (bytes, seconds) samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitSpec {
    /// The samples, in any order.
    pub samples: Vec<Sample>,
}

/// A least-squares alpha-beta fit of (bytes, seconds) measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitPlan {
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

/// Fits `t = alpha + beta * bytes` to measurements by least squares (Parm §V-A).
///
/// # Errors
///
/// [`PlanError::Cost`] as [`comm_cost_model::fit::least_squares`]: fewer than two distinct
/// sizes, negative or non-finite values, a negative fitted alpha or beta.
///
/// # Complexity
///
/// O(samples).
///
/// # Examples
///
/// ```
/// use moe_planner::comm_cost_model::{fit::Sample, CostModelError};
/// use moe_planner::fitting::{plan_fit, FitSpec};
/// use moe_planner::PlanError;
/// let one_size = FitSpec { samples: vec![Sample { bytes: 1e6, seconds: 1e-4 }; 3] };
/// assert!(matches!(plan_fit(&one_size), Err(PlanError::Cost(CostModelError::Degenerate { .. }))));
/// ```
pub fn plan_fit(spec: &FitSpec) -> Result<FitPlan, PlanError> {
    let fit = least_squares(&spec.samples)?;
    Ok(FitPlan {
        alpha_s: fit.alpha_s,
        beta_s_per_byte: fit.beta_s_per_byte,
        r_squared: fit.r_squared,
        bandwidth_bytes_per_s: 1.0 / fit.beta_s_per_byte,
        samples: spec.samples.len(),
        max_abs_residual_s: fit.max_abs_residual_s(),
    })
}
