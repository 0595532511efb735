//! LysiGroup, the objective and the baselines on hand-sized clusters, plus properties.

use comm_cost_model::{InputError, SquareMatrix};
use proptest::prelude::*;
use topology_partition::{
    AristosObjective, Cluster, CsvProblem, TopologyError, TrainingConstants, Worker,
    exhaustive_partition, lysi_group, one_group_per_node, random_cluster, smallest_fitting_groups,
    whole_world,
};

/// gamma = (2 + 0) · 2 · 4 / (2 · 4 · 2) = 1 on a 4-worker cluster.
fn unit_gamma() -> TrainingConstants {
    TrainingConstants {
        recompute: 0.0,
        layers: 2,
        global_batch: 4,
        moe_every: 2,
        micro_batch: 2,
    }
}

/// `nodes` lists node labels; intra links cost `beta_intra`, inter links `beta_inter`, alpha 0.
fn two_tier(nodes: &[usize], slots: usize, beta_intra: f64, beta_inter: f64) -> Cluster {
    let n = nodes.len();
    let workers = vec![Worker::new(1e12, slots).unwrap(); n];
    let beta = SquareMatrix::from_fn(n, |i, j| {
        if nodes[i] == nodes[j] {
            beta_intra
        } else {
            beta_inter
        }
    })
    .unwrap();
    Cluster::new(workers, nodes.to_vec(), zeros(n), beta).unwrap()
}

fn zeros(n: usize) -> SquareMatrix {
    SquareMatrix::from_fn(n, |_, _| 0.0).unwrap()
}

/// 2 experts of 1 TFLOP, eta = 1, d = 100 MB, `d_ar` = 1 MB.
fn objective(training: TrainingConstants) -> AristosObjective {
    AristosObjective::uniform(training, 2, 1e12, 1.0, 1e8, 1e6).unwrap()
}

#[test]
fn two_nodes_merge_when_the_network_is_fast_enough() {
    // Intra 1e-9 s/B, inter 1e-8 s/B. Pairs {0,1}, {2,3} form first (both infeasible alone).
    // T(pair) = 1 · (2e12 / 2e12 + 1e8 / 2 · 1e-9) + T_rho(2) = 1.05 + 2 (0 + 1e6 · 1e-8 / 2)
    //         = 1.06 s.
    // T(world) = 0.5 + 1e8 / 4 · (1e-9 + 2e-8) + T_rho(1) = 0.5 + 0.525 = 1.025 s.
    // Proposition 1: 1.025 · (2 / 1.06) = 1.934 <= 2: merge.
    let cluster = two_tier(&[0, 0, 1, 1], 1, 1e-9, 1e-8);
    let p = lysi_group(&cluster, &objective(unit_gamma())).unwrap();
    assert_eq!(p.groups, vec![vec![0, 1, 2, 3]]);
    assert!((p.objective_s[0] - 1.025).abs() < 1e-12);
    let nodes = one_group_per_node(&cluster, &objective(unit_gamma())).unwrap();
    assert!((nodes.objective_s[0] - 1.06).abs() < 1e-12);
}

#[test]
fn two_nodes_stay_apart_when_the_network_is_slow() {
    // Inter 1e-7 s/B: T(world) = 0.5 + 2.5e7 · (1e-9 + 2e-7) = 5.525 s;
    // T(pair) = 1.05 + T_rho(2) = 1.05 + 2 · (1e6 · 1e-7 / 2) = 1.15 (beta* is now 1e-7);
    // 5.525 · 2 / 1.15 = 9.6 > 2: no merge.
    let cluster = two_tier(&[0, 0, 1, 1], 1, 1e-9, 1e-7);
    let p = lysi_group(&cluster, &objective(unit_gamma())).unwrap();
    assert_eq!(p.groups, vec![vec![0, 1], vec![2, 3]]);
    assert!((p.objective_s[0] - 1.15).abs() < 1e-12);
}

#[test]
fn a_leftover_infeasible_worker_is_absorbed() {
    // 3 workers of 1 slot, 2 experts; worker 2 sits behind a very slow link (1e-6 s/B).
    // {0,1} forms first; {0,1} + {2} costs far more than twice T({0,1}), so Proposition 1
    // rejects it, and the repair pass then absorbs the infeasible {2}.
    let cluster = two_tier(&[0, 0, 1], 1, 1e-9, 1e-6);
    let training = TrainingConstants {
        global_batch: 3,
        ..unit_gamma()
    };
    let p = lysi_group(&cluster, &objective(training)).unwrap();
    assert_eq!(p.groups, vec![vec![0, 1, 2]]);
    assert!(p.objective_s[0].is_finite());
}

