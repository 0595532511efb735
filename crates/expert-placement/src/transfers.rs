//! Moves between two placements: which expert copies must be transferred, from where, to where.

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use crate::error::PlacementError;
use crate::local_search::Origin;
use crate::model::PlacementCluster;
use crate::plan::check_map;
use comm_cost_model::{check_at_most, check_same_len};

/// Largest GPU count of [`transfer_counts`], `2^14` (a 2 GiB matrix).
pub const MAX_TRANSFER_MATRIX_GPUS: usize = 1 << 14;

/// One expert copy to transfer before a new placement takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExpertTransfer {
    /// The logical expert whose weights are copied.
    pub expert: usize,
    /// A GPU that holds the expert in the current placement.
    pub source_gpu: usize,
    /// The GPU that receives it (it did not hold the expert).
    pub destination_gpu: usize,
    /// The destination slot in the new placement.
    pub slot: usize,
}

/// Number of moves from `current` to `next`: replicas placed on a GPU that did not hold that
/// expert before (a replica that stays on its GPU, in any slot, is free).
///
/// # Errors
///
/// [`PlacementError::Input`] (`SizeMismatch`) unless both maps have one entry per slot,
/// [`PlacementError::Input`] (`IndexOutOfRange`) for an expert id `>= experts`, [`PlacementError::Input`] (`TooLarge`)
/// above [`crate::MAX_PLACEMENT_SLOTS`] experts or [`crate::MAX_GPU_EXPERT_PAIRS`] GPU-expert
/// pairs.
///
/// # Complexity
///
/// `O(R + G · E / 64)`.
///
/// # Examples
///
/// ```
/// use expert_placement::{PlacementCluster, count_moves};
///
/// let c = PlacementCluster::uniform(2, 2, 1)?;
/// // GPU 0 keeps expert 0 (in another slot) and receives 2; GPU 1 is unchanged.
/// assert_eq!(count_moves(&[0, 1, 1, 2], &[2, 0, 1, 2], &c, 3)?, 1);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn count_moves(
    current: &[usize],
    next: &[usize],
    cluster: &PlacementCluster,
    experts: usize,
) -> Result<usize, PlacementError> {
    Ok(new_copies(current, next, cluster, experts)?.len())
}

/// The transfers that turn `current` into `next`, one per move ([`count_moves`]).
///
/// Each copy comes from a GPU holding the expert in `current`: one in the destination's node if
/// there is one, and among the candidates the one with the fewest sends so far (ties: lowest
/// id), so senders are spread. Copies with the fewest candidate sources are assigned first.
///
/// # Errors
///
/// As [`count_moves`], plus [`PlacementError::MissingExpert`] when `current` lacks an expert of
/// `next`.
///
/// # Complexity
///
/// `O(R · c_max + T log T)` for `T` transfers.
///
/// # Examples
///
/// ```
/// use expert_placement::{ExpertTransfer, PlacementCluster, plan_transfers};
///
/// // Two nodes of two GPUs; expert 0 is on GPUs 0 and 2 and moves onto GPU 3.
/// let c = PlacementCluster::uniform(4, 1, 2)?;
/// let t = plan_transfers(&[0, 1, 0, 2], &[0, 1, 2, 0], &c, 3)?;
/// assert_eq!(t.len(), 2);
/// // GPU 3 gets expert 0 from GPU 2, in its own node.
/// assert!(t.contains(&ExpertTransfer { expert: 0, source_gpu: 2, destination_gpu: 3, slot: 3 }));
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn plan_transfers(
    current: &[usize],
    next: &[usize],
    cluster: &PlacementCluster,
    experts: usize,
) -> Result<Vec<ExpertTransfer>, PlacementError> {
    let copies = new_copies(current, next, cluster, experts)?;
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); experts];
    for (slot, &e) in current.iter().enumerate() {
        let g = cluster.gpu_of_slot(slot).unwrap_or(0);
        if holders[e].last() != Some(&g) {
            holders[e].push(g);
        }
    }
    if let Some(&(slot, _)) = copies.iter().find(|&&(_, e)| holders[e].is_empty()) {
        return Err(PlacementError::MissingExpert {
            what: "current placement (source of a transfer)",
            expert: next[slot],
        });
    }
    let node = cluster.node_of_gpu();
    let candidates = |slot: usize, e: usize| -> Vec<usize> {
        let d = cluster.gpu_of_slot(slot).unwrap_or(0);
        let local: Vec<usize> = holders[e]
            .iter()
            .copied()
            .filter(|&g| node[g] == node[d])
            .collect();
        if local.is_empty() {
            holders[e].clone()
        } else {
            local
        }
    };
    let mut order: Vec<(usize, usize, Vec<usize>)> = copies
        .into_iter()
        .map(|(slot, e)| (slot, e, candidates(slot, e)))
        .collect();
    order.sort_by_key(|(slot, _, c)| (c.len(), *slot));
    let mut sends = vec![0usize; cluster.gpus()];
    let mut out: Vec<ExpertTransfer> = order
        .into_iter()
        .map(|(slot, expert, c)| {
            let source_gpu = c.into_iter().min_by_key(|&g| (sends[g], g)).unwrap_or(0);
            sends[source_gpu] += 1;
            ExpertTransfer {
                expert,
                source_gpu,
                destination_gpu: cluster.gpu_of_slot(slot).unwrap_or(0),
                slot,
            }
        })
        .collect();
    out.sort_by_key(|t| t.slot);
    Ok(out)
}

