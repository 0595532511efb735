//! Weight migration in engine-sized steps: the copies of a rebalance grouped into rounds in
//! which every GPU sends at most `peer_limit` copies and receives at most `peer_limit`.

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use crate::error::PlacementError;
use crate::transfers::ExpertTransfer;

/// Largest `GPUs x copies per GPU` table [`transfer_rounds`] builds, `2^26` entries (two tables
/// of `usize`, 1 GiB at most).
pub const MAX_ROUND_TABLE_ENTRIES: usize = 1 << 26;

/// A rebalance's copies in rounds; each round's copies run at once, rounds one after another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferRounds {
    /// Copies one GPU may send, and receive, in one round.
    pub peer_limit: usize,
    /// Per round, the indices (into the transfer list given) of its copies, ascending.
    pub rounds: Vec<Vec<usize>>,
    /// The largest number of copies one GPU sends or receives over the whole list.
    pub max_copies_per_gpu: usize,
    /// `ceil(max_copies_per_gpu / peer_limit)`: no grouping needs fewer rounds, and
    /// [`transfer_rounds`] always meets it.
    pub lower_bound: usize,
}

/// Groups `transfers` into the fewest rounds in which every GPU sends at most `peer_limit`
/// copies and receives at most `peer_limit` (one peer at a time with `peer_limit = 1`, as
/// vLLM issue 31671 / PR 52641 and SGLang RFC 39192 ask for weight migration).
///
/// The copies form a bipartite multigraph (senders on one side, receivers on the other). By
/// König's edge-colouring theorem its edges split into `Δ` matchings, `Δ` the largest number of
/// copies one GPU sends or receives; they are found by the alternating-path recolouring
/// (colour each edge with a colour free at both ends, after swapping two colours along a path
/// if needed). Round `r` takes matchings `r · peer_limit .. (r + 1) · peer_limit`, so every GPU
/// has at most `peer_limit` copies out and in per round and there are `ceil(Δ / peer_limit)`
/// rounds, which is optimal: the busiest GPU alone needs that many. A GPU may send and receive
/// in the same round.
///
/// # Errors
///
/// [`PlacementError::Input`] (`Empty`) when `peer_limit` is 0, [`PlacementError::Input`] (`IndexOutOfRange`) for a
/// GPU id `>= gpus`, [`PlacementError::Input`] (`TooLarge`) when `gpus x Δ` exceeds
/// [`MAX_ROUND_TABLE_ENTRIES`] (checked before the tables are allocated).
///
/// # Complexity
///
/// `O(T · (Δ + G))` time for `T` copies on `G` GPUs, `O(G · Δ)` space.
///
/// # Examples
///
/// ```
/// use expert_placement::{ExpertTransfer, transfer_rounds};
///
/// let copy = |expert, source_gpu, destination_gpu| ExpertTransfer {
///     expert, source_gpu, destination_gpu, slot: 0,
/// };
/// // GPU 0 sends to GPUs 1 and 2, GPU 1 sends to GPU 2: GPU 2 receives twice.
/// let t = [copy(0, 0, 1), copy(1, 0, 2), copy(2, 1, 2)];
/// let r = transfer_rounds(&t, 3, 1)?;
/// assert_eq!((r.rounds.len(), r.lower_bound), (2, 2));
/// // Everything at once when a GPU may talk to two peers.
/// assert_eq!(transfer_rounds(&t, 3, 2)?.rounds, vec![vec![0, 1, 2]]);
/// # Ok::<(), expert_placement::PlacementError>(())
/// ```
pub fn transfer_rounds(
    transfers: &[ExpertTransfer],
    gpus: usize,
    peer_limit: usize,
) -> Result<TransferRounds, PlacementError> {
    if peer_limit == 0 {
        return Err(PlacementError::Input(InputError::Empty {
            what: "peer_limit (copies a GPU may send or receive per round)",
        }));
    }
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
    }
    // GPUs renumbered densely per side (only those with a copy), so the tables grow with the
    // transfer list, not with the cluster.
    let (senders, sends) = dense(transfers.iter().map(|t| t.source_gpu));
    let (receivers, receives) = dense(transfers.iter().map(|t| t.destination_gpu));
    let degree = sends.iter().chain(&receives).copied().max().unwrap_or(0);
    let entries = sends.len().max(receives.len()).saturating_mul(degree);
    if entries > MAX_ROUND_TABLE_ENTRIES {
        return Err(PlacementError::Input(InputError::too_large(
            "transfer-round table entries (GPUs with a copy x most copies on one GPU)",
            MAX_ROUND_TABLE_ENTRIES,
            entries,
        )));
    }
    let edges: Vec<[usize; 2]> = senders
        .into_iter()
        .zip(receivers)
        .map(|(s, r)| [s, r])
        .collect();
    let colour = edge_colouring(&edges, sends.len().max(receives.len()), degree);
    let lower_bound = degree.div_ceil(peer_limit);
    let mut rounds = vec![Vec::new(); lower_bound];
    for (i, &c) in colour.iter().enumerate() {
        rounds[c / peer_limit].push(i);
    }
    Ok(TransferRounds {
        peer_limit,
        rounds,
        max_copies_per_gpu: degree,
        lower_bound,
    })
}

/// No edge: an empty cell of a colour table.
const NONE: usize = usize::MAX;

