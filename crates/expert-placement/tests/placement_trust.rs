//! Issue 20 ("placement you can trust"): every case the independent oracle and the adversarial
//! campaign found, as a regression test, and the properties of the budgets, terminations and
//! node-aware bound.

use comm_cost_model::InputError;
use std::time::{Duration, Instant};

use expert_placement::{CancelFlag, PlacementError};
use expert_placement::{
    EplbPolicy, LayerLoads, Placement, PlacementAlgorithm, PlacementCluster, PlacementOptions,
    Termination, drift_loads, eplb, lognormal_loads, place, place_with, rebalance_with, zipf_loads,
};
use proptest::prelude::*;
use rand::RngExt;

fn layer(w: &[f64]) -> LayerLoads {
    LayerLoads::new(w.to_vec()).unwrap()
}

#[test]
fn two_hot_experts_on_nine_gpus_reach_a_valid_251() {
    // Issue 20: `optimal` gave 366.7 (EPLB 333.3) where 251.0 is valid.
    let w = layer(&[
        0.0, 1.0, 5.0, 0.0, 1.0, 1000.0, 20.0, 0.0, 0.0, 5.0, 20.0, 0.0, 1000.0, 5.0, 5.0, 20.0,
        1.0, 5.0,
    ]);
    let c = PlacementCluster::uniform(9, 3, 1).unwrap();
    let p = place(&w, &c, PlacementAlgorithm::Optimal).unwrap();
    assert!(p.max_gpu_load <= 251.0, "{}", p.max_gpu_load);
    assert_eq!(p.duplicates_on_gpu, 0);
    // One hot replica per GPU: 4 + 5 replicas.
    assert_eq!(p.replica_count[5] + p.replica_count[12], 9);
    let base = eplb(&w, &c, EplbPolicy::Global).unwrap();
    assert!(p.max_gpu_load < base.max_gpu_load);
    // Certified: ten replicas above 125 cannot share 9 GPUs, so no plan goes below 250 (the
    // heavy-replica bound; the average and replication bounds said 233).
    assert!(p.lower_bound >= 250.0 - 1e-6, "{}", p.lower_bound);
    assert!(
        p.max_gpu_load <= 1.002 * p.lower_bound,
        "{}",
        p.max_gpu_load
    );
}

/// Campaign cases on 2-slot GPUs where the pairing oracle (`scripts/placement_oracle.py
/// --solver pairs`, `HiGHS`) proved the optimum and the plan was above it before the count search:
/// (loads, GPUs, plan before, proved optimum).
fn two_slot_cases() -> Vec<(Vec<f64>, usize, f64, f64)> {
    vec![
        // Case 411: log-normal, 42 experts on 29 x 2; 479.29 before (EPLB 480.29), optimum 459.
        (
            vec![
                22.0, 254.0, 2529.0, 81.0, 6.0, 104.0, 61.0, 2935.0, 60.0, 115.0, 264.0, 58.0,
                157.0, 290.0, 10.0, 303.0, 7.0, 2.0, 15.0, 101.0, 124.0, 457.0, 136.0, 246.0, 10.0,
                20.0, 235.0, 167.0, 175.0, 55.0, 8.0, 42.0, 86.0, 274.0, 85.0, 774.0, 64.0, 1310.0,
                46.0, 12.0, 80.0, 629.0,
            ],
            29,
            479.285_714_285_714_3,
            459.0,
        ),
        // Case 382: two hot experts among 14 cold on 25 x 2; 16.157 before, optimum 15.5.
        (
            vec![
                111.0, 2.0, 14.0, 15.0, 10.0, 19.0, 19.0, 17.0, 112.0, 7.0, 7.0, 12.0, 5.0, 3.0,
                16.0, 15.0,
            ],
            25,
            16.157_142_857_142_86,
            15.5,
        ),
        // Case 383: log-normal, 18 experts on 21 x 2; 168.70 before, optimum 162.83.
        (
            vec![
                66.0, 71.0, 5.0, 24.0, 233.0, 114.0, 8.0, 13.0, 382.0, 96.0, 42.0, 557.0, 1173.0,
                93.0, 216.0, 205.0, 19.0, 9.0,
            ],
            21,
            168.696_428_571_428_58,
            162.833_333_333_333_3,
        ),
        // Case 381: one hot expert among 21 cold on 25 x 2; 38.0 before the exact 2-slot
        // search, optimum 412/11 = 37.4545.
        (
            vec![
                19.0, 15.0, 3.0, 10.0, 2.0, 19.0, 14.0, 714.0, 10.0, 14.0, 4.0, 5.0, 0.0, 12.0,
                8.0, 4.0, 4.0, 18.0, 3.0, 4.0, 18.0, 2.0,
            ],
            25,
            38.0,
            412.0 / 11.0,
        ),
        // Case 50: three hot experts among 14 cold on 28 x 2; 31.722 before, optimum 94/3.
        (
            vec![
                4.0, 12.0, 266.0, 5.0, 3.0, 267.0, 1.0, 0.0, 0.0, 268.0, 5.0, 2.0, 0.0, 2.0, 14.0,
                2.0, 13.0,
            ],
            28,
            31.722_222_222_222_225,
            94.0 / 3.0,
        ),
        // Case 99: log-normal, 30 experts on 25 x 2; 224.6 before, optimum 223.5.
        (
            vec![
                35.0, 69.0, 61.0, 121.0, 416.0, 73.0, 485.0, 11.0, 56.0, 52.0, 88.0, 29.0, 14.0,
                78.0, 181.0, 873.0, 46.0, 50.0, 369.0, 25.0, 50.0, 188.0, 61.0, 62.0, 85.0, 160.0,
                1227.0, 102.0, 215.0, 143.0,
            ],
            25,
            224.6,
            223.5,
        ),
    ]
}

