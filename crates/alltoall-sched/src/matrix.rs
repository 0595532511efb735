//! The traffic matrix: bytes (or tokens) each GPU sends to each other GPU in one all-to-all.

use comm_cost_model::InputError;
use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::ScheduleError;
use crate::error::check_traffic;
use comm_cost_model::check_same_len;

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
    /// [`ScheduleError::Input`] (`Empty`) for no rows, [`ScheduleError::NotSquare`] if a row is not `n` long.
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
    /// [`ScheduleError::Input`] (`Empty`), [`ScheduleError::NotSquare`],
    /// [`ScheduleError::InvalidTraffic`] naming the first NaN, infinite or negative entry (the
    /// diagonal is checked too, then ignored), and [`ScheduleError::Input`] (`Overflow`) if a row or
    /// column sum exceeds the `f64` range.
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
    /// [`ScheduleError::Input`] (`Empty`) or [`ScheduleError::NotSquare`].
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
        check_line_sums(&flat, n)?;
        let integral = flat.iter().all(|&v| v.fract() == 0.0 && v < EXACT_F64_INT);
        let entries = if integral {
            // Exact: every value is a non-negative integer below 2^53.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Entries::Integer(flat.iter().map(|&v| v as u64).collect())
        } else {
            // Normalize -0.0 so equality and serialization are stable.
            Entries::Real(flat.into_iter().map(|v| v + 0.0).collect())
        };
        Ok(Self { n, entries })
    }

    /// Number of GPUs.
    #[must_use]
    pub fn n(&self) -> usize {
        self.n
    }

    /// Whether the entries are exact integers (the scheduler's exact path).
    #[must_use]
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
    #[must_use]
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
    #[must_use]
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
    #[must_use]
    pub fn send_totals(&self) -> Vec<f64> {
        (0..self.n)
            .map(|i| (0..self.n).map(|j| self.at(i, j)).sum())
            .collect()
    }

    /// Bytes each GPU receives from the others (column sums).
    #[must_use]
    pub fn receive_totals(&self) -> Vec<f64> {
        (0..self.n)
            .map(|j| (0..self.n).map(|i| self.at(i, j)).sum())
            .collect()
    }

    /// Number of off-diagonal pairs with traffic.
    #[must_use]
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
    /// `O(n^2)` time.
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
    #[must_use]
    pub fn transposed(&self) -> Self {
        let n = self.n;
        let swap = |k: usize| (k % n) * n + k / n;
        let entries = match &self.entries {
            Entries::Integer(v) => Entries::Integer((0..n * n).map(|k| v[swap(k)]).collect()),
            Entries::Real(v) => Entries::Real((0..n * n).map(|k| v[swap(k)]).collect()),
        };
        Self { n, entries }
    }

    /// The traffic of experts moved onto GPUs through a placement: GPU `g` hosts the experts
    /// `experts_of_gpu[g]`, and entry `(g, h)` of the result is all that `g`'s experts send to
    /// `h`'s, `Σ d[e][f]` over `e` on `g` and `f` on `h` (`g != h`; traffic between two experts
    /// on one GPU never leaves it).
    ///
    /// `self` is indexed by expert (entry `(e, f)`: what expert `e`'s tokens owe expert `f`).
    /// With one expert per GPU this is a relabelling, `out[g][h] = d[e(g)][e(h)]`; several
    /// experts per GPU add up. Integer matrices stay exact.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Input`] (`Empty`) for no GPUs, [`ScheduleError::Input`] (`IndexOutOfRange`) for an expert index
    /// `>= n`, [`ScheduleError::NotAPartition`] for an expert placed on no GPU or on several,
    /// [`ScheduleError::Input`] (`Overflow`) if a GPU pair's bytes overflow.
    /// [`ScheduleError::Input`] (`TooLarge`) above [`crate::MAX_GPUS`] GPUs.
    ///
    /// # Complexity
    ///
    /// `O(n^2 + g^2)` time for `n` experts on `g` GPUs.
    ///
    /// # Examples
    ///
    /// ```
    /// use alltoall_sched::TrafficMatrix;
    /// // Expert traffic: 0 -> 1 is 5 bytes, 1 -> 2 is 7, 2 -> 0 is 1.
    /// let d = TrafficMatrix::from_rows_u64(&[vec![0, 5, 0], vec![0, 0, 7], vec![1, 0, 0]])?;
    /// // GPU 0 hosts expert 2, GPU 1 expert 0, GPU 2 expert 1.
    /// let on_gpus = d.relabel(&[[2], [0], [1]])?;
    /// assert_eq!(on_gpus.to_rows(), vec![vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 5.0], vec![7.0, 0.0, 0.0]]);
    /// // Experts 0 and 1 share GPU 0: their 5 bytes stay local.
    /// let shared = d.relabel(&[vec![0, 1], vec![2]])?;
    /// assert_eq!(shared.to_rows(), vec![vec![0.0, 7.0], vec![1.0, 0.0]]);
    /// # Ok::<(), alltoall_sched::ScheduleError>(())
    /// ```
    pub fn relabel<E: AsRef<[usize]>>(&self, experts_of_gpu: &[E]) -> Result<Self, ScheduleError> {
        let gpus = experts_of_gpu.len();
        if gpus == 0 {
            return Err(ScheduleError::EMPTY);
        }
        crate::error::check_gpus("GPUs of a relabeled matrix", gpus)?;
        let gpu_of = self.gpu_of_expert(experts_of_gpu)?;
        let n = self.n;
        let cell = |k: usize| gpu_of[k / n] * gpus + gpu_of[k % n];
        let overflow = ScheduleError::Input(InputError::Overflow {
            what: "the bytes between two GPUs",
        });
        match &self.entries {
            Entries::Integer(v) => {
                let mut out = vec![0u64; gpus * gpus];
                for (k, &bytes) in v.iter().enumerate() {
                    let c = cell(k);
                    out[c] = out[c].checked_add(bytes).ok_or_else(|| overflow.clone())?;
                }
                zero_diagonal(&mut out, gpus);
                Ok(Self {
                    n: gpus,
                    entries: Entries::Integer(out),
                })
            }
            Entries::Real(v) => {
                let mut out = vec![0.0; gpus * gpus];
                for (k, &bytes) in v.iter().enumerate() {
                    out[cell(k)] += bytes;
                }
                Self::from_real_sums(gpus, out, overflow)
            }
        }
    }

    /// The GPU of every expert, checking that `experts_of_gpu` places each exactly once.
    fn gpu_of_expert<E: AsRef<[usize]>>(
        &self,
        experts_of_gpu: &[E],
    ) -> Result<Vec<usize>, ScheduleError> {
        let mut gpu_of = vec![0; self.n];
        let mut placed = vec![0usize; self.n];
        for (g, experts) in experts_of_gpu.iter().enumerate() {
            for &e in experts.as_ref() {
                let count = placed.get_mut(e).ok_or(ScheduleError::Input(
                    InputError::index_out_of_range("expert", e, self.n),
                ))?;
                *count += 1;
                gpu_of[e] = g;
            }
        }
        match placed.iter().position(|&c| c != 1) {
            Some(expert) => Err(ScheduleError::NotAPartition {
                expert,
                gpus: placed[expert],
            }),
            None => Ok(gpu_of),
        }
    }

    /// The entry-wise sum of two all-to-alls on the same GPUs (for example two colocated
    /// models' dispatches sharing the ports, Aurora §6). Integer matrices stay exact.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::Input`] (`SizeMismatch`) for different GPU counts, [`ScheduleError::Input`] (`Overflow`)
    /// if an entry overflows.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use alltoall_sched::TrafficMatrix;
    /// let a = TrafficMatrix::from_rows_u64(&[vec![0, 5], vec![3, 0]])?;
    /// let b = TrafficMatrix::from_rows_u64(&[vec![0, 1], vec![2, 0]])?;
    /// assert_eq!(a.checked_add(&b)?.to_rows(), vec![vec![0.0, 6.0], vec![5.0, 0.0]]);
    /// # Ok::<(), alltoall_sched::ScheduleError>(())
    /// ```
    pub fn checked_add(&self, other: &Self) -> Result<Self, ScheduleError> {
        check_same_len("GPUs of the second matrix", other.n, self.n)?;
        let n = self.n;
        let overflow = ScheduleError::Input(InputError::Overflow {
            what: "the sum of two traffic matrices",
        });
        if let (Entries::Integer(a), Entries::Integer(b)) = (&self.entries, &other.entries) {
            let sum = a
                .iter()
                .zip(b)
                .map(|(x, y)| x.checked_add(*y))
                .collect::<Option<Vec<u64>>>()
                .ok_or(overflow)?;
            return Ok(Self {
                n,
                entries: Entries::Integer(sum),
            });
        }
        let sum = (0..n * n)
            .map(|k| self.at(k / n, k % n) + other.at(k / n, k % n))
            .collect();
        Self::from_real_sums(n, sum, overflow)
    }

    /// A matrix from sums of valid `f64` entries: `overflow` if one became infinite; stored
    /// exactly when every sum is integral, as [`TrafficMatrix::from_rows`] would.
    fn from_real_sums(
        n: usize,
        sums: Vec<f64>,
        overflow: ScheduleError,
    ) -> Result<Self, ScheduleError> {
        if sums.iter().any(|v| !v.is_finite()) {
            return Err(overflow);
        }
        Self::from_flat_f64(n, sums)
    }

    /// The matrix as rows of `f64`.
    #[must_use]
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
        return Err(ScheduleError::EMPTY);
    }
    for (row, len) in lens.enumerate() {
        if len != n {
            return Err(ScheduleError::NotSquare { row, len, n });
        }
    }
    Ok(n)
}

