//! Traffic-aware expert placement: the fewest routed tokens across nodes with the busiest GPU
//! within `(1 + eps)` of the best compute-only plan, next to EPLB (hierarchical and global),
//! the compute-only plan and SGLang's topology-aware heuristic, all scored under the same
//! locality dispatch.
//!
//! A [`TrafficSpec`] gives per-layer routed tokens `routed_tokens[layer][source GPU][expert]`
//! (the `infer` spec's field; how to record them is in `docs/cli.md#place`), the cluster shape
//! and the tolerance; [`plan_traffic`] plans every layer with
//! [`traffic_placement::place_traffic_aware`] and scores the baselines with
//! [`traffic_placement::dispatch`].
//!
//! # Examples
//!
//! ```
//! use moe_planner::traffic::{TrafficSpec, plan_traffic};
//!
//! // 2 nodes of 2 GPUs with 2 slots; node 0 sends to experts 0-3, node 1 to experts 4-7.
//! let layer: Vec<Vec<f64>> = (0..4)
//!     .map(|g| (0..8).map(|e| if (g < 2) == (e < 4) { 10.0 } else { 1.0 }).collect())
//!     .collect();
//! let spec = TrafficSpec::new(vec![layer], 2, 2);
//! let plan = plan_traffic(&spec)?;
//! let l = &plan.layers[0];
//! assert!((l.traffic_aware.cross_node_tokens - 16.0).abs() < 1e-9);
//! assert!(l.traffic_aware.cross_node_tokens <= l.compute_only.cross_node_tokens);
//! assert!((l.traffic_lower_bound - 16.0).abs() < 1e-9);
//! assert_eq!(l.termination, "bound-reached");
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

use expert_placement::{
    EplbPolicy, LayerLoads, PlacementAlgorithm, PlacementCluster, PlacementOptions, place,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use traffic_placement::{
    DEFAULT_TRAFFIC_SEARCH_STEPS, DEFAULT_TRAFFIC_TIME_BUDGET_S, DEFAULT_TRAFFIC_TOLERANCE,
    DispatchReport, RoutedTokens, TrafficOptions, dispatch, place_traffic_aware,
    place_traffic_aware_with_moves, topology_greedy, tradeoff_curve,
};

use crate::PlanError;

/// A traffic-aware placement request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficSpec {
    /// `[layers][G][E]`: tokens each source GPU routes to each logical expert (token-expert
    /// pairs); `G` is the GPU count.
    pub routed_tokens: Vec<Vec<Vec<f64>>>,
    /// Physical expert slots per GPU.
    pub slots_per_gpu: usize,
    /// Nodes (GPUs numbered node by node). Default 1.
    #[serde(default = "one")]
    pub nodes: usize,
    /// Relative GPU speeds (default all 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_speed: Option<Vec<f64>>,
    /// Expert groups: EPLB's hierarchical policy uses them, and with `groups_in_nodes` the
    /// traffic-aware plan keeps each group inside one node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<usize>,
    /// Keep each group's replicas inside one node (needs `groups`). Default false.
    #[serde(default)]
    pub groups_in_nodes: bool,
    /// Allowed relative excess `eps` of the busiest GPU over the compute-only plan (default
    /// 0.01).
    #[serde(default = "default_tolerance")]
    pub traffic_tolerance: f64,
    /// Bytes of one routed token (hidden size x bytes per element); gives cross-node bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_token: Option<f64>,
    /// Tolerances of the trade-off curve of layer `curve_layer` (empty: no curve).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve_tolerances: Vec<f64>,
    /// The layer whose trade-off curve is computed (default 0).
    #[serde(default)]
    pub curve_layer: usize,
    /// Steps of one layer's search (default 200,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_steps: Option<u64>,
    /// Wall-clock safety cap of one layer in seconds (default 10; the searches stop on counted
    /// work, so a plan under the cap is the same on any machine; one over it says `time-capped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget_s: Option<f64>,
    /// The placement serving now, one `physical_to_logical_map` row per layer: each plan keeps
    /// the experts a GPU already holds in their slots and reports its slot changes (`moves`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Vec<Vec<i64>>>,
    /// With `current`: at most this many slots of a layer change expert (weight copies);
    /// absent: as many as the traffic-aware plan needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_moves: Option<usize>,
}

fn one() -> usize {
    1
}

fn default_tolerance() -> f64 {
    DEFAULT_TRAFFIC_TOLERANCE
}

