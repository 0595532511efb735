//! A certified lower bound on the maximum GPU load of any placement.

use comm_cost_model::check_finite_result;

use crate::cardinality_bound::cardinality_bound;
use crate::error::PlacementError;
use crate::model::{LayerLoads, PlacementCluster};
use crate::partner_bound::partner_bound;
use crate::replicate::replicate;
use crate::target_partner_bound::target_partner_bound;

/// A lower bound on the maximum GPU load of every valid placement of `loads` on `cluster`
/// (every expert placed, never two replicas of one expert on a GPU: EPLB's duplicates split an
/// expert unevenly over GPUs and can go below it when speeds differ).
///
/// The largest of five relaxations:
///
/// * **average**: the total load over the total speed, `sum w_e / sum v_g` (some GPU carries at
///   least its share);
/// * **replication**: expert `e` with `c_e` replicas puts `w_e / c_e` on each of `c_e` distinct
///   GPUs, the slowest of which is no faster than the `c_e`-th fastest GPU `v_(c_e)`, so some GPU
///   carries at least `w_e / (c_e · v_(c_e)) >= w_e h(c_e)` with the nonincreasing
///   `h(c) = min_{k <= c} 1 / (k v_(k))`. The bound minimizes `max_e w_e h(c_e)` over all counts
///   with `1 <= c_e <= G` and `sum c_e = R`, which a greedy (next replica to the largest
///   `w_e h(c_e)`) does exactly, as for any separable min-max allocation with nonincreasing terms;
/// * **heavy replicas per GPU**: below a maximum load `T`, a GPU holds at most `k` replicas
///   heavier than `T / (k + 1)` (on the fastest GPU), so the replica counts must keep the heavy
///   replicas within `sum_g min(k, S_g)` while every replica stays under `T` and all fit in `R`
///   slots; the smallest `T` for which such counts exist (`k = 1, 2, 3`, a knapsack over the
///   class room, bisected on `T`) is a bound. It is what certifies hot experts on few slots:
///   two experts of 1000 among cold ones on 9 GPUs of 3 slots give 250 (the optimum is 250.33),
///   where the first two give 233;
/// * **partners**: the `c` GPUs hosting expert `e` each fill their other slots with other
///   experts' replicas, at least the `c (S_min - 1)`-th lightest the others' counts allow;
/// * **partners at a target**: the same, tested target by target with every count at least what
///   the target needs and every slot filled (so few spare slots keep the partners heavy), for the
///   heaviest experts alone and together (replicas above half the target never share a GPU),
///   bisected on `T`. It certifies the plans of few slots per expert (23 experts on 8 GPUs of 3
///   slots, one of them hot: 8,743 where the others give 7,611.5), and the 250.33 above.
///
/// Exact solvers ([`crate::PlacementAlgorithm::Exact`], and [`crate::PlacementAlgorithm::Optimal`]
/// on small instances) report their proved optimum instead.
///
/// # Errors
///
/// [`PlacementError::Input`] (`NonFinite`) when the bound overflows (loads near `f64::MAX` on
/// slow GPUs): every placement's maximum load would overflow too.
///
/// # Complexity
///
/// `O(G log G + R log E)` time for the first two, plus `O(E · G)` per bisection step (up to 80
/// per class) for the third; the last two only for `E · G <= 2^11`, the last cut at 500,000
/// elementary steps (a few milliseconds at most); `O(E · G)` space.
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementCluster, placement_lower_bound};
///
/// let c = PlacementCluster::uniform(8, 2, 1)?;
/// // Average 1450 / 8 = 181.25; the best split of 600 and 560 over 16 slots is 120 per replica;
/// // the partners that the hot replicas' GPUs must take raise it to 190 (the optimum is 590 / 3).
/// let w = LayerLoads::new(vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0])?;
/// let b = placement_lower_bound(&w, &c)?;
/// assert!((b - 190.0).abs() < 1e-6 && b <= 590.0 / 3.0);
/// // One hot expert on 8 single-slot GPUs: 3 slots go to the cold experts, so at most 5
/// // replicas of 1000 (the average is only 1003 / 8).
/// let c = PlacementCluster::uniform(8, 1, 1)?;
/// let w = LayerLoads::new(vec![1000.0, 1.0, 1.0, 1.0])?;
/// assert_eq!(placement_lower_bound(&w, &c)?, 200.0);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn placement_lower_bound(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
) -> Result<f64, PlacementError> {
    Ok(check_finite_result(
        "placement lower bound",
        lower_bound(loads, cluster),
    )?)
}

