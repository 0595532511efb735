//! The traffic-aware planner: fewest tokens across nodes with the busiest GPU within
//! `(1 + eps)` of the best compute-only plan; the trade-off curve; the bound.

use comm_cost_model::InputError;

use expert_placement::{LayerLoads, PlacementAlgorithm, PlacementCluster, place_with};
use serde::{Deserialize, Serialize};

use crate::baselines::topology_greedy;
use crate::bound::{TrafficBound, lower_bound};
use crate::bound_flow::{FLOW_BOUND_ITERATIONS, flow_bound};
use crate::cap::Cap;
use crate::construct::construct;
use crate::context::{Context, replica_gpus};
use crate::dispatch::{DispatchReport, check_map, evaluate};
use crate::error::TrafficError;
use crate::groups::{group_bound, group_start};
use crate::lagrange::{Candidate, bound_plans};
use crate::options::TrafficOptions;
use crate::routed::RoutedTokens;
use crate::search::{Budget, End, State};
use crate::termination::TrafficTermination;
use comm_cost_model::check_entry;

/// A traffic-aware placement of one layer, with the figures that judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficPlacement {
    /// The logical expert in each physical slot (the engines' `physical_to_logical_map` row).
    pub physical_to_logical: Vec<usize>,
    /// Replicas of each logical expert.
    pub replica_count: Vec<usize>,
    /// The plan under the locality dispatch: loads, cross-node tokens.
    pub dispatch: DispatchReport,
    /// The compute-only plan (`expert-placement`'s optimal, node-aware with groups) the balance
    /// limit is measured from, under the same dispatch.
    pub compute_only: DispatchReport,
    /// Its slot map.
    pub compute_only_physical_to_logical: Vec<usize>,
    /// Its busiest GPU as `expert-placement` scores it (even split over replicas): the `C` of
    /// the limit `(1 + eps) C`.
    pub compute_only_max_gpu_load: f64,
    /// A lower bound on the busiest GPU of any placement under any split
    /// (`expert_placement::placement_lower_bound`).
    pub compute_lower_bound: f64,
    /// The balance limit `(1 + eps) C`.
    pub max_gpu_load_limit: f64,
    /// Whether the plan's busiest GPU (best split) is within the limit. `false` only when no
    /// plan found meets it (the locality dispatch can force more load on a GPU than the even
    /// split of the compute-only plan); the plan is then the most balanced one found.
    pub balance_met: bool,
    /// The certified lower bound on cross-node tokens at the limit.
    pub bound: TrafficBound,
    /// How the search ended: `bound-reached` when the plan's cross-node tokens equal the bound,
    /// `heuristic` when every search ran to its end, `steps-exhausted` when the step budget
    /// stopped the local search, `time-capped` when the wall-clock safety cap stopped anything
    /// (only then can the plan differ between machines and runs).
    pub termination: TrafficTermination,
    /// Moves scored.
    pub search_steps: u64,
}

impl TrafficPlacement {
    /// `cross_node_tokens / bound - 1` (0 when both are 0, `f64::MAX` for a zero bound under a
    /// positive traffic): how far the plan may be from the
    /// fewest cross-node tokens at its balance limit.
    #[must_use]
    pub fn traffic_gap(&self) -> f64 {
        let b = self.bound.cross_node_tokens;
        let t = self.dispatch.cross_node_tokens;
        if b > 0.0 {
            t / b - 1.0
        } else if t > 0.0 {
            f64::MAX
        } else {
            0.0
        }
    }
}

