//! Exact oracle on tiny instances: every placement enumerated, the fewest cross-node tokens
//! within the balance limit. The bound must never exceed it; the planner's gap is recorded.

use expert_placement::PlacementCluster;
use rand::RngExt;
use traffic_placement::{RoutedTokens, TrafficOptions, dispatch, place_traffic_aware};

/// Every slot map with distinct experts per GPU (slots of a GPU as an increasing combination)
/// that places every expert.
fn all_maps(gpus: usize, slots: usize, experts: usize) -> Vec<Vec<usize>> {
    let mut combos: Vec<Vec<usize>> = Vec::new();
    let mut c: Vec<usize> = (0..slots).collect();
    loop {
        combos.push(c.clone());
        let mut i = slots;
        while i > 0 && c[i - 1] == experts - slots + i - 1 {
            i -= 1;
        }
        if i == 0 {
            break;
        }
        c[i - 1] += 1;
        for j in i..slots {
            c[j] = c[j - 1] + 1;
        }
    }
    let mut out = Vec::new();
    let mut idx = vec![0usize; gpus];
    loop {
        let map: Vec<usize> = idx.iter().flat_map(|&i| combos[i].clone()).collect();
        let mut seen = vec![false; experts];
        map.iter().for_each(|&e| seen[e] = true);
        if seen.iter().all(|&s| s) {
            out.push(map);
        }
        let mut g = 0;
        while g < gpus {
            idx[g] += 1;
            if idx[g] < combos.len() {
                break;
            }
            idx[g] = 0;
            g += 1;
        }
        if g == gpus {
            return out;
        }
    }
}

#[test]
fn bound_and_plan_against_exhaustive_search() {
    let (gpus, slots, experts, nodes) = (4, 2, 5, 2);
    let cluster = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
    let maps = all_maps(gpus, slots, experts);
    let mut rng = comm_cost_model::seeded_rng(23, 0);
    let (mut exact, mut worse, mut bound_tight) = (0, 0, 0);
    let mut worst_gap = 0.0f64;
    let cases = 12;
    for case in 0..cases {
        let rows: Vec<Vec<f64>> = (0..gpus)
            .map(|g| {
                (0..experts)
                    .map(|e| {
                        let pref = if (g < 2) == (e % 2 == 0) { 6.0 } else { 1.0 };
                        (pref * rng.random_range(0.5..1.5f64) * 10.0).round()
                    })
                    .collect()
            })
            .collect();
        let t = RoutedTokens::new(rows).unwrap();
        let options = TrafficOptions {
            tolerance: [0.0, 0.05, 0.2, 1.0][case % 4],
            ..TrafficOptions::default()
        };
        let plan = place_traffic_aware(&t, &cluster, &options).unwrap();
        let limit = plan.max_gpu_load_limit;
        let oracle = maps
            .iter()
            .filter_map(|m| {
                let d = dispatch(&t, &cluster, m).unwrap();
                (d.max_gpu_load <= limit * (1.0 + 1e-9)).then_some(d.cross_node_tokens)
            })
            .fold(f64::INFINITY, f64::min);
        if !plan.balance_met {
            continue;
        }
        assert!(
            oracle.is_finite(),
            "case {case}: the plan meets the limit, so the oracle does"
        );
        let ours = plan.dispatch.cross_node_tokens;
        assert!(
            ours >= oracle - 1e-6,
            "case {case}: below the exhaustive optimum"
        );
        assert!(
            plan.bound.cross_node_tokens <= oracle + 1e-6,
            "case {case}: bound {} above the optimum {oracle}",
            plan.bound.cross_node_tokens
        );
        if ours <= oracle + 1e-6 {
            exact += 1;
        } else {
            worse += 1;
            worst_gap = worst_gap.max(ours / oracle - 1.0);
        }
        if plan.bound.cross_node_tokens >= oracle - 1e-6 {
            bound_tight += 1;
        }
    }
    println!(
        "oracle: optimal on {exact}, above on {worse} (worst gap {:.1}%), bound tight on {bound_tight}",
        100.0 * worst_gap
    );
    assert!(exact + worse > 0);
}
