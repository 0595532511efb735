//! Bottleneck perfect matching: minimize the largest weight of a perfect matching.

use serde::{Deserialize, Serialize};

use crate::allowed::Allowed;
use crate::error::BipartiteError;
use crate::hopcroft_karp::{BipartiteGraph, PartialMatching, UNMATCHED};
use crate::hungarian::hungarian;
use crate::matching::WeightedMatching;
use crate::matrix::SquareMatrix;

/// Which of the (usually many) bottleneck-optimal matchings to return.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TieBreak {
    /// Whichever the search finds first (fastest).
    #[default]
    Any,
    /// The one of least total weight: a Hungarian pass over the pairs whose weight does not
    /// exceed the optimal bottleneck (`O(n^3)` extra).
    MinTotalWeight,
}

/// How [`bottleneck_matching`] searches for the optimal threshold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ThresholdSearch {
    /// Start at a lower bound and grow the threshold by minimax augmenting paths; fall back to
    /// binary search when many rows are left unmatched at the lower bound.
    #[default]
    Incremental,
    /// Aurora §6.2: binary search over the sorted distinct weights, each probe a Hopcroft–Karp
    /// run (warm-started from the largest infeasible probe's matching).
    BinarySearch,
}

/// Options of [`bottleneck_matching`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BottleneckOptions {
    /// Pairs `(row, column)` the matching must not use.
    pub forbidden: Vec<(usize, usize)>,
    /// Which optimal matching to return.
    pub tie_break: TieBreak,
    /// How to search for the threshold (both are exact).
    pub search: ThresholdSearch,
}

/// Perfect matching of an `n × n` weight matrix that minimizes the largest chosen weight.
///
/// Aurora §6.2 (Case II) reduces optimal expert colocation to this problem and solves it by
/// binary search over the sorted edge weights with a Hopcroft–Karp feasibility test,
/// `O(n^2.5 log n)`. The default [`ThresholdSearch::Incremental`] is exact and faster: it starts
/// at the lower bound `max(max_i min_j w_ij, max_j min_i w_ij)`, finds a maximum matching of the
/// pairs at or below it with Hopcroft–Karp, then raises the threshold only as far as the best
/// (minimax) augmenting path needs, one Dijkstra-like `O(n^2)` search per missing row. Whenever a
/// matching `M` uses only pairs `≤ T ≤ B*`, an augmenting path within the optimal bottleneck
/// `B*` exists, so the threshold never overshoots `B*`. When more than `2 log₂ n + 4` rows are
/// unmatched at the lower bound it switches to the warm-started binary search.
///
/// # Errors
///
/// [`BipartiteError::Input`] (`IndexOutOfRange`) for a forbidden pair outside the matrix;
/// [`BipartiteError::NoPerfectMatching`] when the allowed pairs admit no perfect matching;
/// [`BipartiteError::Input`] (`NonFinite`) when the matching's total weight overflows (weights
/// near `f64::MAX`).
///
/// # Complexity
///
/// Incremental: `O(n^2 + HK + d·n^2)` where `d` is the number of rows unmatched at the lower
/// bound (small on random dense inputs) and HK is a Hopcroft–Karp run on the threshold graph;
/// binary search: `O(n^2 log n + log(n^2)·(n^2 + n^2.5))`. [`TieBreak::MinTotalWeight`] adds `O(n^3)`.
///
/// # Examples
///
/// ```
/// use bipartite::{BottleneckOptions, SquareMatrix, TieBreak, bottleneck_matching};
///
/// let w = SquareMatrix::from_rows(&[vec![1.0, 9.0, 4.0], vec![6.0, 2.0, 5.0], vec![5.0, 3.0, 7.0]])?;
/// let m = bottleneck_matching(&w, &BottleneckOptions::default())?;
/// // 0→0, 1→2, 2→1 uses 1, 5, 3; all six permutations have a largest weight of 5 or more.
/// assert_eq!(m.bottleneck, 5.0);
///
/// // Forbidding (2, 1) leaves 0→2, 1→1, 2→0 (4, 2, 5) as the only matching within 5.
/// let opts = BottleneckOptions { forbidden: vec![(2, 1)], tie_break: TieBreak::MinTotalWeight, ..Default::default() };
/// let m = bottleneck_matching(&w, &opts)?;
/// assert_eq!(m.assignment, vec![2, 1, 0]);
/// assert_eq!((m.bottleneck, m.total_weight), (5.0, 11.0));
/// # Ok::<(), bipartite::BipartiteError>(())
/// ```
pub fn bottleneck_matching(
    weights: &SquareMatrix,
    options: &BottleneckOptions,
) -> Result<WeightedMatching, BipartiteError> {
    WeightedMatching::new(weights, bottleneck_assignment(weights, options)?)
}

