//! Padding a matrix to a regular one (every row and column sums to the same value).
//!
//! This is the artificial traffic `X` of Aurora Appendix A, built explicitly instead of shown to
//! exist with Farkas' lemma. Where the padding goes matters for the number of pieces: every new
//! non-zero entry is one more edge the decomposition has to exhaust. Padding is placed, in order,
//! (1) on the diagonal (a GPU's idle send port paired with its own idle receive port costs no
//! transfer), (2) on pairs that already carry traffic, and (3) by the north-west corner rule on
//! what is left, which adds at most `2n - 1` new entries.

use crate::ScheduleError;
use crate::bounds::line_sums_u64;

/// Returns `(padded, line)`: `padded >= entries`, every line of `padded` sums to `line`, the
/// largest line sum of `entries`.
pub(crate) fn pad_to_regular(entries: &[u64], n: usize) -> Result<(Vec<u64>, u64), ScheduleError> {
    let (rows, cols) = line_sums_u64(entries, n)?;
    let line = rows.iter().chain(&cols).copied().max().unwrap_or(0);
    let mut row_deficit: Vec<u64> = rows.iter().map(|&r| line - r).collect();
    let mut col_deficit: Vec<u64> = cols.iter().map(|&c| line - c).collect();
    let mut padded = entries.to_vec();
    let mut fill = |k: usize, rd: &mut u64, cd: &mut u64| {
        let x = (*rd).min(*cd);
        padded[k] += x;
        *rd -= x;
        *cd -= x;
    };
    for i in 0..n {
        fill(i * n + i, &mut row_deficit[i], &mut col_deficit[i]);
    }
    for (i, rd) in row_deficit.iter_mut().enumerate() {
        for (j, cd) in col_deficit.iter_mut().enumerate() {
            if *rd == 0 {
                break; // Row done: nothing more to place in it.
            }
            let k = i * n + j;
            if entries[k] > 0 && *cd > 0 {
                fill(k, rd, cd);
            }
        }
    }
    // North-west corner on the remaining deficits (their totals are equal).
    let short_rows: Vec<usize> = (0..n).filter(|&i| row_deficit[i] > 0).collect();
    let short_cols: Vec<usize> = (0..n).filter(|&j| col_deficit[j] > 0).collect();
    let (mut r, mut c) = (0, 0);
    while r < short_rows.len() && c < short_cols.len() {
        let (i, j) = (short_rows[r], short_cols[c]);
        let (mut rd, mut cd) = (row_deficit[i], col_deficit[j]);
        fill(i * n + j, &mut rd, &mut cd);
        row_deficit[i] = rd;
        col_deficit[j] = cd;
        if rd == 0 {
            r += 1;
        }
        if cd == 0 {
            c += 1;
        }
    }
    Ok((padded, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_to_regular_with_few_new_entries() {
        // Rows 3, 2, 0; columns 1, 2, 2: line 3.
        let d = [0, 2, 1, 1, 0, 1, 0, 0, 0];
        let (p, line) = pad_to_regular(&d, 3).unwrap();
        assert_eq!(line, 3);
        for i in 0..3 {
            assert_eq!((0..3).map(|j| p[i * 3 + j]).sum::<u64>(), 3);
            assert_eq!((0..3).map(|j| p[j * 3 + i]).sum::<u64>(), 3);
        }
        assert!(p.iter().zip(&d).all(|(a, b)| a >= b));
    }
}
