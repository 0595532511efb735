//! Properties of expert placement, rebalancing, robust planning and the token split.

use expert_placement::{
    EplbPolicy, LayerLoads, Placement, PlacementAlgorithm, PlacementCluster, PlacementOptions,
    RobustObjective, count_moves, eplb, place, place_robust, place_with, rebalance, rebalance_with,
    split_tokens,
};
use proptest::prelude::*;

/// A cluster of 1 to 5 GPUs (slots 1 to 4, speeds 1 or 2, two nodes when possible) and loads of
/// experts that fit: `E <= R`, up to half the slots spare, no GPU with more slots than experts.
fn instance() -> impl Strategy<Value = (Vec<f64>, PlacementCluster)> {
    (
        1usize..=5,
        1usize..=4,
        any::<bool>(),
        any::<bool>(),
        0.0f64..0.5,
    )
        .prop_flat_map(|(gpus, slots, uneven, fast, spare)| {
            let slot_vec = prop::collection::vec(1usize..=slots, gpus)
                .prop_map(move |v| if uneven { v } else { vec![slots; v.len()] });
            (slot_vec, Just(fast), Just(spare))
        })
        .prop_flat_map(|(slots, fast, spare)| {
            let total: usize = slots.iter().sum();
            let widest = slots.iter().copied().max().unwrap_or(1);
            let experts = (total - (total as f64 * spare) as usize).max(widest);
            let gpus = slots.len();
            let speed: Vec<f64> = (0..gpus)
                .map(|g| if fast && g == 0 { 2.0 } else { 1.0 })
                .collect();
            let nodes: Vec<usize> = (0..gpus).map(|g| g * 2 / gpus.max(1)).collect();
            let cluster = PlacementCluster::new(slots, speed, nodes).unwrap();
            (
                prop::collection::vec((0u32..1000).prop_map(f64::from), experts),
                Just(cluster),
            )
        })
}

