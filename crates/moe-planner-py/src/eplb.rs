//! `moe_planner.eplb.rebalance_experts`: EPLB's signature and return shapes, our optimal planner.

use moe_planner::PlanError;
use moe_planner::expert_placement::{
    LayerLoads, MAX_PLAN_ENTRIES, PlacementAlgorithm, PlacementCluster, PlacementError, place,
};
use moe_planner::placement::formats::check_padded_map_size;
use numpy::ndarray::{Array2, Array3};
use numpy::{IntoPyArray, PyArray2, PyArray3, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::boundary::{rows, run};

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
///
/// # Errors
///
/// [`PlanError::TooLarge`] when EPLB's padded `logical_to_physical_map` (`layers x experts x
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
    for (what, v) in [
        ("num_gpus", num_gpus),
        ("num_groups", num_groups),
        ("num_nodes", num_nodes),
    ] {
        if v == 0 {
            return Err(PlacementError::Empty { what }.into());
        }
    }
    if num_replicas % num_gpus != 0 {
        return Err(PlacementError::NotDivisible {
            what: "num_replicas by num_gpus",
            value: num_replicas,
            divisor: num_gpus,
        }
        .into());
    }
    let experts = weights.first().map_or(0, Vec::len);
    let width = num_replicas.saturating_sub(experts) + 1;
    // EPLB's output shapes, refused before anything is planned or allocated.
    check_padded_map_size(weights.len(), experts, width)?;
    check_plan_entries(weights.len(), num_replicas)?;
    let layers = validated(weights)?;
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
    for (l, loads) in layers.iter().enumerate() {
        let node_aware = by_node.as_ref().and_then(|cluster| {
            let algorithm = PlacementAlgorithm::OptimalNodeAware { groups: num_groups };
            place(loads, cluster, algorithm).ok()
        });
        let placement = match node_aware {
            Some(p) => p,
            None => place(loads, &global, PlacementAlgorithm::Optimal)
                .map_err(|source| PlanError::Layer { layer: l, source })?,
        };
        for (slot, &e) in placement.physical_to_logical.iter().enumerate() {
            let rank = usize::try_from(arrays.expert_count[[l, e]]).unwrap_or(0);
            arrays.physical_to_logical_map[[l, slot]] = to_i64(e);
            arrays.logical_to_physical_map[[l, e, rank]] = to_i64(slot);
            arrays.expert_count[[l, e]] += 1;
        }
    }
    Ok(arrays)
}

/// `[layers, num_replicas]` fits [`MAX_PLAN_ENTRIES`].
fn check_plan_entries(layers: usize, num_replicas: usize) -> Result<(), PlanError> {
    let value = layers.saturating_mul(num_replicas);
    if value > MAX_PLAN_ENTRIES {
        return Err(PlanError::TooLarge {
            what: "physical_to_logical_map entries (layers x num_replicas)",
            limit: MAX_PLAN_ENTRIES,
            value,
        });
    }
    Ok(())
}

/// Every layer validated, all with the first layer's expert count.
fn validated(weights: Vec<Vec<f64>>) -> Result<Vec<LayerLoads>, PlanError> {
    let experts = weights
        .first()
        .ok_or(PlacementError::Empty { what: "layers" })?
        .len();
    weights
        .into_iter()
        .enumerate()
        .map(|(layer, row)| {
            if row.len() != experts {
                return Err(PlanError::SizeMismatch {
                    what: "weight: experts per layer",
                    expected: experts,
                    actual: row.len(),
                });
            }
            LayerLoads::new(row).map_err(|source| PlanError::Layer { layer, source })
        })
        .collect()
}

/// An index as numpy's `int64` (indices here are below `MAX_PLACEMENT_SLOTS`).
fn to_i64(index: usize) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

/// The three arrays `rebalance_experts` returns to Python.
type EplbReturn<'py> = (
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray3<i64>>,
    Bound<'py, PyArray2<i64>>,
);

/// Native half of `moe_planner.eplb.rebalance_experts` (the Python wrapper converts `weight`
/// to a C-contiguous float64 array and documents the function).
#[pyfunction]
#[pyo3(name = "rebalance_experts")]
pub(crate) fn py_rebalance_experts<'py>(
    py: Python<'py>,
    weight: PyReadonlyArray2<'py, f64>,
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
) -> PyResult<EplbReturn<'py>> {
    let weights = rows(&weight);
    let arrays = run(py, move || {
        rebalance_experts(weights, num_replicas, num_groups, num_nodes, num_gpus)
    })?;
    Ok((
        arrays.physical_to_logical_map.into_pyarray(py),
        arrays.logical_to_physical_map.into_pyarray(py),
        arrays.expert_count.into_pyarray(py),
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
            Err(PlanError::TooLarge { what, value, .. }) => {
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
            Err(PlanError::Placement(PlacementError::NotDivisible {
                value: 15,
                ..
            }))
        ));
        assert!(matches!(
            rebalance_experts(readme(), 16, 4, 2, 0),
            Err(PlanError::Placement(PlacementError::Empty {
                what: "num_gpus"
            }))
        ));
        let mut nan = readme();
        nan[1][3] = f64::NAN;
        assert!(matches!(
            rebalance_experts(nan, 16, 4, 2, 8),
            Err(PlanError::Layer { layer: 1, .. })
        ));
        assert!(matches!(
            rebalance_experts(vec![vec![1.0, 2.0], vec![1.0]], 2, 1, 1, 1),
            Err(PlanError::SizeMismatch {
                expected: 2,
                actual: 1,
                ..
            })
        ));
        assert!(matches!(
            rebalance_experts(readme(), 8, 4, 2, 8),
            Err(PlanError::Layer {
                layer: 0,
                source: PlacementError::InsufficientCapacity { .. }
            })
        ));
    }
}
