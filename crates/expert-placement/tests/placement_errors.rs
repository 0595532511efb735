//! Bad input to the placement family: a typed error naming the problem, never a panic.

use comm_cost_model::InputError;
use expert_placement::PlacementError;
use expert_placement::{
    EplbPolicy, ExpertTransfer, LayerLoads, PlacementAlgorithm, PlacementCluster, RobustObjective,
    count_moves, eplb, place, place_robust, rebalance, rebalance_experts, split_tokens,
    transfer_counts,
};

fn loads(w: &[f64]) -> LayerLoads {
    LayerLoads::new(w.to_vec()).unwrap()
}

#[test]
fn bad_loads() {
    for (w, index) in [
        (vec![1.0, f64::NAN], 1),
        (vec![-1.0], 0),
        (vec![0.0, 2.0, f64::INFINITY], 2),
    ] {
        assert!(matches!(
            LayerLoads::new(w),
            Err(PlacementError::Input(InputError::InvalidEntry { index: i, .. })) if i == index
        ));
    }
    assert!(matches!(
        LayerLoads::new(vec![]),
        Err(PlacementError::Input(InputError::Empty { .. }))
    ));
    assert!(matches!(
        LayerLoads::layers(vec![vec![1.0, 2.0], vec![1.0]]),
        Err(PlacementError::Input(InputError::SizeMismatch {
            expected: 2,
            actual: 1,
            ..
        }))
    ));
    assert!(matches!(
        LayerLoads::layers(vec![]),
        Err(PlacementError::Input(InputError::Empty { .. }))
    ));
}

#[test]
fn clusters_that_cannot_hold_the_experts() {
    let c = PlacementCluster::uniform(2, 2, 1).unwrap();
    assert!(matches!(
        place(&loads(&[1.0; 5]), &c, PlacementAlgorithm::Optimal),
        Err(PlacementError::InsufficientCapacity {
            capacity: 4,
            experts: 5
        })
    ));
    // Three slots on a GPU but only two experts: a duplicate would be unavoidable.
    let c = PlacementCluster::new(vec![3, 1], vec![1.0; 2], vec![0; 2]).unwrap();
    assert!(matches!(
        place(&loads(&[1.0; 2]), &c, PlacementAlgorithm::Optimal),
        Err(PlacementError::SlotsExceedExperts {
            gpu: 0,
            slots: 3,
            experts: 2
        })
    ));
    // 2^20 GPUs x 2^15 experts would need a 4 GiB membership bitset.
    let wide = PlacementCluster::uniform(1 << 20, 1, 1).unwrap();
    assert!(matches!(
        place(
            &loads(&vec![1.0; 1 << 15]),
            &wide,
            PlacementAlgorithm::Optimal
        ),
        Err(PlacementError::Input(InputError::TooLarge {
            what: "GPUs x experts",
            ..
        }))
    ));
    assert!(matches!(
        count_moves(&vec![0; 1 << 20], &vec![0; 1 << 20], &wide, usize::MAX),
        Err(PlacementError::Input(InputError::TooLarge { .. }))
    ));
    let big = PlacementCluster::uniform(32, 2, 1).unwrap();
    assert!(matches!(
        place(&loads(&[1.0; 40]), &big, PlacementAlgorithm::Exact),
        Err(PlacementError::Input(InputError::TooLarge { .. }))
    ));
}

#[test]
fn groups_that_do_not_fit() {
    let c = PlacementCluster::uniform(4, 2, 2).unwrap();
    let w = loads(&[1.0; 6]);
    assert!(matches!(
        place(&w, &c, PlacementAlgorithm::OptimalNodeAware { groups: 4 }),
        Err(PlacementError::Input(InputError::NotDivisible {
            value: 6,
            divisor: 4,
            ..
        }))
    ));
    assert!(matches!(
        place(&w, &c, PlacementAlgorithm::OptimalNodeAware { groups: 0 }),
        Err(PlacementError::Input(InputError::Empty { .. }))
    ));
    // One group cannot cover two nodes.
    assert!(matches!(
        place(&w, &c, PlacementAlgorithm::OptimalNodeAware { groups: 1 }),
        Err(PlacementError::InsufficientCapacity { .. })
    ));
}

#[test]
fn eplb_shape_rules() {
    let w = loads(&[1.0; 8]);
    let uneven = PlacementCluster::new(vec![4, 4, 2], vec![1.0; 3], vec![0; 3]).unwrap();
    assert!(matches!(
        eplb(&w, &uneven, EplbPolicy::Global),
        Err(PlacementError::NotUniform { .. })
    ));
    let c = PlacementCluster::uniform(4, 4, 2).unwrap();
    assert!(matches!(
        eplb(&w, &c, EplbPolicy::Hierarchical { groups: 3 }),
        Err(PlacementError::Input(InputError::NotDivisible {
            value: 8,
            divisor: 3,
            ..
        }))
    ));
    let c1 = PlacementCluster::new(vec![4; 4], vec![1.0; 4], vec![0, 1, 0, 1]).unwrap();
    assert!(matches!(
        eplb(&w, &c1, EplbPolicy::Hierarchical { groups: 2 }),
        Err(PlacementError::NotUniform { .. })
    ));
    let c3 = PlacementCluster::uniform(4, 4, 4).unwrap();
    assert!(matches!(
        eplb(&w, &c3, EplbPolicy::Hierarchical { groups: 2 }),
        Err(PlacementError::Input(InputError::NotDivisible {
            value: 2,
            divisor: 4,
            ..
        }))
    ));
}

