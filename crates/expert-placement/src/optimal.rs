//! The optimal planner: greedy replication, conflict-free packing, local search, and branch and
//! bound on small instances.

use crate::bound::{quick_bound, raised_bound};
use crate::candidates::candidate_counts;
use crate::count_search::{count_restarts, count_search};
use crate::exact::{PLACEMENT_EXACT_MAX_EXPERTS, PLACEMENT_EXACT_MAX_GPUS, branch_and_bound};
use crate::local_search::{Aggregate, SearchOptions, improve};
use crate::model::{LayerLoads, PlacementCluster};
use crate::options::{Budget, Deadline, Termination};
use crate::pack::{pack, round_robin};
use crate::replicate::replicate;
use crate::state::{Move, SlotState};

/// A solved layer: the map, its maximum load and a lower bound (the proved optimum when the
/// branch and bound finished).
#[derive(Debug, Clone)]
pub(crate) struct Solved {
    pub(crate) map: Vec<usize>,
    pub(crate) value: f64,
    pub(crate) lower_bound: f64,
    pub(crate) proven: bool,
    /// How the search ended.
    pub(crate) termination: Termination,
}

/// Slot count up to which [`heuristic`] perturbs and re-searches its local optimum.
const PERTURB_MAX_SLOTS: usize = 256;

/// Gap to the lower bound below which [`heuristic`] does not perturb (0.1%).
const PERTURB_GAP: f64 = 1e-3;

/// Most perturbations [`heuristic`] tries on instances up to [`PERTURB_MAX_SLOTS`] slots.
const KICKS: u64 = 400;

/// Perturbations times slots [`heuristic`] may spend (so 256 slots get 128 kicks, 12 slots
/// all [`KICKS`]).
const KICK_WORK: u64 = 32_768;

/// Consecutive perturbations without improvement after which [`heuristic`] stops.
const KICK_STALL: u64 = 100;

/// Random moves (swaps, and every other one a replica move) per perturbation.
const SWAPS_PER_KICK: u64 = 3;

/// Local searches the multi-start of [`heuristic`] runs, from the best packed candidates.
const STARTS: usize = 6;

/// Above this many slots the multi-start runs one extra start only.
const LARGE_SLOTS: usize = 1024;

/// Replica-count candidates the count-level search starts from, besides the best plan's counts.
const COUNT_SEARCH_STARTS: usize = 8;

/// Gap to the strongest lower bound below which [`solve_bounded`] skips the count search's
/// restarts (0.1%): they cost up to about 0.1 s a layer and cannot gain more than the gap. On
/// the seeded campaign the layers above it held 94% of what ungated restarts gained (73 of the
/// 115 plans they lowered, in half the added time).
const RESTART_GAP: f64 = 1e-3;

