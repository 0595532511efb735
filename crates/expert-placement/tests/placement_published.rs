//! Published worked examples of expert placement: EPLB's README, vLLM PR 37656.

use expert_placement::{
    EplbPolicy, LayerLoads, PlacementAlgorithm, PlacementCluster, eplb, place, rebalance_experts,
};

/// deepseek-ai/EPLB README: 12 experts, 4 groups, 2 layers.
fn readme_weights() -> Vec<Vec<f64>> {
    vec![
        vec![
            90., 132., 40., 61., 104., 165., 39., 4., 73., 56., 183., 86.,
        ],
        vec![
            20., 107., 104., 64., 19., 197., 187., 157., 172., 86., 16., 27.,
        ],
    ]
}

#[test]
fn eplb_reproduces_the_readme_example() {
    let t = rebalance_experts(&readme_weights(), 16, 4, 2, 8).unwrap();
    assert_eq!(
        t.physical_to_logical,
        vec![
            vec![5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
            vec![7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1],
        ]
    );
}

#[test]
fn readme_example_maxima() {
    let c = PlacementCluster::uniform(8, 2, 2).unwrap();
    let layers = LayerLoads::layers(readme_weights()).unwrap();
    let hier = EplbPolicy::Hierarchical { groups: 4 };
    let got: Vec<[f64; 3]> = layers
        .iter()
        .map(|l| {
            [
                place(l, &c, PlacementAlgorithm::Optimal)
                    .unwrap()
                    .max_gpu_load,
                eplb(l, &c, EplbPolicy::Global).unwrap().max_gpu_load,
                eplb(l, &c, hier).unwrap().max_gpu_load,
            ]
        })
        .collect();
    assert_eq!(got, vec![[136.0, 138.5, 156.0], [172.0, 172.0, 179.5]]);
}

#[test]
fn vllm_pr_37656_example() {
    let c = PlacementCluster::uniform(8, 2, 1).unwrap();
    let w = LayerLoads::new(vec![600., 560., 120., 120., 20., 10., 10., 10.]).unwrap();
    let p = place(&w, &c, PlacementAlgorithm::Optimal).unwrap();
    assert!((p.max_gpu_load - 590.0 / 3.0).abs() < 1e-9, "{p:?}");
    assert_eq!(p.duplicates_on_gpu, 0);
    // Proved optimal by the branch and bound.
    assert_eq!(p.lower_bound, p.max_gpu_load);
    let base = eplb(&w, &c, EplbPolicy::Global).unwrap();
    assert_eq!(base.max_gpu_load, 232.0);
    // EPLB's counts minimize the largest replica; the optimum needs others.
    assert_eq!(base.replica_count, vec![5, 5, 1, 1, 1, 1, 1, 1]);
}

/// EPLB's duplicates are an uneven split in disguise: here its plan puts expert 0 twice on one
/// GPU (two shares of 631 / 5) and reaches 252.4, below the optimum without duplicates,
/// 126.2 + 253 / 2 = 252.7 (found by the exact search and confirmed by brute force).
#[test]
fn eplb_duplicates_can_beat_the_rules() {
    let c = PlacementCluster::uniform(5, 2, 1).unwrap();
    let w = LayerLoads::new(vec![631.0, 253.0, 315.0]).unwrap();
    let base = eplb(&w, &c, EplbPolicy::Global).unwrap();
    assert_eq!(base.duplicates_on_gpu, 2);
    assert!((base.max_gpu_load - 252.4).abs() < 1e-9);
    let best = place(&w, &c, PlacementAlgorithm::Exact).unwrap();
    assert!((best.max_gpu_load - 252.7).abs() < 1e-9);
}
