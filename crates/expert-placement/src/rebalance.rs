//! Rebalancing a running placement to new loads with the fewest expert transfers.

use comm_cost_model::InputError;
use comm_cost_model::{check_finite_result, check_non_negative};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

use crate::align::align;
use crate::error::PlacementError;
use crate::excess::{Reduced, reduce_excess};
use crate::fewest_moves::fewest_moves;
use crate::local_search::move_budget;
use crate::local_search::{Aggregate, Origin, REL_EPS, SearchOptions, improve};
use crate::model::{LayerLoads, PlacementCluster};
use crate::optimal::{Solved, max_load, solve};
use crate::options::{DEFAULT_SEARCH_STEPS, Deadline, PlacementOptions, Termination};
use crate::plan::{Placement, counts};
use crate::state::{Move, SlotState};
use crate::transfers::{ExpertTransfer, check_current, plan_transfers};
use comm_cost_model::check_at_most;

/// One point of the moves / maximum-load trade-off of a rebalance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TradeoffPoint {
    /// Expert copies transferred.
    pub moves: usize,
    /// Maximum GPU load reached with that many moves.
    pub max_gpu_load: f64,
}

/// A rebalanced placement with its transfers and the trade-off it was picked from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rebalance {
    /// The new placement (scored on the new loads).
    pub placement: Placement,
    /// Replicas placed on a GPU that did not hold that expert ([`crate::count_moves`]).
    pub moves: usize,
    /// Whether `moves` is proved the fewest any plan within the target needs: the exhaustive
    /// search ran (instances up to [`crate::FEWEST_MOVES_EXACT_MAX_SETS`] expert sets);
    /// `false`: the low-move heuristic's answer, not proved minimal.
    #[serde(default)]
    pub moves_proved_fewest: bool,
    /// Whether the time budget stopped a low-move path before it ended: `moves` is then the
    /// fewest found by then (the plan still meets the target: the fresh plan always does).
    #[serde(default)]
    pub budget_exhausted: bool,
    /// The copies to make, one per move ([`crate::plan_transfers`]).
    pub transfers: Vec<ExpertTransfer>,
    /// The smallest maximum GPU load found (fresh optimal plan or the low-move path).
    pub best_max_gpu_load: f64,
    /// `(1 + tolerance) · best_max_gpu_load`, the limit the plan respects.
    pub target_max_gpu_load: f64,
    /// Maximum GPU load of a fresh [`crate::PlacementAlgorithm::Optimal`] plan.
    pub fresh_max_gpu_load: f64,
    /// Moves of that fresh plan after relabeling interchangeable GPUs to keep what they hold.
    pub fresh_moves: usize,
    /// Pareto-optimal (moves, maximum load) points found, from zero moves up: the maximum load
    /// strictly decreases along the list. Above tolerance 0 the low-move descent stops once its
    /// later points cannot be picked, so the list can lack its points from there down to the
    /// fresh plan's load.
    pub tradeoff: Vec<TradeoffPoint>,
}