/// The heuristic placement.
///
/// 1. **Candidates.** Replica-count vectors from [`candidate_counts`]: the greedy that minimizes
///    the largest per-replica load, and for the lowest breakpoint targets above the bound the
///    minimal counts with the leftover spent in several ways. Each is packed largest replica
///    first ([`pack`]); EPLB's global plan joins them when it has no duplicate on a GPU.
/// 2. **Descent.** The per-replica greedy's packing and the [`STARTS`] best other packings
///    (fewer when the greedy is already within [`PERTURB_GAP`] of the bound) are improved by
///    local search with swaps and replica moves; the best wins.
/// 3. **Kicks.** On instances up to [`PERTURB_MAX_SLOTS`] slots still above the bound, an
///    iterated local search follows: up to [`KICKS`] times (at most [`KICK_WORK`] / slots, and
///    stopping after [`KICK_STALL`] in a row without improvement), a few fixed pseudo-random
///    swaps and replica moves perturb the best placement and the local search runs again,
///    keeping strict improvements (a fixed schedule, so the result is deterministic).
///
/// Instances above [`PERTURB_MAX_SLOTS`] slots stop as soon as a plan is within
/// [`PERTURB_GAP`] of the bound; smaller ones only at the bound.
///
/// The result is never worse than the per-replica greedy's packing after descent (the "simple
/// greedy" of the docs) nor than a duplicate-free EPLB global plan.
pub(crate) fn heuristic(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    lower_bound: f64,
    good_enough: f64,
    deadline: &Deadline,
    hard_deadline: &Deadline,
) -> Vec<usize> {
    let late = || deadline.passed();
    let w = loads.as_slice();
    let experts = w.len();
    // Small instances search until the bound itself; large ones stop within PERTURB_GAP.
    let small = cluster.total_slots() <= PERTURB_MAX_SLOTS;
    let gap = if small {
        crate::local_search::REL_EPS
    } else {
        PERTURB_GAP
    };
    let near = |v: f64| v <= lower_bound * (1.0 + gap) || v <= good_enough;
    let max_speed = cluster.speed_of_gpu().iter().copied().fold(0.0, f64::max);
    let extra = cluster.total_slots().saturating_sub(experts);
    let (greedy, _) = replicate(experts, extra, cluster.gpus(), |e, c| w[e] / c as f64);
    let greedy_map = pack(w, &greedy, cluster).unwrap_or_else(|| round_robin(experts, cluster));
    let mut best = descend(w, cluster, lower_bound, greedy_map, hard_deadline);
    let mut best_value = max_load(w, cluster, &best);
    if near(best_value) || late() {
        return best;
    }
    // The other candidates are built only when the greedy is not good enough.
    let counts = candidate_counts(
        w,
        cluster.total_slots(),
        cluster.gpus(),
        lower_bound,
        max_speed,
    );
    // Other starts, best packed value first.
    let mut starts: Vec<(f64, Vec<usize>)> = counts
        .iter()
        .skip(1)
        .filter_map(|c| pack(w, c, cluster))
        .map(|m| (max_load(w, cluster, &m), m))
        .collect();
    if let Ok(p) = crate::eplb::eplb(loads, cluster, crate::eplb::EplbPolicy::Global)
        && p.duplicates_on_gpu == 0
    {
        starts.push((p.max_gpu_load, p.physical_to_logical));
    }
    starts.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Large instances get fewer starts: each descent costs about the slot count squared.
    let starts_allowed = if cluster.total_slots() <= LARGE_SLOTS {
        STARTS
    } else {
        1
    };
    for (_, map) in starts.into_iter().take(starts_allowed) {
        if near(best_value) || late() {
            break;
        }
        let map = descend(w, cluster, lower_bound, map, hard_deadline);
        let value = max_load(w, cluster, &map);
        if value < best_value * (1.0 - crate::local_search::REL_EPS) {
            best = map;
            best_value = value;
        }
    }
    if small && !near(best_value) {
        (best, best_value) = kicked(
            w,
            cluster,
            lower_bound,
            best,
            best_value,
            &near,
            &late,
            hard_deadline,
        );
    }
    // Search the counts themselves (on 2-slot GPUs a plan is exactly as good as its counts:
    // the packing of given counts is the sorted pairing, optimal). Last, so that it can only
    // improve on everything above.
    // Not inside a node-aware plan (`good_enough > 0`): its nodes need only stay below the
    // busiest node, and its per-node calls would pay the search many times over.
    if !near(best_value) && !late() && good_enough <= 0.0 && crate::count_search::applies(cluster) {
        let mut from = vec![crate::plan::counts(&best, experts)];
        from.extend(counts.iter().take(COUNT_SEARCH_STARTS).cloned());
        if let Some(map) =
            count_search(w, cluster, &from, hard_deadline).and_then(|c| pack(w, &c, cluster))
        {
            let map = descend(w, cluster, lower_bound, map, hard_deadline);
            let value = max_load(w, cluster, &map);
            if value < best_value * (1.0 - crate::local_search::REL_EPS) {
                return map;
            }
        }
    }
    best
}

