//! Regression tests for issue 13: huge clusters are a typed error before any allocation, and
//! slot totals do not wrap.

use comm_cost_model::{AlphaBeta, InputError, MAX_MATRIX_SIDE, SquareMatrix, Worker};
use topology_partition::{
    AristosObjective, Cluster, NodeKind, TopologyError, TrainingConstants, exhaustive_partition,
    lysi_group, one_group_per_node, whole_world,
};

/// `nodes = 1e18` panicked ("capacity overflow"), `1 << 16` and `100000` aborted out of memory.
#[test]
fn huge_node_counts_are_too_large() {
    for nodes in [1_000_000_000_000_000_000, 100_000, 1 << 16, usize::MAX] {
        assert!(matches!(
            Cluster::perlmutter(nodes, 32),
            Err(TopologyError::Input(InputError::TooLarge { .. }))
        ));
    }
    let huge = NodeKind {
        gpus: MAX_MATRIX_SIDE,
        ..NodeKind::perlmutter(32)
    };
    assert!(matches!(
        Cluster::heterogeneous(&[huge, NodeKind::perlmutter(32)]),
        Err(TopologyError::Input(InputError::TooLarge { .. }))
    ));
}

/// The slot total used to wrap (`usize::MAX + usize::MAX`), making a cluster that holds every
/// expert look infeasible.
#[test]
fn slot_totals_saturate() {
    let w = Worker::new(1e12, usize::MAX).unwrap();
    let link = AlphaBeta::new(1e-6, 1e-9).unwrap();
    let m = |v: f64| SquareMatrix::from_fn(2, |i, j| if i == j { 0.0 } else { v }).unwrap();
    let cluster = Cluster::new(
        vec![w, w],
        vec![0, 1],
        m(link.alpha_s),
        m(link.beta_s_per_byte),
    )
    .unwrap();
    assert_eq!(cluster.total_expert_slots(), u64::MAX);
    let c = TrainingConstants {
        recompute: 0.0,
        layers: 24,
        global_batch: 64,
        moe_every: 2,
        micro_batch: 4,
    };
    let objective = AristosObjective::uniform(c, 128, 5e9, 2.0, 16e6, 0.0).unwrap();
    let partition = lysi_group(&cluster, &objective).unwrap();
    assert!(!partition.groups.is_empty());
}

/// A CSV cluster allocates three `n x n` tables: the worker count is checked first.
#[test]
fn a_csv_cluster_with_too_many_workers_is_too_large() {
    let workers = vec![Worker::new(1e12, 1).unwrap(); MAX_MATRIX_SIDE + 1];
    let nodes = vec![0; MAX_MATRIX_SIDE + 1];
    assert!(matches!(
        Cluster::from_csv_str(workers, nodes, "0,1,1e-6,1e-9\n"),
        Err(TopologyError::Input(InputError::TooLarge { .. }))
    ));
}

/// A random cluster of `usize::MAX` nodes used to try to allocate them one by one.
#[test]
fn a_huge_random_cluster_is_too_large() {
    for nodes in [usize::MAX, 1 << 40] {
        assert!(matches!(
            topology_partition::random_cluster(nodes, 0.1, 0),
            Err(TopologyError::Input(InputError::TooLarge { .. }))
        ));
    }
}

// Found by `tests/fuzz_entry_points.rs` (issue 13, requirement 5), or while writing it.

fn training(recompute: f64) -> TrainingConstants {
    TrainingConstants {
        recompute,
        layers: 24,
        global_batch: 64,
        moe_every: 2,
        micro_batch: 4,
    }
}

fn is_non_finite<T: std::fmt::Debug>(r: Result<T, TopologyError>) -> bool {
    matches!(r, Err(TopologyError::Input(InputError::NonFinite { .. })))
}

/// Two workers joined by links of `beta` s/byte (both directions), one expert slot each.
fn pair(flop_per_s: f64, beta: f64) -> Cluster {
    let w = Worker::new(flop_per_s, 1).unwrap();
    let m = |v: f64| SquareMatrix::from_fn(2, |i, j| if i == j { 0.0 } else { v }).unwrap();
    Cluster::new(vec![w, w], vec![0, 1], m(1e-6), m(beta)).unwrap()
}

/// `gamma` with `recompute = 1e308` was `Ok(inf)`.
#[test]
fn an_infinite_gamma_is_non_finite() {
    assert!(is_non_finite(training(1e308).gamma(4)));
    assert!(training(1e300).gamma(4).unwrap().is_finite());
}