#[test]
fn two_slot_plans_are_the_pairing_oracles_optimum_and_proved() {
    for (w, gpus, before, optimum) in two_slot_cases() {
        let c = PlacementCluster::uniform(gpus, 2, 1).unwrap();
        // Counted limits only (a loaded debug build would hit the default 1 s clock first).
        let generous = PlacementOptions {
            time_budget_s: 600.0,
            ..PlacementOptions::default()
        };
        let p = place_with(&layer(&w), &c, PlacementAlgorithm::Optimal, &generous).unwrap();
        assert_eq!(p.duplicates_on_gpu, 0);
        assert!(p.max_gpu_load < before, "{} vs {before}", p.max_gpu_load);
        // The exact 2-slot search reaches the independent oracle's optimum and proves it with
        // the default step budget.
        assert!(
            (p.max_gpu_load - optimum).abs() <= 1e-9 * optimum,
            "{} vs {optimum}",
            p.max_gpu_load
        );
        assert_eq!(p.termination, Termination::ProvedOptimal, "{optimum}");
        assert!(p.lower_bound <= optimum * (1.0 + 1e-9));
        assert!(p.lower_bound >= optimum * (1.0 - 1e-9));
    }
}

#[test]
fn two_slot_searches_spend_their_budget_near_the_best_counts() {
    // Campaign cases 108, 263, 388, 110 and 155. The exact 2-slot search used to spend its
    // whole default budget on one bisection midpoint just below the optimum and leave the
    // heuristic's plan (108: 105.25, 1.4% above the optimum 103.8 that 100x the budget
    // proves). Its tests now try the best counts' neighbours first, a midpoint gets a quarter
    // of the steps left, and the first two lower plans it finds start a count search (108:
    // 104.2, 0.39% above). A probe just below the best plan that finds a lower one is followed
    // by another instead of a midpoint (110: 244.67 -> 243.5, optimum 243; 388: 98.2444 ->
    // 98.1667). Its own default of 3,000,000 steps (500,000 before) proves 108, 110 and 155
    // optimal (`Some(value)`: the plan equals its bound) and lowers 388 to 98.1429.
    let cases: [(&[f64], usize, f64, bool); 5] = [
        (
            &[
                18.0, 155.0, 79.0, 262.0, 191.0, 48.0, 378.0, 19.0, 132.0, 275.0, 88.0, 18.0, 53.0,
                68.0, 208.0, 86.0, 19.0, 201.0, 54.0,
            ],
            23,
            103.8,
            true,
        ),
        (
            &[
                493.0, 357.0, 748.0, 598.0, 3667.0, 416.0, 974.0, 10000.0, 274.0, 2039.0, 1345.0,
                311.0,
            ],
            29,
            734.4667,
            false,
        ),
        (
            &[
                294.0, 20.0, 77.0, 379.0, 277.0, 414.0, 60.0, 15.0, 42.0, 369.0, 303.0, 63.0,
                237.0, 202.0, 220.0, 40.0,
            ],
            31,
            98.1429,
            false,
        ),
        (
            &[
                8.0, 99.0, 31.0, 47.0, 121.0, 204.0, 113.0, 223.0, 104.0, 925.0, 42.0, 96.0, 18.0,
                125.0, 45.0, 458.0, 18.0, 24.0, 340.0, 748.0, 16.0, 283.0, 54.0, 41.0, 568.0,
                184.0, 215.0, 1405.0, 14.0, 50.0, 82.0, 47.0, 120.0, 193.0, 230.0, 115.0, 11.0,
            ],
            31,
            243.0,
            true,
        ),
        (
            &[
                1917.0, 2551.0, 3083.0, 10000.0, 1306.0, 1549.0, 3936.0, 1712.0, 5553.0, 1417.0,
                2185.0,
            ],
            29,
            1221.2858,
            true,
        ),
    ];
    for (w, gpus, at_most, proved) in cases {
        let c = PlacementCluster::uniform(gpus, 2, 1).unwrap();
        // Counted limits only (a loaded debug build would hit the default 1 s clock first).
        let generous = PlacementOptions {
            time_budget_s: 600.0,
            ..PlacementOptions::default()
        };
        let p = place_with(&layer(w), &c, PlacementAlgorithm::Optimal, &generous).unwrap();
        assert_eq!(p.duplicates_on_gpu, 0);
        assert!(
            p.max_gpu_load <= at_most + 1e-9,
            "{} vs {at_most}",
            p.max_gpu_load
        );
        assert!(p.lower_bound <= p.max_gpu_load);
        if proved {
            assert_eq!(p.termination, Termination::ProvedOptimal, "{at_most}");
            assert!((p.lower_bound - p.max_gpu_load).abs() <= 1e-9 * p.max_gpu_load);
        }
    }
}