/// Places one layer's experts to send the fewest tokens across nodes while the busiest GPU stays
/// within `(1 + eps)` times the best compute-only plan's.
///
/// The compute-only plan is `expert-placement`'s optimal one (node-aware with
/// [`TrafficOptions::groups`]), scored as that crate scores it (even split), `C`; the limit is
/// `(1 + eps) C`. The certified bound comes first ([`traffic_lower_bound`]): its hosting
/// problem's Lagrangian solution (which nodes host each expert) is turned into plans on a small
/// grid of tightened models (fewer slots, smaller replicas, so that hot experts can be split
/// over GPUs), each repaired at the node level (moves, swaps and dropped hosts by fewest
/// cross-node tokens per token of excess), packed per node by `expert-placement` and scored under
/// the exact dispatch ([`crate::dispatch()`]); it stops within 2% of the bound. Plans slightly over
/// the limit get a replica-level local search; when no plan meets the limit, the older node-level
/// construction runs. With groups, a search over group-to-node assignments (exhaustive for up to
/// `2^16` assignments) and the replica-level search do the work. The result is the best of all
/// candidates, the compute-only plan and the topology-aware heuristic (within the limit first,
/// then fewest cross-node tokens), so it never sends more tokens across nodes than the
/// compute-only plan when that plan meets the limit. Every search stops on counted work
/// (bound rounds and iterations, grid points, steps, the node packer's starts), so the plan is
/// the same on any machine at any load; [`TrafficOptions::time_budget_s`] is only a safety cap,
/// and a plan it cut short says [`TrafficTermination::TimeCapped`]. The bound is
/// [`traffic_lower_bound`] at the limit (with groups, an exhaustive group-level bound when it is
/// small enough and tighter). Docs: `docs/algorithms.md#traffic-placement`.
///
/// # Errors
///
/// [`TrafficError::Input`] (`SizeMismatch`) unless the tokens have one source per GPU,
/// [`TrafficError::Input`] (`InvalidEntry`) for a bad tolerance or time budget; the errors of
/// `expert_placement::place_with` (too few slots, a GPU with more slots than experts, groups
/// that do not divide the experts or cannot spread over the nodes) as
/// [`TrafficError::Placement`].
///
/// # Complexity
///
/// The compute-only plan's, plus the bound's (see [`traffic_lower_bound`]), plus at most 8 grid
/// plans of `O(100 · E · 2^K)` (ascent), a node-level repair of `O(E^2 · K)` per move and one
/// exact dispatch each, plus at most [`TrafficOptions::search_steps`] local-search moves of
/// `O(G + c_max)` each; a layer stops at the safety cap [`TrafficOptions::time_budget_s`] if
/// it gets there first (the bound always runs at least one round).
///
/// # Examples
///
/// ```
/// use expert_placement::PlacementCluster;
/// use traffic_placement::{RoutedTokens, TrafficOptions, place_traffic_aware};
///
/// // 2 nodes of 2 GPUs with 2 slots; node 0 sends to experts 0-3, node 1 to experts 4-7.
/// let c = PlacementCluster::uniform(4, 2, 2)?;
/// let mut rows = vec![vec![0.0; 8]; 4];
/// for g in 0..4 {
///     for e in 0..8 {
///         rows[g][e] = if (g < 2) == (e < 4) { 10.0 } else { 1.0 };
///     }
/// }
/// let t = RoutedTokens::new(rows)?;
/// let p = place_traffic_aware(&t, &c, &TrafficOptions::default())?;
/// assert!(p.balance_met);
/// // Every expert in the node that uses it: only the 1-token pairs cross.
/// assert!((p.dispatch.cross_node_tokens - 16.0).abs() < 1e-9);
/// assert!(p.dispatch.cross_node_tokens <= p.compute_only.cross_node_tokens);
/// assert!((p.bound.cross_node_tokens - 16.0).abs() < 1e-9); // proved fewest
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
pub fn place_traffic_aware(
    routed: &RoutedTokens,
    cluster: &PlacementCluster,
    options: &TrafficOptions,
) -> Result<TrafficPlacement, TrafficError> {
    options.validate()?;
    let ctx = Context::new(routed, cluster)?;
    let base = compute_only(&ctx, options)?;
    let limit = limit_of(base.max_gpu_load, options.tolerance)?;
    plan_at(&ctx, &base, limit, options, None)
}