/// How many expert copies each GPU sends to each other GPU (`[source][destination]`): the
/// traffic of a rebalance in units of one expert's weights.
///
/// # Errors
///
/// [`PlacementError::Input`] (`IndexOutOfRange`) for a GPU id `>= gpus`, [`PlacementError::Input`] (`TooLarge`) above
/// [`MAX_TRANSFER_MATRIX_GPUS`] GPUs.
///
/// # Complexity
///
/// `O(G² + T)` time and `O(G²)` space.
///
/// # Examples
///
/// ```
/// use expert_placement::{ExpertTransfer, transfer_counts};
///
/// let t = [ExpertTransfer { expert: 0, source_gpu: 1, destination_gpu: 0, slot: 0 }];
/// assert_eq!(transfer_counts(&t, 2)?, vec![vec![0, 0], vec![1, 0]]);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn transfer_counts(
    transfers: &[ExpertTransfer],
    gpus: usize,
) -> Result<Vec<Vec<u64>>, PlacementError> {
    check_at_most("GPUs of a transfer matrix", MAX_TRANSFER_MATRIX_GPUS, gpus)?;
    let mut m = vec![vec![0u64; gpus]; gpus];
    for t in transfers {
        for g in [t.source_gpu, t.destination_gpu] {
            if g >= gpus {
                return Err(PlacementError::Input(InputError::index_out_of_range(
                    "transfer GPU",
                    g,
                    gpus,
                )));
            }
        }
        m[t.source_gpu][t.destination_gpu] += 1;
    }
    Ok(m)
}

/// `(slot, expert)` of every replica of `next` on a GPU that did not hold the expert in
/// `current`, in slot order.
fn new_copies(
    current: &[usize],
    next: &[usize],
    cluster: &PlacementCluster,
    experts: usize,
) -> Result<Vec<(usize, usize)>, PlacementError> {
    check_same_len("current placement", current.len(), cluster.total_slots())?;
    check_same_len("next placement", next.len(), cluster.total_slots())?;
    cluster.check_pairs(experts)?;
    for (what, map) in [("current placement", current), ("next placement", next)] {
        if let Some(&e) = map.iter().find(|&&e| e >= experts) {
            return Err(PlacementError::Input(InputError::index_out_of_range(
                what, e, experts,
            )));
        }
    }
    let gpu_of_slot = cluster.gpu_of_each_slot();
    let origin = Origin::new(&gpu_of_slot, current, cluster.gpus(), experts);
    Ok(next
        .iter()
        .enumerate()
        .filter(|&(s, &e)| !origin.holds(gpu_of_slot[s], e))
        .map(|(s, &e)| (s, e))
        .collect())
}

/// Validates a current placement for rebalancing (every expert present).
pub(crate) fn check_current(
    current: &[usize],
    experts: usize,
    cluster: &PlacementCluster,
) -> Result<(), PlacementError> {
    check_map("current placement", current, experts, cluster)
}