/// [`bottleneck_matching`]'s assignment (`assignment[row] = column`) without its figures:
/// solvers that need only the assignment (whose total weight may overflow where the bottleneck
/// does not) call this.
///
/// # Errors
///
/// Those of [`bottleneck_matching`] but the overflow of the total.
///
/// # Complexity
///
/// That of [`bottleneck_matching`].
///
/// # Examples
///
/// ```
/// use bipartite::{BottleneckOptions, SquareMatrix, bottleneck_assignment};
///
/// let w = SquareMatrix::from_rows(&[vec![1.0, 5.0], vec![2.0, 9.0]])?;
/// assert_eq!(bottleneck_assignment(&w, &BottleneckOptions::default())?, vec![1, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn bottleneck_assignment(
    weights: &SquareMatrix,
    options: &BottleneckOptions,
) -> Result<Vec<usize>, BipartiteError> {
    let n = weights.n();
    let allowed = Allowed::new(n, &options.forbidden)?;
    let lower = lower_bound(weights, &allowed)?;
    let assignment = match options.search {
        ThresholdSearch::Incremental => incremental(weights, &allowed, lower)?,
        ThresholdSearch::BinarySearch => {
            let mut state = PartialMatching::empty(n, n);
            state.maximize(&threshold_graph(weights, &allowed, lower));
            binary_search(weights, &allowed, lower, state)?
        }
    };
    match options.tie_break {
        TieBreak::Any => Ok(assignment),
        TieBreak::MinTotalWeight => {
            let b = chosen_max(weights, &assignment);
            hungarian(n, |i, j| {
                let w = weights.get(i, j)?;
                (allowed.allows(i, j) && w <= b).then_some(w)
            })
        }
    }
}

/// The largest weight an assignment (`assignment[row] = column`) uses; entries outside the
/// matrix are ignored.
///
/// # Examples
///
/// ```
/// use bipartite::{SquareMatrix, chosen_max};
///
/// let w = SquareMatrix::from_rows(&[vec![1.0, 5.0], vec![2.0, 9.0]])?;
/// assert_eq!(chosen_max(&w, &[1, 0]), 5.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn chosen_max(weights: &SquareMatrix, assignment: &[usize]) -> f64 {
    assignment
        .iter()
        .enumerate()
        .filter_map(|(i, &j)| weights.get(i, j))
        .fold(0.0, f64::max)
}

/// `max(max_i min_j w_ij, max_j min_i w_ij)` over allowed pairs: every row and every column
/// must use one of its entries. Errors if a row or column has no allowed pair.
fn lower_bound(weights: &SquareMatrix, allowed: &Allowed) -> Result<f64, BipartiteError> {
    let n = weights.n();
    let mut col_min = vec![f64::INFINITY; n];
    let mut bound = 0.0f64;
    for i in 0..n {
        let mut row_min = f64::INFINITY;
        for (j, &w) in weights.row(i).unwrap_or_default().iter().enumerate() {
            if allowed.allows(i, j) {
                row_min = row_min.min(w);
                col_min[j] = col_min[j].min(w);
            }
        }
        bound = bound.max(row_min);
    }
    let bound = col_min.iter().fold(bound, |b, &c| b.max(c));
    if bound.is_finite() {
        Ok(bound)
    } else {
        Err(BipartiteError::NoPerfectMatching { matched: 0, n })
    }
}

/// The allowed pairs of weight at most `threshold`.
fn threshold_graph(weights: &SquareMatrix, allowed: &Allowed, threshold: f64) -> BipartiteGraph {
    let n = weights.n();
    let mut graph = BipartiteGraph::with_capacity(n, n, 4 * n);
    for i in 0..n {
        let row = weights.row(i).unwrap_or_default().iter().enumerate();
        graph.push_row(
            row.filter(|&(j, &w)| w <= threshold && allowed.allows(i, j))
                .map(|(j, _)| j),
        );
    }
    graph
}

