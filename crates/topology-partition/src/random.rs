//! Seeded random heterogeneous clusters, for studies, property tests and benchmarks.

use comm_cost_model::units::{gb_per_s, tflop_per_s};
use comm_cost_model::{AlphaBeta, SquareMatrix, seeded_rng};
use rand::RngExt;

use crate::{Cluster, NodeKind, TopologyError};
use comm_cost_model::check_count;

/// A random mix of nodes: each node draws a GPU type (V100 16 GB, A100 40 GB, A100 80 GB,
/// H100 80 GB: FLOP/s, expert slots and NVLink generation), 2, 4 or 8 GPUs, and a NIC of
/// 12.5, 25 or 50 GB/s; then every off-diagonal link cost is scaled by an independent factor
/// in `[1, 1 + jitter]` (the same for both directions), as measured matrices are never flat.
///
/// Same `nodes`, `jitter` and `seed`, same cluster.
///
/// # Errors
///
/// [`TopologyError::Input`] (`CountTooSmall`) if `nodes == 0`; [`TopologyError::Input`] if `jitter` is
/// negative or not finite; (`TooLarge`) beyond [`crate::MAX_WORKERS`] nodes
/// (each has at least two workers, so the cluster would be too large anyway).
///
/// # Complexity
///
/// `O(n^2)` time for n workers.
///
/// # Examples
///
/// ```
/// use topology_partition::random_cluster;
/// let a = random_cluster(4, 0.1, 7)?;
/// assert_eq!(a, random_cluster(4, 0.1, 7)?);
/// assert!(a.check_symmetric(1e-12).is_ok());
/// # Ok::<(), topology_partition::TopologyError>(())
/// ```
pub fn random_cluster(nodes: usize, jitter: f64, seed: u64) -> Result<Cluster, TopologyError> {
    check_count("nodes", nodes, 1)?;
    // Before one node kind per node is allocated.
    crate::cluster::check_workers(nodes)?;
    let jitter = comm_cost_model::check_non_negative("jitter", jitter)?;
    let mut rng = seeded_rng(seed, 0);
    // (TFLOP/s, expert slots, NVLink GB/s per direction, NVLink latency s)
    const GPUS: [(f64, usize, f64, f64); 4] = [
        (125.0, 8, 150.0, 12e-6),
        (312.0, 16, 300.0, 9e-6),
        (312.0, 32, 300.0, 9e-6),
        (989.0, 32, 450.0, 7e-6),
    ];
    const NICS_GB_PER_S: [f64; 3] = [12.5, 25.0, 50.0];
    const SIZES: [usize; 3] = [2, 4, 8];
    let kinds = (0..nodes)
        .map(|_| {
            let (tf, slots, nvlink, lat) = GPUS[rng.random_range(0..GPUS.len())];
            let nic = NICS_GB_PER_S[rng.random_range(0..NICS_GB_PER_S.len())];
            Ok(NodeKind {
                gpus: SIZES[rng.random_range(0..SIZES.len())],
                flop_per_s: tflop_per_s(tf),
                expert_slots: slots,
                intra: AlphaBeta::from_latency_bandwidth(lat, gb_per_s(nvlink))?,
                network: AlphaBeta::from_latency_bandwidth(30e-6, gb_per_s(nic))?,
            })
        })
        .collect::<Result<Vec<_>, TopologyError>>()?;
    let base = Cluster::heterogeneous(&kinds)?;
    let n = base.len();
    let mut factor = vec![1.0; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let f = 1.0 + jitter * rng.random_range(0.0..1.0);
            factor[i * n + j] = f;
            factor[j * n + i] = f;
        }
    }
    let jittered = |m: &SquareMatrix| {
        let data = m.as_slice().iter().zip(&factor).map(|(v, f)| v * f);
        SquareMatrix::from_flat(n, data.collect())
    };
    Cluster::new(
        base.workers().to_vec(),
        base.node_of_worker().to_vec(),
        jittered(base.alpha_s())?,
        jittered(base.beta_s_per_byte())?,
    )
}
