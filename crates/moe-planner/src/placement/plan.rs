//! The placement plan: per layer, our plan and EPLB's on the same input, and totals.

use alltoall_sched::{Algorithm, Bandwidth, TrafficMatrix, schedule};
use comm_cost_model::{InputError, check_finite_result, check_non_negative, check_positive, units};
use expert_placement::{
    ExpertTransfer, LayerLoads, NODE_BOUND_MAX_GROUPS, Placement, PlacementAlgorithm,
    PlacementCluster, PlacementError, RobustObjective, Termination, count_moves, place,
    place_robust, place_with, plan_transfers, rebalance_node_aware, rebalance_with,
    transfer_counts, transfer_rounds,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::formats::{check_padded_map_size, pad_logical_to_physical};
use super::spec::{PlacementSpec, in_layer, plan_error_in_layer};
use crate::PlanError;

/// One weight copy of a rebalance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightTransfer {
    /// Logical expert whose weights move.
    pub expert: usize,
    /// GPU that holds the expert now and sends it.
    pub src_gpu: usize,
    /// GPU that receives it.
    pub dst_gpu: usize,
    /// Bytes moved (`expert_bytes`), when the spec gives the expert size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
}

/// The weight transfers of a rebalance scheduled as one contention-free all-to-all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransferPlan {
    /// Busiest port's bytes over its bandwidth: no schedule finishes sooner, seconds.
    pub lower_bound_s: f64,
    /// Completion time of the contention-free schedule, seconds.
    pub makespan_s: f64,
}

/// The weight copies of a rebalance in engine-sized rounds: in each round every GPU sends at
/// most `peer_limit` copies and receives at most `peer_limit`; rounds run one after another
/// (`expert_placement::transfer_rounds`, the fewest rounds possible).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransferRoundsPlan {
    /// Copies one GPU may send, and receive, per round (the spec's `transfer_peer_limit`).
    pub peer_limit: usize,
    /// Number of rounds: the most copies one GPU sends or receives over `peer_limit`, rounded
    /// up (no grouping needs fewer).
    pub rounds: usize,
    /// Per transfer of the layer's `transfers`, in order, the round it runs in (from 0).
    pub round_of_transfer: Vec<usize>,
    /// With `expert_bytes`: each round's time, its busiest GPU's copies (sent or received)
    /// times `expert_bytes` over the bandwidth, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_time_s: Option<Vec<f64>>,
    /// With `expert_bytes`: the rounds one after another, seconds (compare with
    /// `transfer_schedule.makespan_s`, everything at once as a contention-free all-to-all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
}

/// A layer's maximum GPU load under one load window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowFigure {
    /// Index of the window (oldest first; the last is the spec's `loads`).
    pub window: usize,
    /// Our plan's maximum GPU load under this window's loads.
    pub max_gpu_load: f64,
    /// The maximum GPU load of a plan made on the newest window alone, under this window.
    pub newest_only_max_gpu_load: f64,
}

/// One layer's plan next to the EPLB baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerPlacement {
    /// `[R]`: logical expert of each physical slot; slot `s` is on GPU `s / slots_per_gpu`.
    pub physical_to_logical_map: Vec<usize>,
    /// `[E][max replicas]`: the slots of each expert, -1 padded (EPLB's `log2phy`).
    pub logical_to_physical_map: Vec<Vec<i64>>,
    /// `[E]`: replicas of each expert (EPLB's `logcnt`).
    pub replica_count: Vec<usize>,
    /// Load of each GPU (sum of its replicas' shares over its speed).
    pub gpu_loads: Vec<f64>,
    /// The largest GPU load, the objective.
    pub max_gpu_load: f64,
    /// Mean GPU load (total load over total speed, spread evenly).
    pub mean_gpu_load: f64,
    /// Certified lower bound on the maximum GPU load of any valid placement.
    pub lower_bound: f64,
    /// `max_gpu_load / lower_bound - 1` (0 when proved optimal).
    pub gap: f64,
    /// Replicas sharing a GPU with another replica of the same expert (0 for our planners).
    pub duplicates_on_gpu: usize,
    /// How the search behind our plan ended: `proved-optimal` (branch and bound finished),
    /// `bound-reached` (the plan meets its lower bound within 1e-9), `budget-exhausted` (the
    /// search ran out of steps; the gap is what is certified), `time-capped` (the wall-clock
    /// limit cut a search: gap certified, and the plan may differ on another machine or load),
    /// `heuristic` (no exact search: above its limits, a rebalance or a robust plan, gap
    /// certified), `not-searched` (EPLB's plan).
    pub termination: String,
    /// Under `optimal-node-aware`, the unconstrained optimum's maximum load (the constraint's
    /// cost is the difference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unconstrained_max_gpu_load: Option<f64>,
    /// EPLB's maximum GPU load on the same input.
    pub baseline_max_gpu_load: f64,
    /// Duplicates in EPLB's plan.
    pub baseline_duplicates_on_gpu: usize,
    /// With a current placement: the current placement's maximum GPU load under the new loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_max_gpu_load: Option<f64>,
    /// With a current placement: expert copies to transfer (a replica on a GPU that did not
    /// hold that expert).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves: Option<usize>,
    /// With a current placement and policy `optimal`: whether `moves` is proved the fewest any
    /// plan within the rebalance's load target needs (exhaustive search on small instances,
    /// `expert_placement::FEWEST_MOVES_EXACT_MAX_SETS`); `false`: the low-move heuristic's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves_proved_fewest: Option<bool>,
    /// With a current placement: what EPLB's fresh plan would transfer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_moves: Option<usize>,
    /// With a current placement: `(moves, max_gpu_load)` pairs from zero moves up, each the
    /// lowest load found with at most that many moves.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub tradeoff: Vec<(usize, f64)>,
    /// With a current placement and policy `optimal`: the fewest moves on the trade-off whose
    /// maximum GPU load is at most EPLB's (what matching EPLB's balance costs in transfers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves_at_baseline_load: Option<usize>,
    /// With a current placement: every weight copy.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub transfers: Vec<WeightTransfer>,
    /// With a current placement and `expert_bytes`: the transfers as a contention-free
    /// all-to-all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_schedule: Option<TransferPlan>,
    /// With a current placement: the transfers in rounds of at most `transfer_peer_limit`
    /// copies per GPU out and in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_rounds: Option<TransferRoundsPlan>,
    /// With `windows`: the figure under each window.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub windows: Vec<WindowFigure>,
}

