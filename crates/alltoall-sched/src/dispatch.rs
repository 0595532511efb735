//! The dispatch all-to-all of an MoE layer whose experts are replicated, many per GPU.
//!
//! A router trace says how many tokens each source GPU routes to each *logical* expert. A
//! placement says which GPUs hold a replica of each expert. What goes over the network is the
//! GPU-to-GPU matrix that follows once every source has chosen, for each expert, which replica
//! serves its tokens; the combine is its transpose (Aurora §2.2).

use comm_cost_model::InputError;
use comm_cost_model::check_non_negative;
use serde::{Deserialize, Serialize};

use crate::{MAX_GPUS, ScheduleError, TrafficMatrix};
use comm_cost_model::check_same_len;

/// Where a layer's routed tokens go: GPU to GPU, and which expert replica computes them.
///
/// # Examples
///
/// ```
/// use alltoall_sched::dispatch_tokens;
/// // 2 GPUs in one node; expert 0 on both, expert 1 on GPU 1 only.
/// let routed = vec![vec![4.0, 3.0], vec![2.0, 1.0]];
/// let d = dispatch_tokens(&routed, &[vec![0], vec![0, 1]], &[0, 0])?;
/// // GPU 0 keeps its 4 tokens of expert 0 (local replica) and sends 3 to GPU 1.
/// assert_eq!(d.gpu_tokens, vec![vec![4.0, 3.0], vec![0.0, 3.0]]);
/// assert_eq!(d.computed_tokens(), vec![4.0, 6.0]);
/// let bytes = d.traffic(10.0)?; // 10 bytes per token; the diagonal stays local
/// assert_eq!(bytes.to_rows(), vec![vec![0.0, 30.0], vec![0.0, 0.0]]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpertDispatch {
    /// `gpu_tokens[src][dst]`: tokens GPU `src` sends to GPU `dst`; the diagonal is what a GPU
    /// serves with its own replicas (no network).
    pub gpu_tokens: Vec<Vec<f64>>,
    /// `expert_tokens[g][e]`: tokens of expert `e` that GPU `g`'s replica computes.
    pub expert_tokens: Vec<Vec<f64>>,
}

impl ExpertDispatch {
    /// Tokens each GPU computes (local and received): the expert work of Aurora's Eq. 1.
    #[must_use]
    pub fn computed_tokens(&self) -> Vec<f64> {
        self.expert_tokens
            .iter()
            .map(|row| row.iter().sum())
            .collect()
    }

    /// The dispatch traffic in bytes (`bytes_per_token` = hidden size x bytes per element), with
    /// the local diagonal left out.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Input`] for a negative or non-finite `bytes_per_token`;
    /// [`ScheduleError::InvalidTraffic`] if a product overflows to infinity, and the errors of
    /// [`TrafficMatrix::from_rows`] (a ragged or negative table, a line sum beyond `f64`).
    pub fn traffic(&self, bytes_per_token: f64) -> Result<TrafficMatrix, ScheduleError> {
        let b = check_non_negative("bytes per token", bytes_per_token)?;
        let rows: Vec<Vec<f64>> = self
            .gpu_tokens
            .iter()
            .enumerate()
            .map(|(i, row)| {
                row.iter()
                    .enumerate()
                    .map(|(j, &t)| if i == j { 0.0 } else { t * b })
                    .collect()
            })
            .collect();
        TrafficMatrix::from_rows(&rows)
    }
}

