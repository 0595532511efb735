//! A dense square matrix of finite non-negative weights, stored row-major.

use serde::{Deserialize, Serialize};

use crate::error::{MatchingError, check_weight};

/// An `n × n` matrix of finite, non-negative weights (bytes, seconds, ...), row-major.
///
/// Rows are the left side of a bipartite graph (experts of model A, experts), columns the right
/// side (experts of model B, GPUs). Every constructor validates the entries, so algorithms taking
/// a `SquareMatrix` never see NaN, infinities or negative numbers.
///
/// # Examples
///
/// ```
/// use colocation_matching::SquareMatrix;
///
/// let m = SquareMatrix::from_rows(&[vec![1.0, 2.0], vec![3.0, 4.0]])?;
/// assert_eq!(m.n(), 2);
/// assert_eq!(m.get(1, 0), 3.0);
/// assert_eq!(m.row(0), &[1.0, 2.0]);
/// # Ok::<(), colocation_matching::MatchingError>(())
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
    /// [`MatchingError::Empty`] for no rows, [`MatchingError::NotSquare`] when a row's length is not
    /// the number of rows, [`MatchingError::InvalidValue`] for NaN, infinite or negative entries.
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Self, MatchingError> {
        let n = rows.len();
        if n == 0 {
            return Err(MatchingError::Empty { what: "matrix" });
        }
        let mut data = Vec::with_capacity(n * n);
        for (row, values) in rows.iter().enumerate() {
            if values.len() != n {
                return Err(MatchingError::NotSquare {
                    what: "matrix",
                    row,
                    len: values.len(),
                    expected: n,
                });
            }
            data.extend_from_slice(values);
        }
        Self::from_flat(n, data)
    }

    /// Builds the `n × n` matrix whose entry `(i, j)` is `f(i, j)`.
    ///
    /// # Errors
    ///
    /// [`MatchingError::Empty`] for `n = 0`, [`MatchingError::TooLarge`] when `n²` overflows,
    /// [`MatchingError::InvalidValue`] when `f` returns NaN, an infinity or a negative number.
    pub fn from_fn(
        n: usize,
        mut f: impl FnMut(usize, usize) -> f64,
    ) -> Result<Self, MatchingError> {
        let len = checked_square(n)?;
        let mut data = Vec::with_capacity(len);
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
    /// As [`SquareMatrix::from_fn`], plus [`MatchingError::SizeMismatch`] when `data.len() != n²`.
    pub fn from_flat(n: usize, data: Vec<f64>) -> Result<Self, MatchingError> {
        let len = checked_square(n)?;
        if data.len() != len {
            return Err(MatchingError::SizeMismatch {
                what: "matrix entries vs n²",
                expected: len,
                actual: data.len(),
            });
        }
        for (index, &value) in data.iter().enumerate() {
            check_weight("matrix", index, value)?;
        }
        Ok(Self { n, data })
    }

    /// Number of rows (and columns).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Entry `(i, j)`. Panics if an index is out of range (indices come from the caller's loops,
    /// never from input data).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.data[i * self.n + j]
    }

    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.n..(i + 1) * self.n]
    }

    /// The rows as nested vectors.
    pub fn to_rows(&self) -> Vec<Vec<f64>> {
        self.data.chunks(self.n).map(<[f64]>::to_vec).collect()
    }

    /// Sum of the entries `(i, assignment[i])`.
    pub(crate) fn total(&self, assignment: &[usize]) -> f64 {
        assignment
            .iter()
            .enumerate()
            .map(|(i, &j)| self.get(i, j))
            .sum()
    }

    /// Largest entry `(i, assignment[i])` (0 for an empty assignment).
    pub(crate) fn bottleneck(&self, assignment: &[usize]) -> f64 {
        assignment
            .iter()
            .enumerate()
            .map(|(i, &j)| self.get(i, j))
            .fold(0.0, f64::max)
    }
}

fn checked_square(n: usize) -> Result<usize, MatchingError> {
    if n == 0 {
        return Err(MatchingError::Empty { what: "matrix" });
    }
    n.checked_mul(n)
        .filter(|&len| len <= isize::MAX as usize / 8)
        .ok_or(MatchingError::TooLarge {
            what: "matrix side",
            limit: 1 << 30,
            value: n,
        })
}

impl TryFrom<Vec<Vec<f64>>> for SquareMatrix {
    type Error = MatchingError;

    fn try_from(rows: Vec<Vec<f64>>) -> Result<Self, Self::Error> {
        Self::from_rows(&rows)
    }
}

impl From<SquareMatrix> for Vec<Vec<f64>> {
    fn from(matrix: SquareMatrix) -> Self {
        matrix.to_rows()
    }
}