/// Sums over layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementTotals {
    /// Layers planned.
    pub layers: usize,
    /// Mean over layers of `max_gpu_load / mean_gpu_load`.
    pub mean_imbalance: f64,
    /// The same for EPLB.
    pub baseline_mean_imbalance: f64,
    /// Largest `gap` over layers.
    pub max_gap: f64,
    /// Layers where our maximum GPU load is below EPLB's by more than
    /// [`LOAD_COMPARISON_TOLERANCE`] (relative).
    pub layers_better_than_baseline: usize,
    /// Layers where our maximum GPU load is above EPLB's by more than
    /// [`LOAD_COMPARISON_TOLERANCE`] (relative): a rebalance with a tolerance, a robust plan
    /// (scored on the newest window) or a heuristic may be; equal loads count in neither.
    pub layers_worse_than_baseline: usize,
    /// Duplicates over all layers, ours.
    pub duplicates_on_gpu: usize,
    /// Duplicates over all layers, EPLB's.
    pub baseline_duplicates_on_gpu: usize,
    /// Moves over all layers (with a current placement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves: Option<usize>,
    /// Sum of `moves_at_baseline_load` (with a current placement and policy `optimal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves_at_baseline_load: Option<usize>,
    /// EPLB's moves over all layers (with a current placement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_moves: Option<usize>,
    /// Bytes moved over all layers (with a current placement and `expert_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_bytes: Option<f64>,
    /// Sum of the per-layer transfer makespans, seconds (layers rebalanced one after another).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_time_s: Option<f64>,
    /// Migration rounds over all layers (with a current placement).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_rounds: Option<usize>,
    /// Sum of the layers' round-by-round migration times, seconds (with a current placement
    /// and `expert_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_rounds_time_s: Option<f64>,
}

/// The plan of every layer and the totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementPlan {
    /// What actually planned: `optimal`, `optimal-rebalance` (policy `optimal` with a current
    /// placement), `optimal-robust-worst` or `optimal-robust-mean` (policy `optimal` with
    /// windows), `optimal-node-aware`, `exact`, `eplb-hierarchical` or `eplb-global`, the last
    /// two with `-summed-windows` when EPLB planned on the sum of the windows.
    pub policy: String,
    /// What the layers' `lower_bound` is valid for: `groups-in-nodes` (a bound under the node
    /// constraint the plan obeys: `optimal-node-aware` with at most
    /// `expert_placement::NODE_BOUND_MAX_GROUPS` groups) or `unconstrained` (a bound on every
    /// placement; for a node-aware plan with more groups valid but loose).
    pub lower_bound_kind: String,
    /// The EPLB policy of the baseline, like for like: `eplb-global` for the unconstrained
    /// planners (`optimal`, `exact`), EPLB's own choice for the shape for `optimal-node-aware`
    /// and `eplb` (`eplb-hierarchical` when `groups` is a multiple of `nodes`); with windows
    /// `-summed-windows`: EPLB on the element-wise sum of every window, as SGLang balances a
    /// 3-D `logical_count`).
    pub baseline_policy: String,
    /// GPUs, slots per GPU and nodes of the cluster.
    pub gpus: usize,
    /// Slots per GPU.
    pub slots_per_gpu: usize,
    /// Nodes.
    pub nodes: usize,
    /// Logical experts per layer.
    pub experts: usize,
    /// One entry per layer.
    pub layers: Vec<LayerPlacement>,
    /// Sums over layers.
    pub totals: PlacementTotals,
}

impl PlacementPlan {
    /// `[layers][R]`: the engine map of every layer (SGLang's `physical_to_logical_map`).
    #[must_use]
    pub fn physical_to_logical_map(&self) -> Vec<Vec<usize>> {
        self.layers
            .iter()
            .map(|l| l.physical_to_logical_map.clone())
            .collect()
    }
}

