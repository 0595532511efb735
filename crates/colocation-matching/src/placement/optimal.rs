//! The optimal planner: greedy replication, conflict-free packing, local search, and branch and
//! bound on small instances.

use super::bound::lower_bound;
use super::exact::{PLACEMENT_EXACT_MAX_EXPERTS, PLACEMENT_EXACT_MAX_GPUS, branch_and_bound};
use super::local_search::{Aggregate, SearchOptions, improve};
use super::model::{LayerLoads, PlacementCluster};
use super::pack::{pack, round_robin};
use super::replicate::replicate;
use super::state::{Move, SlotState};

/// Search nodes the branch and bound of [`solve`] may spend on a small instance.
const OPTIMAL_NODE_BUDGET: usize = 50_000;

/// A solved layer: the map, its maximum load and a lower bound (the proved optimum when the
/// branch and bound finished).
#[derive(Debug, Clone)]
pub(crate) struct Solved {
    pub(crate) map: Vec<usize>,
    pub(crate) value: f64,
    pub(crate) lower_bound: f64,
    pub(crate) proven: bool,
}

/// Slot count up to which [`heuristic`] perturbs and re-searches its local optimum.
const PERTURB_MAX_SLOTS: usize = 256;

/// Gap to the lower bound below which [`heuristic`] does not perturb (0.1%).
const PERTURB_GAP: f64 = 1e-3;

/// Perturbations [`heuristic`] tries on instances up to [`PERTURB_MAX_SLOTS`] slots.
const KICKS: u64 = 30;

/// Swaps per perturbation.
const SWAPS_PER_KICK: u64 = 3;

/// The heuristic placement: replicas by the greedy that minimizes the largest per-replica load,
/// packed largest first, then improved by local search with swaps and replica moves. On
/// instances up to [`PERTURB_MAX_SLOTS`] slots more than [`PERTURB_GAP`] above the bound, an
/// iterated local search follows: [`KICKS`]
/// times, a few fixed pseudo-random swaps perturb the best placement and the local search runs
/// again, keeping strict improvements (a fixed schedule, so the result is deterministic).
pub(crate) fn heuristic(w: &[f64], cluster: &PlacementCluster, lower_bound: f64) -> Vec<usize> {
    let experts = w.len();
    let extra = cluster.total_slots() - experts;
    let (count, _) = replicate(experts, extra, cluster.gpus(), |e, c| w[e] / c as f64);
    let map = pack(w, &count, cluster).unwrap_or_else(|| round_robin(experts, cluster));
    let mut best = descend(w, cluster, lower_bound, map);
    let mut best_value = max_load(w, cluster, &best);
    if cluster.total_slots() > PERTURB_MAX_SLOTS || best_value <= lower_bound * (1.0 + PERTURB_GAP)
    {
        return best;
    }
    let slots = cluster.total_slots() as u64;
    for kick in 0..KICKS {
        if best_value <= lower_bound * (1.0 + PERTURB_GAP) {
            break;
        }
        let mut state = SlotState::new(cluster, &[w], best.clone());
        for k in 0..SWAPS_PER_KICK {
            let r = mix(kick * SWAPS_PER_KICK + k);
            // Both remainders are below `slots`, which came from a `usize`.
            #[allow(clippy::cast_possible_truncation)]
            let mv = Move::Swap((r % slots) as usize, ((r >> 32) % slots) as usize);
            if state.is_valid(mv) {
                state.apply(mv);
            }
        }
        let map = descend(w, cluster, lower_bound, state.map().to_vec());
        let value = max_load(w, cluster, &map);
        if value < best_value * (1.0 - super::local_search::REL_EPS) {
            best = map;
            best_value = value;
        }
    }
    best
}

/// The local search of [`heuristic`] from `map`.
fn descend(w: &[f64], cluster: &PlacementCluster, lower_bound: f64, map: Vec<usize>) -> Vec<usize> {
    let mut state = SlotState::new(cluster, &[w], map);
    let options = SearchOptions::full(Aggregate::Worst, lower_bound, cluster);
    improve(&mut state, options, |_, _, _| {});
    state.map().to_vec()
}

/// SplitMix64's output function: a fixed scramble of `x` (the perturbation schedule).
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Moves a local search may make: enough to touch every slot a few times.
pub(crate) fn move_budget(cluster: &PlacementCluster) -> usize {
    4 * cluster.total_slots() + 64
}

/// Maximum GPU load of a map.
pub(crate) fn max_load(w: &[f64], cluster: &PlacementCluster, map: &[usize]) -> f64 {
    let count = super::plan::counts(map, w.len());
    super::plan::gpu_loads(w, &count, cluster, map)
        .into_iter()
        .fold(0.0, f64::max)
}

/// The heuristic, then (when the instance is small and the heuristic is not already at the
/// bound) branch and bound with `budget` nodes (`None`: [`OPTIMAL_NODE_BUDGET`]).
pub(crate) fn solve(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    budget: Option<usize>,
) -> Solved {
    let w = loads.as_slice();
    let bound = lower_bound(loads, cluster);
    let map = heuristic(w, cluster, bound);
    let value = max_load(w, cluster, &map);
    let mut solved = Solved {
        map,
        value,
        lower_bound: bound,
        proven: value <= bound * (1.0 + super::local_search::REL_EPS),
    };
    let small =
        w.len() <= PLACEMENT_EXACT_MAX_EXPERTS && cluster.gpus() <= PLACEMENT_EXACT_MAX_GPUS;
    if solved.proven || !small {
        return solved;
    }
    let outcome = branch_and_bound(
        w,
        cluster,
        solved.value,
        budget.unwrap_or(OPTIMAL_NODE_BUDGET),
    );
    if let Some(map) = outcome.map {
        solved.value = max_load(w, cluster, &map);
        solved.map = map;
    }
    if outcome.proven {
        solved.proven = true;
        solved.lower_bound = solved.value;
    }
    solved
}