#[test]
fn count_restarts_leave_the_basin_of_the_starting_counts() {
    // Campaign cases 396, 121 and 488 (3 slots a GPU). The count search's starts gave the hot
    // experts so many replicas that they shared GPUs (396: 23 and 24 replicas of the two hot
    // experts on 27 GPUs, 15.98; the configuration oracle `scripts/placement_oracle.py
    // --solver configs` found 15.8626 with 13 each, never on one GPU). Random restarts of the
    // count search, descended with transfers of several replicas, reach those counts.
    let cases: [(&[f64], usize, f64); 3] = [
        (&[9.0, 4.0, 182.0, 183.0, 6.0, 9.0, 15.0, 20.0], 27, 15.8627),
        (
            &[
                0.0, 1.0, 7.0, 17.0, 18.0, 8.0, 9.0, 16.0, 17.0, 6.0, 13.0, 6.0, 0.0, 2.0, 17.0,
                17.0, 1086.0, 6.0, 1085.0, 19.0, 19.0, 11.0, 16.0, 3.0, 11.0, 14.0, 7.0, 19.0, 0.0,
                19.0, 16.0, 18.0, 10.0, 20.0, 0.0, 9.0,
            ],
            31,
            82.3824,
        ),
        (
            &[
                2.0, 12.0, 42.0, 21.0, 210.0, 166.0, 809.0, 3277.0, 1057.0, 29.0, 15.0, 15.0,
                120.0, 1933.0, 20.0, 162.0, 34.0, 480.0, 972.0, 285.0, 118.0, 55.0, 55.0, 322.0,
                160.0,
            ],
            14,
            744.4001,
        ),
    ];
    for (w, gpus, at_most) in cases {
        let c = PlacementCluster::uniform(gpus, 3, 1).unwrap();
        // Counted limits only (a loaded debug build would hit the default 1 s clock first).
        let generous = PlacementOptions {
            time_budget_s: 600.0,
            ..PlacementOptions::default()
        };
        let p = place_with(&layer(w), &c, PlacementAlgorithm::Optimal, &generous).unwrap();
        assert_eq!(p.duplicates_on_gpu, 0);
        assert!(p.max_gpu_load <= at_most, "{} vs {at_most}", p.max_gpu_load);
        assert!(p.lower_bound <= p.max_gpu_load);
    }
}

#[test]
fn two_hot_experts_among_thirty_cold_on_sixteen_gpus() {
    // Issue 20: 32 experts (two at 1000, the rest 0-20) on 16 x 3 gave 222.2 where 146.0 is
    // valid. The exact loads were not published: ten seeded instances of that shape, each
    // within 4% of its certified bound (about 1000 / 7 = 142.9 plus a cold replica; 143-148
    // here, where the old planner gave 222).
    let c = PlacementCluster::uniform(16, 3, 1).unwrap();
    for seed in 0..10 {
        let mut rng = comm_cost_model::seeded_rng(seed, 20);
        let mut w = vec![1000.0, 1000.0];
        w.extend((0..30).map(|_| f64::from(rng.random_range(0..=20u32))));
        let w = layer(&w);
        let p = place(&w, &c, PlacementAlgorithm::Optimal).unwrap();
        assert!(
            p.max_gpu_load <= 1.04 * p.lower_bound,
            "seed {seed}: {} vs bound {}",
            p.max_gpu_load,
            p.lower_bound
        );
        let base = eplb(&w, &c, EplbPolicy::Global).unwrap();
        assert!(p.max_gpu_load <= base.max_gpu_load);
    }
}

