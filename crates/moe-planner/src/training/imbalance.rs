//! Expert imbalance per EP degree from per-expert loads: the one place the training planner
//! touches the placement planner.

use serde::{Deserialize, Serialize};

use crate::PlanError;
use crate::placement::{PlacementSpec, plan_placement};
use comm_cost_model::{InputError, check_count};

/// How the experts of one MoE layer are laid out on the EP ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpertLayout {
    /// `E / ep` consecutive experts per rank, as Megatron-LM and DeepEP place them.
    #[default]
    Contiguous,
    /// The placement planner's plan (`moe_planner::placement`), with `redundant` extra expert
    /// slots per rank (replicas of hot experts, EPLB's job).
    Planned {
        /// Extra expert slots per EP rank.
        redundant: usize,
    },
}

/// Busiest EP rank's load over the mean when the experts with `loads` are spread over `ep`
/// ranks by `layout` (1 = perfectly balanced).
///
/// # Errors
///
/// [`PlanError::Input`] for an empty load vector, a load that is negative or not finite, all
/// loads zero, or `ep` not dividing the experts; the placement planner's errors under
/// [`ExpertLayout::Planned`].
///
/// # Complexity
///
/// `O(E)` for the contiguous layout; the placement planner's cost otherwise.
///
/// # Examples
///
/// ```
/// use moe_planner::training::{expert_imbalance, ExpertLayout};
/// // Four experts on two ranks: loads 3+1 and 1+1, mean 3.
/// assert_eq!(expert_imbalance(&[3.0, 1.0, 1.0, 1.0], 2, ExpertLayout::Contiguous)?, 4.0 / 3.0);
/// // One replica slot per rank lets the planner split the hot expert.
/// let planned = expert_imbalance(&[3.0, 1.0, 1.0, 1.0], 2, ExpertLayout::Planned { redundant: 1 })?;
/// assert!(planned < 4.0 / 3.0);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn expert_imbalance(loads: &[f64], ep: usize, layout: ExpertLayout) -> Result<f64, PlanError> {
    check_count("expert loads", loads.len(), 1)?;
    check_count("ep", ep, 1)?;
    for &l in loads {
        comm_cost_model::check_non_negative("expert load", l)?;
    }
    let total: f64 = loads.iter().sum();
    comm_cost_model::check_positive("sum of expert loads", total)?;
    if loads.len() % ep != 0 {
        return Err(InputError::not_divisible(
            "ep must divide the experts with loads",
            loads.len(),
            ep,
        )
        .into());
    }
    let per = loads.len() / ep;
    match layout {
        ExpertLayout::Contiguous => {
            let busiest = loads
                .chunks(per)
                .map(|c| c.iter().sum::<f64>())
                .fold(0.0, f64::max);
            Ok(busiest / (total / ep as f64))
        }
        ExpertLayout::Planned { redundant } => {
            // A rank with a slot for every expert can take an even share of every load.
            let slots = per.saturating_add(redundant);
            if ep == 1 || slots >= loads.len() {
                return Ok(1.0);
            }
            let spec = PlacementSpec::new(vec![loads.to_vec()], ep, slots);
            let plan = plan_placement(&spec)?;
            let layer = plan
                .layers
                .first()
                .ok_or(PlanError::Input(InputError::Degenerate {
                    what: "the placement plan has no layer",
                }))?;
            if layer.mean_gpu_load > 0.0 {
                Ok((layer.max_gpu_load / layer.mean_gpu_load).max(1.0))
            } else {
                Ok(1.0)
            }
        }
    }
}

/// Per-expert loads drawn log-normal with `sigma` (mean 1, seeded; DeepEP PR 393 fits
/// DeepSeek-V3's per-rank loads this way), from the placement crate's workload generator.
///
/// # Errors
///
/// [`PlanError::Input`] for zero experts; [`PlanError::Placement`] for a `sigma` that is negative
/// or not finite, or more experts than the generator accepts.
///
/// # Complexity
///
/// `O(E)`.
///
/// # Examples
///
/// ```
/// use moe_planner::training::lognormal_expert_loads;
/// let a = lognormal_expert_loads(64, 1.0, 7)?;
/// assert_eq!(a.len(), 64);
/// assert_eq!(a, lognormal_expert_loads(64, 1.0, 7)?);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn lognormal_expert_loads(
    experts: usize,
    sigma: f64,
    seed: u64,
) -> Result<Vec<f64>, PlanError> {
    check_count("experts", experts, 1)?;
    // One layer of `E x 1024` tokens: rounding to whole tokens stays below 0.1% per expert.
    let tokens = experts as f64 * 1024.0;
    let mut layers = expert_placement::lognormal_loads(1, experts, sigma, tokens, seed)?;
    Ok(layers.pop().unwrap_or_default())
}

/// Per-expert loads of a Zipf distribution with exponent `s` (`1 / (i + 1)^s`), a synthetic
/// skew for studies without a measured `logical_count`, in popularity order: the hottest
/// experts are consecutive, the worst case for a contiguous layout (use
/// [`lognormal_expert_loads`] for experts in random order). The placement crate's generator
/// ([`expert_placement::zipf_shares`], unshuffled).
///
/// # Errors
///
/// [`PlanError::Placement`] for zero experts, more than the generator accepts, or an exponent
/// that is negative or not finite.
///
/// # Complexity
///
/// `O(E)`.
///
/// # Examples
///
/// ```
/// use moe_planner::training::zipf_loads;
/// assert_eq!(zipf_loads(3, 1.0)?, vec![1.0, 0.5, 1.0 / 3.0]);
/// # Ok::<(), moe_planner::PlanError>(())
/// ```
pub fn zipf_loads(experts: usize, exponent: f64) -> Result<Vec<f64>, PlanError> {
    Ok(expert_placement::zipf_shares(experts, exponent)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_flatten_log_normal_skew() {
        let loads = lognormal_expert_loads(256, 1.0, 3).unwrap();
        for ep in [1, 8, 32, 64, 256] {
            let contiguous = expert_imbalance(&loads, ep, ExpertLayout::Contiguous).unwrap();
            let planned =
                expert_imbalance(&loads, ep, ExpertLayout::Planned { redundant: 1 }).unwrap();
            assert!(contiguous >= 1.0 && planned >= 1.0, "ep {ep}");
            assert!(
                planned <= contiguous + 1e-12,
                "ep {ep}: {planned} > {contiguous}"
            );
        }
        assert_eq!(
            expert_imbalance(&loads, 1, ExpertLayout::Contiguous).unwrap(),
            1.0
        );
        assert!(expert_imbalance(&loads, 3, ExpertLayout::Contiguous).is_err());
        assert!(expert_imbalance(&[1.0, f64::NAN], 1, ExpertLayout::Contiguous).is_err());
        assert!(lognormal_expert_loads(8, -1.0, 0).is_err());
    }
}