/// One point of the trade-off curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The tolerance `eps`.
    pub tolerance: f64,
    /// The limit `(1 + eps) C`.
    pub max_gpu_load_limit: f64,
    /// The plan's busiest GPU (best split).
    pub max_gpu_load: f64,
    /// Its cross-node tokens.
    pub cross_node_tokens: f64,
    /// The lower bound on cross-node tokens at the limit.
    pub bound_cross_node_tokens: f64,
    /// Whether the plan meets the limit.
    pub balance_met: bool,
    /// The plan's slot map.
    pub physical_to_logical: Vec<usize>,
    /// How the point's search ended ([`TrafficPlacement::termination`]; `bound-reached`
    /// compares with the point's own bound, which may be above
    /// [`CurvePoint::bound_cross_node_tokens`], the smallest bound up to this tolerance).
    pub termination: TrafficTermination,
}

/// The trade-off between cross-node tokens and the busiest GPU: [`place_traffic_aware`] at each
/// tolerance, in increasing order, each search starting from the previous point's plan (still
/// within the larger limit), so the curve's cross-node tokens never increase with the
/// tolerance, and its bounds never increase either.
///
/// # Errors
///
/// Those of [`place_traffic_aware`]; [`TrafficError::Input`] (`Empty`) for no tolerance,
/// [`TrafficError::Input`] (`InvalidEntry`) for a tolerance that is not a finite non-negative number.
///
/// # Complexity
///
/// That of [`place_traffic_aware`] per tolerance.
///
/// # Examples
///
/// ```
/// use expert_placement::PlacementCluster;
/// use traffic_placement::{RoutedTokens, TrafficOptions, tradeoff_curve};
///
/// let c = PlacementCluster::uniform(4, 3, 2)?;
/// let rows: Vec<Vec<f64>> = (0..4)
///     .map(|g| (0..8).map(|e| if (g < 2) == (e % 2 == 0) { 9.0 + e as f64 } else { 2.0 }).collect())
///     .collect();
/// let t = RoutedTokens::new(rows)?;
/// let curve = tradeoff_curve(&t, &c, &[0.0, 0.05, 0.5], &TrafficOptions::default())?;
/// assert!(curve.windows(2).all(|w| w[1].cross_node_tokens <= w[0].cross_node_tokens));
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
pub fn tradeoff_curve(
    routed: &RoutedTokens,
    cluster: &PlacementCluster,
    tolerances: &[f64],
    options: &TrafficOptions,
) -> Result<Vec<CurvePoint>, TrafficError> {
    options.validate()?;
    if tolerances.is_empty() {
        return Err(TrafficError::Input(InputError::Empty {
            what: "tolerances of the trade-off curve",
        }));
    }
    for (i, &t) in tolerances.iter().enumerate() {
        check_entry("tolerances", i, t)?;
    }
    let mut sorted = tolerances.to_vec();
    sorted.sort_by(f64::total_cmp);
    let ctx = Context::new(routed, cluster)?;
    let base = compute_only(&ctx, options)?;
    let mut out: Vec<CurvePoint> = Vec::with_capacity(sorted.len());
    let mut warm: Option<Vec<usize>> = None;
    let mut best_bound = f64::INFINITY;
    for eps in sorted {
        let limit = limit_of(base.max_gpu_load, eps)?;
        let p = plan_at(&ctx, &base, limit, options, warm.as_deref())?;
        best_bound = best_bound.min(p.bound.cross_node_tokens);
        let point = CurvePoint {
            tolerance: eps,
            max_gpu_load_limit: limit,
            max_gpu_load: p.dispatch.max_gpu_load,
            cross_node_tokens: p.dispatch.cross_node_tokens,
            bound_cross_node_tokens: best_bound,
            balance_met: p.balance_met,
            physical_to_logical: p.physical_to_logical,
            termination: p.termination,
        };
        // A balanced plan stays balanced at a larger limit: carry it forward.
        if point.balance_met {
            warm = Some(point.physical_to_logical.clone());
        }
        out.push(point);
    }
    Ok(out)
}