#[test]
fn nine_small_experts_on_sixteen_gpus_finish_at_their_bound() {
    // Issue 20: 44 s. The branch and bound now counts every choice it tries as a step.
    let w = layer(&[3.0, 3.0, 3.0, 2.0, 1.0, 2.0, 2.0, 2.0, 2.0]);
    let c = PlacementCluster::uniform(16, 2, 1).unwrap();
    let start = Instant::now();
    let p = place(&w, &c, PlacementAlgorithm::Optimal).unwrap();
    // Debug builds are about ten times slower than release (0.2 s there).
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(p.max_gpu_load, 1.25); // the average, 20 / 16
    assert!(p.termination.is_optimal(), "{}", p.termination);
}

#[test]
fn exact_search_ends_within_its_budget() {
    // Issue 20: `--policy exact` on 12 experts / 8 x 3 ran 42 s.
    let w = layer(&[
        90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0,
    ]);
    let c = PlacementCluster::uniform(8, 3, 1).unwrap();
    let options = PlacementOptions {
        search_steps: Some(200_000),
        time_budget_s: 0.5,
        ..PlacementOptions::default()
    };
    let start = Instant::now();
    match place_with(&w, &c, PlacementAlgorithm::Exact, &options) {
        Ok(p) => assert_eq!(p.termination, Termination::ProvedOptimal),
        Err(e) => assert!(
            matches!(e, PlacementError::BudgetExhausted { .. }),
            "unexpected error {e}"
        ),
    }
    assert!(start.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_cancelled_search_stops_within_milliseconds() {
    // Issue 20: after Ctrl-C the Python call returned but its search ran on. The instance of
    // `exact_search_ends_within_its_budget` with a budget it cannot finish in a minute.
    let w = layer(&[
        90.0, 132.0, 40.0, 61.0, 104.0, 165.0, 39.0, 4.0, 73.0, 56.0, 183.0, 86.0,
    ]);
    let c = PlacementCluster::uniform(8, 3, 1).unwrap();
    let flag = CancelFlag::new();
    let options = PlacementOptions {
        search_steps: Some(u64::MAX),
        time_budget_s: 60.0,
        cancel: Some(flag.clone()),
    };
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let raised = Instant::now();
        flag.cancel();
        raised
    });
    let r = place_with(&w, &c, PlacementAlgorithm::Exact, &options);
    let stopped = Instant::now();
    let raised = raiser.join().unwrap();
    // Either it finished before the flag (then it proved its plan) or it stopped on it.
    match r {
        Err(PlacementError::Cancelled) => {
            // Debug builds: a step is slower, the clock is read every few thousand steps.
            assert!(stopped.duration_since(raised) < Duration::from_millis(500));
        }
        Ok(p) => assert_eq!(p.termination, Termination::ProvedOptimal),
        Err(e) => panic!("unexpected error {e}"),
    }
    // A flag raised before the call: every entry point refuses at once, the rebalance too.
    let raised = CancelFlag::new();
    raised.cancel();
    let options = PlacementOptions {
        cancel: Some(raised),
        ..PlacementOptions::default()
    };
    let current = place(&w, &c, PlacementAlgorithm::Optimal).unwrap();
    for algorithm in [
        PlacementAlgorithm::Optimal,
        PlacementAlgorithm::OptimalNodeAware { groups: 1 },
    ] {
        assert!(matches!(
            place_with(&w, &c, algorithm, &options),
            Err(PlacementError::Cancelled)
        ));
    }
    assert!(matches!(
        rebalance_with(&current.physical_to_logical, &w, &c, 0.0, &options),
        Err(PlacementError::Cancelled)
    ));
}

#[test]
fn every_plan_says_how_its_search_ended() {
    let c = PlacementCluster::uniform(4, 2, 1).unwrap();
    let w = layer(&[9.0, 7.0, 3.0, 3.0, 1.0]);
    let p = place(&w, &c, PlacementAlgorithm::Optimal).unwrap();
    assert!(p.termination.is_optimal());
    let base = place(&w, &c, PlacementAlgorithm::Eplb(EplbPolicy::Global)).unwrap();
    assert_eq!(base.termination, Termination::NotSearched);
    // A generous clock, so that only the counted limits end the search (a slow debug build
    // would otherwise be `time-capped`).
    let none = PlacementOptions {
        search_steps: Some(0),
        time_budget_s: 600.0,
        ..PlacementOptions::default()
    };
    // 256 experts on 64 x 5: above the exact search's limits.
    let big = layer(&lognormal_loads(1, 256, 1.5, 1e6, 3).unwrap()[0]);
    let c = PlacementCluster::uniform(64, 5, 8).unwrap();
    let p = place_with(&big, &c, PlacementAlgorithm::Optimal, &none).unwrap();
    assert!(matches!(
        p.termination,
        Termination::Heuristic | Termination::BoundReached
    ));
    assert_eq!(Termination::BudgetExhausted.name(), "budget-exhausted");
    // The clock cutting the search is reported as such, never as a counted ending: the plan may
    // differ on another machine.
    let instant = PlacementOptions {
        time_budget_s: 1e-9,
        ..PlacementOptions::default()
    };
    let p = place_with(&big, &c, PlacementAlgorithm::Optimal, &instant).unwrap();
    assert_eq!(p.termination, Termination::TimeCapped);
    assert_eq!(Termination::TimeCapped.name(), "time-capped");
    let again = place_with(&big, &c, PlacementAlgorithm::Optimal, &none).unwrap();
    assert!(!matches!(again.termination, Termination::TimeCapped));
    let bad = PlacementOptions {
        time_budget_s: f64::NAN,
        ..PlacementOptions::default()
    };
    assert!(matches!(
        place_with(
            &w,
            &PlacementCluster::uniform(4, 2, 1).unwrap(),
            PlacementAlgorithm::Optimal,
            &bad
        ),
        Err(PlacementError::Input(
            InputError::NonFinite {
                what: "time_budget_s",
                ..
            } | InputError::Negative {
                what: "time_budget_s",
                ..
            }
        ))
    ));
}