impl TrafficSpec {
    /// A spec with the defaults: speed 1, no groups, tolerance 0.01, no curve.
    #[must_use]
    pub fn new(routed_tokens: Vec<Vec<Vec<f64>>>, slots_per_gpu: usize, nodes: usize) -> Self {
        Self {
            routed_tokens,
            slots_per_gpu,
            nodes,
            gpu_speed: None,
            groups: None,
            groups_in_nodes: false,
            traffic_tolerance: DEFAULT_TRAFFIC_TOLERANCE,
            bytes_per_token: None,
            curve_tolerances: Vec::new(),
            curve_layer: 0,
            search_steps: None,
            time_budget_s: None,
            current: None,
            max_moves: None,
        }
    }

    fn options(&self) -> TrafficOptions {
        TrafficOptions {
            tolerance: self.traffic_tolerance,
            groups: if self.groups_in_nodes {
                self.groups
            } else {
                None
            },
            search_steps: self.search_steps.unwrap_or(DEFAULT_TRAFFIC_SEARCH_STEPS),
            time_budget_s: self.time_budget_s.unwrap_or(DEFAULT_TRAFFIC_TIME_BUDGET_S),
            placement: PlacementOptions::default(),
            ..TrafficOptions::default()
        }
    }
}

/// What one plan costs a layer under the locality dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficFigures {
    /// Token-expert pairs sent to another node.
    pub cross_node_tokens: f64,
    /// `cross_node_tokens` over all routed pairs.
    pub cross_node_ratio: f64,
    /// `cross_node_tokens · bytes_per_token` (dispatch; the combine sends as many back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_node_bytes: Option<f64>,
    /// The busiest GPU's tokens over its speed (most balanced split under locality).
    pub max_gpu_load: f64,
    /// `max_gpu_load` over the mean.
    pub max_over_mean: f64,
}

impl TrafficFigures {
    fn of(d: &DispatchReport, bytes_per_token: Option<f64>) -> Self {
        Self {
            cross_node_tokens: d.cross_node_tokens,
            cross_node_ratio: d.cross_node_ratio(),
            cross_node_bytes: bytes_per_token.map(|b| b * d.cross_node_tokens),
            max_gpu_load: d.max_gpu_load,
            max_over_mean: d.imbalance(),
        }
    }
}

/// One layer's traffic-aware plan and its baselines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficLayer {
    /// The plan's logical expert per slot (SGLang's `physical_to_logical_map` row).
    pub physical_to_logical_map: Vec<usize>,
    /// The traffic-aware plan.
    pub traffic_aware: TrafficFigures,
    /// `expert-placement`'s compute-only plan (node-aware with `groups_in_nodes`).
    pub compute_only: TrafficFigures,
    /// EPLB's hierarchical policy (when `groups` is given and fits the nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eplb_hierarchical: Option<TrafficFigures>,
    /// EPLB's global policy.
    pub eplb_global: TrafficFigures,
    /// SGLang's topology-aware heuristic (PR 19772 / 19811, reconstructed), when its shape
    /// rules allow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_aware: Option<TrafficFigures>,
    /// The balance limit `(1 + eps) C`, `C` the compute-only plan's busiest GPU (even split).
    pub max_gpu_load_limit: f64,
    /// Whether the plan meets it.
    pub balance_met: bool,
    /// A lower bound on the busiest GPU of any placement.
    pub compute_lower_bound: f64,
    /// A lower bound on the cross-node tokens of any plan within the limit.
    pub traffic_lower_bound: f64,
    /// How the search ended (`bound-reached`, `heuristic`, `steps-exhausted`, `time-capped`);
    /// with `current`, the budgeted plan's search.
    pub termination: String,
    /// With `current`: slots whose expert differs from the current placement's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves: Option<usize>,
    /// With `current`: the current placement under the same dispatch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<TrafficFigures>,
}

/// Sums over layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficTotals {
    /// All routed token-expert pairs.
    pub total_tokens: f64,
    /// Cross-node ratio of the traffic-aware plans.
    pub traffic_aware_ratio: f64,
    /// Of the compute-only plans.
    pub compute_only_ratio: f64,
    /// Of EPLB hierarchical (when planned for every layer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eplb_hierarchical_ratio: Option<f64>,
    /// Of EPLB global.
    pub eplb_global_ratio: f64,
    /// Of the topology-aware heuristic (when planned for every layer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_aware_ratio: Option<f64>,
    /// Of the lower bounds.
    pub lower_bound_ratio: f64,
    /// Layers whose plan meets the balance limit.
    pub layers_balance_met: usize,
    /// Worst `max_gpu_load / limit` over layers.
    pub worst_load_over_limit: f64,
}

