//! Traffic-aware placement under a move budget: from the placement an engine runs now, at most
//! `max_moves` slots change expert, chosen to cut the most cross-node tokens within the balance
//! limit.

use serde::{Deserialize, Serialize};

use crate::cap::Cap;
use crate::context::{Context, replica_gpus};
use crate::dispatch::{DispatchReport, check_map, evaluate};
use crate::error::TrafficError;
use crate::options::TrafficOptions;
use crate::planner::{TrafficPlacement, place_traffic_aware};
use crate::routed::RoutedTokens;
use crate::search::{Budget, End, State};
use crate::termination::TrafficTermination;
use comm_cost_model::InputError;
use expert_placement::PlacementCluster;

/// Shares of the move budget spent on the best-ranked changes, largest first (the rest goes to
/// the local search that restores balance).
const BUDGET_SHARES: [f64; 5] = [1.0, 0.9, 0.75, 0.5, 0.0];

/// The budgets tried are the given one divided by these (so a doubled or quadrupled budget
/// tries everything the smaller one did).
const BUDGET_DIVISORS: [usize; 3] = [1, 2, 4];

/// Step budget of each capped local search.
const REPAIR_STEPS: u64 = 20_000;

/// A placement reached from the current one with at most a given number of slot changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoveBudgetPlacement {
    /// The logical expert in each physical slot.
    pub physical_to_logical: Vec<usize>,
    /// Slots whose expert differs from the current placement's (each one weight copy).
    pub moves: usize,
    /// The plan under the locality dispatch.
    pub dispatch: DispatchReport,
    /// The current placement under the same dispatch.
    pub current: DispatchReport,
    /// Whether the plan's busiest GPU is within the target's limit `(1 + eps) C`.
    pub balance_met: bool,
    /// Slot changes the unconstrained traffic-aware plan needs (after keeping every expert
    /// that stays on its GPU in its slot).
    pub target_moves: usize,
    /// The unconstrained traffic-aware plan, with its limit and certified bound (the bound
    /// holds for every placement within the limit, so for this one too).
    pub target: TrafficPlacement,
    /// How the budgeted plan's search ended: the target's termination when the target fits the
    /// budget; otherwise `bound-reached` when the plan meets the limit at the target's bound,
    /// `time-capped` when the safety cap stopped the target or any capped local search,
    /// `steps-exhausted` when a capped local search used its step budget, else `heuristic`.
    pub termination: TrafficTermination,
}

