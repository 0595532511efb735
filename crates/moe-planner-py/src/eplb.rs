//! `moe_planner.eplb.rebalance_experts`: EPLB's signature and return shapes, our optimal planner.

use moe_planner::PlanError;
use moe_planner::comm_cost_model::{InputError, check_at_most};
use moe_planner::expert_placement::{
    CancelFlag, ExpertTransfer, LayerLoads, MAX_PLAN_ENTRIES, Placement, PlacementAlgorithm,
    PlacementCluster, PlacementError, PlacementOptions, align_within_nodes, place_with,
    plan_transfers, rebalance_node_aware, rebalance_within, transfer_rounds,
};
use moe_planner::placement::formats::{check_padded_map_size, current_placement};
use numpy::ndarray::{Array2, Array3};
use numpy::{IntoPyArray, PyArray2, PyArray3, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use crate::boundary::{rows, run_cancellable};

/// EPLB's three tables for every layer, in its shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct EplbArrays {
    /// `[layers, num_replicas]`: logical expert of each physical slot.
    pub physical_to_logical_map: Array2<i64>,
    /// `[layers, experts, num_replicas - experts + 1]`: each expert's slots, `-1` padded.
    pub logical_to_physical_map: Array3<i64>,
    /// `[layers, experts]`: replicas of each expert.
    pub expert_count: Array2<i64>,
}

/// Our optimal placement of every layer in EPLB's shapes (the drop-in's Rust core).
///
/// Slot `s` is on GPU `s / (num_replicas / num_gpus)`. When `num_nodes > 1` divides both
/// `num_groups` and `num_gpus` and `num_groups` divides the expert count, each group's replicas
/// stay inside one node ([`PlacementAlgorithm::OptimalNodeAware`], EPLB's hierarchical rule);
/// otherwise, or when that layer cannot be placed that way, the layer is placed over the whole
/// cluster ([`PlacementAlgorithm::Optimal`]). No GPU ever holds two replicas of one expert.
/// [`rebalance_experts_from`] does the same from a current placement.
///
/// # Errors
///
/// [`PlanError::Input`] (`TooLarge`) when EPLB's padded `logical_to_physical_map` (`layers x experts x
/// (num_replicas - experts + 1)`) would exceed
/// [`moe_planner::placement::MAX_PADDED_MAP_ENTRIES`] or `layers x num_replicas` would exceed
/// [`MAX_PLAN_ENTRIES`] (checked before anything is planned or allocated);
/// [`PlanError::Placement`] for zero GPUs, groups or nodes, `num_replicas` not a multiple of
/// `num_gpus`, or layers of different lengths; [`PlanError::Layer`] for bad loads (NaN,
/// infinite, negative, empty), fewer replicas than experts or more slots per GPU than experts.
///
/// # Complexity
///
/// `layers` runs of [`moe_planner::expert_placement::place`].
pub fn rebalance_experts(
    weights: Vec<Vec<f64>>,
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
) -> Result<EplbArrays, PlanError> {
    let shape = EplbShape {
        num_replicas,
        num_groups,
        num_nodes,
        num_gpus,
    };
    rebalance_experts_from(weights, shape, &Rebalancing::default()).map(|(arrays, _)| arrays)
}

/// EPLB's shape arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EplbShape {
    /// Physical expert slots in the cluster.
    pub num_replicas: usize,
    /// Expert groups.
    pub num_groups: usize,
    /// Server nodes.
    pub num_nodes: usize,
    /// GPUs (vLLM's ranks).
    pub num_gpus: usize,
}

/// How to move from a current placement (vLLM's `old_global_expert_indices`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rebalancing {
    /// `[layers][num_replicas]`: the logical expert in each slot now; `None`: a fresh plan.
    pub current: Option<Vec<Vec<i64>>>,
    /// Allowed relative excess of the busiest GPU's load over the best found, traded for
    /// fewer moves (global policy only).
    pub tolerance: f64,
    /// At most this many expert copies per layer (global policy only).
    pub max_moves: Option<usize>,
    /// Copies one GPU may send, and receive, per migration round.
    pub peer_limit: usize,
    /// Raised by the Python boundary on Ctrl-C: the layers' searches stop.
    pub cancel: Option<CancelFlag>,
}