/// A certified lower bound on the cross-node tokens of every placement of `routed` on
/// `cluster` whose busiest GPU (locality dispatch, best split) is at most `max_gpu_load_limit`.
///
/// The larger of two Lagrangian duals. The hosting problem's: every expert picks a nonempty set
/// of hosting nodes, the tokens of a node in the set stay there and the rest load the node that
/// serves them, each node's load is within the limit times its speed and its slots hold the
/// replicas each hosted expert needs (`max(1, ceil(D[n][e] / (limit · v_max)))` in a node, `ceil(W_e
/// / (limit · v_max))` in all); its per-expert subproblems are solved by enumerating the hosting
/// sets (up to 8 nodes) and the multipliers by subgradient ascent. And a first LP relaxation's
/// over "expert `e` has a replica in node `n`" (forced load and slots only; coordinate descent,
/// `rounds` rounds). Any multipliers give a valid bound. Valid with and without redundant
/// experts; a groups-in-nodes plan obeys it too (it is a placement).
///
/// # Errors
///
/// [`TrafficError::Input`] (`SizeMismatch`) unless there is one source per GPU,
/// [`TrafficError::Input`] (`InvalidEntry`) for a limit that is not a finite non-negative number.
///
/// # Complexity
///
/// `O(G · E + rounds · K · 80 · E · K + 400 · E · 2^K)` for `K` nodes (the last term only up to
/// 8 nodes).
///
/// # Examples
///
/// ```
/// use expert_placement::PlacementCluster;
/// use traffic_placement::{RoutedTokens, traffic_lower_bound};
///
/// // Two single-GPU nodes with one slot each, two experts both sources want: one crosses.
/// let c = PlacementCluster::uniform(2, 1, 2)?;
/// let t = RoutedTokens::new(vec![vec![5.0, 1.0], vec![1.0, 5.0]])?;
/// let b = traffic_lower_bound(&t, &c, 1e9, 30)?;
/// assert!((b.cross_node_tokens - 2.0).abs() < 1e-6);
/// # Ok::<(), traffic_placement::TrafficError>(())
/// ```
pub fn traffic_lower_bound(
    routed: &RoutedTokens,
    cluster: &PlacementCluster,
    max_gpu_load_limit: f64,
    rounds: usize,
) -> Result<TrafficBound, TrafficError> {
    check_entry("max_gpu_load_limit", 0, max_gpu_load_limit)?;
    let ctx = Context::new(routed, cluster)?;
    let never = Cap::never();
    let mut bound = lower_bound(&ctx, max_gpu_load_limit, rounds, &never);
    if let Some(f) = flow_bound(
        &ctx,
        max_gpu_load_limit,
        ctx.routed.total(),
        FLOW_BOUND_ITERATIONS,
        &never,
    ) {
        bound.cross_node_tokens = bound.cross_node_tokens.max(f.value);
    }
    Ok(bound)
}

/// A replica of at most this share of the balance limit packs well onto GPUs with other ones:
/// the node-level construction counts `load / (share · limit)` slots for an expert's replicas.
const PACKABLE_REPLICA: f64 = 0.25;

/// The tightened ascents aim this share above the bound.
const PLAN_TARGET_GAP: f64 = 0.1;

/// A plan within this share above the bound ends the search for better ones.
const GOOD_ENOUGH_GAP: f64 = 0.02;

/// Plans of the bound's hosting up to this share over the limit are repaired by the local search.
const REPAIRABLE_EXCESS: f64 = 0.03;

/// How many of those are repaired, fewest cross-node tokens first.
const REPAIRS: usize = 2;

/// Step budget of one repair.
const REPAIR_STEPS: u64 = 20_000;

/// Node load margins the construction tries, in order.
const CONSTRUCTION_MARGINS: [f64; 2] = [0.001, 0.004];

/// The compute-only plan of the context.
pub(crate) struct Base {
    pub(crate) map: Vec<usize>,
    pub(crate) max_gpu_load: f64,
    pub(crate) lower_bound: f64,
    /// Its largest replica load `max w_e / c_e`: a replica size that packs well.
    pub(crate) largest_replica: f64,
    /// Whether its search ran for half its time budget or more (its extra starts may have been
    /// cut short by the clock).
    pub(crate) cut_short: bool,
}

