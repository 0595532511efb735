//! Properties of the engine-facing helpers (issue 22): `align_within_nodes` only relabels (same
//! GPU contents, whole nodes kept together, never more moves than the plan as given) and
//! `rebalance_within` respects its cap.

use std::collections::BTreeSet;

use expert_placement::{
    LayerLoads, PlacementCluster, PlacementOptions, align_within_nodes, count_moves,
    rebalance_within,
};
use proptest::prelude::*;

/// (GPUs, slots, nodes, experts, two maps): every expert present in both maps.
fn instance() -> impl Strategy<Value = (usize, usize, usize, usize, Vec<usize>, Vec<usize>)> {
    (1usize..=3, 1usize..=3, 1usize..=3).prop_flat_map(|(nodes, per_node, slots)| {
        let gpus = nodes * per_node;
        let total = gpus * slots;
        (slots..=total).prop_flat_map(move |experts| {
            let map = move || {
                prop::collection::vec(0..experts, total - experts)
                    .prop_map(move |extra| {
                        let mut m: Vec<usize> = (0..experts).chain(extra).collect();
                        m.rotate_left(experts / 2);
                        m
                    })
                    .prop_shuffle()
            };
            (
                Just(gpus),
                Just(slots),
                Just(nodes),
                Just(experts),
                map(),
                map(),
            )
        })
    })
}

fn gpu_sets(map: &[usize], slots: usize) -> Vec<Vec<usize>> {
    map.chunks(slots)
        .map(|c| {
            let mut v = c.to_vec();
            v.sort_unstable();
            v
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn alignment_only_relabels((gpus, slots, nodes, experts, next, current) in instance()) {
        let c = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
        let out = align_within_nodes(&next, &current, &c, experts).unwrap();
        // The same GPU contents, as a multiset.
        let mut a = gpu_sets(&next, slots);
        let mut b = gpu_sets(&out, slots);
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
        // Whole nodes: every node of the result holds what one node of `next` held.
        let per_node = gpus / nodes;
        let node_sets = |m: &[usize]| -> BTreeSet<Vec<Vec<usize>>> {
            m.chunks(per_node * slots)
                .map(|n| {
                    let mut g = gpu_sets(n, slots);
                    g.sort();
                    g
                })
                .collect()
        };
        prop_assert_eq!(node_sets(&next), node_sets(&out));
        let before = count_moves(&current, &next, &c, experts).unwrap();
        let after = count_moves(&current, &out, &c, experts).unwrap();
        prop_assert!(after <= before, "{} > {}", after, before);
        prop_assert_eq!(count_moves(&current, &align_within_nodes(&current, &current, &c, experts).unwrap(), &c, experts).unwrap(), 0);
    }
}

proptest! {
    // Each case runs up to two rebalances (the exhaustive fewest-move search included).
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn the_move_cap_holds(
        (gpus, slots, _nodes, experts, _next, current) in instance(),
        seed in 0u64..1000,
        cap in 0usize..6,
    ) {
        prop_assume!(slots <= experts);
        let c = PlacementCluster::uniform(gpus, slots, 1).unwrap();
        let loads: Vec<f64> = (0..experts).map(|e| ((e as u64 * 7919 + seed) % 97) as f64 + 1.0).collect();
        let w = LayerLoads::new(loads).unwrap();
        let duplicates = current
            .chunks(slots)
            .any(|g| g.iter().collect::<BTreeSet<_>>().len() < g.len());
        let r = rebalance_within(&current, &w, &c, 0.0, Some(cap), &PlacementOptions::default()).unwrap();
        prop_assert!(r.moves <= cap || duplicates, "{} moves, cap {}", r.moves, cap);
        prop_assert_eq!(r.transfers.len(), r.moves);
    }
}
