//! Brute-force oracles shared by the integration tests.
#![allow(dead_code)]

/// Every permutation of `0..n` (n ≤ 7 in tests).
pub(crate) fn permutations(n: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut perm: Vec<usize> = (0..n).collect();
    heap(n, &mut perm, &mut out);
    out
}

fn heap(k: usize, perm: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if k <= 1 {
        out.push(perm.clone());
        return;
    }
    for i in 0..k {
        heap(k - 1, perm, out);
        let j = if k % 2 == 0 { i } else { 0 };
        perm.swap(j, k - 1);
    }
}

/// Smallest bottleneck over allowed permutations, or None.
pub(crate) fn brute_bottleneck(w: &[Vec<f64>], forbidden: &[(usize, usize)]) -> Option<f64> {
    permutations(w.len())
        .iter()
        .filter(|p| {
            p.iter()
                .enumerate()
                .all(|(i, &j)| !forbidden.contains(&(i, j)))
        })
        .map(|p| {
            p.iter()
                .enumerate()
                .map(|(i, &j)| w[i][j])
                .fold(0.0, f64::max)
        })
        .min_by(f64::total_cmp)
}

/// Least total over allowed permutations with bottleneck at most `cap`.
pub(crate) fn brute_min_total(
    w: &[Vec<f64>],
    forbidden: &[(usize, usize)],
    cap: f64,
) -> Option<f64> {
    permutations(w.len())
        .iter()
        .filter(|p| {
            p.iter()
                .enumerate()
                .all(|(i, &j)| !forbidden.contains(&(i, j)) && w[i][j] <= cap)
        })
        .map(|p| p.iter().enumerate().map(|(i, &j)| w[i][j]).sum::<f64>())
        .min_by(f64::total_cmp)
}

/// True if `p` is a permutation of `0..p.len()`.
pub(crate) fn is_permutation(p: &[usize]) -> bool {
    let mut s = p.to_vec();
    s.sort_unstable();
    s.iter().enumerate().all(|(i, &x)| i == x)
}
