//! One placement planned against several load windows at once.

use comm_cost_model::InputError;
use comm_cost_model::check_finite_result;
use serde::{Deserialize, Serialize};

use crate::bound::lower_bound;
use crate::error::PlacementError;
use crate::local_search::{Aggregate, SearchOptions, improve, objective};
use crate::model::{LayerLoads, PlacementCluster};
use crate::optimal::solve;
use crate::options::Budget;
use crate::plan::{counts, gpu_loads};
use crate::state::SlotState;
use comm_cost_model::check_same_len;

/// What a robust placement minimizes over the windows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RobustObjective {
    /// The largest maximum GPU load over the windows.
    #[default]
    Worst,
    /// The mean of the windows' maximum GPU loads.
    Mean,
}

/// A placement planned against several windows, with every window's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RobustPlacement {
    /// The logical expert of each physical slot.
    pub physical_to_logical: Vec<usize>,
    /// Replica count of each expert.
    pub replica_count: Vec<usize>,
    /// The plan's maximum GPU load in each window.
    pub window_max_gpu_loads: Vec<f64>,
    /// [`crate::placement_lower_bound`] of each window.
    pub window_lower_bounds: Vec<f64>,
    /// The objective: worst or mean of `window_max_gpu_loads`.
    pub objective_value: f64,
    /// The same aggregate of the window bounds: no placement does better.
    pub lower_bound: f64,
    /// The maximum GPU load in each window of the optimal plan for the newest (last) window
    /// alone.
    pub newest_only_max_gpu_loads: Vec<f64>,
    /// Its objective value.
    pub newest_only_objective_value: f64,
}

/// Plans one placement against several load windows (for example the last few minutes of
/// routing statistics), minimizing the worst or the mean window's maximum GPU load, and reports
/// how the plan for the newest window alone would fare.
///
/// Starts from the optimal plans for the mean loads and for the newest window, improves each by
/// local search on the aggregate objective (swaps and replica moves on each window's busiest
/// GPU), and keeps the better. The windows are in time order, the newest last.
///
/// # Errors
///
/// [`PlacementError::Input`] (`Empty`) for no window, [`PlacementError::Input`] (`SizeMismatch`) for windows of
/// different expert counts, and those of [`crate::place`] with
/// [`crate::PlacementAlgorithm::Optimal`]; [`PlacementError::Input`] (`NonFinite`) when a
/// window's figures overflow (loads near `f64::MAX` or tiny speeds).
///
/// # Complexity
///
/// Two optimal plans, plus up to `4R + 64` local search moves of `O(K · S_max · (R + E · c_max))`
/// each for `K` windows.
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementCluster, RobustObjective, place_robust};
///
/// let c = PlacementCluster::uniform(2, 2, 1)?;
/// // Expert 0 and expert 2 take turns being hot.
/// let windows = LayerLoads::layers(vec![vec![9.0, 1.0, 1.0], vec![1.0, 1.0, 9.0]])?;
/// let r = place_robust(&windows, &c, RobustObjective::Worst)?;
/// assert!(r.objective_value <= r.newest_only_objective_value);
/// assert!(r.lower_bound <= r.objective_value);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn place_robust(
    windows: &[LayerLoads],
    cluster: &PlacementCluster,
    objective_kind: RobustObjective,
) -> Result<RobustPlacement, PlacementError> {
    let newest = windows
        .last()
        .ok_or(PlacementError::Input(InputError::Empty { what: "windows" }))?;
    let experts = newest.len();
    for w in windows {
        check_same_len("experts of a window", w.len(), experts)?;
    }
    cluster.check_experts(experts)?;
    let aggregate = match objective_kind {
        RobustObjective::Worst => Aggregate::Worst,
        RobustObjective::Mean => Aggregate::Mean,
    };
    let slices: Vec<&[f64]> = windows.iter().map(LayerLoads::as_slice).collect();
    let mean = LayerLoads::new(
        (0..experts)
            // Divide before summing: the mean of finite loads is finite.
            .map(|e| {
                slices
                    .iter()
                    .map(|w| w[e] / slices.len() as f64)
                    .sum::<f64>()
            })
            .collect(),
    )?;
    let newest_map = solve(newest, cluster, &Budget::default_optimal()).map;
    let starts = [
        solve(&mean, cluster, &Budget::default_optimal()).map,
        newest_map.clone(),
    ];
    let best = starts
        .into_iter()
        .map(|start| {
            let mut s = SlotState::new(cluster, &slices, start);
            improve(
                &mut s,
                SearchOptions::full(aggregate, 0.0, cluster),
                |_, _, _| {},
            );
            (objective(&s, aggregate), s.map().to_vec())
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|b| b.1)
        .unwrap_or(newest_map.clone());
    let figures = |map: &[usize]| -> Vec<f64> {
        let c = counts(map, experts);
        slices
            .iter()
            .map(|w| {
                gpu_loads(w, &c, cluster, map)
                    .into_iter()
                    .fold(0.0, f64::max)
            })
            .collect()
    };
    let combine = |v: &[f64]| match objective_kind {
        RobustObjective::Worst => v.iter().copied().fold(0.0, f64::max),
        RobustObjective::Mean => v.iter().map(|x| x / v.len() as f64).sum::<f64>(),
    };
    // The newest-only plan was a start, so the search can only beat it; guard the rounding.
    let best = if combine(&figures(&best)) <= combine(&figures(&newest_map)) {
        best
    } else {
        newest_map.clone()
    };
    let window_max_gpu_loads = figures(&best);
    let window_lower_bounds: Vec<f64> = windows.iter().map(|w| lower_bound(w, cluster)).collect();
    let newest_only_max_gpu_loads = figures(&newest_map);
    for &x in window_max_gpu_loads
        .iter()
        .chain(&window_lower_bounds)
        .chain(&newest_only_max_gpu_loads)
    {
        check_finite_result("maximum GPU load or lower bound of a window", x)?;
    }
    Ok(RobustPlacement {
        replica_count: counts(&best, experts),
        physical_to_logical: best,
        objective_value: combine(&window_max_gpu_loads),
        lower_bound: combine(&window_lower_bounds),
        newest_only_objective_value: combine(&newest_only_max_gpu_loads),
        window_max_gpu_loads,
        window_lower_bounds,
        newest_only_max_gpu_loads,
    })
}