impl Default for Rebalancing {
    fn default() -> Self {
        Self {
            current: None,
            tolerance: 0.0,
            max_moves: None,
            peer_limit: 1,
            cancel: None,
        }
    }
}

/// What a rebalance did, per layer (the adapters' diagnostics).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EplbDiagnostics {
    /// What planned each layer: `optimal`, `optimal-node-aware`, `optimal-rebalance` (fewest
    /// moves from the current placement) or `optimal-node-aware-aligned` (the node-aware plan
    /// relabeled onto the current placement, nodes kept whole).
    pub policy: Vec<&'static str>,
    /// Busiest GPU's load of the new plan.
    pub max_gpu_load: Vec<f64>,
    /// Total load over GPUs.
    pub mean_gpu_load: Vec<f64>,
    /// With a current placement: its busiest GPU's load under these loads.
    pub current_max_gpu_load: Option<Vec<f64>>,
    /// With a current placement: expert copies to make (a replica on a GPU that did not hold
    /// that expert).
    pub moves: Option<Vec<usize>>,
    /// `(layer, expert, src_gpu, dst_gpu, round)` of every copy; rounds per layer from 0, in
    /// each every GPU sends and receives at most `peer_limit` copies.
    pub transfers: Vec<[usize; 5]>,
    /// Rounds of each layer's migration (König's bound, always met).
    pub rounds: Vec<usize>,
}

