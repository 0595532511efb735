//! Minimum-total-weight perfect matching (the assignment problem) by the Hungarian method.

use crate::allowed::Allowed;
use crate::error::BipartiteError;
use crate::matching::WeightedMatching;
use crate::matrix::SquareMatrix;

/// Minimum-total-weight perfect matching of a square matrix, avoiding `forbidden` pairs.
///
/// The Hungarian method (Kuhn 1955, Munkres 1957) in its shortest-augmenting-path form with
/// row and column potentials. Not in Aurora; the crate uses it to pick, among all
/// bottleneck-optimal matchings, one of least total weight ([`crate::TieBreak::MinTotalWeight`]).
///
/// # Errors
///
/// [`BipartiteError::Input`] (`IndexOutOfRange`) for a forbidden pair outside the matrix,
/// [`BipartiteError::NoPerfectMatching`] when the allowed pairs admit no perfect matching,
/// [`BipartiteError::Input`] (`NonFinite`) when the least total weight overflows (weights near
/// `f64::MAX`).
///
/// # Complexity
///
/// `O(n^3)` time, `O(n)` extra space.
///
/// # Examples
///
/// ```
/// use bipartite::{SquareMatrix, min_cost_perfect_matching};
///
/// let w = SquareMatrix::from_rows(&[vec![4.0, 1.0, 3.0], vec![2.0, 0.0, 5.0], vec![3.0, 2.0, 2.0]])?;
/// let m = min_cost_perfect_matching(&w, &[])?;
/// // 1 + 2 + 2 = 5 is the least total.
/// assert_eq!(m.assignment, vec![1, 0, 2]);
/// assert_eq!(m.total_weight, 5.0);
/// # Ok::<(), bipartite::BipartiteError>(())
/// ```
pub fn min_cost_perfect_matching(
    weights: &SquareMatrix,
    forbidden: &[(usize, usize)],
) -> Result<WeightedMatching, BipartiteError> {
    let allowed = Allowed::new(weights.n(), forbidden)?;
    let assignment = hungarian(weights.n(), |i, j| {
        weights.get(i, j).filter(|_| allowed.allows(i, j))
    })?;
    WeightedMatching::new(weights, assignment)
}

/// Core of the Hungarian method on an implicit cost function (`None` = forbidden pair).
/// Returns `assignment[row] = column`.
pub(crate) fn hungarian(
    n: usize,
    cost: impl Fn(usize, usize) -> Option<f64>,
) -> Result<Vec<usize>, BipartiteError> {
    // 1-based arrays with index 0 as the virtual start column, as in the classic formulation.
    let mut u = vec![0.0f64; n + 1];
    let mut v = vec![0.0f64; n + 1];
    let mut owner = vec![0usize; n + 1];
    let mut way = vec![0usize; n + 1];
    let mut min_slack = vec![f64::INFINITY; n + 1];
    let mut used = vec![false; n + 1];
    for row in 1..=n {
        owner[0] = row;
        let mut col0 = 0;
        min_slack.fill(f64::INFINITY);
        used.fill(false);
        loop {
            used[col0] = true;
            let row0 = owner[col0];
            let mut delta = f64::INFINITY;
            let mut col1 = 0;
            for col in 1..=n {
                if used[col] {
                    continue;
                }
                if let Some(c) = cost(row0 - 1, col - 1) {
                    let reduced = c - u[row0] - v[col];
                    if reduced < min_slack[col] {
                        min_slack[col] = reduced;
                        way[col] = col0;
                    }
                }
                if min_slack[col] < delta {
                    delta = min_slack[col];
                    col1 = col;
                }
            }
            if col1 == 0 {
                // No allowed column is reachable: Hall's condition fails for this row set.
                return Err(BipartiteError::NoPerfectMatching {
                    matched: row - 1,
                    n,
                });
            }
            for col in 0..=n {
                if used[col] {
                    u[owner[col]] += delta;
                    v[col] -= delta;
                } else {
                    min_slack[col] -= delta;
                }
            }
            col0 = col1;
            if owner[col0] == 0 {
                break;
            }
        }
        // Flip the alternating path back to the start column.
        while col0 != 0 {
            let prev = way[col0];
            owner[col0] = owner[prev];
            col0 = prev;
        }
    }
    let mut assignment = vec![0; n];
    for col in 1..=n {
        assignment[owner[col] - 1] = col - 1;
    }
    Ok(assignment)
}
