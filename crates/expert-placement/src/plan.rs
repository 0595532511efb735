//! A placement of expert replicas on GPU slots, with the figures that judge it.

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use comm_cost_model::check_finite_result;

use crate::bound::lower_bound_below;
use crate::error::PlacementError;
use crate::model::{LayerLoads, PlacementCluster};
use crate::options::Termination;
use comm_cost_model::check_same_len;

/// Replicas of logical experts in the physical slots of a cluster, scored on one layer's loads.
///
/// A replica of expert `e` carries `w_e / c_e` where `c_e` is the expert's replica count: the
/// even split of an expert's tokens over its replicas that vLLM, SGLang and EPLB assume by default
/// (a per-batch split can do better: [`crate::split_tokens`]). A GPU's load is the sum of its
/// replicas' loads divided by its speed.
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, Placement, PlacementCluster};
///
/// let c = PlacementCluster::uniform(2, 2, 1)?;
/// let w = LayerLoads::new(vec![8.0, 2.0, 2.0])?;
/// // GPU 0 holds experts 0 and 1, GPU 1 holds 0 and 2: expert 0 is split in two.
/// let p = Placement::evaluate(&w, &c, vec![0, 1, 0, 2])?;
/// assert_eq!(p.replica_count, vec![2, 1, 1]);
/// assert_eq!(p.gpu_loads, vec![6.0, 6.0]);
/// assert_eq!((p.max_gpu_load, p.lower_bound, p.gap()), (6.0, 6.0, 0.0));
/// assert_eq!(p.experts_of_gpu(&c), vec![vec![0, 1], vec![0, 2]]);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// The logical expert in each physical slot (length `R`; slot `s` sits on
    /// [`PlacementCluster::gpu_of_slot`]`(s)`).
    pub physical_to_logical: Vec<usize>,
    /// Number of replicas `c_e` of each logical expert.
    pub replica_count: Vec<usize>,
    /// Load of each GPU: the sum of its replicas' loads over its speed.
    pub gpu_loads: Vec<f64>,
    /// The largest GPU load, the objective.
    pub max_gpu_load: f64,
    /// A certified lower bound on the maximum GPU load of any valid placement
    /// ([`crate::placement_lower_bound`], or the proved optimum of an exact solver).
    pub lower_bound: f64,
    /// Replicas that share a GPU with another replica of the same expert (EPLB can produce them;
    /// the planners of this crate never do). Such a GPU carries both shares.
    pub duplicates_on_gpu: usize,
    /// For a plan under node constraints ([`crate::PlacementAlgorithm::OptimalNodeAware`]), the
    /// maximum GPU load of the unconstrained optimal plan, so the constraint's cost is
    /// `max_gpu_load - unconstrained_max_gpu_load`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained_max_gpu_load: Option<f64>,
    /// How the search behind the plan ended (`not-searched` for baselines and evaluated maps).
    #[serde(default)]
    pub termination: Termination,
}

impl Placement {
    /// Scores a slot-to-expert map (for example a current placement read from an engine).
    ///
    /// Two replicas of one expert on one GPU are accepted and counted in
    /// [`Placement::duplicates_on_gpu`].
    ///
    /// # Errors
    ///
    /// [`PlacementError::Input`] (`SizeMismatch`) unless the map has one entry per slot,
    /// [`PlacementError::Input`] (`IndexOutOfRange`) for an expert id `>= E`,
    /// [`PlacementError::MissingExpert`] when an expert has no replica,
    /// [`PlacementError::Input`] (`NonFinite`) when a figure of the plan overflows (loads near
    /// `f64::MAX`, tiny speeds, or a gap or imbalance beyond `f64`).
    ///
    /// # Complexity
    ///
    /// `O(R + E + G log G + R log E)` (the lower bound dominates).
    pub fn evaluate(
        loads: &LayerLoads,
        cluster: &PlacementCluster,
        physical_to_logical: Vec<usize>,
    ) -> Result<Self, PlacementError> {
        check_map(
            "physical_to_logical",
            &physical_to_logical,
            loads.len(),
            cluster,
        )?;
        let value = crate::optimal::max_load(loads.as_slice(), cluster, &physical_to_logical);
        let bound = lower_bound_below(loads, cluster, value);
        Self::scored(loads.as_slice(), cluster, physical_to_logical, bound)
    }

    /// Scores a map already known to be valid; every figure of the result (and its
    /// [`Placement::gap`], [`Placement::mean_gpu_load`] and [`Placement::imbalance`]) is
    /// finite, or this is a `NonFinite` error.
    pub(crate) fn scored(
        w: &[f64],
        cluster: &PlacementCluster,
        physical_to_logical: Vec<usize>,
        lower_bound: f64,
    ) -> Result<Self, PlacementError> {
        let replica_count = counts(&physical_to_logical, w.len());
        let gpu_loads = gpu_loads(w, &replica_count, cluster, &physical_to_logical);
        let max_gpu_load = gpu_loads.iter().copied().fold(0.0, f64::max);
        check_finite_result("maximum GPU load", max_gpu_load)?;
        let duplicates_on_gpu = duplicates(cluster, &physical_to_logical, w.len());
        let placement = Self {
            physical_to_logical,
            replica_count,
            gpu_loads,
            max_gpu_load,
            lower_bound: lower_bound.min(max_gpu_load),
            duplicates_on_gpu,
            unconstrained_max_gpu_load: None,
            termination: Termination::NotSearched,
        };
        check_finite_result("mean GPU load", placement.mean_gpu_load())?;
        // A bound far below the maximum (speeds spanning more than `f64`'s range) makes the
        // ratios overflow.
        check_finite_result("gap of the plan to its lower bound", placement.gap())?;
        check_finite_result("imbalance of the plan", placement.imbalance())?;
        Ok(placement)
    }

