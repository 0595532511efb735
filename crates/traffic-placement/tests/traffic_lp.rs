//! The traffic bound against the LP of its first relaxation (forced in-node load and slots),
//! solved by `good_lp` (microlp) on small seeded instances. The reported bound is the larger of
//! that relaxation's Lagrangian dual (coordinate descent, never above this LP) and the hosting
//! problem's Lagrangian dual (remote tokens load their node; `bound_flow.rs`), which may exceed
//! this LP: it must come close to the LP at least. That no bound exceeds the true optimum is
//! `traffic_oracle.rs`'s exhaustive check.

use expert_placement::PlacementCluster;
use good_lp::{Expression, ProblemVariables, Solution, SolverModel, constraint, microlp, variable};
use rand::RngExt;
use traffic_placement::{RoutedTokens, traffic_lower_bound};

/// `total - max sum x D` over the relaxation of `traffic_lower_bound` (uniform speeds).
fn lp_bound(t: &RoutedTokens, gpus_per_node: usize, nodes: usize, slots: usize, limit: f64) -> f64 {
    let e_count = t.experts();
    let d: Vec<Vec<f64>> = (0..nodes)
        .map(|n| {
            (0..e_count)
                .map(|e| {
                    (0..gpus_per_node)
                        .map(|g| t.get(n * gpus_per_node + g, e))
                        .sum()
                })
                .collect()
        })
        .collect();
    let mut vars = ProblemVariables::new();
    let x: Vec<Vec<_>> = (0..e_count)
        .map(|_| {
            (0..nodes)
                .map(|_| vars.add(variable().min(0.0).max(1.0)))
                .collect()
        })
        .collect();
    let captured: Expression = (0..e_count)
        .flat_map(|e| (0..nodes).map(move |n| (e, n)))
        .map(|(e, n)| d[n][e] * x[e][n])
        .sum();
    let mut model = vars.maximise(captured.clone()).using(microlp);
    for xe in &x {
        let some: Expression = xe.iter().copied().map(Expression::from).sum();
        model = model.with(constraint!(some >= 1.0));
    }
    for n in 0..nodes {
        let forced: Expression = (0..e_count).map(|e| d[n][e] * x[e][n]).sum();
        model = model.with(constraint!(forced <= limit * gpus_per_node as f64));
        let used: Expression = (0..e_count)
            .map(|e| (d[n][e] / limit).ceil().max(1.0) * x[e][n])
            .sum();
        model = model.with(constraint!(used <= (gpus_per_node * slots) as f64));
    }
    let solution = model.solve().expect("the relaxation is feasible");
    t.total() - solution.eval(&captured)
}

#[test]
fn lagrangian_bound_matches_the_lp() {
    let mut rng = comm_cost_model::seeded_rng(230, 0);
    let mut worst = 0.0f64;
    let mut above = 0;
    for case in 0..12 {
        let (nodes, gpn, slots, experts) =
            [(2, 2, 3, 9), (3, 2, 2, 10), (2, 3, 2, 8), (4, 1, 3, 10)][case % 4];
        let gpus = nodes * gpn;
        let rows: Vec<Vec<f64>> = (0..gpus)
            .map(|g| {
                (0..experts)
                    .map(|e| {
                        let pref = if e % nodes == g / gpn { 5.0 } else { 1.0 };
                        (pref * rng.random_range(0.2..2.0f64) * 10.0).round()
                    })
                    .collect()
            })
            .collect();
        let t = RoutedTokens::new(rows).unwrap();
        let c = PlacementCluster::uniform(gpus, slots, nodes).unwrap();
        let average = t.total() / gpus as f64;
        let limit = average * [1.02, 1.1, 1.5][case % 3];
        let ours = traffic_lower_bound(&t, &c, limit, 200)
            .unwrap()
            .cross_node_tokens;
        let lp = lp_bound(&t, gpn, nodes, slots, limit);
        if ours > lp + 1e-6 * (1.0 + lp) {
            above += 1;
        }
        if lp > 0.0 {
            worst = worst.max(1.0 - ours / lp);
        }
    }
    println!(
        "the bound is at worst {:.2}% below the first relaxation's LP, above it on {above} of 12",
        100.0 * worst
    );
    assert!(worst < 0.05, "the descent stalls far from the LP: {worst}");
}