/// A feasible group whose `T` overflows (a link of `f64::MAX` s/byte) was reported with
/// `T = inf`, which reads as "infeasible"; it is now an error, and the exhaustive search
/// skips such groupings when a finite one exists.
#[test]
fn an_overflowing_feasible_group_is_non_finite() {
    let cluster = pair(1e12, f64::MAX);
    // Two experts: only the whole cluster holds them.
    let two = AristosObjective::uniform(training(0.0), 2, 5e9, 2.0, 16e6, 0.0).unwrap();
    assert!(is_non_finite(lysi_group(&cluster, &two)));
    assert!(is_non_finite(whole_world(&cluster, &two)));
    assert!(is_non_finite(exhaustive_partition(&cluster, &two)));
    assert!(is_non_finite(two.group_cost(&cluster, &[0, 1], 1)));
    // One group per node is infeasible, which `T = inf` still means.
    let per_node = one_group_per_node(&cluster, &two).unwrap();
    assert!(per_node.objective_s.iter().all(|t| t.is_infinite()));
    // One expert: each worker alone is feasible and finite, and is the optimum.
    let one = AristosObjective::uniform(training(0.0), 1, 5e9, 2.0, 16e6, 0.0).unwrap();
    let best = exhaustive_partition(&cluster, &one).unwrap();
    assert_eq!(best.groups, vec![vec![0], vec![1]]);
    assert!(best.max_objective_s().is_finite());
}

/// Two workers of `f64::MAX` FLOP/s: their sum was infinite and the compute time `pi(g)`
/// silently zero.
#[test]
fn an_infinite_flop_total_is_non_finite() {
    let cluster = pair(f64::MAX, 1e-9);
    let objective = AristosObjective::uniform(training(0.0), 1, 5e9, 2.0, 16e6, 0.0).unwrap();
    assert!(is_non_finite(objective.group_cost(&cluster, &[0, 1], 1)));
    assert!(is_non_finite(lysi_group(&cluster, &objective)));
}

/// `check_symmetric(NaN)` accepted every matrix.
#[test]
fn a_bad_symmetry_tolerance_is_an_error() {
    let w = Worker::new(1e12, 1).unwrap();
    let rows = vec![vec![0.0, 1e-6], vec![2e-6, 0.0]];
    let cluster = Cluster::from_rows(vec![w, w], vec![0, 0], &rows, &rows).unwrap();
    assert!(is_non_finite(cluster.check_symmetric(f64::NAN)));
    assert!(is_non_finite(cluster.check_symmetric(f64::INFINITY)));
    assert!(matches!(
        cluster.check_symmetric(-1.0),
        Err(TopologyError::Input(InputError::Negative { .. }))
    ));
    assert!(matches!(
        cluster.check_symmetric(0.1),
        Err(TopologyError::Asymmetric { .. })
    ));
}

/// `AristosObjective::uniform(.., usize::MAX, ..)` panicked ("capacity overflow") or aborted
/// out of memory.
#[test]
fn a_huge_uniform_objective_is_too_large() {
    for experts in [usize::MAX, 1 << 53, topology_partition::MAX_EXPERTS + 1] {
        assert!(matches!(
            AristosObjective::uniform(training(0.0), experts, 5e9, 2.0, 16e6, 0.0),
            Err(TopologyError::Input(InputError::TooLarge { .. }))
        ));
    }
}

/// At the old limit (2^15 workers) a cluster needed two 8 GiB matrices; the limit is now
/// `MAX_WORKERS` = 2^13, which still holds all of Perlmutter (1,792 nodes).
#[test]
fn clusters_above_max_workers_are_too_large() {
    use topology_partition::MAX_WORKERS;
    let too_large = |r: Result<Cluster, TopologyError>| {
        matches!(r, Err(TopologyError::Input(InputError::TooLarge { .. })))
    };
    assert!(too_large(Cluster::perlmutter(MAX_WORKERS / 4 + 1, 32)));
    assert!(too_large(Cluster::perlmutter(1 << 13, 32)));
    let one_big_node = NodeKind {
        gpus: 1 << 15,
        ..NodeKind::perlmutter(32)
    };
    assert!(too_large(Cluster::uniform_nodes(1, one_big_node)));
    assert!(too_large(topology_partition::random_cluster(
        MAX_WORKERS + 1,
        0.1,
        0
    )));
    assert_eq!(MAX_WORKERS, 8192);
}