/// Rebalances `current` (a slot-to-expert map, for example SGLang's `physical_to_logical_map`
/// of one layer) to new `loads` with the fewest expert transfers, keeping the maximum GPU load
/// within `(1 + tolerance)` of the best found.
///
/// EPLB re-plans from scratch and moves nearly every slot (deepseek-ai/EPLB issue 25, vLLM issue
/// 23243). Here a move is a replica placed on a GPU that did not hold that expert; keeping an
/// expert on its GPU is free. The planner computes a fresh optimal plan and relabels
/// interchangeable GPUs (equal slots and speed) by a maximum-overlap assignment; independently it
/// improves the current placement by local search in which, among moves reaching the same
/// maximum load, the one adding the fewest transfers wins (a replacement of one replica is one
/// transfer, a swap two), recording each step's (moves, maximum load). Replicas that share a GPU
/// with another replica of their expert (possible in EPLB's plans) are replaced first, one move
/// each. The answer is the point with the fewest moves whose maximum load is at most the target.
///
/// # Errors
///
/// The errors of [`crate::place`] with [`crate::PlacementAlgorithm::Optimal`];
/// [`PlacementError::Input`] (`SizeMismatch`) unless `current` has one entry per slot;
/// [`PlacementError::Input`] (`IndexOutOfRange`) for an expert id `>= E`; [`PlacementError::MissingExpert`]
/// when `current` lacks an expert; [`PlacementError::Input`] for a negative, NaN or infinite
/// `tolerance`, and (`NonFinite`) when a figure overflows: loads near `f64::MAX` or tiny speeds,
/// or a `tolerance` so large that the target `(1 + tolerance) · best` is beyond `f64`.
///
/// # Complexity
///
/// The fresh plan's, plus `O(G³)` for the relabeling (greedy above 256 identical GPUs), plus up
/// to `4R + 64` local search moves of `O(S_max · (R + E · c_max))` each.
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, place, rebalance};
///
/// let c = PlacementCluster::uniform(4, 2, 1)?;
/// let old = LayerLoads::new(vec![40.0, 30.0, 20.0, 10.0, 10.0, 5.0])?;
/// let plan = place(&old, &c, PlacementAlgorithm::Optimal)?;
/// // Unchanged loads: nothing moves.
/// assert_eq!(rebalance(&plan.physical_to_logical, &old, &c, 0.0)?.moves, 0);
/// // Expert 5 becomes hot.
/// let new = LayerLoads::new(vec![40.0, 30.0, 20.0, 10.0, 10.0, 45.0])?;
/// let r = rebalance(&plan.physical_to_logical, &new, &c, 0.0)?;
/// assert!(r.placement.max_gpu_load <= r.fresh_max_gpu_load);
/// assert!(r.moves <= r.fresh_moves);
/// assert_eq!(r.transfers.len(), r.moves);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn rebalance(
    current: &[usize],
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    tolerance: f64,
) -> Result<Rebalance, PlacementError> {
    rebalance_with(
        current,
        loads,
        cluster,
        tolerance,
        &PlacementOptions::default(),
    )
}

/// [`rebalance`] within `options`' budget: the fresh plan's search gets what
/// [`crate::place_with`] gives it (`search_steps`, `time_budget_s`), then the descent stops at
/// three quarters of another `time_budget_s` and the direct path at the end of it (so at most
/// about twice `time_budget_s` in all); a path cut short keeps the points it reached, and
/// [`Rebalance::budget_exhausted`] says so. Without a budget a large layer (4,096 experts on
/// 1,024 GPUs) ran for more than 10 s.
///
/// # Errors
///
/// Those of [`rebalance`]; [`PlacementError::Input`] (`InvalidEntry`) naming `time_budget_s` when it is
/// negative or not finite.
///
/// # Complexity
///
/// That of [`rebalance`], cut at `time_budget_s` (plus the small exhaustive fewest-move search
/// where it applies).
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementOptions,
///     place, rebalance_with};
///
/// let c = PlacementCluster::uniform(4, 2, 1)?;
/// let old = LayerLoads::new(vec![40.0, 30.0, 20.0, 10.0, 10.0, 5.0])?;
/// let plan = place(&old, &c, PlacementAlgorithm::Optimal)?;
/// let new = LayerLoads::new(vec![40.0, 30.0, 20.0, 10.0, 10.0, 45.0])?;
/// let options = PlacementOptions { time_budget_s: 0.5, ..PlacementOptions::default() };
/// let r = rebalance_with(&plan.physical_to_logical, &new, &c, 0.0, &options)?;
/// assert!(!r.budget_exhausted);
/// assert!(r.placement.max_gpu_load <= r.fresh_max_gpu_load);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn rebalance_with(
    current: &[usize],
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    tolerance: f64,
    options: &PlacementOptions,
) -> Result<Rebalance, PlacementError> {
    options.validate()?;
    let experts = loads.len();
    cluster.check_experts(experts)?;
    check_current(current, experts, cluster)?;
    let tolerance = check_non_negative("rebalance tolerance", tolerance)?;
    // The fresh plan gets the budget `place_with` would give it (so it is the same plan), the
    // low-move paths another budget after it.
    let fresh = solve(loads, cluster, &options.budget(DEFAULT_SEARCH_STEPS));
    rebalance_from(current, loads, cluster, tolerance, options, fresh)
}

