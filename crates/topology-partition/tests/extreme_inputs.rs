//! Regression tests for issue 13: huge clusters are a typed error before any allocation, and
//! slot totals do not wrap.

use comm_cost_model::{AlphaBeta, CostModelError, MAX_MATRIX_SIDE, SquareMatrix, Worker};
use topology_partition::{
    AristosObjective, Cluster, NodeKind, TopologyError, TrainingConstants, lysi_group,
};

/// `nodes = 1e18` panicked ("capacity overflow"), `1 << 16` and `100000` aborted out of memory.
#[test]
fn huge_node_counts_are_too_large() {
    for nodes in [1_000_000_000_000_000_000, 100_000, 1 << 16, usize::MAX] {
        assert!(matches!(
            Cluster::perlmutter(nodes, 32),
            Err(TopologyError::Value(CostModelError::TooLarge { .. }))
        ));
    }
    let huge = NodeKind {
        gpus: MAX_MATRIX_SIDE,
        ..NodeKind::perlmutter(32)
    };
    assert!(matches!(
        Cluster::heterogeneous(&[huge, NodeKind::perlmutter(32)]),
        Err(TopologyError::Value(CostModelError::TooLarge { .. }))
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
        Err(TopologyError::Value(CostModelError::TooLarge { .. }))
    ));
}

/// A random cluster of `usize::MAX` nodes used to try to allocate them one by one.
#[test]
fn a_huge_random_cluster_is_too_large() {
    for nodes in [usize::MAX, 1 << 40] {
        assert!(matches!(
            topology_partition::random_cluster(nodes, 0.1, 0),
            Err(TopologyError::Value(CostModelError::TooLarge { .. }))
        ));
    }
}