/// Checks that every row and column sum of `f64` entries is finite, summed in the order
/// [`TrafficMatrix::send_totals`] and [`TrafficMatrix::receive_totals`] use, so those totals
/// and every bound built on them are finite (two entries near `f64::MAX` in one line made them
/// infinite; found by fuzzing).
fn check_line_sums(flat: &[f64], n: usize) -> Result<(), ScheduleError> {
    let row = |i: usize| (0..n).map(|j| flat[i * n + j]).sum::<f64>();
    let col = |j: usize| (0..n).map(|i| flat[i * n + j]).sum::<f64>();
    if (0..n).all(|g| row(g).is_finite() && col(g).is_finite()) {
        Ok(())
    } else {
        Err(ScheduleError::Input(InputError::Overflow {
            what: "a row or column sum of bytes (f64)",
        }))
    }
}

fn zero_diagonal<T: Default>(flat: &mut [T], n: usize) {
    for i in 0..n {
        flat[i * n + i] = T::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm_cost_model::InputError;

    #[test]
    fn rejects_bad_shapes_and_values() {
        assert_eq!(TrafficMatrix::from_rows(&[]), Err(ScheduleError::EMPTY));
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
                source: InputError::NonFinite { .. }
            })
        ));
        assert!(matches!(
            TrafficMatrix::from_rows(&[vec![0.0, 1.0], vec![-1.0, 0.0]]),
            Err(ScheduleError::InvalidTraffic {
                src: 1,
                dst: 0,
                source: InputError::Negative { .. }
            })
        ));
        assert!(matches!(
            TrafficMatrix::from_rows(&[vec![0.0, f64::INFINITY], vec![1.0, 0.0]]),
            Err(ScheduleError::InvalidTraffic {
                source: InputError::NonFinite { .. },
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
    fn relabel_moves_and_sums_expert_traffic() {
        let d = TrafficMatrix::from_rows(&[
            vec![0.0, 1.5, 2.0, 4.0],
            vec![1.0, 0.0, 3.0, 0.5],
            vec![0.0, 2.5, 0.0, 1.0],
            vec![2.0, 0.0, 1.0, 0.0],
        ])
        .unwrap();
        // A permutation is a relabelling: out[g][h] = d[e(g)][e(h)].
        let perm = [[3], [1], [0], [2]];
        let p = d.relabel(&perm).unwrap();
        for g in 0..4 {
            for h in 0..4 {
                let expected = if g == h {
                    0.0
                } else {
                    d.at(perm[g][0], perm[h][0])
                };
                assert_eq!(p.bytes(g, h), Some(expected));
            }
        }
        // Two experts per GPU: sums, and the traffic inside a GPU disappears.
        let two = d.relabel(&[vec![0, 3], vec![1, 2]]).unwrap();
        assert_eq!(
            two.to_rows(),
            vec![vec![0.0, 1.5 + 2.0 + 1.0], vec![1.0 + 0.5 + 1.0, 0.0]]
        );
        // Sums that become integral are stored exactly, as from_rows would.
        assert!(!d.is_integer());
        let halves =
            TrafficMatrix::from_rows(&[vec![0.0, 0.5, 0.5], vec![0.0; 3], vec![0.0; 3]]).unwrap();
        assert!(halves.relabel(&[vec![0], vec![1, 2]]).unwrap().is_integer());
    }

    #[test]
    fn relabel_rejects_bad_placements() {
        let d = TrafficMatrix::from_rows_u64(&[vec![0, 1], vec![1, 0]]).unwrap();
        let none: [[usize; 1]; 0] = [];
        assert_eq!(d.relabel(&none), Err(ScheduleError::EMPTY));
        assert!(matches!(
            d.relabel(&[[0], [2]]),
            Err(ScheduleError::Input(InputError::IndexOutOfRange {
                index: 2,
                size: 2,
                ..
            }))
        ));
        assert!(matches!(
            d.relabel(&[[0], [0]]),
            Err(ScheduleError::NotAPartition { expert: 0, gpus: 2 })
        ));
        assert!(matches!(
            d.relabel(&[vec![1], vec![]]),
            Err(ScheduleError::NotAPartition { expert: 0, gpus: 0 })
        ));
        let big =
            TrafficMatrix::from_rows_u64(&[vec![0, u64::MAX, 1], vec![0; 3], vec![0; 3]]).unwrap();
        assert!(matches!(
            big.relabel(&[vec![0], vec![1, 2]]),
            Err(ScheduleError::Input(InputError::Overflow { .. }))
        ));
    }

    #[test]
    fn checked_add_is_exact_and_checks_sizes() {
        let a = TrafficMatrix::from_rows_u64(&[vec![0, 5], vec![3, 0]]).unwrap();
        let b = TrafficMatrix::from_rows(&[vec![0.0, 0.5], vec![0.5, 0.0]]).unwrap();
        let sum = a.checked_add(&b).unwrap();
        assert!(!sum.is_integer());
        assert_eq!(sum.to_rows(), vec![vec![0.0, 5.5], vec![3.5, 0.0]]);
        assert!(b.checked_add(&b).unwrap().is_integer());
        let three = TrafficMatrix::from_rows_u64(&[vec![0; 3], vec![0; 3], vec![0; 3]]).unwrap();
        assert!(matches!(
            a.checked_add(&three),
            Err(ScheduleError::Input(InputError::SizeMismatch {
                expected: 2,
                actual: 3,
                ..
            }))
        ));
        let max = TrafficMatrix::from_rows_u64(&[vec![0, u64::MAX], vec![0, 0]]).unwrap();
        assert!(matches!(
            max.checked_add(&a),
            Err(ScheduleError::Input(InputError::Overflow { .. }))
        ));
        let huge = TrafficMatrix::from_rows(&[vec![0.0, f64::MAX], vec![0.5, 0.0]]).unwrap();
        assert!(matches!(
            huge.checked_add(&huge),
            Err(ScheduleError::Input(InputError::Overflow { .. }))
        ));
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