fn compute_only(ctx: &Context<'_>, options: &TrafficOptions) -> Result<Base, TrafficError> {
    let loads = LayerLoads::new(ctx.loads.clone())?;
    let algorithm = match options.groups {
        Some(groups) => PlacementAlgorithm::OptimalNodeAware { groups },
        None => PlacementAlgorithm::Optimal,
    };
    let watch = Cap::never();
    let placement = options.compute_only_options();
    let p = watch.watch(placement.time_budget_s, || {
        place_with(&loads, ctx.cluster, algorithm, &placement)
    })?;
    let lower_bound = expert_placement::placement_lower_bound(&loads, ctx.cluster)?;
    let largest_replica = ctx
        .loads
        .iter()
        .zip(&p.replica_count)
        .map(|(&w, &c)| w / c.max(1) as f64)
        .fold(0.0, f64::max);
    Ok(Base {
        map: p.physical_to_logical,
        max_gpu_load: p.max_gpu_load,
        lower_bound,
        largest_replica,
        cut_short: watch.hit(),
    })
}

fn limit_of(c: f64, eps: f64) -> Result<f64, TrafficError> {
    Ok(comm_cost_model::check_finite_result(
        "balance limit (1 + eps) C",
        c * (1.0 + eps),
    )?)
}

/// The plan at one limit, from the compute-only plan or a warm start.
fn plan_at(
    ctx: &Context<'_>,
    base: &Base,
    limit: f64,
    options: &TrafficOptions,
    warm: Option<&[usize]>,
) -> Result<TrafficPlacement, TrafficError> {
    let cap = Cap::new(options.time_budget_s);
    if base.cut_short {
        cap.record();
    }
    let budget = Budget {
        steps: options.search_steps,
        cap: &cap,
    };
    // Candidate maps, with their exact dispatch when it is known already.
    let mut candidates: Vec<(Vec<usize>, Option<DispatchReport>)> = Vec::new();
    let mut start = warm.map_or_else(|| base.map.clone(), <[usize]>::to_vec);
    let mut group_pins = None;
    let mut constructed = false;
    // The certified bound first (the hosting problem's Lagrangian dual, and the older
    // relaxation): it says when a plan is good enough, and the plans from its hosting come next.
    let base_report = evaluate(ctx, &replica_gpus(&base.map, ctx.cluster, ctx.experts()));
    let base_cross = base_report.cross_node_tokens;
    let flow = flow_bound(ctx, limit, base_cross, FLOW_BOUND_ITERATIONS, &cap);
    let mut bound = lower_bound(ctx, limit, options.bound_rounds, &cap);
    if let Some(f) = &flow {
        bound.cross_node_tokens = bound.cross_node_tokens.max(f.value);
    }
    if let Some(groups) = options.groups {
        let (map, pins) = group_start(
            ctx,
            groups,
            limit,
            &start,
            &options.compute_only_options(),
            &cap,
        )?;
        start = map;
        group_pins = Some(pins);
    } else {
        let tol = limit * 1e-9;
        let good_enough = bound.cross_node_tokens * (1.0 + GOOD_ENOUGH_GAP);
        // The Polyak target of the tightened ascents: a little above the bound, where their
        // optima lie (a far target makes long first steps).
        let mut plans = bound_plans(
            ctx,
            limit,
            bound.cross_node_tokens * (1.0 + PLAN_TARGET_GAP) + 1e-9 * ctx.routed.total(),
            good_enough,
            &options.placement,
            &cap,
        )?;
        // Far from the bound (little locality) the close target misleads the ascents: aim at
        // the compute-only plan's traffic instead when no plan met the limit.
        if !plans.iter().any(|c| c.report.max_gpu_load <= limit + tol) {
            plans.extend(bound_plans(
                ctx,
                limit,
                base_cross,
                good_enough,
                &options.placement,
                &cap,
            )?);
        }
        let best_met = plans
            .iter()
            .filter(|c| c.report.max_gpu_load <= limit + tol)
            .map(|c| c.report.cross_node_tokens)
            .fold(f64::INFINITY, f64::min);
        // Repair the plans that send fewer tokens across nodes than the best one within the
        // limit but overshoot it slightly, fewest tokens first.
        let mut near: Vec<&Candidate> = plans
            .iter()
            .filter(|c| {
                c.report.max_gpu_load > limit + tol
                    && c.report.max_gpu_load <= limit * (1.0 + REPAIRABLE_EXCESS)
                    && c.report.cross_node_tokens < best_met
            })
            .collect();
        near.sort_by(|a, b| {
            a.report
                .cross_node_tokens
                .total_cmp(&b.report.cross_node_tokens)
        });
        for c in near.into_iter().take(REPAIRS) {
            let mut state = State::new(ctx, c.map.clone(), limit);
            state.run(Budget {
                steps: budget.steps.min(REPAIR_STEPS),
                cap: &cap,
            });
            candidates.push((state.map, None));
        }
        constructed = best_met.is_finite();
        candidates.extend(plans.into_iter().map(|c| (c.map, Some(c.report))));
        // The node-level construction from each expert's heaviest sender, with a growing
        // margin until a plan meets the limit, when the bound's plans found none.
        if !constructed {
            for margin in CONSTRUCTION_MARGINS {
                let Some(map) = construct(
                    ctx,
                    limit,
                    margin,
                    base.largest_replica.max(limit * PACKABLE_REPLICA),
                    &options.placement,
                    &cap,
                    None,
                )?
                else {
                    continue;
                };
                let d = evaluate(ctx, &replica_gpus(&map, ctx.cluster, ctx.experts()));
                let fits = d.max_gpu_load <= limit;
                candidates.push((map, Some(d)));
                if fits {
                    constructed = true;
                    break;
                }
            }
        }
    }
    check_map(ctx, &start)?;
    // The replica-level search: the groups-in-nodes repair, or the fallback when no
    // construction met the limit.
    let (end, steps) = if group_pins.is_some() || !constructed {
        let mut state = State::new(ctx, start, limit);
        if let Some((group_of_expert, node_of_group)) = group_pins.clone() {
            state.pin_groups(group_of_expert, node_of_group);
        }
        let end = state.run(budget);
        let steps = state.steps;
        candidates.push((state.map, None));
        (end, steps)
    } else {
        (End::Converged, 0)
    };
    // The better of the search's plan, the constructions, the start and the compute-only plan
    // under the exact dispatch: within the limit first, then fewest cross-node tokens, then
    // least busy.
    if let Some(w) = warm {
        candidates.push((w.to_vec(), None));
    }
    candidates.push((base.map.clone(), Some(base_report.clone())));
    // The published topology-aware heuristic too, where its shape rules allow it (it has no
    // groups-in-nodes guarantee, so not with groups): the plan is never worse than it at the
    // same balance.
    if options.groups.is_none() {
        if let Ok(loads) = LayerLoads::new(ctx.loads.clone()) {
            if let Ok(map) = topology_greedy(&loads, ctx.cluster, None) {
                candidates.push((map, None));
            }
        }
    }
    let tol = limit * 1e-9;
    let mut best: Option<(Vec<usize>, DispatchReport)> = None;
    for (map, known) in candidates {
        let d =
            known.unwrap_or_else(|| evaluate(ctx, &replica_gpus(&map, ctx.cluster, ctx.experts())));
        let key = |d: &DispatchReport| {
            (
                d.max_gpu_load > limit + tol,
                d.cross_node_tokens,
                d.max_gpu_load,
            )
        };
        let better = match &best {
            None => true,
            Some((_, b)) => {
                let (ka, kb) = (key(&d), key(b));
                if ka.0 != kb.0 {
                    !ka.0
                } else if ka.0 {
                    d.max_gpu_load < b.max_gpu_load
                } else {
                    ka.1 < kb.1 - 1e-9 * (1.0 + kb.1)
                }
            }
        };
        if better {
            best = Some((map, d));
        }
    }
    let Some((map, report)) = best else {
        return Err(TrafficError::Input(InputError::Empty {
            what: "candidate plans",
        }));
    };
    // One wall-clock budget for the whole layer: the bound takes what the search left (at
    // least one round).
    if let Some(groups) = options.groups {
        if let Some(b) = group_bound(ctx, groups, limit) {
            bound.cross_node_tokens = bound.cross_node_tokens.max(b);
        }
    }
    let balance_met = report.max_gpu_load <= limit + tol;
    let cross = report.cross_node_tokens;
    // The bound holds only for plans within the limit.
    let termination = if cap.hit() {
        TrafficTermination::TimeCapped
    } else if balance_met && cross <= bound.cross_node_tokens * (1.0 + 1e-9) + 1e-9 {
        TrafficTermination::BoundReached
    } else {
        match end {
            End::Converged => TrafficTermination::Heuristic,
            End::Steps => TrafficTermination::StepsExhausted,
            End::Time => TrafficTermination::TimeCapped,
        }
    };
    let mut replica_count = vec![0usize; ctx.experts()];
    for &e in &map {
        replica_count[e] += 1;
    }
    Ok(TrafficPlacement {
        physical_to_logical: map,
        replica_count,
        dispatch: report,
        compute_only: base_report,
        compute_only_physical_to_logical: base.map.clone(),
        compute_only_max_gpu_load: base.max_gpu_load,
        compute_lower_bound: base.lower_bound,
        max_gpu_load_limit: limit,
        balance_met,
        bound,
        termination,
        search_steps: steps,
    })
}

