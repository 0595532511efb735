//! The baselines Aurora §8.1 compares against: Lina, random colocation, random GPU assignment,
//! and the two combined into a placement.

use comm_cost_model::InputError;
use comm_cost_model::seeded_rng;
use rand::seq::SliceRandom;

use crate::error::MatchingError;
use crate::gpu_assignment::{descending, experts_of_gpu};
use bipartite::MAX_VERTICES;
use comm_cost_model::{check_at_most, check_entries};

/// Lina's expert packing (Aurora §8.1, footnote 5): within one model, the most popular expert
/// shares a GPU with the least popular, the second most with the second least, and so on.
///
/// Returns the experts of each GPU (`n / 2` GPUs of two experts; for odd `n` the median expert
/// gets a GPU alone, listed last). Ties in popularity keep index order.
///
/// # Errors
///
/// [`MatchingError::Input`] (`Empty`, `InvalidEntry`) for NaN, infinite or negative loads.
///
/// # Complexity
///
/// `O(n log n)` time.
///
/// # Examples
///
/// ```
/// use colocation_matching::lina_pairs;
///
/// let gpus = lina_pairs(&[5.0, 1.0, 9.0, 3.0])?;
/// assert_eq!(gpus, vec![vec![2, 1], vec![0, 3]]);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn lina_pairs(expert_load: &[f64]) -> Result<Vec<Vec<usize>>, MatchingError> {
    if expert_load.is_empty() {
        return Err(MatchingError::Input(InputError::Empty { what: "experts" }));
    }
    check_entries("expert_load", expert_load)?;
    let order = descending(expert_load);
    let n = order.len();
    let mut gpus: Vec<Vec<usize>> = (0..n / 2)
        .map(|k| vec![order[k], order[n - 1 - k]])
        .collect();
    if n % 2 == 1 {
        gpus.push(vec![order[n / 2]]);
    }
    Ok(gpus)
}

/// Random expert colocation (REC, Aurora §8.1): a uniformly random pairing of A's experts with
/// B's, `b_of_a[i]` for A's expert `i`. Deterministic for a given `seed`; `n = 0` gives the
/// empty pairing.
///
/// # Errors
///
/// [`MatchingError::Input`] (`TooLarge`) above [`MAX_VERTICES`] experts (checked before
/// allocating: `usize::MAX` used to abort the process).
///
/// # Complexity
///
/// `O(n)` time and space.
///
/// # Examples
///
/// ```
/// use colocation_matching::random_colocation;
///
/// let p = random_colocation(5, 7)?;
/// assert_eq!(p, random_colocation(5, 7)?);
/// let mut sorted = p.clone();
/// sorted.sort();
/// assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
/// assert!(random_colocation(usize::MAX, 7).is_err());
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn random_colocation(n: usize, seed: u64) -> Result<Vec<usize>, MatchingError> {
    random_permutation(n, seed, 0)
}

/// Random GPU assignment (RGA, Aurora §8.1): expert `e` goes to GPU `gpu_of[e]`, a uniformly
/// random permutation. Deterministic for a given `seed`.
///
/// # Errors
///
/// [`MatchingError::Input`] (`TooLarge`) above [`MAX_VERTICES`] experts, before allocating.
///
/// # Complexity
///
/// `O(n)` time and space.
///
/// # Examples
///
/// ```
/// use colocation_matching::random_gpu_assignment;
///
/// assert_eq!(random_gpu_assignment(4, 1)?.len(), 4);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn random_gpu_assignment(n: usize, seed: u64) -> Result<Vec<usize>, MatchingError> {
    // A different stream from REC so RGA + REC with one seed are independent.
    random_permutation(n, seed, 1)
}

/// The baseline placement of Aurora §8.1 for `n` experts per model on `n` GPUs: random GPU
/// assignment of model A's experts (RGA), and when `colocated`, random colocation of model B's
/// experts with them (REC).
///
/// Returns `experts_of_gpu[g][m]`, the expert of model `m` on GPU `g` (one model, or A then B).
/// The same `seed` gives the same placement, [`random_gpu_assignment`]'s and
/// [`random_colocation`]'s for that seed.
///
/// # Errors
///
/// [`MatchingError::Input`] (`TooLarge`) above [`MAX_VERTICES`] experts, before allocating.
///
/// # Complexity
///
/// `O(n)` time and space.
///
/// # Examples
///
/// ```
/// use colocation_matching::{random_colocation, random_gpu_assignment, random_placement};
///
/// let placement = random_placement(4, true, 9)?;
/// let (gpu_of_a, b_of_a) = (random_gpu_assignment(4, 9)?, random_colocation(4, 9)?);
/// for (g, experts) in placement.iter().enumerate() {
///     let a = experts[0];
///     assert_eq!(gpu_of_a[a], g);
///     assert_eq!(experts[1], b_of_a[a]);
/// }
/// assert_eq!(random_placement(4, false, 9)?[0], vec![placement[0][0]]);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn random_placement(
    n: usize,
    colocated: bool,
    seed: u64,
) -> Result<Vec<Vec<usize>>, MatchingError> {
    let gpu_of_a = random_gpu_assignment(n, seed)?;
    let b_of_a = random_colocation(n, seed)?;
    Ok(experts_of_gpu(&gpu_of_a, n)
        .into_iter()
        .map(|mut experts| {
            if colocated {
                let partners: Vec<usize> = experts.iter().map(|&a| b_of_a[a]).collect();
                experts.extend(partners);
            }
            experts
        })
        .collect())
}

/// A seeded random permutation of `0..n`, `n` checked against the crate's size limit first.
fn random_permutation(n: usize, seed: u64, stream: u64) -> Result<Vec<usize>, MatchingError> {
    check_at_most("experts of a random baseline", MAX_VERTICES, n)?;
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(&mut seeded_rng(seed, stream));
    Ok(perm)
}