/// [`rebalance_with`] after its checks, from a fresh plan already solved (a node of a
/// node-aware rebalance solves its own, stopping early when it is below the busiest node).
pub(crate) fn rebalance_from(
    current: &[usize],
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    tolerance: f64,
    options: &PlacementOptions,
    fresh: Solved,
) -> Result<Rebalance, PlacementError> {
    let w = loads.as_slice();
    let (lower_bound, fresh_value) = (fresh.lower_bound, fresh.value);
    let fresh_capped = fresh.termination == Termination::TimeCapped;
    let chosen = rebalance_map(current, loads, cluster, tolerance, options, fresh)?;
    let transfers = plan_transfers(current, &chosen.map, cluster, loads.len())?;
    let mut placement = Placement::scored(w, cluster, chosen.map, lower_bound)?;
    placement.termination = termination(&placement, chosen.budget_exhausted || fresh_capped);
    Ok(Rebalance {
        moves: transfers.len(),
        moves_proved_fewest: chosen.moves_proved_fewest,
        budget_exhausted: chosen.budget_exhausted,
        transfers,
        placement,
        best_max_gpu_load: chosen.best,
        target_max_gpu_load: chosen.target,
        fresh_max_gpu_load: fresh_value,
        fresh_moves: chosen.fresh_moves,
        tradeoff: pareto(chosen.points),
    })
}

/// The map [`rebalance_from`] picks, with what it reports about the pick (a node of a
/// node-aware rebalance needs only the map: its transfers and figures are computed once for the
/// whole layer).
pub(crate) struct Chosen {
    pub(crate) map: Vec<usize>,
    pub(crate) moves_proved_fewest: bool,
    pub(crate) budget_exhausted: bool,
    best: f64,
    target: f64,
    fresh_moves: usize,
    points: Vec<(usize, f64)>,
}

