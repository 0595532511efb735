//! The load-oblivious baseline: a plan's replicas in a seeded random order.

use comm_cost_model::seeded_rng;
use rand::seq::SliceRandom;

use crate::error::PlacementError;
use crate::model::{LayerLoads, PlacementCluster};
use crate::plan::Placement;

/// A load-oblivious replica placement: the replicas of `placement` (same replica counts) put in
/// the cluster's slots in a seeded random order, the "random placement" baseline for many experts
/// per GPU (Aurora §8.1's RGA with replicas).
///
/// Two replicas of one expert may land on one GPU (counted in
/// [`Placement::duplicates_on_gpu`]).
///
/// # Errors
///
/// Those of [`Placement::evaluate`] when `placement` was made for another cluster or
/// expert count.
///
/// # Complexity
///
/// `O(R)` for the shuffle plus [`Placement::evaluate`].
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, place, random_slot_placement};
/// let c = PlacementCluster::uniform(4, 2, 1)?;
/// let w = LayerLoads::new(vec![8.0, 4.0, 2.0, 1.0, 1.0, 1.0])?;
/// let best = place(&w, &c, PlacementAlgorithm::Optimal)?;
/// let random = random_slot_placement(&w, &c, &best, 7)?;
/// assert_eq!(random.replica_count, best.replica_count);
/// assert!(random.max_gpu_load >= best.max_gpu_load);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn random_slot_placement(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    placement: &Placement,
    seed: u64,
) -> Result<Placement, PlacementError> {
    let mut map = placement.physical_to_logical.clone();
    map.shuffle(&mut seeded_rng(seed, 3));
    Placement::evaluate(loads, cluster, map)
}
