//! The traffic matrix: bytes (or tokens) each GPU sends to each other GPU in one all-to-all.

use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::ScheduleError;
use crate::error::check_traffic;

/// Largest integer an `f64` holds exactly; integral inputs above it stay on the real path.
const EXACT_F64_INT: f64 = 9_007_199_254_740_992.0;

/// An `n x n` all-to-all traffic matrix: entry `(i, j)` is what GPU `i` sends to GPU `j`.
///
/// The diagonal is local traffic and is stored as zero. Entries are kept as exact `u64` byte
/// counts when every input value is a non-negative integer (below 2^53 for `f64` input), so the
/// schedulers run in exact integer arithmetic; otherwise they are kept as `f64`. Construction
/// validates everything: the matrix is non-empty and square, every entry finite and non-negative.
///
/// Serialized as its rows (`[[0, 5], [3, 0]]`); deserialization validates like
/// [`TrafficMatrix::from_rows`].
///
/// # Examples
///
/// ```
/// use alltoall_sched::TrafficMatrix;
/// let d = TrafficMatrix::from_rows(&[vec![0.0, 2.0, 1.0], vec![1.0, 0.0, 1.0], vec![0.0, 0.0, 0.0]])?;
/// assert!(d.is_integer());
/// assert_eq!(d.send_totals(), vec![3.0, 2.0, 0.0]);
/// assert_eq!(d.receive_totals(), vec![1.0, 2.0, 2.0]);
/// # Ok::<(), alltoall_sched::ScheduleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Vec<f64>>", into = "Vec<Vec<f64>>")]
pub struct TrafficMatrix {
    n: usize,
    entries: Entries,
}

#[derive(Debug, Clone, PartialEq)]
enum Entries {
    Integer(Vec<u64>),
    Real(Vec<f64>),
}