/// [`rebalance_from`] up to the chosen map.
pub(crate) fn rebalance_map(
    current: &[usize],
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    tolerance: f64,
    options: &PlacementOptions,
    fresh: Solved,
) -> Result<Chosen, PlacementError> {
    options.check_cancelled()?;
    let experts = loads.len();
    let w = loads.as_slice();
    let budget = options.budget(DEFAULT_SEARCH_STEPS);
    let t0 = Instant::now();
    let at = |share: f64| budget.deadline_at(t0.checked_add(budget.time.mul_f64(share)));
    let gpu_of_slot = cluster.gpu_of_each_slot();
    let origin = Origin::new(&gpu_of_slot, current, cluster.gpus(), experts);
    let start = without_duplicates(current, w, cluster);
    let descent_deadline = at(0.75);
    let direct_deadline = at(1.0);
    // Above tolerance 0 the descent stops once its later points cannot be picked (see
    // `Descent::run`); it is taken to its end below only where that could matter.
    let level = (tolerance > 0.0).then_some(fresh.value * (1.0 + tolerance));
    let mut descent = Descent::new(&start, w, cluster, &origin);
    descent.run(&origin, fresh.value, &descent_deadline, level);
    let aligned = align(&fresh.map, current, cluster, experts);
    let fresh_moves = origin.count(&gpu_of_slot, &aligned);
    // The test below, first on the descent's own pick: when that pick is already one a lower
    // best could rule out, the descent goes on before the direct path runs (whose target
    // would change with it).
    let floor = fresh.lower_bound.min(fresh.value) * (1.0 + tolerance);
    if descent.stopped {
        let limit = descent.lowest(fresh.value) * (1.0 + tolerance) * (1.0 + REL_EPS);
        let own = descent
            .path
            .points
            .iter()
            .filter(|p| p.1 <= limit)
            .min_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        if own.is_some_and(|p| p.1 > floor) {
            descent.run(&origin, fresh.value, &descent_deadline, None);
        }
    }
    // The direct path of the first round, kept with its target for a second round.
    let mut earlier: Option<(f64, Path<'_>, Reduced)> = None;
    let (direct, reduced, candidates, best, target, pick) = loop {
        // The direct path aims at the best load the descent and the fresh plan found; whatever
        // it reaches joins the candidates too, so the target is set from every point recorded
        // (issue 20: with tolerance 0 the answer was above the best point of its own trade-off
        // list).
        let first_best = descent.lowest(fresh.value);
        let first_target =
            check_finite_result("target maximum GPU load", first_best * (1.0 + tolerance))?;
        let (direct, reduced) = match earlier.take() {
            Some((t, path, reduced)) if t.to_bits() == first_target.to_bits() => (path, reduced),
            _ => to_target(&start, w, cluster, &origin, first_target, &direct_deadline),
        };
        options.check_cancelled()?;
        // Candidates: every step of both paths and the fresh plan, as (moves, load, where).
        let mut candidates: Vec<(usize, f64, Source)> = Vec::new();
        candidates.extend(
            descent
                .path
                .points
                .iter()
                .enumerate()
                .map(|(k, p)| (p.0, p.1, Source::Descent(k))),
        );
        candidates.extend(
            direct
                .points
                .iter()
                .enumerate()
                .map(|(k, p)| (p.0, p.1, Source::Direct(k))),
        );
        candidates.push((fresh_moves, fresh.value, Source::Fresh));
        for &(_, v, _) in &candidates {
            check_finite_result("maximum GPU load of a rebalancing step", v)?;
        }
        let best = candidates.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
        let target = check_finite_result("target maximum GPU load", best * (1.0 + tolerance))?;
        let meets = |v: f64| v <= target * (1.0 + REL_EPS);
        // Fewest moves among the points meeting the target, then the lower load; the best
        // point always meets it.
        let pick = candidates
            .iter()
            .filter(|c| meets(c.1))
            .min_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)))
            .map_or((Source::Fresh, fresh.value), |c| (c.2, c.1));
        // The descent's end can lower the best load (below the fresh plan's) and with it the
        // target: when the pick would then miss it (its load above the target of the lowest
        // best possible, the lower bound), the descent is taken to its end and the round
        // repeated (with the same direct path when its target did not change).
        if descent.stopped && pick.1 > floor {
            descent.run(&origin, fresh.value, &descent_deadline, None);
            earlier = Some((first_target, direct, reduced));
            continue;
        }
        break (direct, reduced, candidates, best, target, pick.0);
    };
    // The descent stops only at its target, when nothing improves or where its later points
    // cannot be picked, well before any move budget on these sizes: reaching the deadline
    // otherwise means it was cut.
    let budget_exhausted = reduced == Reduced::Cut
        || (descent_deadline.passed()
            && !descent.stopped
            && descent
                .path
                .points
                .last()
                .is_some_and(|p| p.1 > fresh.value * (1.0 + REL_EPS)));
    let mut map = match pick {
        Source::Descent(k) => descent.path.map_after(k),
        Source::Direct(k) => direct.map_after(k),
        Source::Fresh => aligned,
    };
    // Small instances: the proven fewest moves at the same target (issue 20).
    let mut moves_proved_fewest = false;
    if let Some((fewest, exact)) = fewest_moves(current, w, cluster, target) {
        if fewest < origin.count(&gpu_of_slot, &map) {
            map = keep_slots(current, exact, cluster);
        }
        moves_proved_fewest = true;
    }
    Ok(Chosen {
        map,
        moves_proved_fewest,
        budget_exhausted,
        best,
        target,
        fresh_moves,
        points: candidates.iter().map(|c| (c.0, c.1)).collect(),
    })
}

/// How a rebalance ended: the fewest-move search is a heuristic (no exact minimum of moves is
/// claimed), so the plan is optimal in load only when it meets its bound; otherwise
/// `time-capped` when the time budget cut a path, `heuristic` when none was cut.
pub(crate) fn termination(placement: &Placement, budget_exhausted: bool) -> Termination {
    if placement.max_gpu_load <= placement.lower_bound * (1.0 + crate::bound::AT_BOUND) {
        Termination::BoundReached
    } else if budget_exhausted {
        Termination::TimeCapped
    } else {
        Termination::Heuristic
    }
}