#[test]
fn node_aware_bound_is_valid_under_the_constraint_and_tight_on_deepseek_layers() {
    // 8 groups on 4 nodes of 8 GPUs x 9 slots, DeepSeek-shaped layers (issue 20's workload).
    let c = PlacementCluster::uniform(32, 9, 4).unwrap();
    let algo = PlacementAlgorithm::OptimalNodeAware { groups: 8 };
    let base_policy = PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups: 8 });
    let mut layers = lognormal_loads(4, 256, 1.0, 1e6, 7).unwrap();
    layers.extend(zipf_loads(2, 256, 1.0, 1e6, 7).unwrap());
    for (i, l) in layers.iter().enumerate() {
        let l = layer(l);
        let p = place(&l, &c, algo).unwrap();
        let base = place(&l, &c, base_policy).unwrap();
        // The bound holds for every groups-in-nodes plan, EPLB's hierarchical one included
        // (duplicates only help it when speeds differ; here they are equal).
        assert!(
            p.lower_bound <= base.max_gpu_load * (1.0 + 1e-12),
            "layer {i}"
        );
        assert!(p.lower_bound <= p.max_gpu_load);
        assert!(
            p.max_gpu_load <= base.max_gpu_load * (1.0 + 1e-12),
            "layer {i}"
        );
        // It is the constrained bound, at or above the unconstrained one.
        let free = expert_placement::placement_lower_bound(&l, &c).unwrap();
        assert!(p.lower_bound >= free * (1.0 - 1e-12));
        if i < 4 {
            // Lognormal: within 1% of the constrained bound.
            assert!(p.gap() <= 0.01, "layer {i}: gap {}", p.gap());
        }
        assert_groups_in_nodes(&p, &c, 8, 256);
    }
}