#[cfg(test)]
mod diag {
    use super::*;
    use crate::workload::{LocalityTrace, locality_trace};

    #[test]
    #[ignore = "diagnostics"]
    fn construction_diagnostics() {
        use std::time::Instant;
        for (g, k, s, loc) in [
            (16, 2, 18, 0.5),
            (32, 4, 9, 0.5),
            (32, 4, 10, 0.8),
            (16, 2, 18, 0.0),
        ] {
            let t = &locality_trace(&LocalityTrace::deepseek_like(1, g, k, loc), 1).unwrap()[0];
            let c = PlacementCluster::uniform(g, s, k).unwrap();
            let ctx = Context::new(t, &c).unwrap();
            let o = TrafficOptions::default();
            let t0 = Instant::now();
            let base = compute_only(&ctx, &o).unwrap();
            let t_base = t0.elapsed();
            let limit = base.max_gpu_load * 1.01;
            let t0 = Instant::now();
            let bd = evaluate(&ctx, &replica_gpus(&base.map, &c, ctx.experts()));
            let t_eval = t0.elapsed();
            let t0 = Instant::now();
            let b = lower_bound(&ctx, limit, 30, &Cap::never());
            let t_bound = t0.elapsed();
            println!(
                "G={g} K={k} S={s} loc={loc}: base busiest/limit {:.4} ratio {:.4} | base {t_base:?} eval {t_eval:?} bound {t_bound:?} rounds {}",
                bd.max_gpu_load / limit,
                bd.cross_node_ratio(),
                b.rounds
            );
            for m in CONSTRUCTION_MARGINS {
                let t0 = Instant::now();
                let r = construct(
                    &ctx,
                    limit,
                    m,
                    base.largest_replica.max(limit * PACKABLE_REPLICA),
                    &o.placement,
                    &Cap::never(),
                    None,
                )
                .unwrap();
                let t_c = t0.elapsed();
                match r {
                    None => println!("  margin {m}: none {t_c:?}"),
                    Some(map) => {
                        let d = evaluate(&ctx, &replica_gpus(&map, &c, ctx.experts()));
                        println!(
                            "  margin {m}: busiest/limit {:.4} ratio {:.4} {t_c:?}",
                            d.max_gpu_load / limit,
                            d.cross_node_ratio()
                        );
                    }
                }
            }
        }
    }
}
