//! Relative-error least squares over contiguous runs of sorted samples, and the dynamic program
//! that cuts the samples into the runs a piecewise-linear model fits best.
//!
//! Collective times span four orders of magnitude from an 8-byte to a 1-GB message, so the fit
//! minimises squared *relative* residuals `((t_i - r_i . c) / t_i)^2` (weights `1 / t_i^2`):
//! an ordinary fit would ignore every small message. Coefficients are kept non-negative (a time
//! model with a negative start-up or a negative cost per byte is not physical) by eliminating
//! the most negative coefficient and refitting, which is exact for the one- and two-feature fits
//! this crate needs and a conservative active-set step for three.
//!
//! Prefix sums of the weighted normal equations make every contiguous run's fit O(D^3), so the
//! dynamic program over all O(n^2) runs stays fast for nccl-tests-sized inputs.

use crate::scale::pow2_scale;
use crate::{InputError, check_non_negative};

/// The most samples one piecewise fit accepts (the dynamic program is O(n^2 k) time and
/// O(n^2) memory).
pub(crate) const MAX_SAMPLES: usize = 1024;

/// One fitted run: rows `start..end` of the sorted input and its coefficients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Run<const D: usize> {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) coefficients: [f64; D],
}

/// Prefix sums of the relative-weighted normal equations `Σ z zᵀ`, `Σ z` with `z = r / t`.
pub(crate) struct Prefix<const D: usize> {
    gram: Vec<[[f64; D]; D]>,
    rhs: Vec<[f64; D]>,
    scale: [f64; D],
    /// Power of two that brings the shortest time into `[1, 2)`, so every `z` is at most about
    /// 1 and no square overflows (a 5e-324 s time made `z` infinite; issue 13). Exact, so
    /// ordinary times give the same bits as unscaled ones.
    time_scale: f64,
}

impl<const D: usize> Prefix<D> {
    /// Builds the prefix sums; `times` must be positive and finite (checked by the callers).
    pub(crate) fn new(rows: &[[f64; D]], times: &[f64]) -> Self {
        // Column scaling keeps bytes (up to 1e9) and the constant column comparable.
        let mut scale = [0.0f64; D];
        for row in rows {
            for (s, v) in scale.iter_mut().zip(row) {
                *s = s.max(v.abs());
            }
        }
        for s in &mut scale {
            if *s == 0.0 {
                *s = 1.0;
            }
        }
        let time_scale = pow2_scale(times.iter().copied().fold(f64::INFINITY, f64::min));
        let mut gram = Vec::with_capacity(rows.len() + 1);
        let mut rhs = Vec::with_capacity(rows.len() + 1);
        let (mut g, mut b) = ([[0.0; D]; D], [0.0; D]);
        gram.push(g);
        rhs.push(b);
        for (row, &t) in rows.iter().zip(times) {
            let t = t * time_scale;
            let z: [f64; D] = std::array::from_fn(|j| row[j] / scale[j] / t);
            for j in 0..D {
                b[j] += z[j];
                for k in 0..D {
                    g[j][k] += z[j] * z[k];
                }
            }
            gram.push(g);
            rhs.push(b);
        }
        Self {
            gram,
            rhs,
            scale,
            time_scale,
        }
    }

    /// The non-negative relative fit of rows `start..end` and its sum of squared relative
    /// residuals.
    pub(crate) fn fit(&self, start: usize, end: usize) -> ([f64; D], f64) {
        let g: [[f64; D]; D] = std::array::from_fn(|j| {
            std::array::from_fn(|k| self.gram[end][j][k] - self.gram[start][j][k])
        });
        let b: [f64; D] = std::array::from_fn(|j| self.rhs[end][j] - self.rhs[start][j]);
        let mut active = [true; D];
        let c = loop {
            let c = solve_active(&g, &b, &mut active);
            let most_negative = (0..D)
                .filter(|&j| active[j] && c[j] < 0.0)
                .min_by(|&x, &y| c[x].total_cmp(&c[y]));
            match most_negative {
                Some(j) => active[j] = false,
                None => break c,
            }
        };
        // Σ (1 - z.c)^2 = n - 2 c.b + cᵀ G c.
        let n = (end - start) as f64;
        let mut quad = 0.0;
        for j in 0..D {
            for k in 0..D {
                quad += c[j] * g[j][k] * c[k];
            }
        }
        let dot: f64 = c.iter().zip(&b).map(|(x, y)| x * y).sum();
        let cost = (n - 2.0 * dot + quad).max(0.0);
        let unscaled = std::array::from_fn(|j| c[j] / self.time_scale / self.scale[j]);
        (unscaled, cost)
    }
}