#[test]
fn baselines_on_a_two_node_cluster() {
    let cluster = two_tier(&[0, 0, 1, 1], 1, 1e-9, 1e-8);
    let obj = objective(unit_gamma());
    assert_eq!(whole_world(&cluster, &obj).unwrap().groups.len(), 1);
    let smallest = smallest_fitting_groups(&cluster, &obj).unwrap();
    assert_eq!(smallest.groups, vec![vec![0, 1], vec![2, 3]]);
    // Three single-slot workers and two experts: the remainder joins the last group.
    let odd = two_tier(&[0, 0, 0], 1, 1e-9, 1e-8);
    let p = smallest_fitting_groups(&odd, &obj).unwrap();
    assert_eq!(p.groups, vec![vec![0, 1, 2]]);
    // One node per worker: each alone is infeasible and reported as infinite, not repaired.
    let spread = two_tier(&[0, 1, 2, 3], 1, 1e-9, 1e-8);
    let nodes = one_group_per_node(&spread, &obj).unwrap();
    assert!(nodes.objective_s.iter().all(|t| t.is_infinite()));
    let json = serde_json_roundtrip(&nodes);
    assert!(json.objective_s.iter().all(|t| t.is_infinite()));
}

fn serde_json_roundtrip(p: &topology_partition::Partition) -> topology_partition::Partition {
    let text = serde_json::to_string(p).unwrap();
    assert!(text.contains("null"));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn objective_terms_follow_eq_4() {
    let cluster = two_tier(&[0, 0, 1, 1], 1, 1e-9, 1e-8);
    let obj = objective(unit_gamma());
    let c = obj.group_cost(&cluster, &[0, 2], 2).unwrap();
    assert_eq!(c.gamma, 1.0);
    assert_eq!(c.compute_s, 1.0);
    // One inter-node peer: 1 · (0 + 1e8 / 2 · 1e-8) = 0.5 s.
    assert!((c.communication_s - 0.5).abs() < 1e-12);
    assert!((c.all_reduce_s - 0.01).abs() < 1e-15);
    assert!(c.feasible);
    let lone = obj.group_cost(&cluster, &[3], 4).unwrap();
    assert!(!lone.feasible && lone.objective_s.is_infinite());
    let inference = AristosObjective {
        inference: true,
        ..obj.clone()
    };
    assert_eq!(
        inference
            .group_cost(&cluster, &[0, 2], 2)
            .unwrap()
            .all_reduce_s,
        0.0
    );
}

#[test]
fn bad_inputs_are_typed_errors() {
    let w = Worker::new(1e12, 1).unwrap();
    assert!(matches!(
        Cluster::new(vec![], vec![], zeros(1), zeros(1)),
        Err(TopologyError::Input(InputError::Empty { .. }))
    ));
    assert!(matches!(
        Cluster::new(vec![w; 2], vec![0, 0], zeros(3), zeros(2)),
        Err(TopologyError::Input(InputError::SizeMismatch { .. }))
    ));
    assert!(matches!(
        Cluster::new(vec![w; 2], vec![0], zeros(2), zeros(2)),
        Err(TopologyError::Input(InputError::SizeMismatch { .. }))
    ));
    let rows = |v: f64| vec![vec![0.0, v], vec![0.0, 0.0]];
    assert!(matches!(
        Cluster::from_rows(vec![w; 2], vec![0, 0], &rows(-1.0), &rows(0.0)),
        Err(TopologyError::Input(InputError::BadEntry {
            row: 0,
            col: 1,
            ..
        }))
    ));
    assert!(matches!(
        Cluster::from_rows(vec![w; 2], vec![0, 0], &rows(0.0), &rows(f64::NAN)),
        Err(TopologyError::Input(InputError::BadEntry { .. }))
    ));
    assert!(matches!(
        Worker::new(0.0, 1),
        Err(InputError::NotPositive { .. })
    ));
    let c = Cluster::from_rows(vec![w; 2], vec![0, 0], &rows(0.0), &rows(1e-9)).unwrap();
    assert!(matches!(
        c.to_graph(),
        Err(TopologyError::Asymmetric { .. })
    ));
    // Three experts, two slots in total.
    let obj = AristosObjective::uniform(unit_gamma(), 3, 1e12, 1.0, 1e8, 1e6).unwrap();
    assert!(matches!(
        lysi_group(&c, &obj),
        Err(TopologyError::NoFeasibleGroup { .. })
    ));
    let no_experts = AristosObjective::uniform(unit_gamma(), 0, 1e12, 1.0, 1e8, 1e6).unwrap();
    assert!(lysi_group(&c, &no_experts).is_err());
    let zero_layers = TrainingConstants {
        layers: 0,
        ..unit_gamma()
    };
    assert!(lysi_group(&c, &objective(zero_layers)).is_err());
    let bad_d = AristosObjective::uniform(unit_gamma(), 1, 1e12, 1.0, -1.0, 1e6).unwrap();
    assert!(lysi_group(&c, &bad_d).is_err());
    // Partitions that are not partitions.
    let ok = objective(unit_gamma());
    assert!(ok.evaluate(&c, vec![vec![0]]).is_err());
    assert!(ok.evaluate(&c, vec![vec![0, 1], vec![1]]).is_err());
    assert!(ok.evaluate(&c, vec![vec![0, 5], vec![1]]).is_err());
    assert!(ok.evaluate(&c, vec![vec![0, 1], vec![]]).is_err());
}

#[test]
fn csv_builder_validates() {
    let w = Worker::new(1e12, 1).unwrap();
    let good = "# measured\nsrc,dst,alpha_s,beta_s_per_byte\n0,1,1e-5,1e-9\n1,0,2e-5,2e-9\n";
    let c = Cluster::from_csv_str(vec![w; 2], vec![0, 1], good).unwrap();
    assert_eq!(c.link(1, 0).map(|l| l.alpha_s), Some(2e-5));
    assert!(c.check_symmetric(1e-9).is_err());
    let parse = |text: &str| Cluster::from_csv_str(vec![w; 2], vec![0, 1], text);
    let problem = |text: &str| match parse(text) {
        Err(TopologyError::Csv { problem, .. }) => Some(problem),
        _ => None,
    };
    assert_eq!(
        problem("0,1,1e-5\n"),
        Some(CsvProblem::FieldCount { fields: 3 })
    );
    assert_eq!(
        problem("0,2,1e-5,1e-9\n"),
        Some(CsvProblem::WorkerOutOfRange {
            worker: 2,
            workers: 2
        })
    );
    assert_eq!(
        problem("0,0,1e-5,1e-9\n"),
        Some(CsvProblem::SelfPair { worker: 0 })
    );
    assert_eq!(
        problem("0,1,x,1e-9\n"),
        Some(CsvProblem::NotANumber { field: "x".into() })
    );
    assert_eq!(
        problem("0,1,1,1\n0,1,1,1\n"),
        Some(CsvProblem::Duplicate { src: 0, dst: 1 })
    );
    assert_eq!(problem(""), Some(CsvProblem::Missing { src: 0, dst: 1 }));
    assert!(matches!(
        parse("0,1,-1,1e-9\n"),
        Err(TopologyError::Input(InputError::BadEntry { .. }))
    ));
}

fn study_objective(experts: usize) -> AristosObjective {
    let training = TrainingConstants {
        recompute: 0.0,
        layers: 24,
        global_batch: 256,
        moe_every: 2,
        micro_batch: 8,
    };
    AristosObjective::uniform(training, experts, 5e10, 2.0, 16e6, 64e6).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Groups partition the workers, every group holds the experts, the result is
    /// deterministic, and no partition beats the exhaustive optimum.
    #[test]
    fn lysigroup_partitions_feasibly_and_never_beats_the_optimum(
        seed in 0u64..10_000, experts in 1usize..48,
    ) {
        let cluster = random_cluster(2, 0.2, seed).unwrap();
        prop_assume!(cluster.len() <= 8);
        let obj = study_objective(experts);
        prop_assume!(cluster.total_expert_slots() >= experts as u64);
        let p = lysi_group(&cluster, &obj).unwrap();
        let mut seen = vec![0; cluster.len()];
        for g in &p.groups {
            let slots: usize = g.iter().map(|&w| cluster.workers()[w].expert_slots).sum();
            prop_assert!(slots >= experts);
            g.iter().for_each(|&w| seen[w] += 1);
        }
        prop_assert!(seen.iter().all(|&s| s == 1));
        prop_assert!(p.objective_s.iter().all(|t| t.is_finite()));
        prop_assert_eq!(&p, &lysi_group(&cluster, &obj).unwrap());
        let best = exhaustive_partition(&cluster, &obj).unwrap();
        prop_assert!(best.max_objective_s() <= p.max_objective_s() * (1.0 + 1e-12));
        let world = whole_world(&cluster, &obj).unwrap();
        prop_assert!(best.max_objective_s() <= world.max_objective_s() * (1.0 + 1e-12));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Writing a cluster's links as CSV lines and reading them back gives the same cluster.
    #[test]
    fn csv_round_trip(seed in 0u64..1000) {
        let cluster = random_cluster(2, 0.5, seed).unwrap();
        let mut text = String::from("src,dst,alpha_s,beta_s_per_byte\n");
        for i in 0..cluster.len() {
            for j in 0..cluster.len() {
                if i != j {
                    let l = cluster.link(i, j).unwrap();
                    text.push_str(&format!("{i},{j},{:e},{:e}\n", l.alpha_s, l.beta_s_per_byte));
                }
            }
        }
        let nodes = cluster.node_of_worker().to_vec();
        let back = Cluster::from_csv_str(cluster.workers().to_vec(), nodes, &text).unwrap();
        prop_assert_eq!(back, cluster);
    }
}
