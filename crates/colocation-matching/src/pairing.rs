//! Colocating two models' experts on homogeneous GPUs (Aurora §6.2).

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use crate::dominance::Dominance;
use bipartite::{BottleneckOptions, TieBreak, bottleneck_assignment};
use comm_cost_model::{MAX_MATRIX_SIDE, check_non_negative};

use crate::error::MatchingError;
use crate::loads::ExpertLoads;
use bipartite::SquareMatrix;
use comm_cost_model::{check_at_most, check_same_len};

/// Experts of models A and B paired on GPUs, with each GPU's aggregated traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpertPairing {
    /// `pairs[g] = [expert_of_a, expert_of_b]` hosted by GPU `g`; GPU `g` hosts expert `g` of A.
    pub pairs: Vec<[usize; 2]>,
    /// Bytes each GPU sends in the aggregated first all-to-all (`a_i + b_j`).
    pub gpu_send_bytes: Vec<f64>,
    /// Bytes each GPU receives (`a_{n+i} + b_{n+j}`).
    pub gpu_recv_bytes: Vec<f64>,
    /// The largest per-GPU send or receive total: the aggregated all-to-all's lower bound in bytes
    /// (Aurora Theorem 4.2 on the combined traffic matrix).
    pub bottleneck_bytes: f64,
}

impl ExpertPairing {
    /// Scores the pairing where expert `i` of A shares a GPU with expert `b_of_a[i]` of B.
    ///
    /// # Errors
    ///
    /// [`MatchingError::Input`] (`SizeMismatch`) when the sizes differ, [`MatchingError::Input`] (`IndexOutOfRange`)
    /// when `b_of_a` is not a permutation, [`MatchingError::Input`] when a GPU's bytes overflow to
    /// infinity.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::{ExpertLoads, ExpertPairing};
    ///
    /// let a = ExpertLoads::new(vec![4.0, 1.0], vec![2.0, 3.0])?;
    /// let b = ExpertLoads::new(vec![0.5, 2.0], vec![5.0, 1.0])?;
    /// let p = ExpertPairing::evaluate(&a, &b, &[1, 0])?;
    /// assert_eq!(p.gpu_send_bytes, vec![4.0 + 2.0, 1.0 + 0.5]);
    /// assert_eq!(p.gpu_recv_bytes, vec![2.0 + 1.0, 3.0 + 5.0]);
    /// assert_eq!(p.bottleneck_bytes, 8.0);
    /// # Ok::<(), colocation_matching::MatchingError>(())
    /// ```
    pub fn evaluate(
        a: &ExpertLoads,
        b: &ExpertLoads,
        b_of_a: &[usize],
    ) -> Result<Self, MatchingError> {
        check_same_len("experts of model A vs model B", a.len(), b.len())?;
        check_same_len("pairing vs experts", b_of_a.len(), a.len())?;
        check_permutation(b_of_a)?;
        let gpu_send_bytes: Vec<f64> = b_of_a
            .iter()
            .enumerate()
            .map(|(i, &j)| a.send_bytes[i] + b.send_bytes[j])
            .collect();
        let gpu_recv_bytes: Vec<f64> = b_of_a
            .iter()
            .enumerate()
            .map(|(i, &j)| a.recv_bytes[i] + b.recv_bytes[j])
            .collect();
        let bottleneck_bytes = gpu_send_bytes
            .iter()
            .chain(&gpu_recv_bytes)
            .fold(0.0, |m, &x| f64::max(m, x));
        // Finite inputs near f64::MAX can sum to infinity: an error, not an `Ok(inf)`.
        let bottleneck_bytes =
            comm_cost_model::check_finite_result("colocated GPU bytes", bottleneck_bytes)?;
        Ok(Self {
            pairs: b_of_a.iter().enumerate().map(|(i, &j)| [i, j]).collect(),
            gpu_send_bytes,
            gpu_recv_bytes,
            bottleneck_bytes,
        })
    }

    /// `b_of_a[i]`: the B expert sharing a GPU with A expert `i`.
    #[must_use]
    pub fn b_of_a(&self) -> Vec<usize> {
        self.pairs.iter().map(|p| p[1]).collect()
    }
}