/// [`rebalance_experts`] from a current placement: per layer, under the global policy the
/// fewest-move rebalance within `tolerance` and `max_moves`
/// ([`moe_planner::expert_placement::rebalance_within`]); under the hierarchical rule the
/// node-aware plan with nodes and GPUs relabeled onto the current placement
/// ([`moe_planner::expert_placement::align_within_nodes`]), so groups stay inside nodes. The
/// copies are grouped into rounds of at most `peer_limit` per GPU
/// ([`moe_planner::expert_placement::transfer_rounds`]).
///
/// # Errors
///
/// Those of [`rebalance_experts`]; [`PlanError::InvalidField`] (`old_global_expert_indices`)
/// for a current placement of the wrong shape, an id out of range or an expert without a slot;
/// [`PlanError::InvalidField`] (`tolerance`, `peer_limit`) for a negative or non-finite
/// tolerance or a zero peer limit.
///
/// # Complexity
///
/// Per layer that of the planner named above plus `O(T · (Δ + G))` for the rounds.
pub fn rebalance_experts_from(
    weights: Vec<Vec<f64>>,
    shape: EplbShape,
    how: &Rebalancing,
) -> Result<(EplbArrays, EplbDiagnostics), PlanError> {
    let EplbShape {
        num_replicas,
        num_groups,
        num_nodes,
        num_gpus,
    } = shape;
    for (what, v) in [
        ("num_gpus", num_gpus),
        ("num_groups", num_groups),
        ("num_nodes", num_nodes),
    ] {
        if v == 0 {
            return Err(PlacementError::Input(InputError::Empty { what }).into());
        }
    }
    if num_replicas % num_gpus != 0 {
        return Err(PlacementError::Input(InputError::not_divisible(
            "num_replicas by num_gpus",
            num_replicas,
            num_gpus,
        ))
        .into());
    }
    if !(how.tolerance.is_finite() && how.tolerance >= 0.0) {
        return Err(PlanError::InvalidField {
            field: "tolerance",
            reason: format!("{} is not a finite non-negative number", how.tolerance),
        });
    }
    if how.peer_limit == 0 {
        return Err(PlanError::InvalidField {
            field: "peer_limit",
            reason: "a GPU must be able to send to at least one peer per round".into(),
        });
    }
    let experts = weights.first().map_or(0, Vec::len);
    let width = num_replicas.saturating_sub(experts) + 1;
    // EPLB's output shapes, refused before anything is planned or allocated.
    check_padded_map_size(weights.len(), experts, width)?;
    check_plan_entries(weights.len(), num_replicas)?;
    let layers = validated(weights)?;
    let current = how
        .current
        .as_deref()
        .map(|c| {
            current_placement(
                c,
                layers.len(),
                num_replicas,
                experts,
                "old_global_expert_indices",
            )
        })
        .transpose()?;
    let slots = num_replicas / num_gpus;
    let global = PlacementCluster::uniform(num_gpus, slots, 1)?;
    let hierarchical = num_nodes > 1
        && num_groups % num_nodes == 0
        && num_gpus % num_nodes == 0
        && experts % num_groups == 0;
    let by_node = if hierarchical {
        Some(PlacementCluster::uniform(num_gpus, slots, num_nodes)?)
    } else {
        None
    };
    let mut arrays = EplbArrays {
        physical_to_logical_map: Array2::zeros((layers.len(), num_replicas)),
        logical_to_physical_map: Array3::from_elem((layers.len(), experts, width), -1),
        expert_count: Array2::zeros((layers.len(), experts)),
    };
    let mut d = EplbDiagnostics::default();
    // The layers are independent: planned in parallel, then filled in order (the first failing
    // layer's error is the one returned, as in a sequential loop).
    let planned: Vec<Result<(&'static str, Vec<usize>), PlacementError>> = layers
        .par_iter()
        .enumerate()
        .map(|(l, loads)| {
            let now = current.as_ref().map(|c| c[l].as_slice());
            plan_layer(loads, now, &global, by_node.as_ref(), num_groups, how)
        })
        .collect();
    for ((l, loads), planned) in layers.iter().enumerate().zip(planned) {
        let now = current.as_ref().map(|c| c[l].as_slice());
        let in_layer = |source| PlanError::Layer { layer: l, source };
        let (policy, map) = planned.map_err(in_layer)?;
        let placement = Placement::evaluate(loads, &global, map).map_err(in_layer)?;
        d.policy.push(policy);
        d.max_gpu_load.push(placement.max_gpu_load);
        d.mean_gpu_load.push(placement.mean_gpu_load());
        if let Some(now) = now {
            let before = Placement::evaluate(loads, &global, now.to_vec()).map_err(in_layer)?;
            let transfers = plan_transfers(now, &placement.physical_to_logical, &global, experts)
                .map_err(in_layer)?;
            record_transfers(&mut d, l, &transfers, num_gpus, how.peer_limit).map_err(in_layer)?;
            d.current_max_gpu_load
                .get_or_insert_with(Vec::new)
                .push(before.max_gpu_load);
            d.moves.get_or_insert_with(Vec::new).push(transfers.len());
        }
        for (slot, &e) in placement.physical_to_logical.iter().enumerate() {
            let rank = usize::try_from(arrays.expert_count[[l, e]]).unwrap_or(0);
            arrays.physical_to_logical_map[[l, slot]] = to_i64(e);
            arrays.logical_to_physical_map[[l, e, rank]] = to_i64(slot);
            arrays.expert_count[[l, e]] += 1;
        }
    }
    Ok((arrays, d))
}

/// The search budget of the engine adapters (fresh plans and rebalances): the default step
/// budget and no wall-clock limit that matters (an hour), so a plan depends on its inputs only. vLLM computes the policy on
/// every expert-parallel rank and the ranks must agree; a wall-clock budget would let a busy
/// rank stop its search earlier than the others. The work stays bounded by the step budget.
fn engine_options(how: &Rebalancing) -> PlacementOptions {
    PlacementOptions {
        search_steps: None,
        time_budget_s: 3600.0,
        cancel: how.cancel.clone(),
    }
}

/// One layer's new map and what made it.
fn plan_layer(
    loads: &LayerLoads,
    current: Option<&[usize]>,
    global: &PlacementCluster,
    by_node: Option<&PlacementCluster>,
    groups: usize,
    how: &Rebalancing,
) -> Result<(&'static str, Vec<usize>), PlacementError> {
    if let (Some(cluster), Some(now)) = (by_node, current) {
        // Groups kept in nodes: each node rebalanced in place or the relabeled fresh plan,
        // whichever moves less within the tolerance. A layer whose groups cannot be kept in
        // nodes falls back to the global rebalance below, as the fresh path does.
        match rebalance_node_aware(
            now,
            loads,
            cluster,
            groups,
            how.tolerance,
            &engine_options(how),
        ) {
            Ok(r) => {
                return Ok((
                    "optimal-node-aware-rebalance",
                    r.placement.physical_to_logical,
                ));
            }
            Err(PlacementError::Cancelled) => return Err(PlacementError::Cancelled),
            Err(_) => {}
        }
    }
    let node_aware = by_node.and_then(|cluster| {
        let algorithm = PlacementAlgorithm::OptimalNodeAware { groups };
        place_with(loads, cluster, algorithm, &engine_options(how))
            .ok()
            .map(|p| (cluster, p.physical_to_logical))
    });
    Ok(match (node_aware, current) {
        (Some((cluster, map)), Some(now)) => (
            "optimal-node-aware-aligned",
            align_within_nodes(&map, now, cluster, loads.len())?,
        ),
        (Some((_, map)), None) => ("optimal-node-aware", map),
        (None, Some(now)) => (
            "optimal-rebalance",
            rebalance_within(
                now,
                loads,
                global,
                how.tolerance,
                how.max_moves,
                &engine_options(how),
            )?
            .placement
            .physical_to_logical,
        ),
        (None, None) => (
            "optimal",
            place_with(
                loads,
                global,
                PlacementAlgorithm::Optimal,
                &engine_options(how),
            )?
            .physical_to_logical,
        ),
    })
}

/// Adds a layer's copies, grouped into rounds, to the diagnostics.
fn record_transfers(
    d: &mut EplbDiagnostics,
    layer: usize,
    transfers: &[ExpertTransfer],
    gpus: usize,
    peer_limit: usize,
) -> Result<(), PlacementError> {
    let rounds = transfer_rounds(transfers, gpus, peer_limit)?;
    let mut round_of = vec![0; transfers.len()];
    for (r, members) in rounds.rounds.iter().enumerate() {
        for &i in members {
            round_of[i] = r;
        }
    }
    d.rounds.push(rounds.rounds.len());
    d.transfers.extend(
        transfers
            .iter()
            .zip(round_of)
            .map(|(t, r)| [layer, t.expert, t.source_gpu, t.destination_gpu, r]),
    );
    Ok(())
}

/// `[layers, num_replicas]` fits [`MAX_PLAN_ENTRIES`].
fn check_plan_entries(layers: usize, num_replicas: usize) -> Result<(), PlanError> {
    Ok(check_at_most(
        "physical_to_logical_map entries (layers x num_replicas)",
        MAX_PLAN_ENTRIES,
        layers.saturating_mul(num_replicas),
    )?)
}

/// Every layer validated, all with the first layer's expert count.
fn validated(weights: Vec<Vec<f64>>) -> Result<Vec<LayerLoads>, PlanError> {
    let experts = weights
        .first()
        .ok_or(PlacementError::Input(InputError::Empty { what: "layers" }))?
        .len();
    weights
        .into_iter()
        .enumerate()
        .map(|(layer, row)| {
            if row.len() != experts {
                return Err(PlanError::Input(InputError::size_mismatch(
                    "weight: experts per layer",
                    experts,
                    row.len(),
                )));
            }
            LayerLoads::new(row).map_err(|source| PlanError::Layer { layer, source })
        })
        .collect()
}

/// An index as numpy's `int64` (indices here are below `MAX_PLACEMENT_SLOTS`).
fn to_i64(index: usize) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

/// The three arrays and the diagnostics `rebalance_experts` returns to Python.
type EplbReturn<'py> = (
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray3<i64>>,
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyDict>,
);