/// Places every layer of `spec` and runs EPLB beside it.
///
/// # Errors
///
/// Every field a user sets is checked first, and a bad one is one error naming it in the
/// spec's vocabulary: [`PlanError::InvalidField`] (`field` is the serde name: an empty, ragged,
/// NaN, infinite or negative `loads` or `windows` entry; zero `gpus`, `slots_per_gpu`, `nodes`
/// or `groups`; more nodes than GPUs; fewer slots than experts or, except under policy `eplb`,
/// more slots on a GPU than experts; `groups` that do not divide the experts, whatever `nodes`
/// is; a `gpu_speed` of the wrong length or not positive; a negative or non-finite
/// `tolerance`, `expert_bytes` or `bandwidth_gbps`; a `current` placement of the wrong shape,
/// with an id out of range or missing an expert), [`PlanError::Incompatible`] (`windows` with
/// policy `optimal-node-aware` or `exact`), [`PlanError::MissingField`] (`groups` for
/// `optimal-node-aware`). [`PlanError::Input`] (`TooLarge`) for `layers x GPUs x slots` beyond
/// `expert_placement::MAX_PLAN_ENTRIES` (before planning) or padded
/// `logical_to_physical_map`s beyond [`MAX_PADDED_MAP_ENTRIES`](super::MAX_PADDED_MAP_ENTRIES)
/// (before they are allocated). [`PlanError::Input`] (`NonFinite`) when `transfer_bytes` or
/// `transfer_time_s` would overflow; [`PlanError::Layer`] or [`PlanError::Placement`] when a
/// planner refuses a layer anyway, [`PlanError::Schedule`] if the transfer schedule fails.
///
/// # Complexity
///
/// Per layer, that of [`expert_placement::place`] for the policy and for EPLB; see
/// `docs/performance.md` (58 layers of 256 experts on 32 GPUs take a few milliseconds).
pub fn plan_placement(spec: &PlacementSpec) -> Result<PlacementPlan, PlanError> {
    spec.check_fields()?;
    let layers = validated_loads(&spec.loads)?;
    let windows = validated_windows(&spec.windows, &layers)?;
    let current = current_maps(spec.current.as_deref(), layers.len())?;
    let transfer = TransferCost::new(spec)?;
    let cluster = spec.cluster()?;
    let algorithm = spec.algorithm()?;
    let baseline = PlacementAlgorithm::Eplb(spec.baseline_policy());
    // The layers are independent: solved in parallel, then assembled in order (the padded
    // maps' size is checked layer by layer before each is allocated, and the first failing
    // layer's error is the one returned, as in a sequential run).
    let solved: Vec<Result<SolvedLayer, PlanError>> = (0..layers.len())
        .into_par_iter()
        .map(|i| {
            let ctx = LayerInput {
                loads: &layers[i],
                older: windows.iter().map(|w| &w[i]).collect(),
                current: current.as_ref().map(|c| c[i].as_slice()),
                cluster: &cluster,
            };
            solve_layer(&ctx, spec, algorithm, baseline).map_err(plan_error_in_layer(i))
        })
        .collect();
    let mut planned = Vec::with_capacity(layers.len());
    let mut widest = 1_usize;
    for (i, solved) in solved.into_iter().enumerate() {
        let ctx = LayerInput {
            loads: &layers[i],
            older: Vec::new(),
            current: current.as_ref().map(|c| c[i].as_slice()),
            cluster: &cluster,
        };
        planned.push(
            assemble_layer(&ctx, solved?, &transfer, (i + 1, &mut widest))
                .map_err(plan_error_in_layer(i))?,
        );
    }
    let totals = totals(&planned, transfer.expert_bytes)?;
    let windowed = !windows.is_empty();
    Ok(PlacementPlan {
        lower_bound_kind: lower_bound_kind(algorithm).to_string(),
        policy: ran_policy(spec, algorithm, windowed, current.is_some()),
        baseline_policy: if windowed {
            format!("{}-summed-windows", baseline.name())
        } else {
            baseline.name().to_string()
        },
        gpus: spec.gpus,
        slots_per_gpu: spec.slots_per_gpu,
        nodes: spec.nodes,
        experts: layers.first().map_or(0, LayerLoads::len),
        layers: planned,
        totals,
    })
}

/// One layer's inputs.
struct LayerInput<'a> {
    loads: &'a LayerLoads,
    older: Vec<&'a LayerLoads>,
    current: Option<&'a [usize]>,
    cluster: &'a PlacementCluster,
}

/// Bytes per expert and the bandwidth the transfers run at.
struct TransferCost {
    expert_bytes: Option<f64>,
    bytes_per_s: f64,
    bandwidth: Bandwidth,
    peer_limit: usize,
}

impl TransferCost {
    fn new(spec: &PlacementSpec) -> Result<Self, PlanError> {
        check_non_negative("tolerance", spec.tolerance)?;
        let expert_bytes = spec
            .expert_bytes
            .map(|b| check_positive("expert_bytes", b))
            .transpose()?;
        let bytes_per_s = units::checked_gbps("bandwidth_gbps", spec.bandwidth_gbps)?;
        Ok(Self {
            expert_bytes,
            bytes_per_s,
            bandwidth: Bandwidth::uniform(bytes_per_s)?,
            peer_limit: spec.transfer_peer_limit,
        })
    }

