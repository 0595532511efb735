//! A fewest-move rebalance that also respects a cap on the number of moves (what a serving
//! engine can afford to copy between two batches).

use crate::error::PlacementError;
use crate::model::{LayerLoads, PlacementCluster};
use crate::options::PlacementOptions;
use crate::plan::Placement;
use crate::rebalance::{Rebalance, rebalance_with};

/// [`rebalance_with`] with at most `max_moves` expert copies: the lowest maximum load its
/// trade-off reaches within the cap, with the fewest moves.
///
/// Without a cap, or when the rebalance already moves at most `max_moves`, this is
/// [`rebalance_with`] with `options`. Otherwise the rebalance's trade-off names the lowest maximum GPU load found
/// with at most `max_moves` moves; the rebalance is run again with the tolerance that makes
/// that load its target. If that plan still moves more (the two runs' search paths differ),
/// the current placement is kept (zero moves), unless it has two replicas of one expert on a
/// GPU, in which case the second plan is returned: removing a duplicate is the one reason the
/// answer may exceed the cap.
///
/// # Errors
///
/// Those of [`rebalance_with`].
///
/// # Complexity
///
/// At most two runs of [`rebalance_with`].
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementCluster, PlacementOptions, rebalance_within};
///
/// let c = PlacementCluster::uniform(4, 2, 1)?;
/// let current = [0, 1, 2, 3, 4, 5, 0, 1];
/// let hot = LayerLoads::new(vec![10.0, 10.0, 10.0, 10.0, 10.0, 90.0])?;
/// let o = PlacementOptions::default();
/// let free = rebalance_within(&current, &hot, &c, 0.0, None, &o)?;
/// let capped = rebalance_within(&current, &hot, &c, 0.0, Some(1), &o)?;
/// assert!(capped.moves <= 1 && capped.moves <= free.moves);
/// assert!(capped.placement.max_gpu_load >= free.placement.max_gpu_load);
/// assert_eq!(rebalance_within(&current, &hot, &c, 0.0, Some(0), &o)?.moves, 0);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn rebalance_within(
    current: &[usize],
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    tolerance: f64,
    max_moves: Option<usize>,
    options: &PlacementOptions,
) -> Result<Rebalance, PlacementError> {
    let first = rebalance_with(current, loads, cluster, tolerance, options)?;
    let Some(cap) = max_moves else {
        return Ok(first);
    };
    if first.moves <= cap {
        return Ok(first);
    }
    let within = first
        .tradeoff
        .iter()
        .filter(|p| p.moves <= cap)
        .map(|p| p.max_gpu_load)
        .fold(f64::INFINITY, f64::min);
    let second = if within.is_finite() && first.best_max_gpu_load > 0.0 {
        let relaxed = (within / first.best_max_gpu_load - 1.0).max(tolerance);
        let again = rebalance_with(current, loads, cluster, relaxed, options)?;
        if again.moves <= cap {
            return Ok(again);
        }
        again
    } else {
        first
    };
    let kept = Placement::evaluate(loads, cluster, current.to_vec())?;
    if kept.duplicates_on_gpu > 0 {
        return Ok(second);
    }
    Ok(Rebalance {
        placement: kept,
        moves: 0,
        moves_proved_fewest: true,
        transfers: Vec::new(),
        ..second
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_respected_on_a_drifted_layer() {
        let c = PlacementCluster::uniform(8, 3, 1).unwrap();
        let experts = 16_u32;
        let old = LayerLoads::new((0..experts).map(|e| 1.0 + f64::from(e)).collect()).unwrap();
        let current = crate::place(&old, &c, crate::PlacementAlgorithm::Optimal)
            .unwrap()
            .physical_to_logical;
        let new = LayerLoads::new((0..experts).map(|e| 17.0 - f64::from(e)).collect()).unwrap();
        let o = PlacementOptions::default();
        let free = rebalance_within(&current, &new, &c, 0.0, None, &o).unwrap();
        for cap in 0..=free.moves {
            let r = rebalance_within(&current, &new, &c, 0.0, Some(cap), &o).unwrap();
            assert!(r.moves <= cap, "cap {cap}: {} moves", r.moves);
            assert_eq!(r.transfers.len(), r.moves);
            assert_eq!(r.placement.duplicates_on_gpu, 0);
        }
    }
}