/// Every GPU holds distinct experts, every expert is placed, the figures add up.
fn assert_valid(p: &Placement, w: &[f64], c: &PlacementCluster) -> Result<(), TestCaseError> {
    prop_assert_eq!(p.physical_to_logical.len(), c.total_slots());
    for experts in p.experts_of_gpu(c) {
        let mut sorted = experts.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(
            sorted.len(),
            experts.len(),
            "two replicas of one expert on a GPU"
        );
    }
    for e in 0..w.len() {
        prop_assert!(p.physical_to_logical.contains(&e), "expert {} missing", e);
    }
    let again = Placement::evaluate(
        &LayerLoads::new(w.to_vec()).unwrap(),
        c,
        p.physical_to_logical.clone(),
    )
    .unwrap();
    prop_assert_eq!(&again.replica_count, &p.replica_count);
    prop_assert!((again.max_gpu_load - p.max_gpu_load).abs() <= 1e-9 * p.max_gpu_load.max(1.0));
    prop_assert!(p.lower_bound <= p.max_gpu_load * (1.0 + 1e-12));
    prop_assert_eq!(p.duplicates_on_gpu, 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn optimal_is_valid_and_never_worse_than_eplb((w, c) in instance()) {
        let loads = LayerLoads::new(w.clone()).unwrap();
        let p = place(&loads, &c, PlacementAlgorithm::Optimal).unwrap();
        assert_valid(&p, &w, &c)?;
        // EPLB's plans when they respect the same rules: a plan with two replicas of an expert
        // on one GPU gives that GPU a double share, an uneven split the model forbids (see
        // `eplb_duplicates_can_beat_the_rules` in placement_published.rs).
        if c.uniform_slots().is_some() {
            let tol = 1e-9 * p.max_gpu_load.max(1.0);
            let policies = [
                EplbPolicy::Global,
                EplbPolicy::Hierarchical { groups: 1 },
                EplbPolicy::Hierarchical { groups: 2 },
            ];
            for policy in policies {
                if let Ok(base) = eplb(&loads, &c, policy) {
                    if base.duplicates_on_gpu == 0 {
                        prop_assert!(p.max_gpu_load <= base.max_gpu_load + tol);
                    }
                }
            }
        }
    }

    #[test]
    fn node_aware_keeps_groups_in_one_node((w, c) in instance(), groups in 1usize..=3) {
        let loads = LayerLoads::new(w.clone()).unwrap();
        let Ok(p) = place(&loads, &c, PlacementAlgorithm::OptimalNodeAware { groups }) else {
            return Ok(()); // groups that do not divide, or do not fit the nodes
        };
        assert_valid(&p, &w, &c)?;
        let size = w.len() / groups;
        let node = c.node_of_gpu();
        for (g, experts) in p.experts_of_gpu(&c).iter().enumerate() {
            for (h, others) in p.experts_of_gpu(&c).iter().enumerate() {
                for &a in experts {
                    for &b in others {
                        if a / size == b / size {
                            prop_assert_eq!(node[g], node[h], "group split over nodes");
                        }
                    }
                }
            }
        }
        let free = p.unconstrained_max_gpu_load.unwrap();
        prop_assert!(free <= p.max_gpu_load * (1.0 + 1e-9) || groups == 1);
    }

    #[test]
    fn rebalance_is_no_worse_than_a_fresh_plan(
        (w, c) in instance(),
        noise in prop::collection::vec(0.5f64..1.5, 20),
    ) {
        let old = LayerLoads::new(w.clone()).unwrap();
        let current = place(&old, &c, PlacementAlgorithm::Optimal).unwrap();
        let new_w: Vec<f64> = w.iter().zip(&noise).map(|(x, f)| (x * f).round()).collect();
        let new = LayerLoads::new(new_w.clone()).unwrap();
        // Steps only (no wall clock): on a loaded machine the time budget could stop the two
        // fresh searches at different points.
        let steps_only = PlacementOptions { time_budget_s: 1e6, ..PlacementOptions::default() };
        let fresh = place_with(&new, &c, PlacementAlgorithm::Optimal, &steps_only).unwrap();
        let r = rebalance_with(&current.physical_to_logical, &new, &c, 0.0, &steps_only).unwrap();
        assert_valid(&r.placement, &new_w, &c)?;
        prop_assert!(r.placement.max_gpu_load <= fresh.max_gpu_load * (1.0 + 1e-9));
        let fresh_moves = count_moves(&current.physical_to_logical, &fresh.physical_to_logical, &c, w.len()).unwrap();
        prop_assert!(r.moves <= fresh_moves);
        prop_assert!(r.moves <= r.fresh_moves);
        prop_assert_eq!(r.transfers.len(), r.moves);
        let experts_of = current.experts_of_gpu(&c);
        for t in &r.transfers {
            prop_assert!(experts_of[t.source_gpu].contains(&t.expert));
            prop_assert!(!experts_of[t.destination_gpu].contains(&t.expert));
            prop_assert_eq!(r.placement.physical_to_logical[t.slot], t.expert);
        }
        // The trade-off starts at zero moves (the current plan) and only improves.
        prop_assert_eq!(r.tradeoff[0].moves, 0);
        for pair in r.tradeoff.windows(2) {
            prop_assert!(pair[0].moves < pair[1].moves);
            prop_assert!(pair[0].max_gpu_load > pair[1].max_gpu_load);
        }
    }

    #[test]
    fn unchanged_loads_need_no_move((w, c) in instance()) {
        let loads = LayerLoads::new(w).unwrap();
        // Steps only: a wall-clock budget could end the two searches at different plans on a
        // loaded machine.
        let steps_only = PlacementOptions { time_budget_s: 1e6, ..PlacementOptions::default() };
        let current = place_with(&loads, &c, PlacementAlgorithm::Optimal, &steps_only).unwrap();
        let r = rebalance_with(&current.physical_to_logical, &loads, &c, 0.0, &steps_only).unwrap();
        prop_assert_eq!(r.moves, 0);
        prop_assert_eq!(&r.placement.physical_to_logical, &current.physical_to_logical);
    }

    #[test]
    fn rebalance_repairs_eplb_duplicates((w, c) in instance()) {
        prop_assume!(c.uniform_slots().is_some());
        let loads = LayerLoads::new(w.clone()).unwrap();
        let current = eplb(&loads, &c, EplbPolicy::Global).unwrap();
        let r = rebalance(&current.physical_to_logical, &loads, &c, 0.1).unwrap();
        assert_valid(&r.placement, &w, &c)?;
        prop_assert!(r.moves >= current.duplicates_on_gpu);
        prop_assert!(r.placement.max_gpu_load <= r.target_max_gpu_load * (1.0 + 1e-9));
    }

    #[test]
    fn robust_plan_beats_the_newest_window_plan(
        (w, c) in instance(),
        noise in prop::collection::vec(0.5f64..1.5, 40),
        mean in any::<bool>(),
    ) {
        let windows = LayerLoads::layers(vec![
            w.iter().zip(&noise).map(|(x, f)| (x * f).round()).collect(),
            w.iter().zip(&noise[20..]).map(|(x, f)| (x * f).round()).collect(),
            w.clone(),
        ]).unwrap();
        let objective = if mean { RobustObjective::Mean } else { RobustObjective::Worst };
        let r = place_robust(&windows, &c, objective).unwrap();
        prop_assert!(r.objective_value <= r.newest_only_objective_value * (1.0 + 1e-12));
        prop_assert!(r.lower_bound <= r.objective_value * (1.0 + 1e-12));
        let p = Placement::evaluate(&windows[2], &c, r.physical_to_logical.clone()).unwrap();
        assert_valid(&p, &w, &c)?;
    }

    #[test]
    fn token_split_routes_every_token_and_beats_the_even_split(
        (w, c) in instance(),
        tokens in prop::collection::vec(0u64..200, 20),
    ) {
        let loads = LayerLoads::new(w.clone()).unwrap();
        let p = place(&loads, &c, PlacementAlgorithm::Optimal).unwrap();
        let t = &tokens[..w.len()];
        let s = split_tokens(&p.physical_to_logical, t, &c).unwrap();
        for (e, &te) in t.iter().enumerate() {
            let routed: u64 = (0..c.total_slots())
                .filter(|&slot| p.physical_to_logical[slot] == e)
                .map(|slot| s.slot_tokens[slot])
                .sum();
            prop_assert_eq!(routed, te);
        }
        prop_assert!(s.max_gpu_load <= s.even_max_gpu_load);
        let total: u64 = t.iter().sum();
        let speed: f64 = c.speed_of_gpu().iter().sum();
        prop_assert!(s.max_gpu_load >= total as f64 / speed * (1.0 - 1e-12));
    }
}