    /// `max_gpu_load / lower_bound - 1`: how far the plan may be from optimal (0 when both are 0).
    #[must_use]
    pub fn gap(&self) -> f64 {
        if self.lower_bound > 0.0 {
            self.max_gpu_load / self.lower_bound - 1.0
        } else {
            0.0
        }
    }

    /// Mean of the GPU loads.
    #[must_use]
    pub fn mean_gpu_load(&self) -> f64 {
        // Divide before summing: each load is finite, so the mean is too.
        let n = self.gpu_loads.len().max(1) as f64;
        self.gpu_loads.iter().map(|l| l / n).sum::<f64>()
    }

    /// `max_gpu_load / mean_gpu_load` (1 when every load is 0), the figure engines report.
    #[must_use]
    pub fn imbalance(&self) -> f64 {
        let mean = self.mean_gpu_load();
        if mean > 0.0 {
            self.max_gpu_load / mean
        } else {
            1.0
        }
    }

    /// The experts on each GPU, in slot order (`cluster` must be the one the plan was made for;
    /// slots beyond it are ignored).
    #[must_use]
    pub fn experts_of_gpu(&self, cluster: &PlacementCluster) -> Vec<Vec<usize>> {
        (0..cluster.gpus())
            .map(|g| {
                cluster
                    .slot_range(g)
                    .filter_map(|s| self.physical_to_logical.get(s).copied())
                    .collect()
            })
            .collect()
    }

    /// The slots of each logical expert, in slot order (EPLB's `logical_to_physical_map` without
    /// the `-1` padding).
    #[must_use]
    pub fn logical_to_physical(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.replica_count.len()];
        for (s, &e) in self.physical_to_logical.iter().enumerate() {
            if let Some(slots) = out.get_mut(e) {
                slots.push(s);
            }
        }
        out
    }
}

/// Checks a slot-to-expert map: one entry per slot, ids below `experts`, every expert present.
pub(crate) fn check_map(
    what: &'static str,
    map: &[usize],
    experts: usize,
    cluster: &PlacementCluster,
) -> Result<(), PlacementError> {
    check_same_len(what, map.len(), cluster.total_slots())?;
    let mut seen = vec![false; experts];
    for &e in map {
        *seen
            .get_mut(e)
            .ok_or(PlacementError::Input(InputError::index_out_of_range(
                what, e, experts,
            )))? = true;
    }
    match seen.iter().position(|&s| !s) {
        Some(expert) => Err(PlacementError::MissingExpert { what, expert }),
        None => Ok(()),
    }
}

/// Replica count of each expert.
pub(crate) fn counts(map: &[usize], experts: usize) -> Vec<usize> {
    let mut c = vec![0; experts];
    for &e in map {
        c[e] += 1;
    }
    c
}

/// Each GPU's load under the even split.
pub(crate) fn gpu_loads(
    w: &[f64],
    count: &[usize],
    cluster: &PlacementCluster,
    map: &[usize],
) -> Vec<f64> {
    (0..cluster.gpus())
        .map(|g| {
            let raw: f64 = cluster
                .slot_range(g)
                .map(|s| w[map[s]] / count[map[s]] as f64)
                .sum();
            raw / cluster.speed_of_gpu()[g]
        })
        .collect()
}

/// Number of replicas that share a GPU with an earlier replica of the same expert.
fn duplicates(cluster: &PlacementCluster, map: &[usize], experts: usize) -> usize {
    let mut last_gpu = vec![usize::MAX; experts];
    let mut dups = 0;
    for g in 0..cluster.gpus() {
        for s in cluster.slot_range(g) {
            if last_gpu[map[s]] == g {
                dups += 1;
            }
            last_gpu[map[s]] = g;
        }
    }
    dups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_and_errors() {
        let c = PlacementCluster::uniform(2, 2, 1).unwrap();
        let w = LayerLoads::new(vec![4.0, 2.0]).unwrap();
        let p = Placement::evaluate(&w, &c, vec![0, 0, 0, 1]).unwrap();
        assert_eq!(p.duplicates_on_gpu, 1);
        // GPU 0 carries two thirds of expert 0.
        assert!((p.gpu_loads[0] - 8.0 / 3.0).abs() < 1e-12);
        assert!(matches!(
            Placement::evaluate(&w, &c, vec![0, 0, 0]),
            Err(PlacementError::Input(InputError::SizeMismatch {
                expected: 4,
                actual: 3,
                ..
            }))
        ));
        assert!(matches!(
            Placement::evaluate(&w, &c, vec![0, 0, 0, 2]),
            Err(PlacementError::Input(InputError::IndexOutOfRange {
                index: 2,
                ..
            }))
        ));
        assert!(matches!(
            Placement::evaluate(&w, &c, vec![0, 0, 0, 0]),
            Err(PlacementError::MissingExpert { expert: 1, .. })
        ));
        assert_eq!(p.logical_to_physical(), vec![vec![0, 1, 2], vec![3]]);
    }
}