    /// The transfers in rounds of at most `peer_limit` copies per GPU out and in, timed when
    /// the expert size is known.
    fn rounds(
        &self,
        transfers: &[ExpertTransfer],
        gpus: usize,
    ) -> Result<TransferRoundsPlan, PlanError> {
        let r = transfer_rounds(transfers, gpus, self.peer_limit)?;
        let mut round_of_transfer = vec![0; transfers.len()];
        for (k, members) in r.rounds.iter().enumerate() {
            for &i in members {
                round_of_transfer[i] = k;
            }
        }
        let round_time_s = self
            .expert_bytes
            .map(|bytes| {
                r.rounds
                    .iter()
                    .map(|members| {
                        let mut per_gpu = std::collections::HashMap::<(bool, usize), usize>::new();
                        for &i in members {
                            *per_gpu.entry((true, transfers[i].source_gpu)).or_default() += 1;
                            *per_gpu
                                .entry((false, transfers[i].destination_gpu))
                                .or_default() += 1;
                        }
                        let busiest = per_gpu.values().copied().max().unwrap_or(0);
                        check_finite_result(
                            "transfer round time",
                            busiest as f64 * bytes / self.bytes_per_s,
                        )
                    })
                    .collect::<Result<Vec<f64>, _>>()
            })
            .transpose()?;
        let time_s = round_time_s
            .as_ref()
            // A fold from +0.0: `sum` of no rounds is -0.0, which would print as "-0".
            .map(|t| check_finite_result("transfer rounds time", t.iter().fold(0.0, |a, b| a + b)))
            .transpose()?;
        Ok(TransferRoundsPlan {
            peer_limit: self.peer_limit,
            rounds: r.rounds.len(),
            round_of_transfer,
            round_time_s,
            time_s,
        })
    }

    /// The transfers as a contention-free all-to-all, when the expert size is known.
    fn schedule(
        &self,
        transfers: &[ExpertTransfer],
        gpus: usize,
    ) -> Result<Option<TransferPlan>, PlanError> {
        let Some(bytes) = self.expert_bytes else {
            return Ok(None);
        };
        let counts = transfer_counts(transfers, gpus)?;
        let rows: Vec<Vec<f64>> = counts
            .iter()
            .map(|row| row.iter().map(|&c| c as f64 * bytes).collect())
            .collect();
        let matrix = TrafficMatrix::from_rows(&rows)?;
        let plan = schedule(&matrix, &self.bandwidth, Algorithm::Optimal, 0)?;
        Ok(Some(TransferPlan {
            lower_bound_s: plan.lower_bound_s,
            makespan_s: plan.makespan_s,
        }))
    }
}

/// Our plan of one layer (fresh, robust or rebalanced) next to EPLB's.
///
/// With older windows EPLB (the baseline, and our plan under policy `eplb`) plans on the
/// element-wise sum of all windows, as SGLang does with a 3-D `logical_count`; every figure is
/// then scored under the newest loads.
/// One layer's plans before assembly: ours, the baseline's, and what the search reported.
struct SolvedLayer {
    ours: Placement,
    theirs: Placement,
    searched_without_proof: bool,
    tradeoff: Vec<(usize, f64)>,
    moves_proved_fewest: Option<bool>,
    window_figures: Vec<WindowFigure>,
}

/// Plans one layer with the policy and with the baseline (the expensive part, run in parallel
/// over layers).
fn solve_layer(
    input: &LayerInput<'_>,
    spec: &PlacementSpec,
    algorithm: PlacementAlgorithm,
    baseline: PlacementAlgorithm,
) -> Result<SolvedLayer, PlanError> {
    let (loads, cluster) = (input.loads, input.cluster);
    let mut all: Vec<LayerLoads> = input.older.iter().map(|w| (*w).clone()).collect();
    all.push(loads.clone());
    let summed = if input.older.is_empty() {
        None
    } else {
        Some(summed_windows(&all)?)
    };
    let theirs = match &summed {
        None => place(loads, cluster, baseline)?,
        Some(summed) => Placement::evaluate(
            loads,
            cluster,
            place(summed, cluster, baseline)?.physical_to_logical,
        )?,
    };
    let mut tradeoff = Vec::new();
    let mut moves_proved_fewest = None;
    let mut window_figures = Vec::new();
    let searched_without_proof = match (summed.as_ref(), input.current, algorithm) {
        (Some(_), _, PlacementAlgorithm::Eplb(_)) => false,
        (Some(_), _, _) | (None, Some(_), PlacementAlgorithm::Optimal) => true,
        (None, _, _) => false,
    };
    let ours = match (summed.as_ref(), input.current, algorithm) {
        (Some(summed), _, PlacementAlgorithm::Eplb(_)) => {
            let plan = place(summed, cluster, algorithm)?;
            let newest_only = place(loads, cluster, algorithm)?;
            window_figures = all
                .iter()
                .enumerate()
                .map(|(w, window)| {
                    Ok(WindowFigure {
                        window: w,
                        max_gpu_load: Placement::evaluate(
                            window,
                            cluster,
                            plan.physical_to_logical.clone(),
                        )?
                        .max_gpu_load,
                        newest_only_max_gpu_load: Placement::evaluate(
                            window,
                            cluster,
                            newest_only.physical_to_logical.clone(),
                        )?
                        .max_gpu_load,
                    })
                })
                .collect::<Result<_, PlacementError>>()?;
            Placement::evaluate(loads, cluster, plan.physical_to_logical)?
        }
        (Some(_), _, _) => {
            // `check_fields` admits windows with `optimal` and `eplb` only.
            let robust = place_robust(&all, cluster, spec.robust_objective)?;
            window_figures = (0..all.len())
                .map(|w| WindowFigure {
                    window: w,
                    max_gpu_load: robust.window_max_gpu_loads[w],
                    newest_only_max_gpu_load: robust.newest_only_max_gpu_loads[w],
                })
                .collect();
            Placement::evaluate(loads, cluster, robust.physical_to_logical)?
        }
        (
            None,
            Some(current),
            PlacementAlgorithm::Optimal | PlacementAlgorithm::OptimalNodeAware { .. },
        ) => {
            let r = match algorithm {
                // The fewer-move of the relabeled fresh node-aware plan and each node
                // rebalanced in place; every group stays inside one node.
                PlacementAlgorithm::OptimalNodeAware { groups } => rebalance_node_aware(
                    current,
                    loads,
                    cluster,
                    groups,
                    spec.tolerance,
                    &spec.options(),
                )?,
                _ => rebalance_with(current, loads, cluster, spec.tolerance, &spec.options())?,
            };
            moves_proved_fewest = Some(r.moves_proved_fewest);
            tradeoff = r
                .tradeoff
                .iter()
                .map(|p| (p.moves, p.max_gpu_load))
                .collect();
            r.placement
        }
        (None, _, _) => place_with(loads, cluster, algorithm, &spec.options())?,
    };
    Ok(SolvedLayer {
        ours,
        theirs,
        searched_without_proof,
        tradeoff,
        moves_proved_fewest,
        window_figures,
    })
}

