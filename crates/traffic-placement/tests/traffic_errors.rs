//! Every bad input is a typed error naming the field, never a panic.

use comm_cost_model::InputError;
use expert_placement::{PlacementCluster, PlacementError};
use traffic_placement::{
    LocalityTrace, RoutedTokens, TopKRoutes, TrafficError, TrafficOptions, dispatch,
    locality_trace, place_traffic_aware, tradeoff_curve, traffic_lower_bound,
};

#[test]
fn routed_tokens_shapes_and_values() {
    assert!(matches!(
        RoutedTokens::new(vec![]),
        Err(TrafficError::Input(InputError::Empty { .. }))
    ));
    assert!(matches!(
        RoutedTokens::new(vec![vec![]]),
        Err(TrafficError::Input(InputError::Empty { .. }))
    ));
    assert!(matches!(
        RoutedTokens::new(vec![vec![1.0, 2.0], vec![1.0]]),
        Err(TrafficError::Input(InputError::SizeMismatch { .. }))
    ));
    for bad in [f64::NAN, f64::INFINITY, -1.0] {
        assert!(matches!(
            RoutedTokens::new(vec![vec![1.0, bad]]),
            Err(TrafficError::Input(InputError::InvalidEntry {
                what: "routed_tokens",
                index: 1,
                ..
            }))
        ));
    }
    assert!(matches!(
        RoutedTokens::layers(vec![vec![vec![1.0]], vec![vec![1.0, 2.0]]]),
        Err(TrafficError::Input(InputError::SizeMismatch { .. }))
    ));
    assert!(matches!(
        TopKRoutes::new(vec![vec![vec![0, 9]]], 3),
        Err(TrafficError::Input(InputError::IndexOutOfRange {
            index: 9,
            ..
        }))
    ));
}

#[test]
fn planner_inputs() {
    let c = PlacementCluster::uniform(2, 2, 2).unwrap();
    let t = RoutedTokens::new(vec![vec![1.0, 2.0, 3.0]]).unwrap();
    assert!(matches!(
        place_traffic_aware(&t, &c, &TrafficOptions::default()),
        Err(TrafficError::Input(InputError::SizeMismatch { .. }))
    ));
    let t = RoutedTokens::new(vec![vec![1.0, 2.0, 3.0], vec![1.0, 0.0, 0.0]]).unwrap();
    for bad in [f64::NAN, -0.5, f64::INFINITY] {
        let o = TrafficOptions {
            tolerance: bad,
            ..TrafficOptions::default()
        };
        assert!(matches!(
            place_traffic_aware(&t, &c, &o),
            Err(TrafficError::Input(
                InputError::NonFinite {
                    what: "tolerance",
                    ..
                } | InputError::Negative {
                    what: "tolerance",
                    ..
                }
            ))
        ));
    }
    assert!(matches!(
        tradeoff_curve(&t, &c, &[], &TrafficOptions::default()),
        Err(TrafficError::Input(InputError::Empty { .. }))
    ));
    assert!(matches!(
        traffic_lower_bound(&t, &c, f64::NAN, 10),
        Err(TrafficError::Input(InputError::InvalidEntry { .. }))
    ));
    // Too few slots for the experts.
    let small = PlacementCluster::uniform(2, 1, 2).unwrap();
    assert!(matches!(
        place_traffic_aware(&t, &small, &TrafficOptions::default()),
        Err(TrafficError::Placement(_))
    ));
    // Groups that do not divide the experts.
    let o = TrafficOptions {
        groups: Some(2),
        ..TrafficOptions::default()
    };
    assert!(matches!(
        place_traffic_aware(&t, &c, &o),
        Err(TrafficError::Placement(PlacementError::Input(
            InputError::NotDivisible { .. }
        )))
    ));
    // A map with a missing expert.
    assert!(matches!(
        dispatch(&t, &c, &[0, 1, 0, 1]),
        Err(TrafficError::Placement(_))
    ));
}

#[test]
fn zero_tokens_are_fine() {
    let c = PlacementCluster::uniform(4, 2, 2).unwrap();
    let t = RoutedTokens::new(vec![vec![0.0; 6]; 4]).unwrap();
    let p = place_traffic_aware(&t, &c, &TrafficOptions::default()).unwrap();
    assert_eq!(p.dispatch.cross_node_tokens, 0.0);
    assert_eq!(p.dispatch.cross_node_ratio(), 0.0);
    assert_eq!(p.traffic_gap(), 0.0);
}

#[test]
fn workload_inputs() {
    let mut s = LocalityTrace::deepseek_like(1, 4, 2, 0.5);
    s.locality = 1.5;
    assert!(matches!(
        locality_trace(&s, 1),
        Err(TrafficError::Input(InputError::InvalidEntry {
            what: "locality",
            ..
        }))
    ));
    let mut s = LocalityTrace::deepseek_like(1, 2, 4, 0.5);
    assert!(matches!(
        locality_trace(&s, 1),
        Err(TrafficError::Input(InputError::TooLarge { .. }))
    ));
    s.gpus = 0;
    assert!(matches!(
        locality_trace(&s, 1),
        Err(TrafficError::Input(InputError::Empty { .. }))
    ));
}

#[test]
fn groups_in_nodes() {
    let c = PlacementCluster::uniform(4, 2, 2).unwrap();
    let rows: Vec<Vec<f64>> = (0..4)
        .map(|g| {
            (0..8)
                .map(|e| if (g < 2) == (e < 4) { 10.0 } else { 1.0 })
                .collect()
        })
        .collect();
    let t = RoutedTokens::new(rows).unwrap();
    let o = TrafficOptions {
        groups: Some(2),
        ..TrafficOptions::default()
    };
    let p = place_traffic_aware(&t, &c, &o).unwrap();
    // Each group's replicas in one node.
    for group in 0..2 {
        let nodes: Vec<usize> = (0..8)
            .filter(|&s| p.physical_to_logical[s] / 4 == group)
            .map(|s| s / 4)
            .collect();
        assert!(
            nodes.windows(2).all(|w| w[0] == w[1]),
            "group {group}: {nodes:?}"
        );
    }
    assert!((p.dispatch.cross_node_tokens - 16.0).abs() < 1e-9);
    assert!(p.bound.cross_node_tokens <= 16.0 + 1e-9);
}