/// Relative width within which a plan has reached its lower bound (`bound-reached`): the bounds
/// found by bisection (the cardinality and target-tested partner bounds, the 2-slot count search)
/// stop this close below the target they cannot refute, so a plan at that target would
/// otherwise never be recognised as optimal.
pub(crate) const AT_BOUND: f64 = 1e-9;

/// [`placement_lower_bound`] unchecked (infinite when the loads overflow on slow GPUs).
pub(crate) fn lower_bound(loads: &LayerLoads, cluster: &PlacementCluster) -> f64 {
    lower_bound_below(loads, cluster, f64::INFINITY)
}

/// [`lower_bound`] for a placement whose busiest GPU carries `value`: the target-tested partner
/// bound first tries just below `value`, so a placement at its optimum is certified in one test
/// and the bisection, if any, starts from `value` rather than from doubling.
pub(crate) fn lower_bound_below(loads: &LayerLoads, cluster: &PlacementCluster, value: f64) -> f64 {
    raised_bound(loads, cluster, quick_bound(loads, cluster), value)
}

/// `from` (a [`quick_bound`], or more) raised by the target-tested partner bound, trying just
/// below `value` first (`f64::INFINITY`: no placement known).
pub(crate) fn raised_bound(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    from: f64,
    value: f64,
) -> f64 {
    target_partner_bound(loads, cluster, from, value)
}

/// [`lower_bound`] without the target-tested partner bound, which costs more than the others
/// together on small instances: the planner starts from this one and raises it only when its
/// plan is above it ([`crate::optimal::solve_bounded`]), so plans the cheap bounds already
/// certify, or that meet a caller's target, never pay for it.
pub(crate) fn quick_bound(loads: &LayerLoads, cluster: &PlacementCluster) -> f64 {
    let heavy = cardinality_bound(loads, cluster, basic_bound(loads, cluster));
    partner_bound(loads, cluster, heavy)
}

/// The average and replication relaxations only: cheaper where thousands of sub-instances are
/// bounded (the node-aware assignment of groups to nodes).
pub(crate) fn basic_bound(loads: &LayerLoads, cluster: &PlacementCluster) -> f64 {
    average_bound(loads, cluster).max(replication_bound(loads, cluster))
}

/// `sum w / sum v`.
pub(crate) fn average_bound(loads: &LayerLoads, cluster: &PlacementCluster) -> f64 {
    loads.total() / cluster.speed_of_gpu().iter().sum::<f64>()
}

/// `min over counts of max_e w_e h(c_e)` (see [`placement_lower_bound`]), computed as
/// `w_e / H(c_e)` with `H = 1 / h`.
fn replication_bound(loads: &LayerLoads, cluster: &PlacementCluster) -> f64 {
    let speed = replica_speeds(cluster.speed_of_gpu());
    let w = loads.as_slice();
    let extra = cluster.total_slots().saturating_sub(w.len());
    let (count, _) = replicate(w.len(), extra, speed.len(), |e, c| w[e] / speed[c - 1]);
    w.iter()
        .zip(&count)
        .map(|(&we, &c)| we / speed[c - 1])
        .fold(0.0, f64::max)
}

/// `H[k - 1] = max_{j <= k} j · v_(j)` for `k = 1..=G`, speeds sorted fastest first: the
/// largest total speed `c` replicas can be sure of. (Dividing by it, rather than multiplying by
/// `1 / (j v)`, keeps subnormal speeds from turning the bound into `inf` or NaN.)
fn replica_speeds(speeds: &[f64]) -> Vec<f64> {
    let mut v = speeds.to_vec();
    v.sort_by(|a, b| b.total_cmp(a));
    let mut best = 0.0f64;
    v.iter()
        .enumerate()
        .map(|(j, &s)| {
            best = best.max((j + 1) as f64 * s);
            best
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heterogeneous_replication_uses_the_fastest_gpus() {
        // One expert of load 12 on GPUs of speed 3 and 1 (1 slot each, plus a cold expert).
        let c = PlacementCluster::new(vec![2, 2], vec![3.0, 1.0], vec![0, 0]).unwrap();
        let w = LayerLoads::new(vec![12.0, 0.0]).unwrap();
        // Alone on the fast GPU: 12 / 3 = 4; split: 6 / 1 = 6 on the slow one; average 3.
        assert_eq!(placement_lower_bound(&w, &c), Ok(4.0));
    }

    #[test]
    fn zero_loads_give_zero() {
        let c = PlacementCluster::uniform(2, 2, 1).unwrap();
        let w = LayerLoads::new(vec![0.0, 0.0]).unwrap();
        assert_eq!(placement_lower_bound(&w, &c), Ok(0.0));
    }
}