/// Turns a solved layer into its report: the padded maps (size checked first), termination,
/// and with a current placement the transfers and their schedule.
fn assemble_layer(
    input: &LayerInput<'_>,
    solved: SolvedLayer,
    transfer: &TransferCost,
    (layers_so_far, widest): (usize, &mut usize),
) -> Result<LayerPlacement, PlanError> {
    let (loads, cluster) = (input.loads, input.cluster);
    let experts = loads.len();
    let SolvedLayer {
        ours,
        theirs,
        searched_without_proof,
        tradeoff,
        moves_proved_fewest,
        window_figures,
    } = solved;
    let width = ours.replica_count.iter().copied().max().unwrap_or(1);
    // The maps of all layers padded to one width (numpy's `[layers, experts, width]`): refused
    // before this layer's is allocated.
    *widest = (*widest).max(width);
    check_padded_map_size(layers_so_far, experts, *widest)?;
    let mut plan = layer_plan(&ours, &theirs, width)?;
    if searched_without_proof {
        // The library scores these maps as evaluated; say what the search proved.
        plan.termination = if exceeds(ours.max_gpu_load, ours.lower_bound) {
            // A search cut by its step or time budget says so.
            if matches!(
                ours.termination,
                Termination::BudgetExhausted | Termination::TimeCapped
            ) {
                ours.termination
            } else {
                Termination::Heuristic
            }
        } else {
            Termination::BoundReached
        }
        .name()
        .to_string();
    }
    plan.moves_at_baseline_load = tradeoff
        .iter()
        .find(|&&(_, load)| !exceeds(load, theirs.max_gpu_load))
        .map(|&(moves, _)| moves);
    plan.tradeoff = tradeoff;
    plan.moves_proved_fewest = moves_proved_fewest;
    plan.windows = window_figures;
    if let Some(current) = input.current {
        let now = Placement::evaluate(loads, cluster, current.to_vec())?;
        let transfers = plan_transfers(current, &ours.physical_to_logical, cluster, experts)?;
        plan.current_max_gpu_load = Some(now.max_gpu_load);
        plan.moves = Some(transfers.len());
        plan.baseline_moves = Some(count_moves(
            current,
            &theirs.physical_to_logical,
            cluster,
            experts,
        )?);
        plan.transfer_schedule = transfer.schedule(&transfers, cluster.gpus())?;
        plan.transfer_rounds = Some(transfer.rounds(&transfers, cluster.gpus())?);
        plan.transfers = transfers
            .iter()
            .map(|t| WeightTransfer {
                expert: t.expert,
                src_gpu: t.source_gpu,
                dst_gpu: t.destination_gpu,
                bytes: transfer.expert_bytes,
            })
            .collect();
    }
    Ok(plan)
}

/// The element-wise sum of every window of a layer (what SGLang balances on).
fn summed_windows(all: &[LayerLoads]) -> Result<LayerLoads, PlanError> {
    let experts = all.first().map_or(0, LayerLoads::len);
    let sum: Vec<f64> = (0..experts)
        .map(|e| all.iter().map(|w| w.as_slice()[e]).sum())
        .collect();
    if sum.iter().any(|x| !x.is_finite()) {
        return Err(PlanError::InvalidField {
            field: "windows",
            reason: "the windows' loads summed per expert overflow f64".into(),
        });
    }
    Ok(LayerLoads::new(sum)?)
}

/// The name of what ran: the policy, with `-rebalance` for a fewest-move rebalance, and
/// `-robust-worst` / `-robust-mean` (optimal) or `-summed-windows` (EPLB) with windows.
fn ran_policy(
    spec: &PlacementSpec,
    algorithm: PlacementAlgorithm,
    windowed: bool,
    rebalanced: bool,
) -> String {
    let name = algorithm.name();
    match (windowed, algorithm) {
        (true, PlacementAlgorithm::Eplb(_)) => format!("{name}-summed-windows"),
        (true, _) => match spec.robust_objective {
            RobustObjective::Worst => format!("{name}-robust-worst"),
            RobustObjective::Mean => format!("{name}-robust-mean"),
        },
        (false, PlacementAlgorithm::Optimal) if rebalanced => format!("{name}-rebalance"),
        (false, _) => name.to_string(),
    }
}

/// What `expert_placement::Placement::lower_bound` is valid for under `algorithm`: a bound
/// under the node constraint for `optimal-node-aware` with at most
/// `expert_placement::NODE_BOUND_MAX_GROUPS` groups, the unconstrained bound otherwise (for
/// a node-aware plan with more groups: valid, since such a plan is a placement, but loose).
fn lower_bound_kind(algorithm: PlacementAlgorithm) -> &'static str {
    match algorithm {
        // Exact over every group-to-node assignment up to NODE_BOUND_MAX_GROUPS groups; above,
        // the library reports the unconstrained bound (valid, weaker).
        PlacementAlgorithm::OptimalNodeAware { groups } if groups <= NODE_BOUND_MAX_GROUPS => {
            "groups-in-nodes"
        }
        _ => "unconstrained",
    }
}