/// One point of the trade-off curve of one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficCurvePoint {
    /// The tolerance `eps`.
    pub tolerance: f64,
    /// The busiest GPU of the plan.
    pub max_gpu_load: f64,
    /// Its cross-node ratio.
    pub cross_node_ratio: f64,
    /// The lower bound's cross-node ratio at that balance.
    pub lower_bound_ratio: f64,
    /// Whether the plan meets its limit.
    pub balance_met: bool,
    /// How the point's search ended (`bound-reached`, `heuristic`, `steps-exhausted`,
    /// `time-capped`).
    pub termination: String,
}

/// The traffic-aware plan of every layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficPlan {
    /// Logical experts.
    pub experts: usize,
    /// GPUs.
    pub gpus: usize,
    /// Slots per GPU.
    pub slots_per_gpu: usize,
    /// Nodes.
    pub nodes: usize,
    /// The tolerance `eps`.
    pub traffic_tolerance: f64,
    /// One entry per layer.
    pub layers: Vec<TrafficLayer>,
    /// Sums over layers.
    pub totals: TrafficTotals,
    /// The trade-off curve of layer `curve_layer` (empty without `curve_tolerances`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<TrafficCurvePoint>,
}

/// Plans every layer of `spec` (in parallel) and scores the baselines on the same input.
///
/// # Errors
///
/// [`PlanError::Traffic`] for bad routed tokens (empty, ragged, negative or non-finite), a bad
/// tolerance or a too small cluster; [`PlanError::Placement`] for a bad cluster shape;
/// [`PlanError::InvalidField`] for `groups_in_nodes` without `groups`, a non-positive
/// `bytes_per_token`, a `curve_layer` past the last layer, `max_moves` without `current`, or a
/// `current` that is not one slot map per layer (wrong counts, ids out of range, an expert
/// without a slot).
///
/// # Examples
///
/// See the [module documentation](self).
pub fn plan_traffic(spec: &TrafficSpec) -> Result<TrafficPlan, PlanError> {
    let layers = RoutedTokens::layers(spec.routed_tokens.clone())?;
    let gpus = layers[0].sources();
    let experts = layers[0].experts();
    if spec.groups_in_nodes && spec.groups.is_none() {
        return Err(PlanError::InvalidField {
            field: "groups_in_nodes",
            reason: "needs `groups`".into(),
        });
    }
    if let Some(b) = spec.bytes_per_token {
        comm_cost_model::check_positive("bytes_per_token", b)?;
    }
    if spec.current.is_none() && spec.max_moves.is_some() {
        return Err(PlanError::InvalidField {
            field: "max_moves",
            reason: "needs `current`".into(),
        });
    }
    let current = spec
        .current
        .as_deref()
        .map(|c| {
            crate::placement::formats::current_placement(
                c,
                layers.len(),
                gpus.saturating_mul(spec.slots_per_gpu),
                experts,
                "current",
            )
        })
        .transpose()?;
    if !spec.curve_tolerances.is_empty() && spec.curve_layer >= layers.len() {
        return Err(PlanError::InvalidField {
            field: "curve_layer",
            reason: format!("there are {} layers", layers.len()),
        });
    }
    let cluster = match &spec.gpu_speed {
        None => PlacementCluster::uniform(gpus, spec.slots_per_gpu, spec.nodes)?,
        Some(speed) => {
            let shape = PlacementCluster::uniform(gpus, spec.slots_per_gpu, spec.nodes)?;
            PlacementCluster::new(
                shape.slots_of_gpu().to_vec(),
                speed.clone(),
                shape.node_of_gpu().to_vec(),
            )?
        }
    };
    let options = spec.options();
    let planned: Vec<TrafficLayer> = layers
        .par_iter()
        .enumerate()
        .map(|(i, t)| {
            let row = current.as_ref().and_then(|c| c.get(i));
            plan_layer(t, &cluster, spec, &options, row.map(Vec::as_slice))
        })
        .collect::<Result<_, _>>()?;
    let curve = if spec.curve_tolerances.is_empty() {
        Vec::new()
    } else {
        let t = &layers[spec.curve_layer];
        let total = t.total();
        let ratio = |x: f64| if total > 0.0 { x / total } else { 0.0 };
        tradeoff_curve(t, &cluster, &spec.curve_tolerances, &options)?
            .into_iter()
            .map(|p| TrafficCurvePoint {
                tolerance: p.tolerance,
                max_gpu_load: p.max_gpu_load,
                cross_node_ratio: ratio(p.cross_node_tokens),
                lower_bound_ratio: ratio(p.bound_cross_node_tokens),
                balance_met: p.balance_met,
                termination: p.termination.name().to_owned(),
            })
            .collect()
    };
    let totals = totals(&layers, &planned);
    Ok(TrafficPlan {
        experts,
        gpus,
        slots_per_gpu: spec.slots_per_gpu,
        nodes: cluster.nodes(),
        traffic_tolerance: spec.traffic_tolerance,
        layers: planned,
        totals,
        curve,
    })
}