/// Checks that `perm` is a permutation of `0..perm.len()`.
pub(crate) fn check_permutation(perm: &[usize]) -> Result<(), MatchingError> {
    let mut seen = vec![false; perm.len()];
    for &j in perm {
        if j >= perm.len() || seen[j] {
            return Err(MatchingError::Input(InputError::index_out_of_range(
                "permutation entry (out of range or repeated)",
                j,
                perm.len(),
            )));
        }
        seen[j] = true;
    }
    Ok(())
}

/// Optimal pairing when every GPU sends what it receives: Aurora §6.2 Case I, Theorem 6.2.
///
/// Sort A's loads ascending and B's descending and pair them in order; the largest sum is then
/// the least possible (the theorem's exchange argument).
///
/// # Errors
///
/// [`MatchingError::Input`] (`Empty`, `SizeMismatch`) for different lengths,
/// [`MatchingError::Input`] (`InvalidEntry`) for NaN, infinite or negative loads.
///
/// # Complexity
///
/// `O(n log n)` time.
///
/// # Examples
///
/// ```
/// use colocation_matching::pair_sorted;
///
/// let p = pair_sorted(&[1.0, 5.0, 3.0], &[2.0, 6.0, 4.0])?;
/// // 1↔6, 3↔4, 5↔2: every GPU carries 7.
/// assert_eq!(p.pairs, vec![[0, 1], [1, 0], [2, 2]]);
/// assert_eq!(p.bottleneck_bytes, 7.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn pair_sorted(a_bytes: &[f64], b_bytes: &[f64]) -> Result<ExpertPairing, MatchingError> {
    let a = ExpertLoads::symmetric(a_bytes.to_vec())?;
    let b = ExpertLoads::symmetric(b_bytes.to_vec())?;
    check_same_len("experts of model A vs model B", a.len(), b.len())?;
    let ascending = |v: &[f64]| {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&x, &y| v[x].total_cmp(&v[y]).then(x.cmp(&y)));
        idx
    };
    let a_order = ascending(a_bytes);
    let mut b_order = ascending(b_bytes);
    b_order.reverse();
    let mut b_of_a = vec![0; a.len()];
    for (&i, &j) in a_order.iter().zip(&b_order) {
        b_of_a[i] = j;
    }
    ExpertPairing::evaluate(&a, &b, &b_of_a)
}

/// Options of [`pair_bottleneck`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PairingOptions {
    /// Aurora footnote 4: model B's gate time expressed in bytes (gate seconds × GPU bandwidth).
    /// B's traffic on a GPU cannot start before B's gate ends, so the weight uses
    /// `max(b_j, gate_b_bytes)`. Zero gives Eq. 6 exactly. As the footnote says, the gate never
    /// changes which pairing is optimal (the gated weight is `max(w_ij, c_i)` with `c_i`
    /// independent of `j`; see `docs/algorithms.md`), only the objective's value.
    pub gate_b_bytes: f64,
    /// Which optimal pairing to return.
    pub tie_break: TieBreak,
}