/// The count search's restarts ([`count_restarts`]) from the plan `map` (busiest GPU `value`)
/// on clusters scored by packing; the plan they reach replaces `map` only when lower, so the
/// step never raises the plan.
fn restarted(
    w: &[f64],
    cluster: &PlacementCluster,
    lower_bound: f64,
    map: Vec<usize>,
    value: f64,
    deadline: &Deadline,
) -> (Vec<usize>, f64) {
    if !crate::count_search::applies(cluster) || crate::count_search::pairing(cluster) {
        return (map, value);
    }
    let start = crate::plan::counts(&map, w.len());
    let Some(found) = count_restarts(w, cluster, &start, deadline).filter(|c| *c != start) else {
        return (map, value);
    };
    let Some(packed) = pack(w, &found, cluster) else {
        return (map, value);
    };
    let packed = descend(w, cluster, lower_bound, packed, deadline);
    let packed_value = max_load(w, cluster, &packed);
    if packed_value < value * (1.0 - crate::local_search::REL_EPS) {
        (packed, packed_value)
    } else {
        (map, value)
    }
}

/// The kicks of [`heuristic`] (iterated local search from `best`).
#[allow(clippy::too_many_arguments)]
fn kicked(
    w: &[f64],
    cluster: &PlacementCluster,
    lower_bound: f64,
    mut best: Vec<usize>,
    mut best_value: f64,
    near: &dyn Fn(f64) -> bool,
    late: &dyn Fn() -> bool,
    hard_deadline: &Deadline,
) -> (Vec<usize>, f64) {
    let experts = w.len();
    let slots = cluster.total_slots() as u64;
    let kicks = KICKS.min(KICK_WORK / slots.max(1));
    let mut stall = 0;
    for kick in 0..kicks {
        if near(best_value) || stall >= KICK_STALL || late() {
            break;
        }
        let mut state = SlotState::new(cluster, &[w], best.clone());
        for k in 0..SWAPS_PER_KICK {
            let r = mix(kick * SWAPS_PER_KICK + k);
            // Both remainders are below `slots` or `experts`, which came from `usize`s.
            #[allow(clippy::cast_possible_truncation)]
            let mv = if k % 2 == 1 {
                Move::Replace((r % slots) as usize, ((r >> 32) % experts as u64) as usize)
            } else {
                Move::Swap((r % slots) as usize, ((r >> 32) % slots) as usize)
            };
            if state.is_valid(mv) {
                state.apply(mv);
            }
        }
        let map = descend(w, cluster, lower_bound, state.map().to_vec(), hard_deadline);
        let value = max_load(w, cluster, &map);
        if value < best_value * (1.0 - crate::local_search::REL_EPS) {
            best = map;
            best_value = value;
            stall = 0;
        } else {
            stall += 1;
        }
    }
    (best, best_value)
}

/// The local search of [`heuristic`] from `map`.
fn descend(
    w: &[f64],
    cluster: &PlacementCluster,
    lower_bound: f64,
    map: Vec<usize>,
    deadline: &Deadline,
) -> Vec<usize> {
    let mut state = SlotState::new(cluster, &[w], map);
    let options = SearchOptions {
        deadline: deadline.clone(),
        ..SearchOptions::full(Aggregate::Worst, lower_bound, cluster)
    };
    improve(&mut state, options, |_, _, _| {});
    state.map().to_vec()
}

/// SplitMix64's output function: a fixed scramble of `x` (the perturbation schedule).
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Maximum GPU load of a map.
pub(crate) fn max_load(w: &[f64], cluster: &PlacementCluster, map: &[usize]) -> f64 {
    let count = crate::plan::counts(map, w.len());
    crate::plan::gpu_loads(w, &count, cluster, map)
        .into_iter()
        .fold(0.0, f64::max)
}

/// The heuristic, then (when the instance is small and the heuristic is not already at the
/// bound) branch and bound within `budget`.
pub(crate) fn solve(loads: &LayerLoads, cluster: &PlacementCluster, budget: &Budget) -> Solved {
    solve_to(loads, cluster, budget, 0.0)
}