fn plan_layer(
    t: &RoutedTokens,
    cluster: &PlacementCluster,
    spec: &TrafficSpec,
    options: &TrafficOptions,
    current: Option<&[usize]>,
) -> Result<TrafficLayer, PlanError> {
    let bytes = spec.bytes_per_token;
    let (p, moved) = match current {
        None => (place_traffic_aware(t, cluster, options)?, None),
        Some(current) => {
            let budget = spec.max_moves.unwrap_or(current.len());
            let m = place_traffic_aware_with_moves(t, cluster, current, budget, options)?;
            let moved = (
                m.physical_to_logical,
                m.dispatch,
                m.moves,
                m.current,
                m.balance_met,
                m.termination,
            );
            (m.target, Some(moved))
        }
    };
    let loads = LayerLoads::new(t.expert_loads())?;
    let score = |map: &[usize]| -> Result<TrafficFigures, PlanError> {
        Ok(TrafficFigures::of(&dispatch(t, cluster, map)?, bytes))
    };
    let global = place(
        &loads,
        cluster,
        PlacementAlgorithm::Eplb(EplbPolicy::Global),
    )?;
    let hierarchical = match spec.groups {
        Some(groups) => place(
            &loads,
            cluster,
            PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups }),
        )
        .ok(),
        None => None,
    };
    let topology = topology_greedy(&loads, cluster, spec.groups).ok();
    // Under a move budget the layer's plan is the budgeted one; the bound still holds for it.
    let (map, report, balance_met, moves, current, termination) = match moved {
        None => (
            p.physical_to_logical,
            p.dispatch,
            p.balance_met,
            None,
            None,
            p.termination,
        ),
        Some((map, report, moves, current, met, termination)) => (
            map,
            report,
            met,
            Some(moves),
            Some(TrafficFigures::of(&current, bytes)),
            termination,
        ),
    };
    Ok(TrafficLayer {
        traffic_aware: TrafficFigures::of(&report, bytes),
        compute_only: TrafficFigures::of(&p.compute_only, bytes),
        eplb_hierarchical: hierarchical
            .map(|h| score(&h.physical_to_logical))
            .transpose()?,
        eplb_global: score(&global.physical_to_logical)?,
        topology_aware: topology.map(|m| score(&m)).transpose()?,
        max_gpu_load_limit: p.max_gpu_load_limit,
        balance_met,
        compute_lower_bound: p.compute_lower_bound,
        traffic_lower_bound: p.bound.cross_node_tokens,
        termination: termination.name().to_owned(),
        physical_to_logical_map: map,
        moves,
        current,
    })
}

fn totals(layers: &[RoutedTokens], planned: &[TrafficLayer]) -> TrafficTotals {
    let total: f64 = layers.iter().map(RoutedTokens::total).sum();
    let ratio = |x: f64| if total > 0.0 { x / total } else { 0.0 };
    let sum = |f: &dyn Fn(&TrafficLayer) -> f64| planned.iter().map(f).sum::<f64>();
    let optional = |f: &dyn Fn(&TrafficLayer) -> Option<f64>| -> Option<f64> {
        planned.iter().map(f).sum::<Option<f64>>().map(ratio)
    };
    TrafficTotals {
        total_tokens: total,
        traffic_aware_ratio: ratio(sum(&|l| l.traffic_aware.cross_node_tokens)),
        compute_only_ratio: ratio(sum(&|l| l.compute_only.cross_node_tokens)),
        eplb_hierarchical_ratio: optional(&|l| {
            l.eplb_hierarchical.as_ref().map(|f| f.cross_node_tokens)
        }),
        eplb_global_ratio: ratio(sum(&|l| l.eplb_global.cross_node_tokens)),
        topology_aware_ratio: optional(&|l| l.topology_aware.as_ref().map(|f| f.cross_node_tokens)),
        lower_bound_ratio: ratio(sum(&|l| l.traffic_lower_bound)),
        layers_balance_met: planned.iter().filter(|l| l.balance_met).count(),
        worst_load_over_limit: planned
            .iter()
            .map(|l| {
                if l.max_gpu_load_limit > 0.0 {
                    l.traffic_aware.max_gpu_load / l.max_gpu_load_limit
                } else {
                    1.0
                }
            })
            .fold(0.0, f64::max),
    }
}
