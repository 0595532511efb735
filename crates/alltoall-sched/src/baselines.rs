//! The orders real systems use, evaluated in the contention simulator (Aurora §8.1).
//!
//! Each baseline is an order per sender ([`sjf_order`], [`random_order`], [`shift_order`]) and
//! its simulated timetable ([`sjf`], [`random`], [`shift`]). [`crate::schedule`] runs them by
//! name through [`crate::Algorithm`] (`Sjf`, `Random`, `Shift`), next to the optimal
//! schedulers.

use comm_cost_model::seeded_rng;
use rand::seq::SliceRandom;

use crate::{Bandwidth, Flow, ScheduleError, Timetable, TrafficMatrix, simulate};

/// Each sender's flows, shortest first (Aurora §8's SJF baseline).
///
/// # Complexity
///
/// `O(n^2 log n)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// use alltoall_sched::baselines::sjf_order;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 5, 2], vec![0, 0, 0], vec![0, 0, 0]])?;
/// let dsts: Vec<usize> = sjf_order(&d)[0].iter().map(|f| f.dst).collect();
/// assert_eq!(dsts, vec![2, 1]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[must_use]
pub fn sjf_order(matrix: &TrafficMatrix) -> Vec<Vec<Flow>> {
    (0..matrix.n())
        .map(|i| {
            let mut row = row_flows(matrix, i);
            row.sort_by(|a, b| a.bytes.total_cmp(&b.bytes).then(a.dst.cmp(&b.dst)));
            row
        })
        .collect()
}

/// Each sender's flows in a seeded random order (Aurora §8's RCS baseline).
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// use alltoall_sched::baselines::random_order;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 5, 2], vec![1, 0, 0], vec![0, 0, 0]])?;
/// assert_eq!(random_order(&d, 3), random_order(&d, 3));
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[must_use]
pub fn random_order(matrix: &TrafficMatrix, seed: u64) -> Vec<Vec<Flow>> {
    let mut rng = seeded_rng(seed, 0);
    (0..matrix.n())
        .map(|i| {
            let mut row = row_flows(matrix, i);
            row.shuffle(&mut rng);
            row
        })
        .collect()
}

/// Pairwise shift: at step `k = 1..n-1` GPU `i` sends to `(i + k) mod n` (the pairwise
/// exchange of NCCL's all-to-all and FasterMoE). Steps are not synchronized: each sender moves
/// on as soon as its previous flow ends.
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// use alltoall_sched::baselines::shift_order;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![1, 1, 0]])?;
/// let dsts: Vec<usize> = shift_order(&d)[2].iter().map(|f| f.dst).collect();
/// assert_eq!(dsts, vec![0, 1]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[must_use]
pub fn shift_order(matrix: &TrafficMatrix) -> Vec<Vec<Flow>> {
    let n = matrix.n();
    (0..n)
        .map(|i| {
            (1..n)
                .map(|k| (i + k) % n)
                .filter(|&j| matrix.at(i, j) > 0.0)
                .map(|j| Flow::new(j, matrix.at(i, j)))
                .collect()
        })
        .collect()
}

/// NCCL's load-oblivious peer order for grouped send/receive (its all-to-all), on nodes of
/// `gpus_per_node` consecutive ranks.
///
/// NCCL builds one fixed schedule of peers per rank at communicator creation (the
/// `p2pSchedule` of its `init.cc`) and posts a group's sends in that order, whatever their
/// sizes. Rank `r` in node `m`, local index `l`, walks node offsets `δ_node` and, inside each,
/// local offsets `δ_local`, sending to local index `(l + δ_local) mod L` of node
/// `(m + δ_node) mod M`. Both offset sequences are the triangular numbers `0, 1, 3, 6, 10, ...`
/// modulo the next power of two, keeping those below the count (for 16: 0, 1, 3, 6, 10, 15, 5,
/// 12, 4, 13, 7, 2, 14, 11, 9, 8): every offset once, spread so that consecutive rounds do not
/// hit neighbouring ranks. This is our own implementation of that description, the variant with
/// one group per node; compare [`shift_order`], the plain `r + k` order.
///
/// # Errors
///
/// [`ScheduleError::Input`] (`CountTooSmall`) for `gpus_per_node = 0` and (`NotDivisible`) when it
/// does not divide the GPU count.
///
/// # Complexity
///
/// `O(n^2)`.
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// use alltoall_sched::baselines::nccl_order;
/// let d = TrafficMatrix::from_rows(&vec![vec![1.0; 4]; 4])?;
/// // One node of 4: local offsets 0 (self, skipped), 1, 3, 2.
/// let dsts: Vec<usize> = nccl_order(&d, 4)?[0].iter().map(|f| f.dst).collect();
/// assert_eq!(dsts, vec![1, 3, 2]);
/// // Two nodes of 2: node offset 0 first (GPU 1), then node 1 (GPUs 2, 3).
/// let dsts: Vec<usize> = nccl_order(&d, 2)?[0].iter().map(|f| f.dst).collect();
/// assert_eq!(dsts, vec![1, 2, 3]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn nccl_order(
    matrix: &TrafficMatrix,
    gpus_per_node: usize,
) -> Result<Vec<Vec<Flow>>, ScheduleError> {
    let n = matrix.n();
    let per_node = comm_cost_model::check_count("GPUs per node", gpus_per_node, 1)?;
    comm_cost_model::check_divides("GPUs (into nodes)", n as u64, per_node as u64)?;
    let nodes = n / per_node;
    let node_offsets = triangular_offsets(nodes);
    let local_offsets = triangular_offsets(per_node);
    Ok((0..n)
        .map(|i| {
            let (m, l) = (i / per_node, i % per_node);
            node_offsets
                .iter()
                .flat_map(|&dn| {
                    local_offsets
                        .iter()
                        .map(move |&dl| ((m + dn) % nodes) * per_node + (l + dl) % per_node)
                })
                .filter(|&j| j != i && matrix.at(i, j) > 0.0)
                .map(|j| Flow::new(j, matrix.at(i, j)))
                .collect()
        })
        .collect())
}

