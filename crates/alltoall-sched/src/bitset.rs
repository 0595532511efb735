//! Dense bitsets for the decomposition's adjacency and port sets.
//!
//! With one bit per pair an `n = 64` row is a single word, so "is any partner of this sender
//! free?" is one `AND` and a breadth-first search visits a whole row at once.

/// Bits per word.
pub(crate) const WORD: usize = 64;

/// Words needed for `bits` bits.
pub(crate) fn words_for(bits: usize) -> usize {
    bits.div_ceil(WORD)
}

/// Sets bit `b` of `set` to one.
pub(crate) fn insert(set: &mut [u64], b: usize) {
    set[b / WORD] |= 1 << (b % WORD);
}

/// Sets bit `b` of `set` to zero.
pub(crate) fn remove(set: &mut [u64], b: usize) {
    set[b / WORD] &= !(1 << (b % WORD));
}

/// The bits set in both `a` and `b`, in increasing order.
pub(crate) fn ones_in_both<'a>(a: &'a [u64], b: &'a [u64]) -> impl Iterator<Item = usize> + 'a {
    a.iter()
        .zip(b)
        .enumerate()
        .flat_map(|(w, (&x, &y))| WordBits(x & y).map(move |bit| w * WORD + bit))
}

/// The lowest bit set in both `a` and `b`, if any.
pub(crate) fn first_common(a: &[u64], b: &[u64]) -> Option<usize> {
    a.iter()
        .zip(b)
        .enumerate()
        .find_map(|(w, (&x, &y))| lowest(x & y).map(|bit| w * WORD + bit))
}

/// The bits set in `set`, in increasing order.
pub(crate) fn ones(set: &[u64]) -> impl Iterator<Item = usize> + '_ {
    set.iter()
        .enumerate()
        .flat_map(|(w, &word)| WordBits(word).map(move |bit| w * WORD + bit))
}

/// The index of the lowest one bit of `word`, if any.
fn lowest(word: u64) -> Option<usize> {
    (word != 0).then(|| word.trailing_zeros() as usize)
}

/// Iterator over the one bits of a word, lowest first.
pub(crate) struct WordBits(pub u64);

impl Iterator for WordBits {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let bit = lowest(self.0)?;
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

/// The `(row, column)` of every non-zero entry of a row-major matrix with `cols` columns.
fn nonzero_positions(entries: &[u64], cols: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    entries
        .chunks_exact(cols.max(1))
        .enumerate()
        .flat_map(|(i, row)| {
            row.iter()
                .enumerate()
                .filter(|&(_, &v)| v > 0)
                .map(move |(j, _)| (i, j))
        })
}

/// An `rows x cols` bit matrix stored row by row, each row a whole number of words.
#[derive(Debug, Clone)]
pub(crate) struct BitRows {
    words_per_row: usize,
    words: Vec<u64>,
}

impl BitRows {
    /// The matrix whose bit `(i, j)` says whether `entries[i * cols + j] > 0`.
    pub(crate) fn nonzero(entries: &[u64], cols: usize) -> Self {
        let rows = entries.len().checked_div(cols).unwrap_or(0);
        Self::with_bits(rows, cols, nonzero_positions(entries, cols))
    }

    /// A `rows x cols` matrix with the given bits set.
    fn with_bits(rows: usize, cols: usize, bits: impl Iterator<Item = (usize, usize)>) -> Self {
        let words_per_row = words_for(cols);
        let mut words = vec![0; rows * words_per_row];
        for (r, c) in bits {
            insert(&mut words[r * words_per_row..(r + 1) * words_per_row], c);
        }
        Self {
            words_per_row,
            words,
        }
    }

    /// Words per row.
    pub(crate) fn width(&self) -> usize {
        self.words_per_row
    }

    /// Row `i`.
    pub(crate) fn row(&self, i: usize) -> &[u64] {
        &self.words[i * self.words_per_row..(i + 1) * self.words_per_row]
    }

    /// Whether bit `(i, j)` is set.
    pub(crate) fn contains(&self, i: usize, j: usize) -> bool {
        self.words[i * self.words_per_row + j / WORD] >> (j % WORD) & 1 == 1
    }

    /// Clears bit `(i, j)`.
    pub(crate) fn remove(&mut self, i: usize, j: usize) {
        let w = self.words_per_row;
        remove(&mut self.words[i * w..(i + 1) * w], j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_iterate_and_intersect() {
        // Row 0 has bits 1 and 70; row 1 has bit 70.
        let mut entries = vec![0u64; 2 * 80];
        entries[1] = 5;
        entries[70] = 1;
        entries[80 + 70] = 2;
        let mut m = BitRows::nonzero(&entries, 80);
        assert_eq!(m.width(), 2);
        assert_eq!(ones(m.row(0)).collect::<Vec<_>>(), vec![1, 70]);
        assert_eq!(first_common(m.row(0), m.row(1)), Some(70));
        m.remove(0, 70);
        assert_eq!(first_common(m.row(0), m.row(1)), None);
        assert!(m.contains(0, 1) && !m.contains(0, 70));
        assert_eq!(
            ones_in_both(m.row(0), m.row(1)).collect::<Vec<_>>(),
            Vec::<usize>::new()
        );
        m.remove(0, 1);
        assert_eq!(ones(m.row(0)).count(), 0);
    }
}