/// Solves `G c = b` on the active columns (Gaussian elimination with partial pivoting, no
/// allocation); a column whose pivot vanishes (collinear with the others on this run) is made
/// inactive.
fn solve_active<const D: usize>(
    g: &[[f64; D]; D],
    b: &[f64; D],
    active: &mut [bool; D],
) -> [f64; D] {
    loop {
        let mut idx = [0usize; D];
        let mut m = 0;
        for (j, &on) in active.iter().enumerate() {
            if on {
                idx[m] = j;
                m += 1;
            }
        }
        let (mut a, mut rhs) = ([[0.0; D]; D], [0.0; D]);
        for r in 0..m {
            for c in 0..m {
                a[r][c] = g[idx[r]][idx[c]];
            }
            rhs[r] = b[idx[r]];
        }
        let tol = 1e-12 * (0..m).map(|r| a[r][r]).fold(0.0, f64::max);
        let mut singular = None;
        for col in 0..m {
            let pivot = (col..m)
                .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
                .unwrap_or(col);
            if a[pivot][col].abs() <= tol {
                singular = Some(idx[col]);
                break;
            }
            a.swap(col, pivot);
            rhs.swap(col, pivot);
            let pivot_row = a[col];
            for row in col + 1..m {
                let f = a[row][col] / pivot_row[col];
                for (x, p) in a[row][col..m].iter_mut().zip(&pivot_row[col..m]) {
                    *x -= f * p;
                }
                rhs[row] -= f * rhs[col];
            }
        }
        if let Some(j) = singular {
            active[j] = false;
            continue;
        }
        let mut x = [0.0; D];
        for row in (0..m).rev() {
            let tail: f64 = (row + 1..m).map(|k| a[row][k] * x[k]).sum();
            x[row] = (rhs[row] - tail) / a[row][row];
        }
        let mut c = [0.0; D];
        for pos in 0..m {
            c[idx[pos]] = x[pos];
        }
        return c;
    }
}

/// Cuts `n` sorted rows into at most `max_segments` contiguous runs of at least `min_points`
/// rows minimising the total squared relative residual, then keeps the fewest runs whose
/// cost is within 10% of the best (so a straight line is not cut for noise).
///
/// # Errors
///
/// [`InputError::CountTooSmall`] if `n < min_points`; [`InputError::TooLarge`] above
/// [`MAX_SAMPLES`].
pub(crate) fn best_runs<const D: usize>(
    prefix: &Prefix<D>,
    n: usize,
    max_segments: usize,
    min_points: usize,
) -> Result<Vec<Run<D>>, InputError> {
    if n > MAX_SAMPLES {
        return Err(InputError::TooLarge {
            what: "samples of one piecewise fit",
            limit: MAX_SAMPLES as u64,
            value: n as u64,
        });
    }
    if n < min_points {
        return Err(InputError::CountTooSmall {
            what: "samples (at least min_points)",
            min: min_points as u64,
            value: n as u64,
        });
    }
    let k_max = max_segments.min(n / min_points).max(1);
    // run_cost[tri(i, j)]: cost of rows i..j, computed once (O(n^2) fits of O(D^3) each).
    let tri = |i: usize, j: usize| j * (j + 1) / 2 + i;
    let mut run_cost = vec![f64::INFINITY; tri(0, n + 1)];
    for j in min_points..=n {
        for i in 0..=j - min_points {
            run_cost[tri(i, j)] = prefix.fit(i, j).1;
        }
    }
    // cost[k][j]: best cost of rows 0..j in k runs; from[k][j]: start of the last run.
    let mut cost = vec![vec![f64::INFINITY; n + 1]; k_max + 1];
    let mut from = vec![vec![0usize; n + 1]; k_max + 1];
    cost[0][0] = 0.0;
    for k in 1..=k_max {
        for j in min_points..=n {
            for i in 0..=j - min_points {
                let c = cost[k - 1][i] + run_cost[tri(i, j)];
                if c < cost[k][j] {
                    cost[k][j] = c;
                    from[k][j] = i;
                }
            }
        }
    }
    let best = (1..=k_max)
        .map(|k| cost[k][n])
        .fold(f64::INFINITY, f64::min);
    let k = (1..=k_max)
        .find(|&k| cost[k][n] <= 1.1 * best + 1e-12)
        .unwrap_or(1);
    let mut runs = Vec::with_capacity(k);
    let mut end = n;
    for level in (1..=k).rev() {
        let start = from[level][end];
        runs.push(Run {
            start,
            end,
            coefficients: prefix.fit(start, end).0,
        });
        end = start;
    }
    runs.reverse();
    Ok(runs)
}