/// Chooses a replica for every (source GPU, expert) pair of a router trace and returns the
/// resulting dispatch.
///
/// The rule, applied to the tokens of each source for each expert as one message:
/// 1. a replica on the source GPU serves them (no network);
/// 2. otherwise the replicas in the source's node are the candidates, and if there are none,
///    every replica;
/// 3. among the candidates, the GPU with the fewest tokens assigned so far takes them (ties to
///    the lowest GPU index). Messages are assigned largest first, after all local ones, so the
///    greedy balances like longest-processing-time-first.
///
/// Tokens are never split across replicas, so each source sends each expert's tokens to one
/// GPU: every token is delivered exactly once.
///
/// # Errors
///
/// [`ScheduleError::Input`] (`Empty`) for no GPU; [`ScheduleError::Input`] (`SizeMismatch`) when `experts_of_gpu`
/// or `node_of_gpu` does not have one entry per GPU or a row of `routed` one entry per expert;
/// [`ScheduleError::Input`] (`IndexOutOfRange`) for an expert id `>=` the expert count;
/// [`ScheduleError::NoReplica`] for an expert no GPU holds; [`ScheduleError::InvalidTraffic`]
/// for a negative or non-finite token count; [`ScheduleError::Input`] (`TooLarge`) above
/// [`crate::MAX_GPUS`] GPUs; [`ScheduleError::Input`] (`Overflow`) if the tokens a GPU sends to another
/// or computes exceed the `f64` range.
///
/// # Complexity
///
/// `O(G·E + M log M)` for `M <= G·E` remote messages, plus `O(c_e)` candidates per message.
///
/// # Examples
///
/// ```
/// use alltoall_sched::dispatch_tokens;
/// // 4 GPUs in 2 nodes; expert 0 replicated on GPUs 1 and 2, expert 1 on GPU 3.
/// let experts_of_gpu = vec![vec![], vec![0], vec![0], vec![1]];
/// let routed = vec![vec![5.0, 1.0], vec![0.0, 0.0], vec![0.0, 0.0], vec![2.0, 0.0]];
/// let d = dispatch_tokens(&routed, &experts_of_gpu, &[0, 0, 1, 1])?;
/// // GPU 0's expert-0 tokens stay in node 0 (GPU 1); GPU 3's go to GPU 2, in its node.
/// assert_eq!(d.gpu_tokens[0], vec![0.0, 5.0, 0.0, 1.0]);
/// assert_eq!(d.gpu_tokens[3], vec![0.0, 0.0, 2.0, 0.0]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn dispatch_tokens(
    routed: &[Vec<f64>],
    experts_of_gpu: &[Vec<usize>],
    node_of_gpu: &[usize],
) -> Result<ExpertDispatch, ScheduleError> {
    let g = routed.len();
    if g == 0 {
        return Err(ScheduleError::EMPTY);
    }
    crate::error::check_gpus("GPUs of a dispatch", g)?;
    check_same_len("placement rows (one per GPU)", experts_of_gpu.len(), g)?;
    check_same_len("node_of_gpu (one per GPU)", node_of_gpu.len(), g)?;
    let e = routed[0].len();
    let replicas = replicas_of(experts_of_gpu, e)?;
    for (src, row) in routed.iter().enumerate() {
        check_same_len("routed tokens per source (one per expert)", row.len(), e)?;
        for (expert, &t) in row.iter().enumerate() {
            crate::error::check_traffic(src, expert, t)?;
        }
    }
    let mut out = ExpertDispatch {
        gpu_tokens: vec![vec![0.0; g]; g],
        expert_tokens: vec![vec![0.0; e]; g],
    };
    let mut load = vec![0.0; g];
    let mut remote = Vec::new();
    for (src, row) in routed.iter().enumerate() {
        for (expert, &t) in row.iter().enumerate() {
            if t <= 0.0 {
                continue;
            }
            if replicas[expert].contains(&src) {
                out.assign(src, src, expert, t, &mut load);
            } else {
                remote.push((src, expert, t));
            }
        }
    }
    // Largest first; ties by (source, expert) so the result is deterministic.
    remote.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
    for (src, expert, t) in remote {
        let all = &replicas[expert];
        let near: Vec<usize> = all
            .iter()
            .copied()
            .filter(|&r| node_of_gpu[r] == node_of_gpu[src])
            .collect();
        let candidates = if near.is_empty() { all } else { &near };
        let dst = least_loaded(candidates, &load);
        out.assign(src, dst, expert, t, &mut load);
    }
    // Counts near `f64::MAX` added up to infinity (found by fuzzing). The entries are partial
    // sums of the loads, so finite loads and computed totals cover them.
    let totals = out.computed_tokens();
    let sent = out.gpu_tokens.iter().flatten();
    if !load
        .iter()
        .chain(&totals)
        .chain(sent)
        .all(|x| x.is_finite())
    {
        return Err(ScheduleError::Input(InputError::Overflow {
            what: "tokens a GPU sends or computes",
        }));
    }
    Ok(out)
}

impl ExpertDispatch {
    fn assign(&mut self, src: usize, dst: usize, expert: usize, t: f64, load: &mut [f64]) {
        self.gpu_tokens[src][dst] += t;
        self.expert_tokens[dst][expert] += t;
        load[dst] += t;
    }
}

/// The GPUs holding each expert (a GPU listed once even if it holds two replicas).
fn replicas_of(experts_of_gpu: &[Vec<usize>], e: usize) -> Result<Vec<Vec<usize>>, ScheduleError> {
    let mut replicas = vec![Vec::new(); e];
    for (gpu, experts) in experts_of_gpu.iter().enumerate() {
        for &x in experts {
            let list =
                replicas
                    .get_mut(x)
                    .ok_or(ScheduleError::Input(InputError::index_out_of_range(
                        "expert of a placement",
                        x,
                        e,
                    )))?;
            if list.last() != Some(&gpu) {
                list.push(gpu);
            }
        }
    }
    match replicas.iter().position(Vec::is_empty) {
        Some(expert) => Err(ScheduleError::NoReplica { expert }),
        None => Ok(replicas),
    }
}

