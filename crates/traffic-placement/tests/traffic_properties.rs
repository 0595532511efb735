//! Properties: the dispatch serves every token once; the plan never sends more tokens across
//! nodes than the compute-only plan when that plan meets the same limit; the bound never
//! exceeds a plan within the limit; the trade-off curve is monotone.

use expert_placement::PlacementCluster;
use proptest::prelude::*;
use traffic_placement::{
    RoutedTokens, TrafficOptions, dispatch, place_traffic_aware, tradeoff_curve,
};

fn instance() -> impl Strategy<Value = (usize, usize, usize, usize, Vec<f64>)> {
    (2usize..=3, 1usize..=3, 1usize..=3)
        .prop_flat_map(|(nodes, gpn, slots)| {
            let gpus = nodes * gpn;
            let experts_max = gpus * slots;
            (
                Just(nodes),
                Just(gpus),
                Just(slots),
                slots.max(2)..=experts_max.max(2),
            )
        })
        .prop_flat_map(|(nodes, gpus, slots, experts)| {
            (
                Just(nodes),
                Just(gpus),
                Just(slots),
                Just(experts),
                proptest::collection::vec(0.0f64..100.0, gpus * experts),
            )
        })
        .prop_filter("slots at least experts", |(_, gpus, slots, experts, _)| {
            gpus * slots >= *experts && *slots <= *experts
        })
}

fn routed(gpus: usize, experts: usize, flat: &[f64]) -> RoutedTokens {
    RoutedTokens::new(
        flat.chunks(experts)
            .take(gpus)
            .map(<[f64]>::to_vec)
            .collect(),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn plan_properties((nodes, gpus, slots, experts, flat) in instance()) {
        let c = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
        let t = routed(gpus, experts, &flat);
        let p = place_traffic_aware(&t, &c, &TrafficOptions::default()).unwrap();
        let d = &p.dispatch;
        // Every token served once.
        let served: f64 = d.gpu_loads.iter().sum();
        prop_assert!((served - d.total_tokens).abs() <= 1e-6 * (1.0 + d.total_tokens));
        prop_assert!((d.same_gpu_tokens + d.same_node_tokens + d.cross_node_tokens - d.total_tokens).abs() <= 1e-6 * (1.0 + d.total_tokens));
        prop_assert!(d.max_gpu_load <= d.static_max_gpu_load * (1.0 + 1e-9) + 1e-9);
        // Never more traffic than the compute-only plan at the same balance.
        if p.compute_only.max_gpu_load <= p.max_gpu_load_limit {
            prop_assert!(p.balance_met);
            prop_assert!(d.cross_node_tokens <= p.compute_only.cross_node_tokens * (1.0 + 1e-9) + 1e-9);
        }
        // The bound holds for the plan when the plan is within the limit.
        if p.balance_met {
            prop_assert!(p.bound.cross_node_tokens <= d.cross_node_tokens * (1.0 + 1e-9) + 1e-6);
        }
        prop_assert!(p.bound.cross_node_tokens.is_finite() && p.traffic_gap().is_finite());
        // The map is what dispatch scores.
        prop_assert_eq!(dispatch(&t, &c, &p.physical_to_logical).unwrap(), p.dispatch.clone());
    }

    #[test]
    fn curve_is_monotone((nodes, gpus, slots, experts, flat) in instance()) {
        let c = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
        let t = routed(gpus, experts, &flat);
        let curve = tradeoff_curve(&t, &c, &[0.2, 0.0, 0.05, 1.0], &TrafficOptions::default()).unwrap();
        prop_assert!(curve.windows(2).all(|w| w[0].tolerance <= w[1].tolerance));
        for w in curve.windows(2) {
            if w[0].balance_met {
                prop_assert!(w[1].cross_node_tokens <= w[0].cross_node_tokens * (1.0 + 1e-9) + 1e-9);
            }
            prop_assert!(w[1].bound_cross_node_tokens <= w[0].bound_cross_node_tokens + 1e-9);
        }
    }
}
