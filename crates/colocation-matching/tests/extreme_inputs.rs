//! Regression tests for issue 13: extreme magnitudes give a finite assignment or a typed error,
//! never a panic inside the MILP solver or an infinite makespan.

use colocation_matching::{MatchingError, Worker, lysi_assign_milp};
use comm_cost_model::InputError;

/// `flop_per_s = 1e-320` made every time infinite and microlp panicked.
#[test]
fn a_subnormal_worker_is_a_typed_error() {
    let slow = [Worker {
        flop_per_s: 1e-320,
        expert_slots: 1,
    }];
    assert!(matches!(
        lysi_assign_milp(&[1.0], &slow),
        Err(MatchingError::Input(InputError::NonFinite { .. }))
    ));
    assert!(matches!(
        colocation_matching::lysi_assign(&[1.0], &slow),
        Err(MatchingError::Input(InputError::NonFinite { .. }))
    ));
}

/// Huge but finite times are scaled before the solver and give the exact optimum.
#[test]
fn extreme_but_finite_magnitudes_are_solved() {
    let workers = [
        Worker {
            flop_per_s: 1e-300,
            expert_slots: 2,
        },
        Worker {
            flop_per_s: 2e-300,
            expert_slots: 2,
        },
    ];
    let a = lysi_assign_milp(&[1e5, 1e5, 1e5], &workers).unwrap();
    // Best: one expert on the slow worker (1e305 s), two on the fast one (1e305 s).
    assert!(a.makespan_s.is_finite());
    assert!(
        (a.makespan_s / 1e305 - 1.0).abs() < 1e-9,
        "{}",
        a.makespan_s
    );
    let tiny = [Worker {
        flop_per_s: 1e308,
        expert_slots: 3,
    }];
    let b = lysi_assign_milp(&[5e-324, 1.0, 2.0], &tiny).unwrap();
    assert!(b.makespan_s.is_finite());
}