/// `0, 1, 3, 6, ...` (triangular numbers) modulo the next power of two of `count`, those below
/// `count`: each offset `0..count` exactly once (triangular numbers cover every residue modulo a
/// power of two).
fn triangular_offsets(count: usize) -> Vec<usize> {
    let pow2 = count.next_power_of_two();
    let mut out = Vec::with_capacity(count);
    let mut delta = 0usize;
    for round in 1..=pow2 {
        if delta < count {
            out.push(delta);
        }
        delta = (delta + round) & (pow2 - 1);
    }
    out
}

/// NCCL's peer order ([`nccl_order`]) run through the contention simulator.
///
/// # Errors
///
/// Those of [`nccl_order`] and [`simulate`].
///
/// # Complexity
///
/// As [`simulate`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{Bandwidth, TrafficMatrix};
/// use alltoall_sched::baselines::nccl;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![1, 1, 0]])?;
/// assert_eq!(nccl(&d, &Bandwidth::uniform(1.0)?, 3)?.makespan_s(), 2.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn nccl(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
    gpus_per_node: usize,
) -> Result<Timetable, ScheduleError> {
    simulate(&nccl_order(matrix, gpus_per_node)?, bandwidth)
}

fn row_flows(matrix: &TrafficMatrix, i: usize) -> Vec<Flow> {
    (0..matrix.n())
        .filter(|&j| matrix.at(i, j) > 0.0)
        .map(|j| Flow::new(j, matrix.at(i, j)))
        .collect()
}

/// The SJF baseline's simulated timetable: [`sjf_order`] run through [`simulate`].
///
/// # Errors
///
/// The bandwidth errors of [`Bandwidth::check`]; [`ScheduleError::Input`] (`Overflow`) if the simulation
/// ends beyond the `f64` range (see [`simulate`]).
///
/// # Complexity
///
/// As [`simulate`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{Bandwidth, TrafficMatrix};
/// use alltoall_sched::baselines::sjf;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// // GPU 1 sends 1->2 then 1->3, GPU 2 sends 2->1 then 2->3 (ties by index): Fig. 4(b).
/// assert_eq!(sjf(&d, &Bandwidth::uniform(1.0)?)?.makespan_s(), 3.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn sjf(matrix: &TrafficMatrix, bandwidth: &Bandwidth) -> Result<Timetable, ScheduleError> {
    simulate(&sjf_order(matrix), bandwidth)
}

/// The random-order baseline's simulated timetable (seeded).
///
/// # Errors
///
/// As [`sjf`].
///
/// # Complexity
///
/// As [`simulate`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{Bandwidth, TrafficMatrix};
/// use alltoall_sched::baselines::random;
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![0, 0, 0]])?;
/// let t = random(&d, &Bandwidth::uniform(1.0)?, 1)?;
/// assert!(t.makespan_s() >= 2.0 && t.makespan_s() <= 3.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn random(
    matrix: &TrafficMatrix,
    bandwidth: &Bandwidth,
    seed: u64,
) -> Result<Timetable, ScheduleError> {
    simulate(&random_order(matrix, seed), bandwidth)
}

/// The pairwise-shift baseline's simulated timetable.
///
/// # Errors
///
/// As [`sjf`].
///
/// # Complexity
///
/// As [`simulate`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::{Bandwidth, TrafficMatrix};
/// use alltoall_sched::baselines::shift;
/// // Equal traffic: the shift pattern is a perfect schedule (n - 1 = 2 rounds).
/// let d = TrafficMatrix::from_rows_u64(&[vec![0, 1, 1], vec![1, 0, 1], vec![1, 1, 0]])?;
/// assert_eq!(shift(&d, &Bandwidth::uniform(1.0)?)?.makespan_s(), 2.0);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn shift(matrix: &TrafficMatrix, bandwidth: &Bandwidth) -> Result<Timetable, ScheduleError> {
    simulate(&shift_order(matrix), bandwidth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triangular_offsets_cover_every_offset_once() {
        assert_eq!(
            triangular_offsets(16),
            vec![0, 1, 3, 6, 10, 15, 5, 12, 4, 13, 7, 2, 14, 11, 9, 8]
        );
        for count in 1..40 {
            let mut o = triangular_offsets(count);
            o.sort_unstable();
            assert_eq!(o, (0..count).collect::<Vec<_>>());
        }
    }

    #[test]
    fn nccl_order_visits_every_peer_once_and_checks_nodes() {
        let d = TrafficMatrix::from_rows(&vec![vec![1.0; 12]; 12]).unwrap();
        for per_node in [1, 2, 3, 4, 6, 12] {
            for (i, row) in nccl_order(&d, per_node).unwrap().iter().enumerate() {
                let mut dsts: Vec<usize> = row.iter().map(|f| f.dst).collect();
                // The own node's peers come first.
                assert!(
                    dsts[..per_node - 1]
                        .iter()
                        .all(|&j| j / per_node == i / per_node)
                );
                dsts.sort_unstable();
                assert_eq!(dsts, (0..12).filter(|&j| j != i).collect::<Vec<_>>());
            }
        }
        assert!(matches!(
            nccl_order(&d, 5),
            Err(ScheduleError::Input(
                comm_cost_model::InputError::NotDivisible { .. }
            ))
        ));
        assert!(matches!(
            nccl_order(&d, 0),
            Err(ScheduleError::Input(
                comm_cost_model::InputError::CountTooSmall { .. }
            ))
        ));
    }
}