/// [`rebalance_with`] of every layer: `current[l]` to `layers[l]`, spread over rayon's threads
/// (the layers are independent; each result is the one [`rebalance_with`] returns, with the
/// time budget per layer).
///
/// # Errors
///
/// [`PlacementError::Input`] (`SizeMismatch`) unless there is one current map per layer;
/// [`PlacementError::Input`] (`TooLarge`) when `layers · R` exceeds [`crate::MAX_PLAN_ENTRIES`] (checked
/// first); otherwise those of [`rebalance`], for the first failing layer.
///
/// # Complexity
///
/// The sum over layers of [`rebalance`]'s, divided by the threads.
///
/// # Examples
///
/// ```
/// use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementOptions,
///     place_layers, rebalance_layers};
///
/// let c = PlacementCluster::uniform(4, 2, 1)?;
/// let old = LayerLoads::layers(vec![vec![40.0, 30.0, 20.0, 10.0, 10.0, 5.0]; 2])?;
/// let plans = place_layers(&old, &c, PlacementAlgorithm::Optimal)?;
/// let maps: Vec<Vec<usize>> = plans.into_iter().map(|p| p.physical_to_logical).collect();
/// let new = LayerLoads::layers(vec![
///     vec![40.0, 30.0, 20.0, 10.0, 10.0, 5.0],
///     vec![40.0, 30.0, 20.0, 10.0, 10.0, 45.0],
/// ])?;
/// let r = rebalance_layers(&maps, &new, &c, 0.0, &PlacementOptions::default())?;
/// assert_eq!(r[0].moves, 0); // unchanged loads: nothing moves
/// assert!(r[1].placement.max_gpu_load <= r[1].fresh_max_gpu_load);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn rebalance_layers(
    current: &[Vec<usize>],
    layers: &[LayerLoads],
    cluster: &PlacementCluster,
    tolerance: f64,
    options: &PlacementOptions,
) -> Result<Vec<Rebalance>, PlacementError> {
    if current.len() != layers.len() {
        return Err(PlacementError::Input(InputError::size_mismatch(
            "current maps (one per layer)",
            layers.len(),
            current.len(),
        )));
    }
    check_at_most(
        "layers x slots",
        crate::model::MAX_PLAN_ENTRIES,
        layers.len().saturating_mul(cluster.total_slots()),
    )?;
    let results: Vec<Result<Rebalance, PlacementError>> = current
        .par_iter()
        .zip(layers.par_iter())
        .map(|(map, loads)| rebalance_with(map, loads, cluster, tolerance, options))
        .collect();
    results.into_iter().collect()
}

/// Where a rebalancing candidate comes from: the point after `k` moves of a path, or the
/// relabeled fresh plan.
#[derive(Debug, Clone, Copy)]
enum Source {
    Descent(usize),
    Direct(usize),
    Fresh,
}

/// A sequence of moves from a start map, with (transfers, maximum load) before and after each.
struct Path<'a> {
    start: Vec<usize>,
    w: &'a [f64],
    cluster: &'a PlacementCluster,
    points: Vec<(usize, f64)>,
    moves: Vec<Move>,
}

impl<'a> Path<'a> {
    fn new(start: &[usize], w: &'a [f64], cluster: &'a PlacementCluster, origin: &Origin) -> Self {
        let gpu_of_slot = cluster.gpu_of_each_slot();
        Self {
            start: start.to_vec(),
            w,
            cluster,
            points: vec![(
                origin.count(&gpu_of_slot, start),
                max_load(w, cluster, start),
            )],
            moves: Vec::new(),
        }
    }

    /// Records (transfers, maximum load) after `mv`, just applied to `s` (`before`: the map
    /// before it, updated here; transfers are counted by the slots the move changed).
    fn record(
        &mut self,
        origin: &Origin,
        before: &mut [usize],
        s: &SlotState,
        mv: Move,
    ) -> (usize, f64) {
        let value = (0..s.gpus()).map(|g| s.gpu_load(0, g)).fold(0.0, f64::max);
        let slots: &[usize] = match mv {
            Move::Swap(i, j) => &[i, j],
            Move::Replace(i, _) => &[i],
        };
        let mut transfers = self.points.last().map_or(0, |p| p.0);
        for &slot in slots {
            let g = s.gpu_of_slot[slot];
            let (old, new) = (before[slot], s.expert_of_slot[slot]);
            transfers =
                transfers + usize::from(!origin.holds(g, new)) - usize::from(!origin.holds(g, old));
            before[slot] = new;
        }
        self.points.push((transfers, value));
        self.moves.push(mv);
        (transfers, value)
    }

