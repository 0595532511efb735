//! A validated dense square matrix of finite non-negative entries, serialized as rows.

use serde::{Deserialize, Serialize};

use crate::InputError;

/// Largest side a [`SquareMatrix`] accepts: `n²` entries of 8 bytes are then at most 8 GiB.
///
/// A side of `2^20` (8 TiB) used to be accepted and aborted the process when allocating
/// (issue 13); every `O(n²)` cluster model above this size is far beyond what fits in memory.
pub const MAX_MATRIX_SIDE: usize = 1 << 15;

/// An `n × n` matrix (`n ≥ 1`) of finite, non-negative numbers (bytes, seconds, seconds per
/// byte, ...), row-major.
///
/// Every constructor validates every entry, so algorithms taking a `SquareMatrix` never see NaN,
/// infinities or negative numbers. It serializes as its rows (`[[0.0, 1.0], [2.0, 0.0]]`) and
/// deserializes through the same validation. Indexing returns `None` out of range; hot loops use
/// [`SquareMatrix::rows`] or [`SquareMatrix::as_slice`] instead of indices.
///
/// # Examples
///
/// ```
/// use comm_cost_model::SquareMatrix;
///
/// let m = SquareMatrix::from_rows(&[vec![1.0, 2.0], vec![3.0, 4.0]])?;
/// assert_eq!(m.n(), 2);
/// assert_eq!(m.get(1, 0), Some(3.0));
/// assert_eq!(m.get(2, 0), None);
/// assert_eq!(m.row(0), Some(&[1.0, 2.0][..]));
/// assert!(SquareMatrix::from_rows(&[vec![1.0, f64::NAN], vec![0.0, 0.0]]).is_err());
/// # Ok::<(), comm_cost_model::InputError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Vec<f64>>", into = "Vec<Vec<f64>>")]
pub struct SquareMatrix {
    n: usize,
    data: Vec<f64>,
}

impl SquareMatrix {
    /// Builds the matrix from its rows.
    ///
    /// # Errors
    ///
    /// [`InputError::CountTooSmall`] for no rows, [`InputError::SizeMismatch`] when a
    /// row's length is not the number of rows, [`InputError::BadEntry`] for a NaN, infinite
    /// or negative entry, [`InputError::TooLarge`] beyond [`MAX_MATRIX_SIDE`] rows.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Self, InputError> {
        let n = rows.len();
        let mut data = Vec::with_capacity(checked_square(n)?);
        for row in rows {
            if row.len() != n {
                return Err(InputError::SizeMismatch {
                    what: "matrix row length",
                    expected: n as u64,
                    actual: row.len() as u64,
                });
            }
            data.extend_from_slice(row);
        }
        Self::from_flat(n, data)
    }

    /// Builds the `n × n` matrix whose entry `(i, j)` is `f(i, j)`.
    ///
    /// # Errors
    ///
    /// As [`SquareMatrix::from_rows`].
    ///
    /// # Complexity
    ///
    /// `O(n^2)` calls of `f`.
    pub fn from_fn(n: usize, mut f: impl FnMut(usize, usize) -> f64) -> Result<Self, InputError> {
        let mut data = Vec::with_capacity(checked_square(n)?);
        for i in 0..n {
            for j in 0..n {
                data.push(f(i, j));
            }
        }
        Self::from_flat(n, data)
    }

    /// Builds the matrix from `n²` row-major entries.
    ///
    /// # Errors
    ///
    /// As [`SquareMatrix::from_rows`]; [`InputError::SizeMismatch`] when `data.len() != n²`.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    pub fn from_flat(n: usize, data: Vec<f64>) -> Result<Self, InputError> {
        let len = checked_square(n)?;
        if data.len() != len {
            return Err(InputError::SizeMismatch {
                what: "matrix entries (n²)",
                expected: len as u64,
                actual: data.len() as u64,
            });
        }
        for (index, &value) in data.iter().enumerate() {
            if !(value.is_finite() && value >= 0.0) {
                return Err(InputError::BadEntry {
                    what: "matrix",
                    row: index / n,
                    col: index % n,
                    value,
                });
            }
        }
        Ok(Self { n, data })
    }

    /// Number of rows (and columns), at least 1.
    #[must_use]
    pub fn n(&self) -> usize {
        self.n
    }

    /// Entry `(i, j)`, or `None` out of range.
    #[must_use]
    pub fn get(&self, i: usize, j: usize) -> Option<f64> {
        (i < self.n && j < self.n).then(|| self.data[i * self.n + j])
    }

    /// Row `i`, or `None` out of range.
    #[must_use]
    pub fn row(&self, i: usize) -> Option<&[f64]> {
        self.data.chunks_exact(self.n).nth(i)
    }

    /// The rows, in order.
    #[must_use]
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &[f64]> + '_ {
        self.data.chunks_exact(self.n)
    }

    /// All entries, row-major (`n²` of them; entry `(i, j)` at `i n + j`).
    #[must_use]
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// The rows as nested vectors.
    pub fn to_rows(&self) -> Vec<Vec<f64>> {
        self.rows().map(<[f64]>::to_vec).collect()
    }

    /// The same matrix with zeros on the diagonal (a node does not message itself).
    #[must_use]
    pub fn with_zero_diagonal(mut self) -> Self {
        let n = self.n;
        self.data.iter_mut().step_by(n + 1).for_each(|d| *d = 0.0);
        self
    }
}