/// Each id's dense number (in order of first appearance) and how often each dense number
/// occurs.
fn dense(ids: impl Iterator<Item = usize>) -> (Vec<usize>, Vec<usize>) {
    let mut number = std::collections::HashMap::new();
    let mut count = Vec::new();
    let numbered = ids
        .map(|g| {
            let n = *number.entry(g).or_insert_with(|| {
                count.push(0);
                count.len() - 1
            });
            count[n] += 1;
            n
        })
        .collect();
    (numbered, count)
}

/// A proper edge colouring with `degree` colours of the bipartite multigraph whose edges are
/// `[sender, receiver]` (both below `gpus`): every edge's colour, each below `degree`.
fn edge_colouring(edges: &[[usize; 2]], gpus: usize, degree: usize) -> Vec<usize> {
    // at[side][g * degree + c]: the edge of colour c at GPU g as sender (side 0) or receiver
    // (side 1).
    let mut at = [vec![NONE; gpus * degree], vec![NONE; gpus * degree]];
    let mut colour = vec![NONE; edges.len()];
    let ends = |e: usize| edges[e];
    for e in 0..edges.len() {
        let [u, v] = ends(e);
        let free = |table: &[usize], g: usize| {
            (0..degree)
                .find(|&c| table[g * degree + c] == NONE)
                .unwrap_or(0)
        };
        let a = free(&at[0], u);
        let b = free(&at[1], v);
        if at[1][v * degree + a] != NONE {
            // Swap a and b along the path from receiver v that starts with colour a; it never
            // reaches sender u (senders are entered by a-edges and u has none), so a becomes
            // free at v and stays free at u.
            let mut path = Vec::new();
            let (mut side, mut g, mut c) = (1, v, a);
            loop {
                let edge = at[side][g * degree + c];
                if edge == NONE {
                    break;
                }
                path.push(edge);
                side = 1 - side;
                g = ends(edge)[side];
                c = if c == a { b } else { a };
            }
            for &edge in &path {
                let [s, r] = ends(edge);
                at[0][s * degree + colour[edge]] = NONE;
                at[1][r * degree + colour[edge]] = NONE;
            }
            for &edge in &path {
                let [s, r] = ends(edge);
                colour[edge] = if colour[edge] == a { b } else { a };
                at[0][s * degree + colour[edge]] = edge;
                at[1][r * degree + colour[edge]] = edge;
            }
        }
        colour[e] = a;
        at[0][u * degree + a] = e;
        at[1][v * degree + a] = e;
    }
    colour
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(source_gpu: usize, destination_gpu: usize) -> ExpertTransfer {
        ExpertTransfer {
            expert: 0,
            source_gpu,
            destination_gpu,
            slot: 0,
        }
    }

    /// Every round respects the limit and every copy is in exactly one round.
    fn check(t: &[ExpertTransfer], gpus: usize, r: &TransferRounds) {
        let mut seen = vec![0; t.len()];
        for round in &r.rounds {
            assert!(!round.is_empty());
            let (mut out, mut into) = (vec![0; gpus], vec![0; gpus]);
            for &i in round {
                seen[i] += 1;
                out[t[i].source_gpu] += 1;
                into[t[i].destination_gpu] += 1;
            }
            assert!(out.iter().chain(&into).all(|&c| c <= r.peer_limit));
        }
        assert!(seen.iter().all(|&s| s == 1));
        assert_eq!(r.rounds.len(), r.lower_bound);
    }

    #[test]
    fn a_path_swap_is_needed_and_the_bound_is_met() {
        // A 4-cycle plus chords in an order that forces a recolouring.
        let t = [
            copy(0, 1),
            copy(1, 2),
            copy(2, 3),
            copy(3, 0),
            copy(0, 2),
            copy(2, 0),
            copy(1, 0),
            copy(3, 2),
        ];
        for limit in 1..=4 {
            let r = transfer_rounds(&t, 4, limit).unwrap();
            check(&t, 4, &r);
        }
    }

    #[test]
    fn parallel_copies_between_one_pair_take_one_round_each() {
        let t = [copy(0, 1), copy(0, 1), copy(0, 1)];
        let r = transfer_rounds(&t, 2, 1).unwrap();
        assert_eq!(r.rounds.len(), 3);
        check(&t, 2, &r);
        assert_eq!(transfer_rounds(&t, 2, 5).unwrap().rounds.len(), 1);
    }

    #[test]
    fn nothing_to_move_is_zero_rounds() {
        let r = transfer_rounds(&[], 4, 1).unwrap();
        assert!(r.rounds.is_empty());
        assert_eq!(r.lower_bound, 0);
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        assert!(matches!(
            transfer_rounds(&[copy(0, 1)], 2, 0),
            Err(PlacementError::Input(InputError::Empty { .. }))
        ));
        assert!(matches!(
            transfer_rounds(&[copy(0, 5)], 2, 1),
            Err(PlacementError::Input(InputError::IndexOutOfRange {
                index: 5,
                ..
            }))
        ));
        // A huge cluster with few copies is fine: the tables grow with the copies.
        let r = transfer_rounds(&[copy(0, 1 << 40)], usize::MAX, 1).unwrap();
        assert_eq!(r.rounds, vec![vec![0]]);
    }
}