    /// The map after the first `k` moves.
    fn map_after(&self, k: usize) -> Vec<usize> {
        let mut state = SlotState::new(self.cluster, &[self.w], self.start.clone());
        for &mv in &self.moves[..k] {
            state.apply(mv);
        }
        state.map().to_vec()
    }
}

/// Transfers above the fewest of its points within the level at which the descent stops (see
/// [`Descent::run`]): a swap can take back two transfers, so the descent goes on while a later
/// point could still come back to the fewest (a campaign instance did: 11, 12, then 11 transfers
/// at a lower load).
const STOP_SLACK: usize = 2;

/// The low-move local search from a start map (maximum load first, then fewest transfers),
/// which can stop early and be taken further later.
struct Descent<'a> {
    path: Path<'a>,
    state: SlotState<'a>,
    /// The map before the latest move.
    before: Vec<usize>,
    /// Moves made so far.
    made: usize,
    /// Whether the last run stopped because its later points could not be picked (not at its
    /// target, nor stuck, nor cut).
    stopped: bool,
}

impl<'a> Descent<'a> {
    fn new(start: &[usize], w: &'a [f64], cluster: &'a PlacementCluster, origin: &Origin) -> Self {
        Self {
            path: Path::new(start, w, cluster, origin),
            state: SlotState::new(cluster, &[w], start.to_vec()),
            before: start.to_vec(),
            made: 0,
            stopped: false,
        }
    }

    /// The lowest maximum load of the points so far, or `fresh` when that is lower.
    fn lowest(&self, fresh: f64) -> f64 {
        self.path.points.iter().map(|p| p.1).fold(fresh, f64::min)
    }

    /// Descends until `target` (the fresh plan's maximum load: going lower only costs moves).
    /// With a `level` (the fresh plan's load times `1 + tolerance`), it stops as soon as a
    /// point at or below the level has more transfers than the fewest of such points: the
    /// rebalance picks the fewest transfers among points within its target (at most the
    /// level), and the descent's transfers rarely fall again. Run again without a level, it
    /// goes on from where it stopped (the same moves as one uninterrupted run, within the
    /// search's work budget, which restarts).
    fn run(&mut self, origin: &Origin, target: f64, deadline: &Deadline, level: Option<f64>) {
        let stop = std::cell::Cell::new(false);
        let meets = |v: f64| level.is_some_and(|l| v <= l * (1.0 + REL_EPS));
        let mut fewest = usize::MAX;
        let Self {
            path,
            state,
            before,
            made,
            stopped,
        } = self;
        for &(t, v) in &path.points {
            if meets(v) {
                fewest = fewest.min(t);
            }
        }
        let cluster = path.cluster;
        let options = SearchOptions {
            origin: Some(origin),
            deadline: deadline.clone(),
            stop: Some(&stop),
            max_moves: move_budget(cluster).saturating_sub(*made),
            ..SearchOptions::full(Aggregate::Worst, target, cluster)
        };
        *made += improve(state, options, |s, mv, _| {
            let (t, v) = path.record(origin, before, s, mv);
            if meets(v) {
                fewest = fewest.min(t);
                if t > fewest + STOP_SLACK {
                    stop.set(true);
                }
            }
        });
        *stopped = stop.get();
    }
}

/// The excess greedy from `start` towards `target` ([`reduce_excess`]), and how it ended.
fn to_target<'a>(
    start: &[usize],
    w: &'a [f64],
    cluster: &'a PlacementCluster,
    origin: &Origin,
    target: f64,
    deadline: &Deadline,
) -> (Path<'a>, Reduced) {
    let mut path = Path::new(start, w, cluster, origin);
    let mut state = SlotState::new(cluster, &[w], start.to_vec());
    let mut before = start.to_vec();
    let reduced = reduce_excess(
        &mut state,
        origin,
        target,
        move_budget(cluster),
        deadline,
        &mut |s, mv| {
            path.record(origin, &mut before, s, mv);
        },
    );
    (path, reduced)
}