impl TrafficMatrix {
    /// Builds a matrix from exact integer rows (bytes or tokens).
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Empty`] for no rows, [`ScheduleError::NotSquare`] if a row is not `n` long.
    pub fn from_rows_u64(rows: &[Vec<u64>]) -> Result<Self, ScheduleError> {
        let n = check_shape(rows.iter().map(Vec::len), rows.len())?;
        let mut flat: Vec<u64> = rows.iter().flatten().copied().collect();
        zero_diagonal(&mut flat, n);
        Ok(Self {
            n,
            entries: Entries::Integer(flat),
        })
    }

    /// Builds a matrix from `f64` rows; all-integral input is stored exactly as `u64`.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Empty`], [`ScheduleError::NotSquare`], and
    /// [`ScheduleError::InvalidTraffic`] naming the first NaN, infinite or negative entry (the
    /// diagonal is checked too, then ignored).
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Self, ScheduleError> {
        let n = check_shape(rows.iter().map(Vec::len), rows.len())?;
        Self::from_flat_f64(n, rows.iter().flatten().copied().collect())
    }

    /// Builds a matrix from an `ndarray` of `f64` (see [`TrafficMatrix::from_rows`]).
    ///
    /// # Errors
    ///
    /// As [`TrafficMatrix::from_rows`].
    pub fn from_array(array: &Array2<f64>) -> Result<Self, ScheduleError> {
        let (rows, cols) = array.dim();
        check_shape(std::iter::repeat_n(cols, rows), rows)?;
        Self::from_flat_f64(rows, array.iter().copied().collect())
    }

    /// Builds a matrix from an `ndarray` of exact `u64` counts.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Empty`] or [`ScheduleError::NotSquare`].
    pub fn from_array_u64(array: &Array2<u64>) -> Result<Self, ScheduleError> {
        let (rows, cols) = array.dim();
        let n = check_shape(std::iter::repeat_n(cols, rows), rows)?;
        let mut flat: Vec<u64> = array.iter().copied().collect();
        zero_diagonal(&mut flat, n);
        Ok(Self {
            n,
            entries: Entries::Integer(flat),
        })
    }

    fn from_flat_f64(n: usize, mut flat: Vec<f64>) -> Result<Self, ScheduleError> {
        for (k, &value) in flat.iter().enumerate() {
            check_traffic(k / n, k % n, value)?;
        }
        zero_diagonal(&mut flat, n);
        let integral = flat.iter().all(|&v| v.fract() == 0.0 && v < EXACT_F64_INT);
        let entries = if integral {
            // Exact: every value is an integer below 2^53.
            Entries::Integer(flat.iter().map(|&v| v as u64).collect())
        } else {
            // Normalize -0.0 so equality and serialization are stable.
            Entries::Real(flat.into_iter().map(|v| v + 0.0).collect())
        };
        Ok(Self { n, entries })
    }

    /// Number of GPUs.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Whether the entries are exact integers (the scheduler's exact path).
    pub fn is_integer(&self) -> bool {
        matches!(self.entries, Entries::Integer(_))
    }

    /// Bytes GPU `src` sends to GPU `dst` (0 on the diagonal), `None` out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use alltoall_sched::TrafficMatrix;
    /// let d = TrafficMatrix::from_rows_u64(&[vec![9, 5], vec![3, 0]])?;
    /// assert_eq!(d.bytes(0, 1), Some(5.0));
    /// assert_eq!(d.bytes(0, 0), Some(0.0)); // local traffic never crosses the network
    /// assert_eq!(d.bytes(2, 0), None);
    /// # Ok::<(), alltoall_sched::ScheduleError>(())
    /// ```
    pub fn bytes(&self, src: usize, dst: usize) -> Option<f64> {
        (src < self.n && dst < self.n).then(|| self.at(src, dst))
    }

    /// Bytes GPU `src` sends to GPU `dst`; the crate's callers pass `src, dst < n`.
    pub(crate) fn at(&self, src: usize, dst: usize) -> f64 {
        match &self.entries {
            Entries::Integer(v) => v[src * self.n + dst] as f64,
            Entries::Real(v) => v[src * self.n + dst],
        }
    }

    /// Exact count GPU `src` sends to GPU `dst`, when the matrix is integral and the index valid.
    pub fn bytes_u64(&self, src: usize, dst: usize) -> Option<u64> {
        match &self.entries {
            Entries::Integer(v) if src < self.n && dst < self.n => Some(v[src * self.n + dst]),
            _ => None,
        }
    }

    /// The exact entries in row-major order, when the matrix is integral.
    pub(crate) fn integer_entries(&self) -> Option<&[u64]> {
        match &self.entries {
            Entries::Integer(v) => Some(v),
            Entries::Real(_) => None,
        }
    }

    /// Bytes each GPU sends to the others (row sums).
    pub fn send_totals(&self) -> Vec<f64> {
        (0..self.n)
            .map(|i| (0..self.n).map(|j| self.at(i, j)).sum())
            .collect()
    }

    /// Bytes each GPU receives from the others (column sums).
    pub fn receive_totals(&self) -> Vec<f64> {
        (0..self.n)
            .map(|j| (0..self.n).map(|i| self.at(i, j)).sum())
            .collect()
    }

    /// Number of off-diagonal pairs with traffic.
    pub fn nonzeros(&self) -> usize {
        self.pairs().count()
    }

    /// Every off-diagonal pair `(src, dst, bytes)` with traffic, row by row.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        let n = self.n;
        (0..n * n)
            .map(move |k| (k / n, k % n, self.at(k / n, k % n)))
            .filter(|&(_, _, b)| b > 0.0)
    }

    /// The reverse all-to-all: entry `(i, j)` becomes `(j, i)`, exactly (integers stay `u64`).
    ///
    /// An MoE layer's combine all-to-all returns every token the dispatch sent, so its matrix
    /// is the dispatch matrix transposed (Aurora §2.2).
    ///
    /// # Complexity
    ///
    /// `O(n^2)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use alltoall_sched::TrafficMatrix;
    /// let dispatch = TrafficMatrix::from_rows_u64(&[vec![0, 5], vec![3, 0]])?;
    /// let combine = dispatch.transposed();
    /// assert_eq!((combine.bytes(0, 1), combine.bytes(1, 0)), (Some(3.0), Some(5.0)));
    /// assert_eq!(combine.transposed(), dispatch);
    /// # Ok::<(), alltoall_sched::ScheduleError>(())
    /// ```
    pub fn transposed(&self) -> Self {
        let n = self.n;
        let swap = |k: usize| (k % n) * n + k / n;
        let entries = match &self.entries {
            Entries::Integer(v) => Entries::Integer((0..n * n).map(|k| v[swap(k)]).collect()),
            Entries::Real(v) => Entries::Real((0..n * n).map(|k| v[swap(k)]).collect()),
        };
        Self { n, entries }
    }

    /// The matrix as rows of `f64`.
    pub fn to_rows(&self) -> Vec<Vec<f64>> {
        (0..self.n)
            .map(|i| (0..self.n).map(|j| self.at(i, j)).collect())
            .collect()
    }
}