#[test]
fn eplb_signature_errors() {
    let w = vec![vec![1.0; 4]];
    assert!(matches!(
        rebalance_experts(&w, 6, 1, 1, 4),
        Err(PlacementError::Input(InputError::NotDivisible {
            value: 6,
            divisor: 4,
            ..
        }))
    ));
    assert!(matches!(
        rebalance_experts(&w, 8, 2, 2, 3),
        Err(PlacementError::Input(InputError::NotDivisible { .. }))
    ));
    assert!(matches!(
        rebalance_experts(&w, 8, 1, 1, 0),
        Err(PlacementError::Input(InputError::Empty { .. }))
    ));
    assert!(matches!(
        rebalance_experts(&w, 2, 1, 1, 2),
        Err(PlacementError::InsufficientCapacity { .. })
    ));
    assert!(matches!(
        rebalance_experts(&[vec![1.0; 4], vec![1.0; 3]], 8, 1, 1, 4),
        Err(PlacementError::Input(InputError::SizeMismatch { .. }))
    ));
    assert!(matches!(
        rebalance_experts(&[vec![1.0, -2.0]], 4, 1, 1, 2),
        Err(PlacementError::Input(InputError::InvalidEntry {
            index: 1,
            ..
        }))
    ));
}

#[test]
fn bad_current_placements() {
    let c = PlacementCluster::uniform(2, 2, 1).unwrap();
    let w = loads(&[4.0, 3.0, 2.0]);
    assert!(matches!(
        rebalance(&[0, 1, 2], &w, &c, 0.0),
        Err(PlacementError::Input(InputError::SizeMismatch {
            expected: 4,
            actual: 3,
            ..
        }))
    ));
    assert!(matches!(
        rebalance(&[0, 1, 2, 7], &w, &c, 0.0),
        Err(PlacementError::Input(InputError::IndexOutOfRange {
            index: 7,
            ..
        }))
    ));
    assert!(matches!(
        rebalance(&[0, 1, 0, 1], &w, &c, 0.0),
        Err(PlacementError::MissingExpert { expert: 2, .. })
    ));
    assert!(matches!(
        rebalance(&[0, 1, 0, 2], &w, &c, f64::NAN),
        Err(PlacementError::Input(InputError::NonFinite { .. }))
    ));
    assert!(matches!(
        rebalance(&[0, 1, 0, 2], &w, &c, -0.1),
        Err(PlacementError::Input(InputError::Negative { .. }))
    ));
    assert!(matches!(
        count_moves(&[0, 1, 0, 2], &[0, 1, 0, 9], &c, 3),
        Err(PlacementError::Input(InputError::IndexOutOfRange {
            index: 9,
            ..
        }))
    ));
    let t = [ExpertTransfer {
        expert: 0,
        source_gpu: 0,
        destination_gpu: 5,
        slot: 0,
    }];
    assert!(matches!(
        transfer_counts(&t, 2),
        Err(PlacementError::Input(InputError::IndexOutOfRange {
            index: 5,
            ..
        }))
    ));
    assert!(matches!(
        transfer_counts(&t, usize::MAX),
        Err(PlacementError::Input(InputError::TooLarge { .. }))
    ));
}

#[test]
fn bad_batches_and_windows() {
    let c = PlacementCluster::uniform(2, 2, 1).unwrap();
    assert!(matches!(
        split_tokens(&[0, 1, 0, 2], &[u64::MAX, 1, 1], &c),
        Err(PlacementError::Input(InputError::TooLarge { .. }))
    ));
    assert!(matches!(
        split_tokens(&[0, 1, 0], &[1, 1, 1], &c),
        Err(PlacementError::Input(InputError::SizeMismatch { .. }))
    ));
    assert!(matches!(
        place_robust(&[], &c, RobustObjective::Worst),
        Err(PlacementError::Input(InputError::Empty { .. }))
    ));
    assert!(matches!(
        place_robust(
            &[loads(&[1.0; 3]), loads(&[1.0; 4])],
            &c,
            RobustObjective::Mean
        ),
        Err(PlacementError::Input(InputError::SizeMismatch { .. }))
    ));
}

#[test]
fn serde_validates() {
    let c: PlacementCluster =
        serde_json::from_str(r#"{"slots_of_gpu": [2, 2], "node_of_gpu": [0, 1]}"#).unwrap();
    assert_eq!(
        c,
        PlacementCluster::new(vec![2, 2], vec![1.0; 2], vec![0, 1]).unwrap()
    );
    let back: PlacementCluster = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
    assert!(
        serde_json::from_str::<PlacementCluster>(r#"{"slots_of_gpu": [2], "speed_of_gpu": [-1]}"#)
            .is_err_and(|e| e.to_string().contains("speed_of_gpu"))
    );
    assert!(
        serde_json::from_str::<LayerLoads>("[1, -2]")
            .is_err_and(|e| e.to_string().contains("expert loads"))
    );
    let a: PlacementAlgorithm =
        serde_json::from_str(r#"{"eplb": {"hierarchical": {"groups": 8}}}"#).unwrap();
    assert_eq!(
        a,
        PlacementAlgorithm::Eplb(EplbPolicy::Hierarchical { groups: 8 })
    );
    assert_eq!(
        serde_json::to_string(&PlacementAlgorithm::Optimal).unwrap(),
        r#""optimal""#
    );
}