/// [`solve`] that stops searching once the plan's maximum load is at most `good_enough` (a
/// node of a node-aware plan need not beat the busiest node).
pub(crate) fn solve_to(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    budget: &Budget,
    good_enough: f64,
) -> Solved {
    solve_bounded(
        loads,
        cluster,
        budget,
        good_enough,
        quick_bound(loads, cluster),
    )
}

/// [`solve_to`] given the instance's [`lower_bound`], which the node-aware callers already
/// computed to order their nodes (it was computed twice per node).
///
/// In order: [`heuristic`], the costlier bound where the plan is open, the count search's
/// restarts where the plan is still more than [`RESTART_GAP`] above that bound, then the exact
/// searches within `budget`.
pub(crate) fn solve_bounded(
    loads: &LayerLoads,
    cluster: &PlacementCluster,
    budget: &Budget,
    good_enough: f64,
    bound: f64,
) -> Solved {
    let w = loads.as_slice();
    // The heuristic's extra starts and kicks stop at half the time budget, leaving the rest to
    // the exact search.
    let deadline = budget.deadline_after(budget.time / 2);
    let call_end = budget.deadline();
    let map = heuristic(loads, cluster, bound, good_enough, &deadline, &call_end);
    let value = max_load(w, cluster, &map);
    // The costlier bound only where the cheap one leaves a plan open that is wanted for its own
    // sake: a caller with a target (a node of a node-aware plan, the traffic planner's packings)
    // reports no bound of its own, and most of its packings that miss the target would pay it.
    let bound = if value > bound * (1.0 + crate::bound::AT_BOUND) && good_enough <= 0.0 {
        raised_bound(loads, cluster, bound, value)
    } else {
        bound
    };
    // The count search's restarts, gated on the strongest bound (the partner bounds certify
    // many few-slot plans the cheap ones leave open, issue 20's 18-expert case among them).
    let (map, value) = if good_enough <= 0.0 && value > bound * (1.0 + RESTART_GAP) {
        restarted(w, cluster, bound, map, value, &call_end)
    } else {
        (map, value)
    };
    let at_bound = value <= bound * (1.0 + crate::bound::AT_BOUND);
    let mut solved = Solved {
        map,
        value,
        lower_bound: bound,
        proven: at_bound,
        termination: if at_bound {
            Termination::BoundReached
        } else {
            Termination::Heuristic
        },
    };
    if solved.proven || budget.steps == 0 || value <= good_enough {
        return clocked(solved, budget);
    }
    // On 2-slot GPUs of one speed the count-level branch and bound is exact at any size (within
    // its budget): it proves the plan, or finds a lower one and raises the bound.
    let small =
        w.len() <= PLACEMENT_EXACT_MAX_EXPERTS && cluster.gpus() <= PLACEMENT_EXACT_MAX_GPUS;
    if crate::count_search::pairing(cluster)
        && good_enough <= 0.0
        && cluster.gpus() <= crate::pair_exact::PAIR_EXACT_MAX_GPUS
    {
        solved = pair_exact_solve(w, cluster, budget, &call_end, solved);
        // Where the one-expert-per-GPU rule binds, the relaxation cannot prove the plan: the
        // general branch and bound below still can on small instances.
        if solved.proven || !small {
            return clocked(solved, budget);
        }
    }
    // On 3 to 8 slots of one speed with few replica-count vectors, the count-listing bin
    // completion is exact (within its budget) at any size.
    if good_enough <= 0.0
        && let Some(slots) = crate::slot_exact::applies(w, cluster, solved.value)
    {
        solved = slot_exact_solve(w, cluster, slots, budget, &call_end, solved);
        if solved.proven {
            return clocked(solved, budget);
        }
    }
    if !small {
        return clocked(solved, budget);
    }
    let outcome = branch_and_bound(w, cluster, solved.value, budget);
    if let Some(map) = outcome.map {
        solved.value = max_load(w, cluster, &map);
        solved.map = map;
    }
    conclude(&mut solved, outcome.proven);
    clocked(solved, budget)
}