/// Expert loads cannot be deserialized invalid (negative, ragged or empty).
#[test]
fn expert_loads_deserialize_validated() {
    use colocation_matching::ExpertLoads;
    let ok: ExpertLoads =
        serde_json::from_str(r#"{"send_bytes": [1.0, 2.0], "recv_bytes": [2.0, 1.0]}"#).unwrap();
    assert_eq!(
        ok,
        ExpertLoads::new(vec![1.0, 2.0], vec![2.0, 1.0]).unwrap()
    );
    for bad in [
        r#"{"send_bytes": [-1.0, 2.0], "recv_bytes": [2.0, 1.0]}"#,
        r#"{"send_bytes": [1.0], "recv_bytes": [2.0, 1.0]}"#,
        r#"{"send_bytes": [], "recv_bytes": []}"#,
    ] {
        assert!(serde_json::from_str::<ExpertLoads>(bad).is_err(), "{bad}");
    }
}

// ---------------------------------------------------------------------------------------------
// Found while fuzzing every entry point (tests/fuzz_entry_points.rs).

use colocation_matching::BipartiteError;
use colocation_matching::{
    BipartiteGraph, BottleneckOptions, ColocationCostModel, CostTensor, ExpertDemand, ExpertLoads,
    GpuSpec, HyperedgeCost, LocalSearchOptions, PairingOptions, SquareMatrix, TieBreak,
    assign_gpus_bottleneck, bottleneck_matching, colocate_decoupled, colocate_exact,
    colocate_local_search, colocate_lower_bound_s, colocate_milp, exclusive_time_matrix,
    lysi_assign_refined, min_cost_perfect_matching, pair_bottleneck, placement_loads,
    random_colocation, random_gpu_assignment, random_placement,
};
use expert_placement::PlacementError;
use expert_placement::{
    EplbPolicy, LayerLoads, MAX_PLACEMENT_SLOTS, Placement, PlacementAlgorithm, PlacementCluster,
    RobustObjective, lognormal_loads, place, place_layers, place_robust, placement_lower_bound,
    rebalance, rebalance_experts, split_tokens,
};

/// The two error shapes these tests look for, in the error types of the three crates they
/// exercise (colocation, placement, the bipartite primitives).
trait Shape {
    fn is_non_finite(&self) -> bool;
    fn is_too_large(&self) -> bool;
}

macro_rules! shape {
    ($($t:ident),*) => {$(
        impl Shape for $t {
            fn is_non_finite(&self) -> bool {
                matches!(self, $t::Input(InputError::NonFinite { .. }))
            }
            fn is_too_large(&self) -> bool {
                matches!(self, $t::Input(InputError::TooLarge { .. }))
            }
        }
    )*};
}
shape!(MatchingError, PlacementError, BipartiteError);

fn non_finite<T: std::fmt::Debug, E: Shape>(r: Result<T, E>) -> bool {
    r.err().is_some_and(|e| e.is_non_finite())
}

fn too_large<T: std::fmt::Debug, E: Shape>(r: Result<T, E>) -> bool {
    r.err().is_some_and(|e| e.is_too_large())
}

/// `random_colocation(usize::MAX, _)` and the other random baselines returned a `Vec` and
/// panicked (capacity overflow) or aborted allocating.
#[test]
fn huge_random_baselines_are_too_large_before_allocating() {
    assert!(too_large(random_colocation(usize::MAX, 0)));
    assert!(too_large(random_gpu_assignment(1 << 40, 0)));
    assert!(too_large(random_placement(
        MAX_PLACEMENT_SLOTS + 1,
        true,
        0
    )));
    assert_eq!(random_colocation(0, 0), Ok(Vec::new()));
    assert_eq!(random_placement(2, true, 0).map(|p| p.len()), Ok(2));
}

/// `PlacementCluster::uniform(huge, 0, 1)` passed the slot check (0 slots in total) and then
/// allocated `huge` node ids.
#[test]
fn a_uniform_cluster_without_slots_is_refused_before_allocating() {
    for gpus in [usize::MAX, 1 << 40] {
        assert!(matches!(
            PlacementCluster::uniform(gpus, 0, 1),
            Err(PlacementError::Input(InputError::NotPositiveEntry { .. }))
        ));
    }
    assert!(too_large(PlacementCluster::uniform(usize::MAX, 1, 1)));
}

/// Accessors that take an index: `slot_range(usize::MAX)` overflowed `gpu + 1`,
/// `neighbors(u)` and `cost_s` indexed out of range.
#[test]
fn index_accessors_are_total() {
    let c = PlacementCluster::uniform(2, 2, 1).unwrap();
    assert!(c.slot_range(usize::MAX).is_empty());
    assert_eq!(c.gpu_of_slot(usize::MAX), None);
    let g = BipartiteGraph::from_adjacency(2, &[vec![0, 1]]).unwrap();
    assert!(g.neighbors(1).is_empty() && g.neighbors(usize::MAX).is_empty());
    let t = CostTensor::from_fn(2, |a, b, g| (a + b + g) as f64).unwrap();
    assert_eq!((t.get(1, 1, 1), t.get(2, 0, 0)), (Some(3.0), None));
    assert!(t.cost_s(0, 0, usize::MAX).is_nan());
    let e = ExpertDemand {
        send_bytes: 1.0,
        recv_bytes: 1.0,
        flop: 1.0,
    };
    let gpu = GpuSpec {
        flop_per_s: 1.0,
        bandwidth_bytes_per_s: 1.0,
    };
    let m = ColocationCostModel::new(vec![e], vec![e], vec![gpu]).unwrap();
    assert_eq!(m.get(0, 1, 0), None);
    assert!(m.cost_s(1, 0, 0).is_nan() && m.pair_weight(0, 1).is_nan());
}

/// A graph deserialized from its memory layout (offsets past the targets) made
/// `hopcroft_karp` panic; a huge right side made it abort allocating.
#[test]
fn bipartite_graphs_deserialize_validated_and_limited() {
    let layout = r#"{"n_right": 1, "offsets": [0, 5], "targets": []}"#;
    assert!(serde_json::from_str::<BipartiteGraph>(layout).is_err());
    assert!(
        serde_json::from_str::<BipartiteGraph>(r#"{"n_right": 1, "adjacency": [[3]]}"#).is_err()
    );
    let g: BipartiteGraph =
        serde_json::from_str(r#"{"n_right": 2, "adjacency": [[0, 1], [0]]}"#).unwrap();
    assert_eq!(
        g,
        BipartiteGraph::from_adjacency(2, &[vec![0, 1], vec![0]]).unwrap()
    );
    assert_eq!(
        serde_json::to_string(&g).unwrap(),
        r#"{"n_right":2,"adjacency":[[0,1],[0]]}"#
    );
    assert!(too_large(BipartiteGraph::from_adjacency(usize::MAX, &[])));
}

/// `CostTensor` and `ColocationCostModel` deserialized without validation: a tensor with too
/// few entries or a model with fewer GPUs than experts panicked on the first cost.
#[test]
fn cost_models_deserialize_validated() {
    for bad in [
        r#"{"n": 3, "data": []}"#,
        r#"{"n": 1, "data": [-1.0]}"#,
        r#"{"n": 0, "data": []}"#,
    ] {
        assert!(serde_json::from_str::<CostTensor>(bad).is_err(), "{bad}");
    }
    let t: CostTensor = serde_json::from_str(r#"{"n": 1, "data": [2.0]}"#).unwrap();
    assert_eq!(t.cost_s(0, 0, 0), 2.0);
    let e = r#"{"send_bytes": 1.0, "recv_bytes": 1.0, "flop": 1.0}"#;
    let gpu = r#"{"flop_per_s": 1.0, "bandwidth_bytes_per_s": 1.0}"#;
    let short = format!(r#"{{"model_a": [{e}, {e}], "model_b": [{e}, {e}], "gpus": [{gpu}]}}"#);
    assert!(serde_json::from_str::<ColocationCostModel>(&short).is_err());
    let ok = format!(r#"{{"model_a": [{e}], "model_b": [{e}], "gpus": [{gpu}]}}"#);
    let m: ColocationCostModel = serde_json::from_str(&ok).unwrap();
    assert_eq!(m.cost_s(0, 0, 0), 2.0 * 2.0 + 2.0);
}

/// A model whose slowest layer time overflows gave `cost_s = inf` (and an infinite
/// `colocate_lower_bound_s`).
#[test]
fn colocation_models_whose_times_overflow_are_refused() {
    let e = |s| ExpertDemand {
        send_bytes: s,
        recv_bytes: 1.0,
        flop: 1.0,
    };
    let gpu = |b| GpuSpec {
        flop_per_s: 1.0,
        bandwidth_bytes_per_s: b,
    };
    assert!(non_finite(ColocationCostModel::new(
        vec![e(1e308)],
        vec![e(1e308)],
        vec![gpu(1.0)]
    )));
    assert!(non_finite(ColocationCostModel::new(
        vec![e(1.0)],
        vec![e(1.0)],
        vec![gpu(5e-324)]
    )));
    assert!(ColocationCostModel::new(vec![e(1e307)], vec![e(1e307)], vec![gpu(1.0)]).is_ok());
}

/// A user's cost function returning a huge size or NaN.
struct UserCost(usize, f64);

impl HyperedgeCost for UserCost {
    fn size(&self) -> usize {
        self.0
    }

    fn cost_s(&self, _: usize, _: usize, _: usize) -> f64 {
        self.1
    }
}

/// `colocate_lower_bound_s` returned a bare `f64`: NaN costs were skipped silently and a huge
/// size allocated before any check.
#[test]
fn the_colocating_lower_bound_checks_costs_and_size() {
    assert!(too_large(colocate_lower_bound_s(&UserCost(
        usize::MAX,
        1.0
    ))));
    assert!(matches!(
        colocate_lower_bound_s(&UserCost(2, f64::NAN)),
        Err(MatchingError::Input(InputError::InvalidEntry { .. }))
    ));
    assert!(matches!(
        colocate_lower_bound_s(&UserCost(0, 1.0)),
        Err(MatchingError::Input(InputError::Empty { .. }))
    ));
    assert_eq!(colocate_lower_bound_s(&UserCost(2, 3.0)), Ok(3.0));
}

/// `restarts: usize::MAX` ran descents for ever.
#[test]
fn local_search_restarts_are_limited() {
    let t = CostTensor::from_fn(2, |a, b, g| (a + b + g) as f64).unwrap();
    let options = LocalSearchOptions {
        restarts: usize::MAX,
        ..LocalSearchOptions::default()
    };
    assert!(too_large(colocate_local_search(&t, &options)));
}

/// The default pair weight summed the costs before dividing: costs near `f64::MAX` made it
/// infinite, and the decoupled, local-search and exact solvers refused a valid tensor.
#[test]
fn colocating_costs_near_f64_max_are_solved() {
    let t =
        CostTensor::from_fn(2, |a, b, g| f64::MAX / 4.0 * (1 + (a + b + g) % 3) as f64).unwrap();
    let exact = colocate_exact(&t).unwrap().bottleneck_s;
    assert!(exact.is_finite());
    assert!(colocate_decoupled(&t).unwrap().bottleneck_s >= exact);
    assert_eq!(colocate_milp(&t).unwrap().bottleneck_s, exact);
}

/// The MILP oracles scaled costs by the largest one: costs spanning ten orders of magnitude
/// fell below microlp's tolerance and gave wrong "optima" (2.5 for 1.5 here; 0.3% above the
/// optimum with a 1e-300 FLOP/s worker), and costs near `f64::MAX` were "infeasible".
#[test]
fn milp_oracles_are_exact_across_magnitudes() {
    let t = CostTensor::from_fn(3, |a, b, g| match (a * 7 + b * 3 + g * 5) % 4 {
        0 => 1e10,
        1 => 1.0,
        2 => 0.5 + a as f64,
        _ => 2.0,
    })
    .unwrap();
    assert_eq!(colocate_exact(&t).unwrap().bottleneck_s, 1.5);
    assert_eq!(colocate_milp(&t).unwrap().bottleneck_s, 1.5);
    let workers = [
        Worker {
            flop_per_s: 1.0,
            expert_slots: 3,
        },
        Worker {
            flop_per_s: 1.0,
            expert_slots: 3,
        },
        Worker {
            flop_per_s: 1e-300,
            expert_slots: 1,
        },
    ];
    let flop = [
        888.515_526_007_539_2,
        0.081_200_329_287_283_95,
        3.0,
        70.502_268_253_575_47,
    ];
    let refined = lysi_assign_refined(&flop, &workers).unwrap().makespan_s;
    let milp = lysi_assign_milp(&flop, &workers).unwrap().makespan_s;
    assert!(
        (milp - refined).abs() <= 1e-9 * refined,
        "{milp} vs {refined}"
    );
}

/// Weights near `f64::MAX`: `bottleneck_matching` and `min_cost_perfect_matching` returned an
/// infinite `total_weight`; the GPU assignment (which reports the bottleneck only) still works.
#[test]
fn matchings_whose_total_overflows_are_errors() {
    let w = SquareMatrix::from_rows(&[vec![f64::MAX; 2], vec![f64::MAX; 2]]).unwrap();
    assert!(non_finite(bottleneck_matching(
        &w,
        &BottleneckOptions::default()
    )));
    assert!(non_finite(min_cost_perfect_matching(&w, &[])));
    assert_eq!(assign_gpus_bottleneck(&w).unwrap().bottleneck_s, f64::MAX);
}

/// Loads of finite bytes whose sums overflow: `from_traffic`, `placement_loads` and
/// `ExpertDemand::from_loads` returned infinities, and `exclusive_time_matrix` a misleading
/// bad-entry error.
#[test]
fn loads_that_overflow_are_errors() {
    let d =
        SquareMatrix::from_rows(&[vec![0.0, 1e308, 1e308], vec![0.0; 3], vec![0.0; 3]]).unwrap();
    assert!(non_finite(ExpertLoads::from_traffic(&d)));
    assert!(non_finite(placement_loads(&d, &[0, 1, 1], 2)));
    let loads = ExpertLoads::new(vec![1.0], vec![1e308]).unwrap();
    assert!(non_finite(ExpertDemand::from_loads(&loads, 10.0)));
    let e = [ExpertDemand {
        send_bytes: 1.0,
        recv_bytes: 1.0,
        flop: 1.0,
    }];
    let slow = [GpuSpec {
        flop_per_s: 1.0,
        bandwidth_bytes_per_s: 5e-324,
    }];
    assert!(non_finite(exclusive_time_matrix(&e, &slow)));
}

/// Sizes that allocate: `padded(usize::MAX)` and `placement_loads(.., usize::MAX)` panicked
/// (capacity overflow); Case II pairing of 2^20 experts would take 8 TiB of candidates.
#[test]
fn huge_expert_and_gpu_counts_are_too_large() {
    let loads = ExpertLoads::new(vec![1.0], vec![1.0]).unwrap();
    assert!(too_large(loads.padded(usize::MAX)));
    let d = SquareMatrix::from_rows(&[vec![0.0]]).unwrap();
    assert!(too_large(placement_loads(&d, &[0], usize::MAX)));
    let n = comm_cost_model::MAX_MATRIX_SIDE + 1;
    let wide = ExpertLoads::new(vec![1.0; n], vec![1.0; n]).unwrap();
    assert!(too_large(pair_bottleneck(
        &wide,
        &wide,
        &PairingOptions::default()
    )));
}

/// Under `MinTotalWeight` an overflowing pair made the weight matrix invalid, although a
/// pairing with finite bytes existed (found by the fuzzing).
#[test]
fn pairing_around_overflowing_pairs() {
    let a = ExpertLoads::new(vec![2.2250738585072014e-308, 1.0], vec![0.0, f64::MAX]).unwrap();
    let b = ExpertLoads::new(
        vec![1.0, 148.709_675_557_684_88],
        vec![370.059_684_655_105_6, f64::MAX],
    )
    .unwrap();
    let any = pair_bottleneck(&a, &b, &PairingOptions::default()).unwrap();
    let least = PairingOptions {
        tie_break: TieBreak::MinTotalWeight,
        ..PairingOptions::default()
    };
    assert_eq!(
        pair_bottleneck(&a, &b, &least).unwrap().bottleneck_bytes,
        any.bottleneck_bytes
    );
}

/// With a subnormal speed the bound multiplied by `1 / speed = inf`, so it was infinite
/// although the true bound (1e-10 / 1e-310) is finite; an overflowing bound is an error.
#[test]
fn the_placement_bound_survives_subnormal_speeds() {
    let c = PlacementCluster::new(vec![1], vec![1e-310], vec![0]).unwrap();
    let small = LayerLoads::new(vec![1e-10]).unwrap();
    let bound = placement_lower_bound(&small, &c).unwrap();
    assert!((bound / 1e300 - 1.0).abs() < 1e-3, "{bound}");
    assert!(non_finite(placement_lower_bound(
        &LayerLoads::new(vec![1.0]).unwrap(),
        &c
    )));
}

/// Plans whose figures overflow: `Placement::evaluate` and EPLB returned an infinite `gap()`
/// (one GPU of speed `f64::MAX` makes the bound tiny), `evaluate` an infinite load.
#[test]
fn plans_with_infinite_figures_are_errors() {
    let c = PlacementCluster::new(vec![1, 1], vec![f64::MAX, 1e-300], vec![0, 0]).unwrap();
    let w = LayerLoads::new(vec![1.0, 1.0]).unwrap();
    assert!(non_finite(Placement::evaluate(&w, &c, vec![0, 1])));
    assert!(non_finite(place(
        &w,
        &c,
        PlacementAlgorithm::Eplb(EplbPolicy::Global)
    )));
    // The optimal planner proves its plan optimal, so its gap is 0, not the bound's.
    assert_eq!(
        place(&w, &c, PlacementAlgorithm::Optimal).map(|p| p.gap()),
        Ok(0.0)
    );
    let slow = PlacementCluster::new(vec![1], vec![1e-320], vec![0]).unwrap();
    let heavy = LayerLoads::new(vec![1e10]).unwrap();
    assert!(non_finite(Placement::evaluate(&heavy, &slow, vec![0])));
}

/// `rebalance` with `tolerance = 1e308` returned `target_max_gpu_load = inf`.
#[test]
fn rebalancing_with_a_huge_tolerance_is_an_error() {
    let c = PlacementCluster::uniform(2, 2, 1).unwrap();
    let w = LayerLoads::new(vec![40.0, 30.0, 20.0]).unwrap();
    let plan = place(&w, &c, PlacementAlgorithm::Optimal).unwrap();
    assert!(non_finite(rebalance(
        &plan.physical_to_logical,
        &w,
        &c,
        1e308
    )));
    assert!(rebalance(&plan.physical_to_logical, &w, &c, 1.0).is_ok());
}

/// Windows of loads near `f64::MAX`: their mean overflowed (a spurious invalid-load error) and
/// the mean objective was infinite.
#[test]
fn robust_plans_near_f64_max() {
    let c = PlacementCluster::uniform(2, 1, 1).unwrap();
    let w = LayerLoads::new(vec![f64::MAX, 1.0]).unwrap();
    for objective in [RobustObjective::Worst, RobustObjective::Mean] {
        let r = place_robust(&[w.clone(), w.clone()], &c, objective).unwrap();
        assert_eq!(r.objective_value, f64::MAX);
    }
}

/// A subnormal GPU speed made `split_tokens` return `max_gpu_load = inf`.
#[test]
fn token_splits_on_a_subnormal_speed_are_errors() {
    let c = PlacementCluster::new(vec![1, 1], vec![1.0, 5e-324], vec![0, 0]).unwrap();
    assert!(non_finite(split_tokens(&[0, 1], &[1, 1], &c)));
}

/// EPLB's tables for many layers: `logical_to_physical` (layers x experts x max replicas) and
/// the per-layer maps were allocated without a limit (12 GB here, one hot expert with 57,345
/// replicas next to 8,191 cold ones).
#[test]
fn plan_tables_are_limited_before_allocating() {
    let mut hot = vec![1.0; 1 << 13];
    hot[0] = 1e9;
    assert!(too_large(rebalance_experts(
        &[hot.clone(), hot.clone(), hot],
        1 << 16,
        1,
        1,
        1
    )));
    let c = PlacementCluster::uniform(1, 1 << 24, 1).unwrap();
    let layers = vec![LayerLoads::new(vec![1.0]).unwrap(); 17];
    assert!(too_large(place_layers(
        &layers,
        &c,
        PlacementAlgorithm::Eplb(EplbPolicy::Global)
    )));
}

/// 2^24 + 1 layers of 3 log-normal loads ran for more than 20 s (limit 2^26 loads, now 2^24).
#[test]
fn synthetic_workloads_are_limited() {
    assert!(too_large(lognormal_loads(
        16_777_217,
        3,
        2.2250738585072014e-308,
        0.25,
        1
    )));
    assert!(lognormal_loads(4, 3, 1.0, 100.0, 1).is_ok());
}