/// Native half of `moe_planner.eplb.rebalance_experts` and of the engine adapters (the Python
/// wrappers convert the arrays, check the arguments and document the functions).
#[pyfunction]
#[pyo3(name = "rebalance_experts")]
#[allow(clippy::too_many_arguments)] // EPLB's five arguments and the rebalance's four
pub(crate) fn py_rebalance_experts<'py>(
    py: Python<'py>,
    weight: PyReadonlyArray2<'py, f64>,
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
    current: Option<PyReadonlyArray2<'py, i64>>,
    tolerance: f64,
    max_moves: Option<usize>,
    peer_limit: usize,
) -> PyResult<EplbReturn<'py>> {
    let weights = rows(&weight);
    let shape = EplbShape {
        num_replicas,
        num_groups,
        num_nodes,
        num_gpus,
    };
    let mut how = Rebalancing {
        current: current.map(|c| rows(&c)),
        tolerance,
        max_moves,
        peer_limit,
        cancel: None,
    };
    let (arrays, d) = run_cancellable(py, move |cancel| {
        how.cancel = Some(cancel);
        rebalance_experts_from(weights, shape, &how)
    })?;
    let info = PyDict::new(py);
    info.set_item("policy", d.policy)?;
    info.set_item("max_gpu_load", d.max_gpu_load)?;
    info.set_item("mean_gpu_load", d.mean_gpu_load)?;
    info.set_item("current_max_gpu_load", d.current_max_gpu_load)?;
    info.set_item("moves", d.moves)?;
    let mut table = Array2::<i64>::zeros((d.transfers.len(), 5));
    for (row, t) in d.transfers.iter().enumerate() {
        for (col, &v) in t.iter().enumerate() {
            table[[row, col]] = to_i64(v);
        }
    }
    info.set_item("transfers", table.into_pyarray(py))?;
    info.set_item("rounds", d.rounds)?;
    Ok((
        arrays.physical_to_logical_map.into_pyarray(py),
        arrays.logical_to_physical_map.into_pyarray(py),
        arrays.expert_count.into_pyarray(py),
        info,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of deepseek-ai/EPLB's README: 2 layers x 12 experts, 16 replicas, 8 GPUs.
    fn readme() -> Vec<Vec<f64>> {
        vec![
            vec![
                90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0,
            ],
            vec![
                20.0, 107.0, 104.0, 64.0, 19.0, 197.0, 187.0, 157.0, 172.0, 86.0, 16.0, 27.0,
            ],
        ]
    }

    #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
    fn max_gpu_load(weights: &[f64], p2l: &[i64], counts: &[i64], slots: usize) -> f64 {
        p2l.chunks(slots)
            .map(|gpu| {
                gpu.iter()
                    .map(|&e| weights[e as usize] / counts[e as usize] as f64)
                    .sum::<f64>()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn readme_example_has_eplb_shapes_and_the_optimum() {
        let a = rebalance_experts(readme(), 16, 4, 2, 8).unwrap();
        assert_eq!(a.physical_to_logical_map.dim(), (2, 16));
        assert_eq!(a.logical_to_physical_map.dim(), (2, 12, 5));
        assert_eq!(a.expert_count.dim(), (2, 12));
        // Global: ours 136 and 172 (proved optimal); EPLB's global policy gets 138.5 and 172.
        let g = rebalance_experts(readme(), 16, 4, 3, 8).unwrap();
        let got: Vec<f64> = (0..2)
            .map(|l| {
                let p2l = g.physical_to_logical_map.row(l).to_vec();
                let counts = g.expert_count.row(l).to_vec();
                max_gpu_load(&readme()[l], &p2l, &counts, 2)
            })
            .collect();
        assert_eq!(got, vec![136.0, 172.0]);
    }

    #[test]
    fn gpus_not_a_multiple_of_nodes_fall_back_to_global() {
        // EPLB asserts num_gpus % num_nodes == 0; the problem is still well-defined.
        let a = rebalance_experts(readme(), 18, 4, 4, 9).unwrap();
        assert_eq!(a.physical_to_logical_map.dim(), (2, 18));
        assert!(a.expert_count.iter().all(|&c| c >= 1));
    }

    /// Issue 20 item 4: 16,384 experts with one hot expert on 32,768 GPUs used to abort out of
    /// memory (EPLB's padded `logical_to_physical_map` is 16,384 x 16,385); now refused before
    /// anything is planned or allocated.
    #[test]
    fn padded_map_too_large_is_refused_before_planning() {
        let mut loads = vec![1.0; 16_384];
        loads[0] = 1e9;
        match rebalance_experts(vec![loads], 32_768, 1, 1, 32_768) {
            Err(PlanError::Input(InputError::TooLarge { what, value, .. })) => {
                assert!(what.contains("logical_to_physical_map"), "{what}");
                assert_eq!(value, 16_384 * 16_385);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_shapes_are_typed_errors() {
        assert!(matches!(
            rebalance_experts(readme(), 15, 4, 2, 8),
            Err(PlanError::Placement(PlacementError::Input(
                InputError::NotDivisible { value: 15, .. }
            )))
        ));
        assert!(matches!(
            rebalance_experts(readme(), 16, 4, 2, 0),
            Err(PlanError::Placement(PlacementError::Input(
                InputError::Empty { what: "num_gpus" }
            )))
        ));
        let mut nan = readme();
        nan[1][3] = f64::NAN;
        assert!(matches!(
            rebalance_experts(nan, 16, 4, 2, 8),
            Err(PlanError::Layer { layer: 1, .. })
        ));
        assert!(matches!(
            rebalance_experts(vec![vec![1.0, 2.0], vec![1.0]], 2, 1, 1, 1),
            Err(PlanError::Input(InputError::SizeMismatch {
                expected: 2,
                actual: 1,
                ..
            }))
        ));
        assert!(matches!(
            rebalance_experts(readme(), 8, 4, 2, 8),
            Err(PlanError::Layer {
                layer: 0,
                source: PlacementError::InsufficientCapacity { .. }
            })
        ));
    }

    fn shape(
        num_replicas: usize,
        num_groups: usize,
        num_nodes: usize,
        num_gpus: usize,
    ) -> EplbShape {
        EplbShape {
            num_replicas,
            num_groups,
            num_nodes,
            num_gpus,
        }
    }

    fn as_ids(a: &Array2<i64>) -> Vec<Vec<i64>> {
        a.outer_iter().map(|r| r.to_vec()).collect()
    }

    #[test]
    fn unchanged_loads_move_nothing_and_drift_moves_fewer_than_fresh() {
        for (groups, nodes) in [(4, 1), (4, 2)] {
            let s = shape(16, groups, nodes, 8);
            let (fresh, _) = rebalance_experts_from(readme(), s, &Rebalancing::default()).unwrap();
            let how = Rebalancing {
                current: Some(as_ids(&fresh.physical_to_logical_map)),
                ..Rebalancing::default()
            };
            let (same, d) = rebalance_experts_from(readme(), s, &how).unwrap();
            assert_eq!(d.moves, Some(vec![0, 0]), "groups {groups}, nodes {nodes}");
            assert_eq!(same.expert_count, fresh.expert_count);
            assert!(d.transfers.is_empty() && d.rounds == vec![0, 0]);
            // Drift: swap the loads of two experts in every layer.
            let mut drifted = readme();
            for row in &mut drifted {
                row.swap(0, 5);
                row.swap(2, 10);
            }
            let (_, moved) = rebalance_experts_from(drifted.clone(), s, &how).unwrap();
            let (again, _) = rebalance_experts_from(drifted, s, &Rebalancing::default()).unwrap();
            let fresh_moves: usize = (0..2)
                .map(|l| {
                    let c = PlacementCluster::uniform(8, 2, 1).unwrap();
                    let old: Vec<usize> = fresh
                        .physical_to_logical_map
                        .row(l)
                        .iter()
                        .map(|&e| usize::try_from(e).unwrap())
                        .collect();
                    let new: Vec<usize> = again
                        .physical_to_logical_map
                        .row(l)
                        .iter()
                        .map(|&e| usize::try_from(e).unwrap())
                        .collect();
                    moe_planner::expert_placement::count_moves(&old, &new, &c, 12).unwrap()
                })
                .sum();
            let ours: usize = moved.moves.unwrap().iter().sum();
            assert!(ours <= fresh_moves, "{ours} > {fresh_moves}");
            assert_eq!(moved.transfers.len(), ours);
        }
    }

    #[test]
    fn bad_current_maps_name_the_argument() {
        let s = shape(16, 4, 1, 8);
        let bad = |current: Vec<Vec<i64>>| {
            let how = Rebalancing {
                current: Some(current),
                ..Rebalancing::default()
            };
            match rebalance_experts_from(readme(), s, &how) {
                Err(PlanError::InvalidField { field, reason }) => (field, reason),
                other => panic!("{other:?}"),
            }
        };
        let row: Vec<i64> = (0..16).map(|s| s % 12).collect();
        assert_eq!(bad(vec![row.clone()]).0, "old_global_expert_indices");
        assert!(
            bad(vec![row.clone(), vec![0; 16]])
                .1
                .contains("expert 1 has no slot")
        );
        let mut negative = row.clone();
        negative[3] = -1;
        assert!(bad(vec![row, negative]).1.contains("slot 3"));
    }
}