fn incremental(
    weights: &SquareMatrix,
    allowed: &Allowed,
    lower: f64,
) -> Result<Vec<usize>, BipartiteError> {
    let n = weights.n();
    let mut state = PartialMatching::empty(n, n);
    let mut size = state.maximize(&threshold_graph(weights, allowed, lower));
    // log2(n) computed on integers to stay exact.
    let log_n = (usize::BITS - n.leading_zeros()) as usize;
    if n - size > 2 * log_n + 4 {
        return binary_search(weights, allowed, lower, state);
    }
    let mut threshold = lower;
    while size < n {
        let Some(value) = minimax_augment(weights, allowed, &mut state, threshold) else {
            return Err(BipartiteError::NoPerfectMatching { matched: size, n });
        };
        size += 1;
        if value > threshold {
            threshold = value;
            if size < n {
                size = state.maximize(&threshold_graph(weights, allowed, threshold));
            }
        }
    }
    Ok(state.left)
}

/// Finds the augmenting path whose largest unmatched edge is smallest (values below `floor`
/// count as `floor`), applies it, and returns that value; `None` if no augmenting path exists.
fn minimax_augment(
    weights: &SquareMatrix,
    allowed: &Allowed,
    state: &mut PartialMatching,
    floor: f64,
) -> Option<f64> {
    let n = weights.n();
    let mut label = vec![f64::INFINITY; n];
    let mut parent = vec![UNMATCHED; n];
    let mut done = vec![false; n];
    let relax = |row: usize, reach: f64, label: &mut [f64], parent: &mut [usize], done: &[bool]| {
        for (j, &w) in weights.row(row).unwrap_or_default().iter().enumerate() {
            let value = reach.max(w);
            if !done[j] && value < label[j] && allowed.allows(row, j) {
                label[j] = value;
                parent[j] = row;
            }
        }
    };
    for row in 0..n {
        if state.left[row] == UNMATCHED {
            relax(row, floor, &mut label, &mut parent, &done);
        }
    }
    loop {
        let (col, value) = (0..n)
            .filter(|&j| !done[j])
            .map(|j| (j, label[j]))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        if !value.is_finite() {
            return None;
        }
        done[col] = true;
        let owner = state.right[col];
        if owner == UNMATCHED {
            flip_path(state, &parent, col);
            return Some(value);
        }
        relax(owner, value, &mut label, &mut parent, &done);
    }
}

/// Re-matches along the parent chain ending at free column `col`.
fn flip_path(state: &mut PartialMatching, parent: &[usize], mut col: usize) {
    loop {
        let row = parent[col];
        let previous = state.left[row];
        state.left[row] = col;
        state.right[col] = row;
        if previous == UNMATCHED {
            return;
        }
        col = previous;
    }
}

/// Binary search over the distinct allowed weights above `infeasible` (a threshold known to
/// admit no perfect matching unless `state` is already perfect), warm-starting every probe from
/// the maximum matching of the largest infeasible threshold so far.
fn binary_search(
    weights: &SquareMatrix,
    allowed: &Allowed,
    infeasible: f64,
    mut state: PartialMatching,
) -> Result<Vec<usize>, BipartiteError> {
    let n = weights.n();
    if state.size() == n {
        return Ok(state.left);
    }
    let mut candidates: Vec<f64> = weights
        .rows()
        .enumerate()
        .flat_map(|(i, row)| row.iter().enumerate().map(move |(j, &w)| (i, j, w)))
        .filter(|&(i, j, w)| w > infeasible && allowed.allows(i, j))
        .map(|(_, _, w)| w)
        .collect();
    candidates.sort_unstable_by(f64::total_cmp);
    candidates.dedup();
    // Invariant: candidates[..lo] are infeasible, candidates[hi] (if any) is feasible.
    let (mut lo, mut hi) = (0, candidates.len());
    let mut best: Option<Vec<usize>> = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let mut probe = state.clone();
        let size = probe.maximize(&threshold_graph(weights, allowed, candidates[mid]));
        if size == n {
            hi = mid;
            best = Some(probe.left);
        } else {
            lo = mid + 1;
            state = probe;
        }
    }
    best.ok_or(BipartiteError::NoPerfectMatching {
        matched: state.size(),
        n,
    })
}