/// Relative tolerance of the comparisons of two maximum GPU loads (better / worse than the
/// baseline, at or below its load): `a` exceeds `b` when `a > b * (1 + 1e-9)`, so two plans
/// whose loads differ only by floating-point rounding count as equal.
pub const LOAD_COMPARISON_TOLERANCE: f64 = 1e-9;

/// `a` is above `b` by more than [`LOAD_COMPARISON_TOLERANCE`] (relative).
fn exceeds(a: f64, b: f64) -> bool {
    a > b + LOAD_COMPARISON_TOLERANCE * b.abs()
}

/// Every older window validated against the newest's shape.
fn validated_windows(
    windows: &[Vec<Vec<f64>>],
    newest: &[LayerLoads],
) -> Result<Vec<Vec<LayerLoads>>, PlanError> {
    windows
        .iter()
        .map(|w| {
            if w.len() != newest.len() {
                return Err(PlanError::Input(InputError::size_mismatch(
                    "windows: layers per window",
                    newest.len(),
                    w.len(),
                )));
            }
            validated_loads(w)
        })
        .collect()
}

/// The current placement as expert ids, one map per layer.
fn current_maps(
    current: Option<&[Vec<i64>]>,
    layers: usize,
) -> Result<Option<Vec<Vec<usize>>>, PlanError> {
    let Some(current) = current else {
        return Ok(None);
    };
    if current.len() != layers {
        return Err(PlanError::Input(InputError::size_mismatch(
            "current placement: layers",
            layers,
            current.len(),
        )));
    }
    let mut maps = Vec::with_capacity(layers);
    for (layer, row) in current.iter().enumerate() {
        let map = row
            .iter()
            .enumerate()
            .map(|(slot, &id)| {
                usize::try_from(id).map_err(|_| PlanError::NegativeId {
                    what: "current placement",
                    row: layer,
                    index: slot,
                    value: id,
                })
            })
            .collect::<Result<Vec<usize>, _>>()?;
        maps.push(map);
    }
    Ok(Some(maps))
}

/// Every layer validated, all with the same expert count.
fn validated_loads(rows: &[Vec<f64>]) -> Result<Vec<LayerLoads>, PlanError> {
    let first = rows.first().ok_or(InputError::CountTooSmall {
        what: "layers of loads",
        min: 1,
        value: 0,
    })?;
    let mut layers = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        if row.len() != first.len() {
            return Err(PlanError::Input(InputError::size_mismatch(
                "loads: experts per layer",
                first.len(),
                row.len(),
            )));
        }
        layers.push(LayerLoads::new(row.clone()).map_err(in_layer(i))?);
    }
    Ok(layers)
}

fn layer_plan(
    ours: &Placement,
    theirs: &Placement,
    width: usize,
) -> Result<LayerPlacement, PlanError> {
    Ok(LayerPlacement {
        logical_to_physical_map: pad_logical_to_physical(ours.logical_to_physical(), width)?,
        physical_to_logical_map: ours.physical_to_logical.clone(),
        replica_count: ours.replica_count.clone(),
        gpu_loads: ours.gpu_loads.clone(),
        max_gpu_load: ours.max_gpu_load,
        mean_gpu_load: ours.mean_gpu_load(),
        lower_bound: ours.lower_bound,
        gap: ours.gap(),
        duplicates_on_gpu: ours.duplicates_on_gpu,
        termination: ours.termination.name().to_string(),
        unconstrained_max_gpu_load: ours.unconstrained_max_gpu_load,
        baseline_max_gpu_load: theirs.max_gpu_load,
        baseline_duplicates_on_gpu: theirs.duplicates_on_gpu,
        current_max_gpu_load: None,
        moves: None,
        moves_proved_fewest: None,
        baseline_moves: None,
        moves_at_baseline_load: None,
        tradeoff: Vec::new(),
        transfers: Vec::new(),
        transfer_schedule: None,
        transfer_rounds: None,
        windows: Vec::new(),
    })
}