/// The candidate with the least load (ties to the lowest index; candidates are in GPU order).
fn least_loaded(candidates: &[usize], load: &[f64]) -> usize {
    let mut best = candidates[0];
    for &c in &candidates[1..] {
        if load[c] < load[best] {
            best = c;
        }
    }
    best
}

/// A router trace from per-expert token counts, assuming every GPU is the source of an equal
/// share of each expert's tokens (data-parallel attention with balanced batches).
///
/// # Errors
///
/// [`ScheduleError::Input`] (`Empty`) for no GPU; [`ScheduleError::InvalidTraffic`] (source 0) for a
/// negative or non-finite count.
/// [`ScheduleError::Input`] (`TooLarge`) above [`crate::MAX_GPUS`] GPUs.
///
/// # Complexity
///
/// `O(G·E)`.
///
/// # Examples
///
/// ```
/// use alltoall_sched::uniform_sources;
/// assert_eq!(uniform_sources(&[8.0, 2.0], 2)?, vec![vec![4.0, 1.0], vec![4.0, 1.0]]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
pub fn uniform_sources(expert_tokens: &[f64], gpus: usize) -> Result<Vec<Vec<f64>>, ScheduleError> {
    if gpus == 0 {
        return Err(ScheduleError::EMPTY);
    }
    crate::error::check_gpus("GPUs of a router trace", gpus)?;
    // One row of experts per GPU: bound the whole table like an `n x n` matrix.
    let entries = gpus.saturating_mul(expert_tokens.len());
    if entries > MAX_GPUS * MAX_GPUS {
        return Err(ScheduleError::Input(InputError::too_large(
            "GPUs * experts of a router trace",
            MAX_GPUS * MAX_GPUS,
            entries,
        )));
    }
    for (e, &t) in expert_tokens.iter().enumerate() {
        crate::error::check_traffic(0, e, t)?;
    }
    let share: Vec<f64> = expert_tokens.iter().map(|&t| t / gpus as f64).collect();
    Ok(vec![share; gpus])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_is_delivered_once_to_a_replica() {
        let experts_of_gpu = vec![vec![0, 1], vec![1, 2], vec![2, 0], vec![3, 1]];
        let routed = vec![
            vec![3.0, 0.0, 7.0, 1.0],
            vec![2.0, 5.0, 0.0, 4.0],
            vec![6.0, 1.0, 1.0, 0.0],
            vec![0.0, 9.0, 2.0, 8.0],
        ];
        let d = dispatch_tokens(&routed, &experts_of_gpu, &[0, 0, 1, 1]).unwrap();
        for (src, row) in routed.iter().enumerate() {
            let sent: f64 = d.gpu_tokens[src].iter().sum();
            assert_eq!(sent, row.iter().sum::<f64>());
        }
        for e in 0..4 {
            let routed_e: f64 = routed.iter().map(|r| r[e]).sum();
            let served: f64 = d.expert_tokens.iter().map(|r| r[e]).sum();
            assert_eq!(routed_e, served);
            for (gpu, row) in d.expert_tokens.iter().enumerate() {
                assert!(row[e] == 0.0 || experts_of_gpu[gpu].contains(&e));
            }
        }
        // Local first: GPU 1 keeps its expert-1 tokens.
        assert_eq!(d.expert_tokens[1][1], 5.0);
        // Same node next: GPU 2's expert-1 token goes to GPU 3 (node 1), not GPU 0 or 1.
        assert_eq!(d.expert_tokens[3][1], 9.0 + 1.0);
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let ok = vec![vec![1.0, 1.0]];
        assert!(matches!(
            dispatch_tokens(&[], &[], &[]),
            Err(ScheduleError::Input(InputError::Empty { .. }))
        ));
        assert!(matches!(
            dispatch_tokens(&ok, &[vec![0]], &[0]),
            Err(ScheduleError::NoReplica { expert: 1 })
        ));
        assert!(matches!(
            dispatch_tokens(&ok, &[vec![0, 2]], &[0]),
            Err(ScheduleError::Input(InputError::IndexOutOfRange {
                index: 2,
                ..
            }))
        ));
        assert!(matches!(
            dispatch_tokens(&ok, &[vec![0, 1]], &[]),
            Err(ScheduleError::Input(InputError::SizeMismatch {
                actual: 0,
                ..
            }))
        ));
        assert!(matches!(
            dispatch_tokens(&[vec![1.0, f64::NAN]], &[vec![0, 1]], &[0]),
            Err(ScheduleError::InvalidTraffic { src: 0, dst: 1, .. })
        ));
        assert!(matches!(
            uniform_sources(&[1.0], 0),
            Err(ScheduleError::Input(InputError::Empty { .. }))
        ));
    }
}