impl TryFrom<Vec<Vec<f64>>> for TrafficMatrix {
    type Error = ScheduleError;
    fn try_from(rows: Vec<Vec<f64>>) -> Result<Self, Self::Error> {
        Self::from_rows(&rows)
    }
}

impl From<TrafficMatrix> for Vec<Vec<f64>> {
    fn from(matrix: TrafficMatrix) -> Self {
        matrix.to_rows()
    }
}

/// Checks that there are `n > 0` rows of length `n` each; returns `n`.
fn check_shape(lens: impl Iterator<Item = usize>, n: usize) -> Result<usize, ScheduleError> {
    if n == 0 {
        return Err(ScheduleError::Empty);
    }
    for (row, len) in lens.enumerate() {
        if len != n {
            return Err(ScheduleError::NotSquare { row, len, n });
        }
    }
    Ok(n)
}

fn zero_diagonal<T: Default>(flat: &mut [T], n: usize) {
    for i in 0..n {
        flat[i * n + i] = T::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::CostModelError;

    #[test]
    fn rejects_bad_shapes_and_values() {
        assert_eq!(TrafficMatrix::from_rows(&[]), Err(ScheduleError::Empty));
        assert!(matches!(
            TrafficMatrix::from_rows(&[vec![0.0, 1.0], vec![1.0]]),
            Err(ScheduleError::NotSquare {
                row: 1,
                len: 1,
                n: 2
            })
        ));
        assert!(matches!(
            TrafficMatrix::from_rows(&[vec![0.0, f64::NAN], vec![1.0, 0.0]]),
            Err(ScheduleError::InvalidTraffic {
                src: 0,
                dst: 1,
                source: CostModelError::NonFinite { .. }
            })
        ));
        assert!(matches!(
            TrafficMatrix::from_rows(&[vec![0.0, 1.0], vec![-1.0, 0.0]]),
            Err(ScheduleError::InvalidTraffic {
                src: 1,
                dst: 0,
                source: CostModelError::Negative { .. }
            })
        ));
        assert!(matches!(
            TrafficMatrix::from_rows(&[vec![0.0, f64::INFINITY], vec![1.0, 0.0]]),
            Err(ScheduleError::InvalidTraffic {
                source: CostModelError::NonFinite { .. },
                ..
            })
        ));
    }

    #[test]
    fn diagonal_is_ignored_and_integers_detected() {
        let d = TrafficMatrix::from_rows(&[vec![7.0, 1.5], vec![2.0, 9.0]]).unwrap();
        assert!(!d.is_integer());
        assert_eq!(d.bytes(0, 0), Some(0.0));
        assert_eq!(d.bytes(0, 2), None);
        assert_eq!(d.send_totals(), vec![1.5, 2.0]);
        let e = TrafficMatrix::from_rows_u64(&[vec![7, 1], vec![2, 9]]).unwrap();
        assert!(e.is_integer());
        assert_eq!(e.bytes_u64(1, 1), Some(0));
        assert_eq!(e.nonzeros(), 2);
    }

    #[test]
    fn serde_round_trip_validates() {
        let d = TrafficMatrix::from_rows(&[vec![0.0, 3.0], vec![2.0, 0.0]]).unwrap();
        let json = serde_json_like(&d);
        assert_eq!(json, vec![vec![0.0, 3.0], vec![2.0, 0.0]]);
        assert!(matches!(
            TrafficMatrix::try_from(vec![vec![0.0, -1.0], vec![0.0, 0.0]]),
            Err(ScheduleError::InvalidTraffic { src: 0, dst: 1, .. })
        ));
    }

    fn serde_json_like(d: &TrafficMatrix) -> Vec<Vec<f64>> {
        d.clone().into()
    }

    #[test]
    fn ndarray_input() {
        let a = ndarray::array![[0.0, 1.0], [2.0, 0.0]];
        let d = TrafficMatrix::from_array(&a).unwrap();
        assert_eq!(d.receive_totals(), vec![2.0, 1.0]);
        let b = ndarray::array![[0u64, 4], [5, 0]];
        assert_eq!(
            TrafficMatrix::from_array_u64(&b).unwrap().bytes(1, 0),
            Some(5.0)
        );
    }
}