/// `n²`, or an error for `n = 0` or a side too large to store.
fn checked_square(n: usize) -> Result<usize, InputError> {
    if n == 0 {
        return Err(InputError::CountTooSmall {
            what: "matrix rows",
            min: 1,
            value: 0,
        });
    }
    if n > MAX_MATRIX_SIDE {
        return Err(InputError::TooLarge {
            what: "matrix side",
            limit: MAX_MATRIX_SIDE as u64,
            value: n as u64,
        });
    }
    Ok(n * n)
}

impl TryFrom<Vec<Vec<f64>>> for SquareMatrix {
    type Error = InputError;

    fn try_from(rows: Vec<Vec<f64>>) -> Result<Self, Self::Error> {
        Self::from_rows(&rows)
    }
}

impl From<SquareMatrix> for Vec<Vec<f64>> {
    fn from(matrix: SquareMatrix) -> Self {
        matrix.to_rows()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_matrices_are_typed_errors() {
        assert!(matches!(
            SquareMatrix::from_rows(&[]),
            Err(InputError::CountTooSmall { .. })
        ));
        assert!(matches!(
            SquareMatrix::from_rows(&[vec![1.0, 2.0], vec![3.0]]),
            Err(InputError::SizeMismatch {
                expected: 2,
                actual: 1,
                ..
            })
        ));
        for bad in [f64::NAN, f64::INFINITY, -1.0] {
            assert!(matches!(
                SquareMatrix::from_rows(&[vec![1.0, bad], vec![3.0, 4.0]]),
                Err(InputError::BadEntry { row: 0, col: 1, .. })
            ));
        }
        assert!(matches!(
            SquareMatrix::from_flat(2, vec![1.0; 3]),
            Err(InputError::SizeMismatch { .. })
        ));
        assert!(matches!(
            SquareMatrix::from_fn(MAX_MATRIX_SIDE + 1, |_, _| 0.0),
            Err(InputError::TooLarge { .. })
        ));
        // Issue 13: 2^20 rows (8 TiB) used to pass the check and abort on allocation.
        assert!(matches!(
            SquareMatrix::from_fn(1 << 20, |_, _| 0.0),
            Err(InputError::TooLarge { .. })
        ));
    }

    #[test]
    fn accessors_and_diagonal() {
        let m = SquareMatrix::from_fn(3, |i, j| (3 * i + j) as f64).unwrap();
        assert_eq!(m.get(2, 1), Some(7.0));
        assert_eq!(m.get(1, 3), None);
        assert_eq!(m.row(3), None);
        assert_eq!(m.rows().len(), 3);
        let z = m.clone().with_zero_diagonal();
        assert_eq!(
            (z.get(0, 0), z.get(1, 1), z.get(2, 2)),
            (Some(0.0), Some(0.0), Some(0.0))
        );
        assert_eq!(z.get(0, 1), m.get(0, 1));
        let rows: Vec<Vec<f64>> = m.clone().into();
        assert_eq!(SquareMatrix::try_from(rows).unwrap(), m);
    }
}