/// Replaces every replica that shares a GPU with an earlier replica of its expert by a replica
/// of the expert with the largest per-replica load not on that GPU.
fn without_duplicates(current: &[usize], w: &[f64], cluster: &PlacementCluster) -> Vec<usize> {
    let mut map = current.to_vec();
    let mut count = counts(&map, w.len());
    for g in 0..cluster.gpus() {
        let range = cluster.slot_range(g);
        for s in range.clone() {
            let e = map[s];
            if !map[range.start..s].contains(&e) {
                continue;
            }
            let on_gpu = &map[range.clone()];
            let b = (0..w.len())
                .filter(|b| !on_gpu.contains(b))
                .max_by(|&x, &y| {
                    (w[x] / count[x] as f64)
                        .total_cmp(&(w[y] / count[y] as f64))
                        .then(y.cmp(&x))
                });
            if let Some(b) = b {
                map[s] = b;
                count[e] -= 1;
                count[b] += 1;
            }
        }
    }
    map
}

/// The Pareto front of (moves, maximum load): sorted by moves, keeping points that lower the
/// maximum load.
pub(crate) fn pareto(mut points: Vec<(usize, f64)>) -> Vec<TradeoffPoint> {
    points.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut out: Vec<TradeoffPoint> = Vec::new();
    for (moves, max_gpu_load) in points {
        if out
            .last()
            .is_none_or(|p| max_gpu_load < p.max_gpu_load * (1.0 - REL_EPS))
        {
            out.push(TradeoffPoint {
                moves,
                max_gpu_load,
            });
        }
    }
    out
}

/// `map`'s experts per GPU, laid out so that each expert a GPU already held keeps its slot (the
/// engine then copies nothing inside the GPU); the new experts fill the other slots in order.
fn keep_slots(current: &[usize], map: Vec<usize>, cluster: &PlacementCluster) -> Vec<usize> {
    let mut out = map.clone();
    for g in 0..cluster.gpus() {
        let range = cluster.slot_range(g);
        let mut wanted: Vec<usize> = map[range.clone()].to_vec();
        let mut placed = vec![false; range.len()];
        for (k, s) in range.clone().enumerate() {
            if let Some(at) = wanted.iter().position(|&e| e == current[s]) {
                out[s] = wanted.swap_remove(at);
                placed[k] = true;
            }
        }
        let mut rest = wanted.into_iter();
        for (k, s) in range.enumerate() {
            if !placed[k] {
                if let Some(e) = rest.next() {
                    out[s] = e;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::PlacementOptions;
    use crate::workloads::{drift_loads, lognormal_loads};

    /// A descent stopped at a level and then taken on makes the same moves as one run to the
    /// end: the rebalance relies on it when it goes on where the stopped part could matter.
    #[test]
    fn a_stopped_descent_taken_on_is_the_full_descent() -> Result<(), PlacementError> {
        let cluster = PlacementCluster::uniform(16, 5, 2)?;
        let rows = lognormal_loads(1, 64, 1.0, 1e4, 7)?;
        let old = LayerLoads::new(rows[0].clone())?;
        let new = LayerLoads::new(drift_loads(&rows, 0.3, 8)?.remove(0))?;
        let budget = PlacementOptions::default().budget(DEFAULT_SEARCH_STEPS);
        let current = solve(&old, &cluster, &budget).map;
        let fresh = solve(&new, &cluster, &budget).value;
        let w = new.as_slice();
        let origin = Origin::new(&cluster.gpu_of_each_slot(), &current, cluster.gpus(), 64);
        let never = Deadline::never();
        let mut full = Descent::new(&current, w, &cluster, &origin);
        full.run(&origin, fresh, &never, None);
        assert!(!full.stopped);
        let mut stopped = 0;
        for tolerance in [0.002, 0.01, 0.05, 0.2] {
            let mut part = Descent::new(&current, w, &cluster, &origin);
            part.run(&origin, fresh, &never, Some(fresh * (1.0 + tolerance)));
            if part.stopped {
                stopped += 1;
                assert!(part.path.points.len() < full.path.points.len());
                assert_eq!(
                    part.path.points[..],
                    full.path.points[..part.path.points.len()]
                );
            }
            part.run(&origin, fresh, &never, None);
            assert_eq!(part.path.points, full.path.points);
            assert_eq!(part.path.moves, full.path.moves);
            assert_eq!(part.state.map(), full.state.map());
        }
        assert!(stopped > 0, "no tolerance stopped the descent early");
        Ok(())
    }
}
