//! Per-expert send and receive loads of one all-to-all, derived from a traffic matrix.

use comm_cost_model::InputError;
use serde::{Deserialize, Serialize};

use comm_cost_model::check_finite_result;

use crate::error::MatchingError;
use bipartite::MAX_VERTICES;
use bipartite::SquareMatrix;
use comm_cost_model::{check_at_most, check_entries, check_same_len};

/// How many bytes each expert's GPU sends and receives in one all-to-all (Aurora Eq. 6's
/// `a_i` and `a_{n+i}`).
///
/// # Examples
///
/// ```
/// use colocation_matching::{ExpertLoads, SquareMatrix};
///
/// // d[i][j] = bytes from expert i's GPU to expert j's GPU; the diagonal never leaves the GPU.
/// let d = SquareMatrix::from_rows(&[vec![5.0, 1.0, 2.0], vec![3.0, 0.0, 4.0], vec![0.0, 6.0, 9.0]])?;
/// let loads = ExpertLoads::from_traffic(&d)?;
/// assert_eq!(loads.send_bytes, vec![1.0 + 2.0, 3.0 + 4.0, 0.0 + 6.0]);
/// assert_eq!(loads.recv_bytes, vec![3.0 + 0.0, 1.0 + 6.0, 2.0 + 4.0]);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ExpertLoadsFields")]
pub struct ExpertLoads {
    /// Bytes sent by expert `i`'s GPU (row sum of the traffic matrix, diagonal excluded).
    pub send_bytes: Vec<f64>,
    /// Bytes received by expert `i`'s GPU (column sum, diagonal excluded).
    pub recv_bytes: Vec<f64>,
}

/// The serialized form of [`ExpertLoads`]: deserializing goes through [`ExpertLoads::new`].
#[derive(Deserialize)]
struct ExpertLoadsFields {
    send_bytes: Vec<f64>,
    recv_bytes: Vec<f64>,
}

impl TryFrom<ExpertLoadsFields> for ExpertLoads {
    type Error = MatchingError;

    fn try_from(f: ExpertLoadsFields) -> Result<Self, Self::Error> {
        Self::new(f.send_bytes, f.recv_bytes)
    }
}

impl ExpertLoads {
    /// Loads from explicit send and receive vectors.
    ///
    /// # Errors
    ///
    /// [`MatchingError::Input`] (`Empty`, `SizeMismatch`) for different lengths,
    /// [`MatchingError::Input`] (`InvalidEntry`) for NaN, infinite or negative bytes.
    pub fn new(send_bytes: Vec<f64>, recv_bytes: Vec<f64>) -> Result<Self, MatchingError> {
        if send_bytes.is_empty() {
            return Err(MatchingError::Input(InputError::Empty {
                what: "expert loads",
            }));
        }
        check_same_len("send vs receive loads", send_bytes.len(), recv_bytes.len())?;
        check_entries("send_bytes", &send_bytes)?;
        check_entries("recv_bytes", &recv_bytes)?;
        Ok(Self {
            send_bytes,
            recv_bytes,
        })
    }

    /// Loads where every GPU sends what it receives (Aurora §6.2 Case I).
    ///
    /// # Errors
    ///
    /// As [`ExpertLoads::new`].
    pub fn symmetric(bytes: Vec<f64>) -> Result<Self, MatchingError> {
        Self::new(bytes.clone(), bytes)
    }

    /// Row and column sums of a traffic matrix `d[i][j]` (bytes from expert `i`'s GPU to expert
    /// `j`'s GPU). The diagonal is excluded: a token routed to the expert on its own GPU never
    /// crosses the network. (Aurora Eq. 6 sums the whole row; with a zero diagonal both agree.)
    ///
    /// # Errors
    ///
    /// [`MatchingError::Input`] (`NonFinite`) when a row or column sum overflows (entries near
    /// `f64::MAX`): loads must be finite.
    ///
    /// # Complexity
    ///
    /// `O(n^2)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::{ExpertLoads, SquareMatrix};
    ///
    /// let d = SquareMatrix::from_rows(&[vec![0.0, 1e308], vec![1e308, 0.0]])?;
    /// assert_eq!(ExpertLoads::from_traffic(&d)?.send_bytes, vec![1e308, 1e308]);
    /// let d = SquareMatrix::from_rows(&[vec![0.0, 1e308, 1e308], vec![0.0; 3], vec![0.0; 3]])?;
    /// assert!(ExpertLoads::from_traffic(&d).is_err()); // expert 0 sends 2e308 bytes
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_traffic(traffic: &SquareMatrix) -> Result<Self, MatchingError> {
        let n = traffic.n();
        let mut send_bytes = vec![0.0; n];
        let mut recv_bytes = vec![0.0; n];
        for (i, (send, row)) in send_bytes.iter_mut().zip(traffic.rows()).enumerate() {
            for (j, &d) in row.iter().enumerate() {
                if i != j {
                    *send += d;
                    recv_bytes[j] += d;
                }
            }
        }
        finite_loads(send_bytes, recv_bytes)
    }