fn totals(
    layers: &[LayerPlacement],
    expert_bytes: Option<f64>,
) -> Result<PlacementTotals, PlanError> {
    let n = layers.len().max(1) as f64;
    let ratio = |max: f64, mean: f64| if mean > 0.0 { max / mean } else { 1.0 };
    let sum_opt =
        |f: fn(&LayerPlacement) -> Option<usize>| -> Option<usize> { layers.iter().map(f).sum() };
    let moves = sum_opt(|l| l.moves);
    let transfer_bytes = moves
        .zip(expert_bytes)
        .map(|(m, bytes)| {
            check_finite_result("transfer_bytes (moves x expert_bytes)", m as f64 * bytes)
        })
        .transpose()?;
    let transfer_time_s = layers
        .iter()
        .map(|l| l.transfer_schedule.as_ref().map(|t| t.makespan_s))
        .sum::<Option<f64>>()
        .map(|t| check_finite_result("transfer_time_s (sum of the layers' makespans)", t))
        .transpose()?;
    Ok(PlacementTotals {
        layers: layers.len(),
        mean_imbalance: layers
            .iter()
            .map(|l| ratio(l.max_gpu_load, l.mean_gpu_load))
            .sum::<f64>()
            / n,
        baseline_mean_imbalance: layers
            .iter()
            .map(|l| ratio(l.baseline_max_gpu_load, l.mean_gpu_load))
            .sum::<f64>()
            / n,
        max_gap: layers.iter().map(|l| l.gap).fold(0.0, f64::max),
        layers_better_than_baseline: layers
            .iter()
            .filter(|l| exceeds(l.baseline_max_gpu_load, l.max_gpu_load))
            .count(),
        layers_worse_than_baseline: layers
            .iter()
            .filter(|l| exceeds(l.max_gpu_load, l.baseline_max_gpu_load))
            .count(),
        duplicates_on_gpu: layers.iter().map(|l| l.duplicates_on_gpu).sum(),
        baseline_duplicates_on_gpu: layers.iter().map(|l| l.baseline_duplicates_on_gpu).sum(),
        moves,
        baseline_moves: sum_opt(|l| l.baseline_moves),
        moves_at_baseline_load: sum_opt(|l| l.moves_at_baseline_load),
        transfer_bytes,
        transfer_time_s,
        transfer_rounds: layers
            .iter()
            .map(|l| l.transfer_rounds.as_ref().map(|r| r.rounds))
            .sum(),
        transfer_rounds_time_s: layers
            .iter()
            .map(|l| l.transfer_rounds.as_ref().and_then(|r| r.time_s))
            .sum::<Option<f64>>()
            .map(|t| t + 0.0) // -0.0 (no layer moved anything) as 0
            .map(|t| check_finite_result("transfer_rounds_time_s", t))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::PlacementPolicy;

    /// The EPLB README example: 2 layers x 12 experts, 16 slots on 8 GPUs.
    fn eplb_example() -> Vec<Vec<f64>> {
        vec![
            vec![
                90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0,
            ],
            vec![
                20.0, 107.0, 104.0, 64.0, 19.0, 197.0, 187.0, 157.0, 172.0, 86.0, 16.0, 27.0,
            ],
        ]
    }

    #[test]
    fn published_example_optimal_and_eplb_side_by_side() {
        let plan = plan_placement(&PlacementSpec::new(eplb_example(), 8, 2)).unwrap();
        let got: Vec<(f64, f64)> = plan
            .layers
            .iter()
            .map(|l| (l.max_gpu_load, l.baseline_max_gpu_load))
            .collect();
        // Ours 136 and 172 (proved); EPLB's global policy 138.5 and 172.
        assert_eq!(got, vec![(136.0, 138.5), (172.0, 172.0)]);
        assert_eq!(plan.baseline_policy, "eplb-global");
        assert_eq!(plan.totals.layers_worse_than_baseline, 0);
        let mut hier = PlacementSpec::new(eplb_example(), 8, 2);
        hier.nodes = 2;
        hier.groups = Some(4);
        // Like for like: the unconstrained plan is compared with EPLB's global policy...
        assert_eq!(
            plan_placement(&hier).unwrap().baseline_policy,
            "eplb-global"
        );
        // ... the node-aware plan with EPLB's hierarchical one.
        hier.policy = PlacementPolicy::OptimalNodeAware;
        let plan = plan_placement(&hier).unwrap();
        let base: Vec<f64> = plan
            .layers
            .iter()
            .map(|l| l.baseline_max_gpu_load)
            .collect();
        assert_eq!(base, vec![156.0, 179.5]);
        assert_eq!(plan.baseline_policy, "eplb-hierarchical");
    }

    #[test]
    fn maps_have_engine_shapes() {
        let plan = plan_placement(&PlacementSpec::new(eplb_example(), 8, 2)).unwrap();
        for l in &plan.layers {
            assert_eq!(l.physical_to_logical_map.len(), 16);
            assert_eq!(l.replica_count.iter().sum::<usize>(), 16);
            for (e, slots) in l.logical_to_physical_map.iter().enumerate() {
                let real: Vec<usize> = slots
                    .iter()
                    .filter_map(|&s| usize::try_from(s).ok())
                    .collect();
                assert_eq!(real.len(), l.replica_count[e]);
                assert!(real.iter().all(|&s| l.physical_to_logical_map[s] == e));
            }
        }
    }

    #[test]
    fn rebalance_of_unchanged_loads_moves_nothing_and_schedules_nothing() {
        let fresh = plan_placement(&PlacementSpec::new(eplb_example(), 8, 2)).unwrap();
        let mut spec = PlacementSpec::new(eplb_example(), 8, 2);
        spec.current = Some(
            fresh
                .physical_to_logical_map()
                .into_iter()
                .map(|r| r.into_iter().map(|e| i64::try_from(e).unwrap()).collect())
                .collect(),
        );
        spec.expert_bytes = Some(1e9);
        let plan = plan_placement(&spec).unwrap();
        assert_eq!(plan.totals.moves, Some(0));
        assert_eq!(plan.totals.transfer_bytes, Some(0.0));
        assert!(plan.totals.baseline_moves.unwrap() > 0);
        assert_eq!(plan.layers[0].moves_at_baseline_load, Some(0));
    }

    #[test]
    fn rebalance_transfers_are_scheduled_at_the_bandwidth() {
        let mut spec = PlacementSpec::new(vec![vec![10.0, 10.0, 10.0, 10.0]], 2, 2);
        // Everything on the wrong GPU: experts 0 and 1 on GPU 0, 2 and 3 on GPU 1 is balanced,
        // so make the loads skewed so a move pays off.
        spec.loads = vec![vec![30.0, 30.0, 1.0, 1.0]];
        spec.current = Some(vec![vec![0, 1, 2, 3]]);
        spec.expert_bytes = Some(1e9);
        spec.bandwidth_gbps = 8.0; // 1e9 bytes/s: one second per expert copy
        let plan = plan_placement(&spec).unwrap();
        let layer = &plan.layers[0];
        assert_eq!(layer.max_gpu_load, 31.0);
        assert_eq!(layer.moves, Some(layer.transfers.len()));
        let moves = layer.moves.unwrap() as f64;
        assert!(moves >= 1.0);
        let schedule = layer.transfer_schedule.as_ref().unwrap();
        assert!(schedule.makespan_s >= schedule.lower_bound_s);
        assert!(schedule.lower_bound_s >= 1.0 && schedule.makespan_s <= moves);
        // One peer at a time: as many rounds as the busiest GPU's copies, one second each.
        let rounds = layer.transfer_rounds.as_ref().unwrap();
        assert_eq!(rounds.round_of_transfer.len(), layer.transfers.len());
        assert!(rounds.rounds >= 1);
        assert_eq!(rounds.time_s, Some(rounds.rounds as f64));
        assert_eq!(plan.totals.transfer_rounds, Some(rounds.rounds));
    }

    #[test]
    fn windows_report_every_window() {
        let mut spec = PlacementSpec::new(vec![vec![8.0, 4.0, 2.0, 2.0]], 2, 3);
        spec.windows = vec![vec![vec![2.0, 2.0, 4.0, 8.0]]];
        let plan = plan_placement(&spec).unwrap();
        let w = &plan.layers[0].windows;
        assert_eq!(w.len(), 2);
        let worst = w.iter().map(|f| f.max_gpu_load).fold(0.0, f64::max);
        let newest_worst = w
            .iter()
            .map(|f| f.newest_only_max_gpu_load)
            .fold(0.0, f64::max);
        assert!(worst <= newest_worst);
    }

    #[test]
    fn bad_specs_are_typed_errors() {
        let ok = PlacementSpec::new(vec![vec![1.0, 2.0]], 2, 1);
        let field = |spec: &PlacementSpec| match plan_placement(spec) {
            Err(PlanError::InvalidField { field, .. }) => field,
            other => panic!("expected an InvalidField, got {other:?}"),
        };
        assert_eq!(field(&PlacementSpec::new(vec![], 2, 1)), "loads");
        let ragged = PlacementSpec::new(vec![vec![1.0, 2.0], vec![1.0]], 2, 1);
        assert_eq!(field(&ragged), "loads");
        let nan = PlacementSpec::new(vec![vec![1.0, 2.0], vec![1.0, f64::NAN]], 2, 1);
        assert_eq!(field(&nan), "loads");
        let too_few = PlacementSpec::new(vec![vec![1.0, 2.0, 3.0]], 2, 1);
        assert_eq!(field(&too_few), "slots_per_gpu");
        let node_aware = PlacementSpec {
            policy: PlacementPolicy::OptimalNodeAware,
            ..ok.clone()
        };
        assert!(matches!(
            plan_placement(&node_aware),
            Err(PlanError::MissingField {
                field: "groups",
                ..
            })
        ));
        let negative = PlacementSpec {
            current: Some(vec![vec![0, -1]]),
            ..ok.clone()
        };
        assert_eq!(field(&negative), "current");
        let tolerance = PlacementSpec {
            tolerance: f64::NAN,
            ..ok.clone()
        };
        assert_eq!(field(&tolerance), "tolerance");
        let missing = PlacementSpec {
            current: Some(vec![vec![0, 0]]),
            ..ok
        };
        assert_eq!(field(&missing), "current");
    }

    /// Issue 20 item 5: `layers_worse_than_baseline` counts layers strictly above EPLB beyond
    /// rounding, and nothing else.
    #[test]
    fn layers_worse_than_baseline_counts_only_layers_above_the_baseline() {
        let plan = plan_placement(&PlacementSpec::new(eplb_example(), 8, 2)).unwrap();
        let mut layers = vec![plan.layers[0].clone(); 4];
        let base = layers[0].baseline_max_gpu_load;
        // Equal up to rounding, equal, clearly above, clearly below.
        layers[0].max_gpu_load = base * (1.0 + 1e-13);
        layers[1].max_gpu_load = base;
        layers[2].max_gpu_load = base * 1.01;
        layers[3].max_gpu_load = base * 0.99;
        let t = totals(&layers, None).unwrap();
        assert_eq!(t.layers_worse_than_baseline, 1);
        assert_eq!(t.layers_better_than_baseline, 1);
    }

    /// Issue 20 item 5: totals are finite or a typed error, never a JSON `null`.
    #[test]
    fn transfer_totals_that_overflow_are_typed_errors() {
        let plan = plan_placement(&PlacementSpec::new(eplb_example(), 8, 2)).unwrap();
        let mut layer = plan.layers[0].clone();
        layer.moves = Some(3);
        layer.transfer_schedule = Some(TransferPlan {
            lower_bound_s: 1.0,
            makespan_s: f64::MAX,
        });
        let layers = vec![layer.clone(), layer];
        assert!(matches!(
            totals(&layers, Some(f64::MAX)),
            Err(PlanError::Input(InputError::NonFinite { .. }))
        ));
        let json = serde_json::to_string(&totals(&layers[..1], Some(1e9)).unwrap()).unwrap();
        assert!(!json.contains("null"), "{json}");
    }
}