/// Optimal pairing of two models' experts for any send/receive loads: Aurora §6.2 Case II.
///
/// Minimizes the largest weight `max(a_i + b_j, a_{n+i} + b_{n+j})` of a pairing (or the
/// footnote-4 weight `max(a_i + max(b_j, G), a_{n+i} + max(b_{n+j}, G))` when
/// [`PairingOptions::gate_b_bytes`] `= G > 0`). Aurora builds the complete bipartite graph and runs
/// a bottleneck matching (`O(n^2.5 log n)`); this weight structure allows better: an edge is below
/// a threshold iff B's (send, receive) point is dominated by a point of A's, and for dominance
/// graphs a greedy sweep finds a maximum matching in `O(n log n)`. The threshold is found by
/// median splitting of the candidate weights, `O(n^2)` in total, without storing the matrix. With
/// [`TieBreak::MinTotalWeight`] it builds the matrix and uses [`crate::bottleneck_matching`]. The
/// returned loads and `bottleneck_bytes` are the true bytes (without the gate adjustment).
///
/// Models with different expert counts: pad the smaller one with [`ExpertLoads::padded`].
///
/// # Errors
///
/// [`MatchingError::Input`] (`SizeMismatch`) for different expert counts, [`MatchingError::Input`] for a NaN,
/// infinite or negative gate or a GPU's bytes that overflow (loads near `f64::MAX`),
/// [`MatchingError::Input`] (`TooLarge`) above [`comm_cost_model::MAX_MATRIX_SIDE`] experts (the candidate
/// weights take up to `n^2` words, like the matrix they stand for).
///
/// # Complexity
///
/// `O(n^2 + n log^2 n)` time and `O(n^2)` worst-case space for the candidate weights (usually far
/// less); [`TieBreak::MinTotalWeight`] adds the matrix and an `O(n^3)` Hungarian pass.
///
/// # Examples
///
/// ```
/// use colocation_matching::{ExpertLoads, PairingOptions, pair_bottleneck};
///
/// // A's expert 0 sends a lot but receives little, expert 1 the opposite; B likewise.
/// let a = ExpertLoads::new(vec![10.0, 1.0], vec![1.0, 10.0])?;
/// let b = ExpertLoads::new(vec![9.0, 2.0], vec![2.0, 9.0])?;
/// let p = pair_bottleneck(&a, &b, &PairingOptions::default())?;
/// // Heavy senders must not share a GPU: 0↔0 would send 10 + 9 = 19; 0↔1 and 1↔0 give
/// // sends (12, 10) and receives (10, 12).
/// assert_eq!(p.pairs, vec![[0, 1], [1, 0]]);
/// assert_eq!(p.bottleneck_bytes, 12.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn pair_bottleneck(
    a: &ExpertLoads,
    b: &ExpertLoads,
    options: &PairingOptions,
) -> Result<ExpertPairing, MatchingError> {
    check_same_len("experts of model A vs model B", a.len(), b.len())?;
    check_at_most("experts (Case II pairing)", MAX_MATRIX_SIDE, a.len())?;
    let gate = check_non_negative("gate_b_bytes", options.gate_b_bytes)?;
    let b_of_a = match options.tie_break {
        TieBreak::Any => dominance_pairing(a, b, gate),
        _ => {
            // Pairs whose gated bytes overflow are forbidden; if that leaves no pairing, every
            // pairing overflows under the gate and the sweep (exact on the same sums) decides.
            let (weights, overflow) = pair_weights(a, b, gate)?;
            let bottleneck_options = BottleneckOptions {
                forbidden: overflow,
                tie_break: options.tie_break,
                ..BottleneckOptions::default()
            };
            match bottleneck_assignment(&weights, &bottleneck_options) {
                Err(bipartite::BipartiteError::NoPerfectMatching { .. }) => {
                    dominance_pairing(a, b, gate)
                }
                assignment => assignment?,
            }
        }
    };
    ExpertPairing::evaluate(a, b, &b_of_a)
}

/// The optimal pairing by the dominance sweep (no matrix).
fn dominance_pairing(a: &ExpertLoads, b: &ExpertLoads, gate: f64) -> Vec<usize> {
    let gated = |v: &[f64]| v.iter().map(|&x| x.max(gate)).collect::<Vec<f64>>();
    let (b_send, b_recv) = (gated(&b.send_bytes), gated(&b.recv_bytes));
    Dominance {
        a_send: &a.send_bytes,
        a_recv: &a.recv_bytes,
        b_send: &b_send,
        b_recv: &b_recv,
    }
    .solve()
}

/// The Case II weight matrix (footnote-4 form; `gate = 0` is Eq. 6), with the pairs whose
/// bytes overflow (their entries are `f64::MAX`, so that the matrix stays valid).
pub(crate) fn pair_weights(
    a: &ExpertLoads,
    b: &ExpertLoads,
    gate: f64,
) -> Result<(SquareMatrix, Vec<(usize, usize)>), MatchingError> {
    let mut overflow = Vec::new();
    let weights = SquareMatrix::from_fn(a.len(), |i, j| {
        let send = a.send_bytes[i] + b.send_bytes[j].max(gate);
        let recv = a.recv_bytes[i] + b.recv_bytes[j].max(gate);
        let w = send.max(recv);
        if w.is_finite() {
            w
        } else {
            overflow.push((i, j));
            f64::MAX
        }
    })?;
    Ok((weights, overflow))
}