/// Says how the exact search behind `solved` ended: it proved the plan, or ran out of budget
/// after finding a plan at the bound (optimal anyway), or ran out of budget.
fn conclude(solved: &mut Solved, proved: bool) {
    if proved {
        solved.proven = true;
        solved.lower_bound = solved.value;
        solved.termination = Termination::ProvedOptimal;
    } else if solved.value <= solved.lower_bound * (1.0 + crate::bound::AT_BOUND) {
        solved.proven = true;
        solved.termination = Termination::BoundReached;
    } else {
        solved.termination = Termination::BudgetExhausted;
    }
}

/// Count searches from the exact 2-slot search's lower plans, per layer (see
/// [`pair_exact_solve`]).
const POLISH_RUNS: usize = 2;

/// [`crate::pair_exact::minimize`] from the heuristic's plan `solved`: the lower counts it
/// finds, packed without duplicates, replace the plan; the targets it proves infeasible raise
/// the certified bound; a plan within [`crate::pair_exact`]'s tolerance of that bound is
/// proved optimal.
fn pair_exact_solve(
    w: &[f64],
    cluster: &PlacementCluster,
    budget: &Budget,
    deadline: &Deadline,
    solved: Solved,
) -> Solved {
    let mut steps = budget.pair_steps;
    // The first lower plans the exact search finds are new starts for the count search (a
    // local search whose result depends on where it starts), each at its own fixed work
    // budget (about 0.1 s at most on these shapes, hence at most POLISH_RUNS of them).
    let mut runs = 0;
    let mut polish = |counts: &[usize]| {
        runs += 1;
        if runs > POLISH_RUNS {
            return None;
        }
        count_search(w, cluster, &[counts.to_vec()], deadline)
    };
    let found = crate::pair_exact::minimize(
        w,
        cluster.gpus(),
        solved.lower_bound,
        solved.value,
        &crate::plan::counts(&solved.map, w.len()),
        &mut polish,
        &mut steps,
        deadline,
    );
    adopt(w, cluster, solved, found)
}

/// [`crate::slot_exact::minimize`] from the heuristic's plan `solved` (GPUs of `slots` slots):
/// a lower placement it finds replaces the plan, the targets it proves infeasible raise the
/// certified bound, and a plan within its tolerance of that bound is proved optimal.
fn slot_exact_solve(
    w: &[f64],
    cluster: &PlacementCluster,
    slots: usize,
    budget: &Budget,
    deadline: &Deadline,
    solved: Solved,
) -> Solved {
    let mut steps = budget.steps;
    let found = crate::slot_exact::minimize(
        w,
        cluster.gpus(),
        slots,
        solved.lower_bound,
        solved.value,
        &crate::plan::counts(&solved.map, w.len()),
        &mut steps,
        deadline,
    );
    adopt(w, cluster, solved, found)
}

/// `solved` after an exact count search: a lower placement it found replaces the plan, the
/// targets it proved infeasible raise the certified bound (its relaxation, if any, only drops
/// a rule), and a plan within [`crate::bisection::PROOF_GAP`] of that bound is proved optimal.
fn adopt(
    w: &[f64],
    cluster: &PlacementCluster,
    mut solved: Solved,
    found: crate::bisection::Minimized,
) -> Solved {
    if let Some((map, _)) = found.map {
        let value = max_load(w, cluster, &map);
        if value < solved.value * (1.0 - crate::local_search::REL_EPS) {
            solved.value = value;
            solved.map = map;
        }
    }
    solved.lower_bound = solved.lower_bound.max(found.lower_bound.min(solved.value));
    let proved = solved.value <= found.lower_bound * (1.0 + crate::bisection::PROOF_GAP);
    conclude(&mut solved, proved);
    solved
}

/// `solved`, marked [`Termination::TimeCapped`] when the clock cut one of its searches and it
/// is not proved optimal (then another machine or load could have found another plan).
fn clocked(mut solved: Solved, budget: &Budget) -> Solved {
    if !solved.termination.is_optimal() && budget.clock_hit() {
        solved.termination = Termination::TimeCapped;
    }
    solved
}
