//! Bottleneck pairing for Aurora's Case II weights in `O(n^2 + n log^2 n)`, without the matrix.
//!
//! With `w_ij = max(a_i + b_j, a'_i + b'_j)`, a pair is allowed at threshold `T` iff B's point
//! `(b_j, b'_j)` is dominated by `(T - a_i, T - a'_i)`. For such two-dimensional dominance graphs
//! a greedy finds a maximum matching: take A's experts by decreasing `a_i` (so the set of B experts
//! passing the first test only grows) and give each the passing B expert with the *largest* `b'`
//! that still passes the second test. Exchange argument: any later A expert that could use the
//! chosen B expert could also use whichever one an optimal matching gave the current expert, since
//! it passes the first test for everything passing now and `b'` of the alternative is no larger.
//! All tests are the same floating-point sums the weight matrix would hold, so the result is exact.

use std::collections::BTreeSet;
use std::ops::Bound::{Excluded, Unbounded};

/// Row (A) and column (B) coordinates of a Case II instance.
pub(crate) struct Dominance<'a> {
    pub(crate) a_send: &'a [f64],
    pub(crate) a_recv: &'a [f64],
    pub(crate) b_send: &'a [f64],
    pub(crate) b_recv: &'a [f64],
}

impl Dominance<'_> {
    fn weight(&self, i: usize, j: usize) -> f64 {
        f64::max(
            self.a_send[i] + self.b_send[j],
            self.a_recv[i] + self.b_recv[j],
        )
    }

    /// `b_of_a` of an optimal bottleneck pairing.
    pub(crate) fn solve(&self) -> Vec<usize> {
        let n = self.a_send.len();
        let mut rows: Vec<usize> = (0..n).collect();
        rows.sort_by(|&x, &y| self.a_send[y].total_cmp(&self.a_send[x]));
        let mut cols: Vec<usize> = (0..n).collect();
        cols.sort_by(|&x, &y| self.b_send[x].total_cmp(&self.b_send[y]));
        let lower = self.lower_bound();
        if let Some(m) = self.feasible(lower, &rows, &cols) {
            return m;
        }
        // Any pairing bounds the optimum from above; every weight in (lower, upper) is a candidate.
        let mut best = (0..n).collect::<Vec<usize>>();
        let upper = (0..n).map(|i| self.weight(i, best[i])).fold(0.0, f64::max);
        let mut candidates: Vec<f64> = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| self.weight(i, j))
            .filter(|&w| w > lower && w < upper)
            .collect();
        // Halve the candidate set around its median until it is empty.
        while !candidates.is_empty() {
            let mid = candidates.len() / 2;
            let (_, &mut t, _) = candidates.select_nth_unstable_by(mid, f64::total_cmp);
            if let Some(m) = self.feasible(t, &rows, &cols) {
                best = m;
                candidates.retain(|&w| w < t);
            } else {
                candidates.retain(|&w| w > t);
            }
        }
        best
    }

    /// `max(max_i min_j w_ij, max_j min_i w_ij)`.
    fn lower_bound(&self) -> f64 {
        let n = self.a_send.len();
        let mut col_min = vec![f64::INFINITY; n];
        let mut bound = 0.0f64;
        for i in 0..n {
            let mut row_min = f64::INFINITY;
            for (j, c) in col_min.iter_mut().enumerate() {
                let w = self.weight(i, j);
                row_min = row_min.min(w);
                *c = c.min(w);
            }
            bound = bound.max(row_min);
        }
        col_min.into_iter().fold(bound, f64::max)
    }

    /// The greedy maximum matching at threshold `t`; `Some(b_of_a)` if it is perfect.
    fn feasible(&self, t: f64, rows: &[usize], cols: &[usize]) -> Option<Vec<usize>> {
        let mut open: BTreeSet<(u64, usize)> = BTreeSet::new();
        let mut next = 0;
        let mut b_of_a = vec![0; rows.len()];
        for &i in rows {
            while next < cols.len() && self.a_send[i] + self.b_send[cols[next]] <= t {
                let j = cols[next];
                open.insert((order_key(self.b_recv[j]), j));
                next += 1;
            }
            let j = self.largest_fitting(&open, i, t)?;
            open.remove(&(order_key(self.b_recv[j]), j));
            b_of_a[i] = j;
        }
        Some(b_of_a)
    }

    /// The open B expert with the largest `b'` such that `a'_i + b' <= t` (exact test).
    fn largest_fitting(&self, open: &BTreeSet<(u64, usize)>, i: usize, t: f64) -> Option<usize> {
        let fits = |j: usize| self.a_recv[i] + self.b_recv[j] <= t;
        let guess = order_key((t - self.a_recv[i]).max(0.0));
        let start = open.range(..=(guess, usize::MAX)).next_back().copied();
        // Rounding can admit keys just above the guess: walk up while they fit ...
        let mut best = start.filter(|&(_, j)| fits(j));
        for &(k, j) in open.range((Excluded((guess, usize::MAX)), Unbounded)) {
            if !fits(j) {
                break;
            }
            best = Some((k, j));
        }
        if let Some((_, j)) = best {
            return Some(j);
        }
        // ... or reject keys just below it: walk down until one fits.
        let mut cursor = start?;
        loop {
            cursor = *open.range(..cursor).next_back()?;
            if fits(cursor.1) {
                return Some(cursor.1);
            }
        }
    }
}

/// Order-preserving integer key of a non-negative float (`-0.0` maps to `+0.0`).
pub(crate) fn order_key(x: f64) -> u64 {
    (x + 0.0).to_bits()
}