#[test]
fn more_nodes_than_groups_is_refused_before_any_table_is_built() {
    // 4,096 nodes for 8 groups: every node needs a group. Refused at once (the per-node tables
    // of the group-to-node bound would hold 4,096 x 256 entries, and the search never ends).
    let c = PlacementCluster::uniform(4096, 2, 4096).unwrap();
    let w = layer(&vec![1.0; 256]);
    let start = Instant::now();
    let r = place(&w, &c, PlacementAlgorithm::OptimalNodeAware { groups: 8 });
    assert!(
        matches!(r, Err(PlacementError::InsufficientCapacity { .. })),
        "{r:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

fn assert_groups_in_nodes(p: &Placement, c: &PlacementCluster, groups: usize, experts: usize) {
    let size = experts / groups;
    let mut node_of_group = vec![None; groups];
    for (slot, &e) in p.physical_to_logical.iter().enumerate() {
        let node = c.node_of_gpu()[c.gpu_of_slot(slot).unwrap()];
        let seen = node_of_group[e / size].get_or_insert(node);
        assert_eq!(*seen, node, "group {} on two nodes", e / size);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The bound never exceeds a feasible plan of another policy; a plan's figures are those
    /// recomputed from its map; node-aware plans keep groups in nodes.
    #[test]
    fn bounds_hold_and_figures_recompute(
        w in proptest::collection::vec(0u32..1000, 8..=16),
        gpus in 2usize..=8,
        slots in 1usize..=4,
        hot in 0u32..5000,
    ) {
        let mut w: Vec<f64> = w.into_iter().map(f64::from).collect();
        w[0] += f64::from(hot);
        let experts = w.len();
        prop_assume!(gpus * slots >= experts && slots <= experts);
        let l = layer(&w);
        let c = PlacementCluster::uniform(gpus, slots, 1).unwrap();
        let fast = PlacementOptions { search_steps: Some(20_000), ..PlacementOptions::default() };
        let p = place_with(&l, &c, PlacementAlgorithm::Optimal, &fast).unwrap();
        let again = Placement::evaluate(&l, &c, p.physical_to_logical.clone()).unwrap();
        prop_assert!((again.max_gpu_load - p.max_gpu_load).abs() <= 1e-9 * p.max_gpu_load.max(1.0));
        prop_assert_eq!(&again.gpu_loads, &p.gpu_loads);
        let base = eplb(&l, &c, EplbPolicy::Global).unwrap();
        if base.duplicates_on_gpu == 0 {
            prop_assert!(p.lower_bound <= base.max_gpu_load * (1.0 + 1e-12));
            prop_assert!(p.max_gpu_load <= base.max_gpu_load * (1.0 + 1e-12));
        }
        // Two nodes, groups of two experts: node-aware plans keep groups together.
        if gpus % 2 == 0 && experts % 2 == 0 {
            let c2 = PlacementCluster::uniform(gpus, slots, 2).unwrap();
            if let Ok(q) = place_with(&l, &c2, PlacementAlgorithm::OptimalNodeAware { groups: experts / 2 }, &fast) {
                assert_groups_in_nodes(&q, &c2, experts / 2, experts);
                prop_assert!(q.lower_bound <= q.max_gpu_load);
                let free = expert_placement::placement_lower_bound(&l, &c2).unwrap();
                prop_assert!(q.lower_bound >= free.min(q.max_gpu_load) * (1.0 - 1e-12));
            }
        }
    }
}

#[test]
fn rebalance_of_a_large_layer_stops_at_its_time_budget() {
    // Issue 20, item 4: the low-move paths had no budget (4,096 experts on 1,024 GPUs x 5 ran
    // 11-23 s). Now they stop at the time budget, keep what they reached, and say so; the plan
    // still meets its target (the fresh plan always does).
    let c = PlacementCluster::uniform(512, 5, 64).unwrap();
    let rows = lognormal_loads(1, 2048, 1.0, 2048.0 * 1000.0, 5).unwrap();
    let old = layer(&rows[0]);
    let new = layer(&drift_loads(&rows, 0.2, 6).unwrap()[0]);
    let current = place(&old, &c, PlacementAlgorithm::Optimal).unwrap();
    let options = PlacementOptions {
        time_budget_s: 0.2,
        ..PlacementOptions::default()
    };
    let t = Instant::now();
    let r = rebalance_with(&current.physical_to_logical, &new, &c, 0.0, &options).unwrap();
    let took = t.elapsed().as_secs_f64();
    assert!(
        r.budget_exhausted,
        "a 2,048-expert rebalance finished in 0.2 s"
    );
    assert_eq!(r.placement.termination, Termination::TimeCapped);
    assert!(r.placement.max_gpu_load <= r.target_max_gpu_load * (1.0 + 1e-9));
    assert!(r.moves <= r.fresh_moves);
    // Fresh plan (0.2 s) + paths (0.2 s) take about 2.5 s in a debug build; without the budget
    // the paths alone ran for minutes there. Wide room for a loaded CI machine.
    assert!(took < 30.0, "took {took} s");
}

/// A duplicate-free 2-slot map for `counts` (sum `2G`): the two experts with the most
/// replicas left share each GPU in turn.
fn pair_up(counts: &[usize]) -> Option<Vec<usize>> {
    let mut left = counts.to_vec();
    let mut map = Vec::new();
    while left.iter().any(|&c| c > 0) {
        let mut order: Vec<usize> = (0..left.len()).filter(|&e| left[e] > 0).collect();
        order.sort_by_key(|&e| std::cmp::Reverse(left[e]));
        let (&a, &b) = (order.first()?, order.get(1)?);
        left[a] -= 1;
        left[b] -= 1;
        map.extend([a, b]);
    }
    Some(map)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// On 2-slot GPUs the exact count search raises the bound: it must stay at or below every
    /// duplicate-free placement (here random counts paired without conflict), and the plan's
    /// figures must still recompute from its map.
    #[test]
    fn two_slot_bound_never_exceeds_a_valid_placement(
        w in proptest::collection::vec(0u32..200, 3..=12),
        gpus in 2usize..=8,
        hot in 0u32..3000,
        extra in proptest::collection::vec(0usize..64, 16),
    ) {
        let mut w: Vec<f64> = w.into_iter().map(f64::from).collect();
        w[0] += f64::from(hot);
        let experts = w.len();
        proptest::prop_assume!(2 * gpus >= experts);
        let l = layer(&w);
        let c = PlacementCluster::uniform(gpus, 2, 1).unwrap();
        let fast = PlacementOptions {
            search_steps: Some(50_000),
            time_budget_s: 600.0,
            ..PlacementOptions::default()
        };
        let p = place_with(&l, &c, PlacementAlgorithm::Optimal, &fast).unwrap();
        proptest::prop_assert!(p.lower_bound <= p.max_gpu_load * (1.0 + 1e-12));
        proptest::prop_assert_eq!(p.duplicates_on_gpu, 0);
        let again = Placement::evaluate(&l, &c, p.physical_to_logical.clone()).unwrap();
        proptest::prop_assert!((again.max_gpu_load - p.max_gpu_load).abs() <= 1e-9 * p.max_gpu_load.max(1.0));
        // Random counts: one each, the rest spread by the drawn numbers (at most G each).
        let mut counts = vec![1usize; experts];
        let mut k = 0;
        while counts.iter().sum::<usize>() < 2 * gpus {
            let e = extra[k % extra.len()] % experts;
            k += 1;
            if counts[e] < gpus {
                counts[e] += 1;
            } else if let Some(f) = (0..experts).find(|&f| counts[f] < gpus) {
                counts[f] += 1;
            }
        }
        if let Some(map) = pair_up(&counts) {
            let other = Placement::evaluate(&l, &c, map).unwrap();
            if other.duplicates_on_gpu == 0 {
                proptest::prop_assert!(
                    p.lower_bound <= other.max_gpu_load * (1.0 + 1e-12),
                    "bound {} above a valid plan {}", p.lower_bound, other.max_gpu_load
                );
            }
        }
        let base = eplb(&l, &c, EplbPolicy::Global).unwrap();
        if base.duplicates_on_gpu == 0 {
            proptest::prop_assert!(p.lower_bound <= base.max_gpu_load * (1.0 + 1e-12));
            proptest::prop_assert!(p.max_gpu_load <= base.max_gpu_load * (1.0 + 1e-12));
        }
    }
}

/// Campaign cases with few slots per expert whose plans the bounds before the target-tested
/// partner bound left 4.5–14.9% open, and which it certifies: (loads, GPUs, slots per GPU,
/// optimum). Cases 408, 63 and 499 were also proved optimal by an independent CP-SAT model.
fn few_slot_cases() -> Vec<(Vec<f64>, usize, usize, f64)> {
    vec![
        // Case 408 (Zipf): the expert of 10,000 takes the only spare slot, so 6,276 shares its
        // GPU with the two lightest (bound before: 7,611.5).
        (
            vec![
                1882.0, 2127.0, 2999.0, 4778.0, 1433.0, 2283.0, 1292.0, 1620.0, 1335.0, 10000.0,
                1382.0, 1551.0, 1215.0, 3390.0, 3938.0, 2704.0, 1489.0, 1252.0, 6276.0, 1995.0,
                2471.0, 1697.0, 1783.0,
            ],
            8,
            3,
            8743.0,
        ),
        // Case 63 (one hot expert; bound before: 216).
        (
            vec![
                3.0, 5.0, 20.0, 12.0, 9.0, 18.0, 14.0, 12.0, 2.0, 15.0, 18.0, 5.0, 1.0, 9.0, 7.0,
                216.0, 11.0, 14.0,
            ],
            3,
            6,
            232.0,
        ),
        // Case 98 (three hot experts; bound before: 230.67): nine replicas of about 230 on nine
        // distinct GPUs, each with two cold partners paired outside-in.
        (
            vec![
                12.0, 13.0, 690.0, 14.0, 14.0, 5.0, 3.0, 7.0, 13.0, 8.0, 4.0, 18.0, 691.0, 1.0,
                6.0, 7.0, 6.0, 8.0, 1.0, 6.0, 8.0, 13.0, 19.0, 17.0, 692.0, 1.0, 7.0, 0.0, 12.0,
                11.0, 19.0, 9.0, 4.0, 7.0, 18.0, 19.0, 3.0, 8.0, 20.0,
            ],
            15,
            3,
            241.0,
        ),
        // Case 400 (Zipf; bound before: 1,598).
        (
            vec![
                336.0, 60.0, 190.0, 51.0, 547.0, 94.0, 69.0, 122.0, 50.0, 219.0, 419.0, 168.0,
                111.0, 762.0, 79.0, 935.0, 76.0, 87.0, 55.0, 178.0, 61.0, 63.0, 98.0, 149.0, 158.0,
                2338.0, 52.0, 116.0, 1598.0, 305.0, 74.0, 236.0, 142.0, 107.0, 374.0, 54.0, 278.0,
                255.0, 58.0, 65.0, 134.0, 1190.0, 476.0, 639.0, 102.0, 204.0, 49.0, 57.0, 128.0,
                91.0, 48.0, 71.0, 84.0, 81.0, 10000.0, 67.0, 3998.0,
            ],
            22,
            3,
            1695.0,
        ),
        // Case 470 (two hot experts; bound before: 362.18): 22 hot replicas on distinct GPUs.
        (
            vec![
                18.0, 4.0, 10.0, 17.0, 11.0, 3.0, 2.0, 0.0, 12.0, 20.0, 18.0, 3984.0, 16.0, 10.0,
                16.0, 1.0, 5.0, 4.0, 7.0, 8.0, 15.0, 7.0, 10.0, 12.0, 12.0, 3983.0, 8.0, 8.0, 20.0,
                2.0, 3.0, 2.0, 7.0, 10.0, 10.0, 10.0, 17.0, 10.0, 6.0, 2.0, 1.0, 14.0, 19.0, 0.0,
                4.0, 5.0, 5.0, 6.0, 20.0, 6.0, 11.0, 4.0,
            ],
            24,
            3,
            4170.0 / 11.0,
        ),
    ]
}

#[test]
fn few_slot_plans_are_certified_by_the_target_tested_partner_bound() {
    for (w, gpus, slots, optimum) in few_slot_cases() {
        let c = PlacementCluster::uniform(gpus, slots, 1).unwrap();
        let p = place(&layer(&w), &c, PlacementAlgorithm::Optimal).unwrap();
        let tol = 1e-9 * optimum;
        assert!(
            (p.max_gpu_load - optimum).abs() <= tol,
            "{gpus}x{slots}: {}",
            p.max_gpu_load
        );
        assert!(
            p.termination.is_optimal(),
            "{gpus}x{slots}: {:?}",
            p.termination
        );
        assert!(
            (p.lower_bound - optimum).abs() <= tol,
            "{gpus}x{slots}: {}",
            p.lower_bound
        );
        assert_eq!(p.duplicates_on_gpu, 0);
    }
}

#[test]
fn few_slot_plans_with_few_count_vectors_are_proved_by_bin_completion() {
    // Campaign cases 122, 126, 373 and 410: the heuristic's plans (451, 302, 439, 12,969) were
    // above the optimum, and no bound, nor HiGHS or CP-SAT in 300 s (122, 126), could tell. With
    // few replica-count vectors at the plan's value, the count-listing bin completion proves
    // the optimum (`slot_exact.rs`).
    let cases: [(&[f64], usize, usize, f64, f64); 4] = [
        (
            &[
                85.0, 77.0, 366.0, 302.0, 221.0, 262.0, 173.0, 18.0, 135.0, 46.0, 82.0, 175.0,
                152.0, 175.0, 102.0, 335.0, 41.0, 164.0, 72.0, 130.0,
            ],
            7,
            3,
            451.0,
            450.0,
        ),
        (
            &[
                100.0, 42.0, 12.0, 63.0, 257.0, 147.0, 281.0, 28.0, 622.0, 95.0, 17.0, 18.0, 138.0,
                63.0, 39.0, 14.0, 451.0,
            ],
            8,
            3,
            302.0,
            300.5,
        ),
        (
            &[
                25.0, 10.0, 18.0, 134.0, 26.0, 128.0, 58.0, 26.0, 85.0, 98.0, 227.0, 458.0, 185.0,
                89.0, 97.0, 81.0, 39.0, 158.0, 59.0, 75.0, 69.0, 332.0, 44.0, 255.0, 226.0, 42.0,
                404.0, 35.0, 20.0,
            ],
            8,
            4,
            439.0,
            438.0,
        ),
        (
            &[
                6067.0, 4529.0, 3681.0, 1901.0, 2748.0, 2233.0, 1355.0, 1574.0, 1775.0, 1245.0,
                1419.0, 10000.0, 1492.0, 1667.0, 1297.0, 3134.0, 2459.0, 1197.0, 2051.0,
            ],
            4,
            5,
            12969.0,
            12964.0,
        ),
    ];
    for (w, gpus, slots, before, optimum) in cases {
        let c = PlacementCluster::uniform(gpus, slots, 1).unwrap();
        // Counted limits only (a loaded debug build would hit the default 1 s clock first).
        let generous = PlacementOptions {
            time_budget_s: 600.0,
            ..PlacementOptions::default()
        };
        let p = place_with(&layer(w), &c, PlacementAlgorithm::Optimal, &generous).unwrap();
        assert_eq!(p.duplicates_on_gpu, 0);
        assert!(p.max_gpu_load < before, "{} vs {before}", p.max_gpu_load);
        let tol = 1e-9 * optimum;
        assert!(
            (p.max_gpu_load - optimum).abs() <= tol,
            "{gpus}x{slots}: {} vs {optimum}",
            p.max_gpu_load
        );
        assert_eq!(p.termination, Termination::ProvedOptimal, "{optimum}");
        assert!((p.lower_bound - optimum).abs() <= tol, "{}", p.lower_bound);
    }
}