    /// Number of experts.
    #[must_use]
    pub fn len(&self) -> usize {
        self.send_bytes.len()
    }

    /// True when there are no experts (never, for validated loads).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.send_bytes.is_empty()
    }

    /// The same loads with zero-load "empty slot" experts appended up to `n` experts, so a model
    /// with fewer experts can be colocated with a larger one (indices `>= len()` are empty GPU
    /// halves).
    ///
    /// # Errors
    ///
    /// [`MatchingError::Input`] (`SizeMismatch`) if `n < len()`, [`MatchingError::Input`] (`TooLarge`) above
    /// [`MAX_VERTICES`] experts (checked before allocating).
    ///
    /// # Complexity
    ///
    /// `O(n)` time and space.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::ExpertLoads;
    ///
    /// let a = ExpertLoads::new(vec![4.0], vec![2.0])?.padded(3)?;
    /// assert_eq!((a.send_bytes, a.recv_bytes), (vec![4.0, 0.0, 0.0], vec![2.0, 0.0, 0.0]));
    /// # Ok::<(), colocation_matching::MatchingError>(())
    /// ```
    pub fn padded(&self, n: usize) -> Result<Self, MatchingError> {
        check_at_most("padded experts", MAX_VERTICES, n)?;
        if n < self.len() {
            return Err(MatchingError::Input(InputError::size_mismatch(
                "padding below the number of experts",
                self.len(),
                n,
            )));
        }
        let mut padded = self.clone();
        padded.send_bytes.resize(n, 0.0);
        padded.recv_bytes.resize(n, 0.0);
        Ok(padded)
    }
}

/// Per-GPU send and receive bytes of one model whose expert `e` runs on GPU `gpu_of_expert[e]`.
///
/// Traffic between two experts on the same GPU stays local and is not counted, so this is exact
/// for any placement, including Lina's (two experts of one model per GPU).
///
/// # Errors
///
/// [`MatchingError::Input`] (`SizeMismatch`) when `gpu_of_expert` does not have one entry per expert,
/// [`MatchingError::Input`] (`IndexOutOfRange`) for a GPU `>= n_gpus`, [`MatchingError::Input`] (`Empty`) for no GPU,
/// [`MatchingError::Input`] (`TooLarge`) above [`MAX_VERTICES`] GPUs (checked before allocating),
/// [`MatchingError::Input`] (`NonFinite`) when a GPU's bytes overflow.
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use colocation_matching::{SquareMatrix, placement_loads};
///
/// let d = SquareMatrix::from_rows(&[vec![0.0, 1.0, 2.0], vec![3.0, 0.0, 4.0], vec![5.0, 6.0, 0.0]])?;
/// // Experts 0 and 1 share GPU 0; their mutual traffic (1 and 3) stays on it.
/// let gpu = placement_loads(&d, &[0, 0, 1], 2)?;
/// assert_eq!(gpu.send_bytes, vec![2.0 + 4.0, 5.0 + 6.0]);
/// assert_eq!(gpu.recv_bytes, vec![5.0 + 6.0, 2.0 + 4.0]);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn placement_loads(
    traffic: &SquareMatrix,
    gpu_of_expert: &[usize],
    n_gpus: usize,
) -> Result<ExpertLoads, MatchingError> {
    if n_gpus == 0 {
        return Err(MatchingError::Input(InputError::Empty { what: "GPUs" }));
    }
    check_at_most("GPUs", MAX_VERTICES, n_gpus)?;
    check_same_len("placement vs experts", gpu_of_expert.len(), traffic.n())?;
    if let Some(&index) = gpu_of_expert.iter().find(|&&g| g >= n_gpus) {
        return Err(MatchingError::Input(InputError::index_out_of_range(
            "GPU of expert",
            index,
            n_gpus,
        )));
    }
    let mut send_bytes = vec![0.0; n_gpus];
    let mut recv_bytes = vec![0.0; n_gpus];
    for (&gi, row) in gpu_of_expert.iter().zip(traffic.rows()) {
        for (j, &d) in row.iter().enumerate() {
            let gj = gpu_of_expert[j];
            if gi != gj {
                send_bytes[gi] += d;
                recv_bytes[gj] += d;
            }
        }
    }
    finite_loads(send_bytes, recv_bytes)
}

/// Loads from sums of finite bytes, which overflow to infinity for entries near `f64::MAX`.
fn finite_loads(send_bytes: Vec<f64>, recv_bytes: Vec<f64>) -> Result<ExpertLoads, MatchingError> {
    for &x in send_bytes.iter().chain(&recv_bytes) {
        check_finite_result("bytes sent or received by a GPU", x)?;
    }
    Ok(ExpertLoads {
        send_bytes,
        recv_bytes,
    })
}