/// [`place_traffic_aware`] combined with fewest-move rebalancing: the plan changes at most
/// `max_moves` slots of `current` (a `physical_to_logical` row).
///
/// The unconstrained traffic-aware plan comes first, its experts kept in their current slots
/// wherever the GPU already holds them (GPUs are not exchanged: that would change which sources
/// are local). When it needs more changes than the budget, the changes are ranked by the
/// cross-node tokens each saves at the node level (tokens of the node's sources to the incoming
/// expert, if the node lacked it, minus those to the outgoing one, if it was the node's last
/// replica), and the best `k` are applied for `k` in a few shares of the budget (never removing
/// an expert's last replica), each followed by the planner's replica-level local search with its
/// changes from `current` capped at the budget (balance first, then traffic, under the static
/// even split). The answer is the best under the exact dispatch: within the
/// limit first, then fewest cross-node tokens. `k = 0` is the current placement, so the plan never sends
/// more tokens across nodes than it when it meets the limit.
///
/// # Errors
///
/// Those of [`place_traffic_aware`]; `current` that is not a valid slot map of `cluster` (as
/// `expert_placement::Placement::evaluate` checks) as [`TrafficError::Placement`].
///
/// # Complexity
///
/// That of [`place_traffic_aware`], plus the local search's (within
/// [`TrafficOptions::search_steps`], at most 20,000 steps each, and one
/// [`TrafficOptions::time_budget_s`] for all), plus `O(S log S)` to rank the changes and eleven
/// exact dispatches.
///
/// # Examples
///
/// ```
/// use expert_placement::PlacementCluster;
/// use traffic_placement::{RoutedTokens, TrafficOptions, place_traffic_aware_with_moves};
///
/// // Node 0 (GPUs 0-1) sends to experts 0-3, node 1 to experts 4-7, but they sit the other way.
/// let c = PlacementCluster::uniform(4, 2, 2)?;
/// let rows: Vec<Vec<f64>> = (0..4)
///     .map(|g| (0..8).map(|e| if (g < 2) == (e < 4) { 10.0 } else { 1.0 }).collect())
///     .collect();
/// let t = RoutedTokens::new(rows)?;
/// let current = [4, 5, 6, 7, 0, 1, 2, 3];
/// let p = place_traffic_aware_with_moves(&t, &c, &current, 2, &TrafficOptions::default())?;
/// assert!(p.moves <= 2);
/// assert!(p.dispatch.cross_node_tokens <= p.current.cross_node_tokens);
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
pub fn place_traffic_aware_with_moves(
    routed: &RoutedTokens,
    cluster: &PlacementCluster,
    current: &[usize],
    max_moves: usize,
    options: &TrafficOptions,
) -> Result<MoveBudgetPlacement, TrafficError> {
    let ctx = Context::new(routed, cluster)?;
    check_map(&ctx, current)?;
    let target = place_traffic_aware(routed, cluster, options)?;
    let limit = target.max_gpu_load_limit;
    let aligned = align_slots(&target.physical_to_logical, current, cluster);
    let changes: Vec<usize> = (0..current.len())
        .filter(|&s| aligned[s] != current[s])
        .collect();
    let target_moves = changes.len();
    let score = |map: &[usize]| evaluate(&ctx, &replica_gpus(map, cluster, ctx.experts()));
    let current_report = score(current);
    let mut candidates: Vec<Vec<usize>> = Vec::new();
    // How the capped searches ended (none ran when the target fits the budget).
    let mut ends: Vec<End> = Vec::new();
    let mut capped = false;
    if target_moves <= max_moves {
        candidates.push(aligned);
    } else {
        // The best changes by node-level saving for a share of the budget, then the
        // planner's replica-level local search (balance first, then traffic) with the rest.
        let cap = Cap::new(options.time_budget_s);
        let ranked = rank_changes(&ctx, current, &aligned, &changes);
        // The budget's candidates and those of its half and quarter (each within the budget):
        // the search is a heuristic whose result is not monotone in its cap, and this way
        // doubling or quadrupling a budget never gives a worse plan.
        let mut budgets: Vec<usize> = BUDGET_DIVISORS
            .iter()
            .map(|&d| max_moves / d)
            .filter(|&b| b > 0)
            .collect();
        budgets.dedup();
        for budget in budgets {
            for share in BUDGET_SHARES {
                // The share of a budget below the change count: a floor, never above it.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let k = ((budget as f64) * share).floor() as usize;
                let partial = apply(&ctx, current, &aligned, &ranked, k.min(budget));
                candidates.push(partial.clone());
                let mut state = State::new(&ctx, partial, limit);
                state.cap_changes(current.to_vec(), budget);
                ends.push(state.run(Budget {
                    steps: options.search_steps.min(REPAIR_STEPS),
                    cap: &cap,
                }));
                candidates.push(state.map);
            }
        }
        capped = cap.hit();
    }
    candidates.push(current.to_vec());
    let tol = limit * 1e-9;
    let mut best: Option<(Vec<usize>, DispatchReport)> = None;
    for map in candidates {
        let d = score(&map);
        let better = match &best {
            None => true,
            Some((_, b)) => {
                let (ma, mb) = (d.max_gpu_load <= limit + tol, b.max_gpu_load <= limit + tol);
                if ma != mb {
                    ma
                } else if !ma {
                    d.max_gpu_load < b.max_gpu_load
                } else {
                    d.cross_node_tokens < b.cross_node_tokens - 1e-9 * (1.0 + b.cross_node_tokens)
                }
            }
        };
        if better {
            best = Some((map, d));
        }
    }
    let Some((map, dispatch)) = best else {
        return Err(TrafficError::Input(InputError::Empty {
            what: "candidate plans",
        }));
    };
    let moves = map.iter().zip(current).filter(|(a, b)| a != b).count();
    let balance_met = dispatch.max_gpu_load <= limit + tol;
    let termination = budgeted_termination(
        &target,
        &ends,
        capped,
        balance_met
            && dispatch.cross_node_tokens <= target.bound.cross_node_tokens * (1.0 + 1e-9) + 1e-9,
    );
    Ok(MoveBudgetPlacement {
        physical_to_logical: map,
        moves,
        balance_met,
        dispatch,
        current: current_report,
        target_moves,
        target,
        termination,
    })
}