/// Checks one segment's `(smallest, largest)` key: finite, non-negative and in order.
pub(crate) fn check_range((min, max): (f64, f64)) -> Result<(), InputError> {
    if check_non_negative("segment's smallest size (bytes)", min)?
        > check_non_negative("segment's largest size (bytes)", max)?
    {
        return Err(InputError::Degenerate {
            what: "a segment's smallest size exceeds its largest",
        });
    }
    Ok(())
}

/// Checks a fitted model's segments, given each one's `(smallest, largest)` key: at least one,
/// in increasing order without overlap.
pub(crate) fn check_ranges<T>(
    segments: &[T],
    range: impl Fn(&T) -> (f64, f64),
) -> Result<(), InputError> {
    if segments.is_empty() {
        return Err(no_segments());
    }
    if segments.windows(2).any(|w| range(&w[0]).1 > range(&w[1]).0) {
        return Err(InputError::Degenerate {
            what: "segments must be in increasing order of their sizes",
        });
    }
    Ok(())
}

/// The segment `key` falls in: cut at the [`boundary`] between one segment's largest key and
/// the next one's smallest; keys outside the measured range use the first or last segment.
pub(crate) fn segment_at<T>(
    segments: &[T],
    key: f64,
    range: impl Fn(&T) -> (f64, f64),
) -> Result<&T, InputError> {
    let upper: Vec<f64> = segments
        .windows(2)
        .map(|w| boundary(range(&w[0]).1, range(&w[1]).0))
        .collect();
    segments.get(run_index(&upper, key)).ok_or_else(no_segments)
}

fn no_segments() -> InputError {
    InputError::CountTooSmall {
        what: "segments of a fit",
        min: 1,
        value: 0,
    }
}

/// The boundary between two runs whose keys end at `last` and start at `first`: their
/// geometric mean when both are positive (sizes are log-spaced), else the midpoint.
pub(crate) fn boundary(last: f64, first: f64) -> f64 {
    if last > 0.0 && first > 0.0 {
        (last * first).sqrt()
    } else {
        0.5 * (last + first)
    }
}

/// Index of the run a key falls in, given the upper boundaries of all runs but the last.
pub(crate) fn run_index(upper: &[f64], key: f64) -> usize {
    upper.iter().take_while(|&&b| key > b).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_is_recovered_and_not_cut() {
        let rows: Vec<[f64; 2]> = (1..=20).map(|i| [1.0, f64::from(i) * 1e6]).collect();
        let t: Vec<f64> = rows.iter().map(|r| 1e-5 + r[1] * 1e-10).collect();
        let runs = best_runs(&Prefix::new(&rows, &t), rows.len(), 3, 3).unwrap();
        assert_eq!(runs.len(), 1);
        let c = runs[0].coefficients;
        assert!((c[0] - 1e-5).abs() < 1e-12 && (c[1] - 1e-10).abs() < 1e-18);
    }

    #[test]
    fn two_lines_are_cut_at_the_kink() {
        // Flat 5 us up to x = 10, then 1 us per unit: the kink is between rows 9 and 10.
        let rows: Vec<[f64; 2]> = (1..=20).map(|i| [1.0, f64::from(i)]).collect();
        let t: Vec<f64> = rows
            .iter()
            .map(|r| if r[1] <= 10.0 { 5e-6 } else { r[1] * 1e-6 })
            .collect();
        let runs = best_runs(&Prefix::new(&rows, &t), rows.len(), 3, 3).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].end, 10);
        assert!(runs[0].coefficients[1].abs() < 1e-15);
        assert!((runs[1].coefficients[1] - 1e-6).abs() < 1e-15);
    }

    #[test]
    fn negative_coefficients_are_eliminated() {
        // Time falls with size: the best non-negative line is the constant.
        let rows = [[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]];
        let (c, _) = Prefix::new(&rows, &[3.0, 2.0, 1.0]).fit(0, 3);
        assert!(c[1] == 0.0 && c[0] > 0.0);
    }

    #[test]
    fn too_few_and_too_many_samples() {
        let rows = [[1.0, 1.0]];
        assert!(matches!(
            best_runs(&Prefix::new(&rows, &[1.0]), 1, 2, 2),
            Err(InputError::CountTooSmall { .. })
        ));
        assert!(matches!(
            best_runs(&Prefix::new(&rows, &[1.0]), MAX_SAMPLES + 1, 2, 2),
            Err(InputError::TooLarge { .. })
        ));
    }
}