/// The budgeted plan's termination from the target's, the capped searches' ends (empty when
/// the target fits the budget), whether the safety cap stopped anything and whether the plan
/// meets the limit at the bound.
fn budgeted_termination(
    target: &TrafficPlacement,
    ends: &[End],
    capped: bool,
    at_bound: bool,
) -> TrafficTermination {
    if ends.is_empty() {
        target.termination
    } else if capped
        || target.termination == TrafficTermination::TimeCapped
        || ends.contains(&End::Time)
    {
        TrafficTermination::TimeCapped
    } else if at_bound {
        TrafficTermination::BoundReached
    } else if ends.contains(&End::Steps) {
        TrafficTermination::StepsExhausted
    } else {
        TrafficTermination::Heuristic
    }
}

/// `next` with each GPU's experts reordered so that every expert the GPU already holds in
/// `current` stays in its slot (slot order inside a GPU means nothing to the dispatch).
fn align_slots(next: &[usize], current: &[usize], cluster: &PlacementCluster) -> Vec<usize> {
    let mut out = next.to_vec();
    for g in 0..cluster.gpus() {
        let range = cluster.slot_range(g);
        let mut incoming: Vec<usize> = next[range.clone()].to_vec();
        let mut free: Vec<usize> = Vec::new();
        for s in range {
            if let Some(i) = incoming.iter().position(|&e| e == current[s]) {
                out[s] = incoming.swap_remove(i);
            } else {
                free.push(s);
            }
        }
        for (s, e) in free.into_iter().zip(incoming) {
            out[s] = e;
        }
    }
    out
}

/// The changed slots, best node-level saving of cross-node tokens first.
fn rank_changes(
    ctx: &Context<'_>,
    current: &[usize],
    next: &[usize],
    changes: &[usize],
) -> Vec<usize> {
    let k = ctx.nodes();
    let mut count = vec![vec![0usize; k]; ctx.experts()];
    for (s, &e) in current.iter().enumerate() {
        if let Some(g) = ctx.cluster.gpu_of_slot(s) {
            count[e][ctx.node[g]] += 1;
        }
    }
    let mut scored: Vec<(f64, usize)> = changes
        .iter()
        .filter_map(|&s| {
            let n = ctx.node[ctx.cluster.gpu_of_slot(s)?];
            let (out, inc) = (current[s], next[s]);
            let gain = if count[inc][n] == 0 {
                ctx.by_node[n][inc]
            } else {
                0.0
            };
            let loss = if count[out][n] == 1 {
                ctx.by_node[n][out]
            } else {
                0.0
            };
            Some((gain - loss, s))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, s)| s).collect()
}

/// `current` with the first `k` ranked changes applied that keep every expert placed and no
/// expert twice on a GPU.
fn apply(
    ctx: &Context<'_>,
    current: &[usize],
    next: &[usize],
    ranked: &[usize],
    k: usize,
) -> Vec<usize> {
    let mut map = current.to_vec();
    let mut total = vec![0usize; ctx.experts()];
    for &e in current {
        total[e] += 1;
    }
    let mut applied = 0;
    for &s in ranked {
        if applied >= k {
            break;
        }
        let (out, inc) = (map[s], next[s]);
        let Some(g) = ctx.cluster.gpu_of_slot(s) else {
            continue;
        };
        let on_gpu = ctx.cluster.slot_range(g).any(|t| map[t] == inc);
        if total[out] <= 1 || on_gpu {
            continue;
        }
        map[s] = inc;
        total[out] -= 1;
        total[inc] += 1;
        applied += 1;
    }
    map
}
