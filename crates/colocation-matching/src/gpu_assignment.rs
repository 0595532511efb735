//! Assigning exclusive experts to heterogeneous GPUs (Aurora §5.1).

use comm_cost_model::InputError;
use comm_cost_model::check_finite_result;
use serde::{Deserialize, Serialize};

use crate::error::MatchingError;
use crate::loads::ExpertLoads;
use bipartite::SquareMatrix;
use bipartite::{BottleneckOptions, bottleneck_assignment, chosen_max};
use comm_cost_model::{check_entries, check_entry, check_positive_entries, check_same_len};

/// One GPU of a heterogeneous cluster.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    /// Sustained compute throughput in FLOP/s.
    pub flop_per_s: f64,
    /// Network bandwidth of the GPU's link in bytes/s.
    pub bandwidth_bytes_per_s: f64,
}

/// What one expert asks of its GPU in one MoE layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExpertDemand {
    /// Bytes its GPU sends in the first all-to-all.
    pub send_bytes: f64,
    /// Bytes its GPU receives in the first all-to-all (tokens to process).
    pub recv_bytes: f64,
    /// FLOP of its feed-forward computation.
    pub flop: f64,
}

impl ExpertDemand {
    /// The demand of every expert of one all-to-all: its send and receive bytes, and FFN work
    /// proportional to the tokens it receives (`flop = recv_bytes · flop_per_byte`, Aurora
    /// §4.1).
    ///
    /// # Errors
    ///
    /// [`MatchingError::Input`] (`InvalidEntry`) for a NaN, infinite or negative `flop_per_byte`,
    /// [`MatchingError::Input`] (`NonFinite`) when an expert's FLOP overflow.
    ///
    /// # Complexity
    ///
    /// `O(n)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::{ExpertDemand, ExpertLoads};
    /// let loads = ExpertLoads::new(vec![4.0, 1.0], vec![2.0, 3.0])?;
    /// let d = ExpertDemand::from_loads(&loads, 10.0)?;
    /// assert_eq!(d[1], ExpertDemand { send_bytes: 1.0, recv_bytes: 3.0, flop: 30.0 });
    /// # Ok::<(), colocation_matching::MatchingError>(())
    /// ```
    pub fn from_loads(loads: &ExpertLoads, flop_per_byte: f64) -> Result<Vec<Self>, MatchingError> {
        check_entry("FLOP per byte", 0, flop_per_byte)?;
        loads
            .send_bytes
            .iter()
            .zip(&loads.recv_bytes)
            .map(|(&send_bytes, &recv_bytes)| {
                Ok(Self {
                    send_bytes,
                    recv_bytes,
                    flop: check_finite_result("expert FLOP", recv_bytes * flop_per_byte)?,
                })
            })
            .collect()
    }

    pub(crate) fn check(&self, what: &'static str, index: usize) -> Result<(), MatchingError> {
        for value in [self.send_bytes, self.recv_bytes, self.flop] {
            check_entry(what, index, value)?;
        }
        Ok(())
    }
}

pub(crate) fn check_gpus(gpus: &[GpuSpec]) -> Result<(), MatchingError> {
    if gpus.is_empty() {
        return Err(MatchingError::Input(InputError::Empty { what: "GPUs" }));
    }
    let flops: Vec<f64> = gpus.iter().map(|g| g.flop_per_s).collect();
    let bandwidths: Vec<f64> = gpus.iter().map(|g| g.bandwidth_bytes_per_s).collect();
    check_positive_entries("GPU flop_per_s", &flops)?;
    Ok(check_positive_entries(
        "GPU bandwidth_bytes_per_s",
        &bandwidths,
    )?)
}

/// Time of one layer on `gpu` for traffic `send`/`recv` bytes and `flop` of expert work:
/// two all-to-alls (the second mirrors the first, Aurora §2.2), each bounded by the larger of
/// the GPU's send and receive volume over its bandwidth (Theorem 5.2), plus the FFN.
pub(crate) fn layer_time_s(gpu: &GpuSpec, send: f64, recv: f64, flop: f64) -> f64 {
    2.0 * send.max(recv) / gpu.bandwidth_bytes_per_s + flop / gpu.flop_per_s
}

/// The per-(expert, GPU) time matrix `t[e][g] = 2·max(send_e, recv_e)/B_g + flop_e/F_g`.
///
/// Aurora §5: each GPU runs the expert's two all-to-alls at its own bandwidth (Theorem 5.2
/// bounds each by `max(send, receive)/B_g`) and its FFN at its own speed. Feed the result to
/// [`assign_gpus_bottleneck`].
///
/// # Errors
///
/// [`MatchingError::Input`] (`SizeMismatch`) unless there are as many GPUs as experts,
/// [`MatchingError::Input`] (`InvalidEntry` or `NotPositiveEntry`) for bad numbers,
/// [`MatchingError::Input`] (`NonFinite`) when a time overflows (huge bytes or FLOP on a
/// subnormal bandwidth or FLOP/s), `TooLarge` above [`comm_cost_model::MAX_MATRIX_SIDE`]
/// experts.
///
/// # Complexity
///
/// `O(n^2)` time.
///
/// # Examples
///
/// ```
/// use colocation_matching::{ExpertDemand, GpuSpec, exclusive_time_matrix};
///
/// let e = [ExpertDemand { send_bytes: 4.0, recv_bytes: 6.0, flop: 10.0 }];
/// let g = [GpuSpec { flop_per_s: 5.0, bandwidth_bytes_per_s: 2.0 }];
/// let t = exclusive_time_matrix(&e, &g)?;
/// assert_eq!(t.get(0, 0), Some(2.0 * 6.0 / 2.0 + 10.0 / 5.0));
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn exclusive_time_matrix(
    experts: &[ExpertDemand],
    gpus: &[GpuSpec],
) -> Result<SquareMatrix, MatchingError> {
    check_gpus(gpus)?;
    check_same_len("experts vs GPUs", experts.len(), gpus.len())?;
    for (i, e) in experts.iter().enumerate() {
        e.check("expert demand", i)?;
    }
    let mut overflow = None;
    let times = SquareMatrix::from_fn(experts.len(), |e, g| {
        let x = &experts[e];
        let t = layer_time_s(&gpus[g], x.send_bytes, x.recv_bytes, x.flop);
        if !t.is_finite() {
            overflow.get_or_insert(t);
        }
        t
    });
    // An overflowing time would be reported as a bad matrix entry; say what it is.
    if let Some(value) = overflow {
        check_finite_result("expert time on a GPU (s)", value)?;
    }
    Ok(times?)
}

/// An expert-to-GPU assignment with its slowest GPU's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuAssignment {
    /// `gpu_of_expert[e]` is the GPU hosting expert `e`.
    pub gpu_of_expert: Vec<usize>,
    /// The largest `t[e][gpu_of_expert[e]]` in seconds.
    pub bottleneck_s: f64,
}

impl GpuAssignment {
    /// The same assignment seen from the GPUs: `experts_of_gpu()[g]` lists the experts on GPU
    /// `g` (one each for a square assignment).
    ///
    /// # Complexity
    ///
    /// `O(n)` time.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::GpuAssignment;
    /// let a = GpuAssignment { gpu_of_expert: vec![2, 0, 1], bottleneck_s: 1.0 };
    /// assert_eq!(a.experts_of_gpu(), vec![vec![1], vec![2], vec![0]]);
    /// ```
    #[must_use]
    pub fn experts_of_gpu(&self) -> Vec<Vec<usize>> {
        experts_of_gpu(&self.gpu_of_expert, self.gpu_of_expert.len())
    }
}

/// `gpu_of_expert` inverted: the experts of each of `gpus` GPUs, in expert order (a GPU index
/// `>= gpus` is left out).
pub(crate) fn experts_of_gpu(gpu_of_expert: &[usize], gpus: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); gpus];
    for (expert, &gpu) in gpu_of_expert.iter().enumerate() {
        if let Some(list) = out.get_mut(gpu) {
            list.push(expert);
        }
    }
    out
}

/// Aurora Theorem 5.1: the most popular expert goes to the best GPU, and so on down.
///
/// Sorts experts by `expert_tokens` (descending) and GPUs by `gpu_performance` (descending) and
/// pairs them in order; ties keep index order. Optimal only under the paper's footnote 2 (a GPU
/// with more compute never has less bandwidth); [`assign_gpus_bottleneck`] is optimal for any
/// time matrix.
///
/// # Errors
///
/// [`MatchingError::Input`] (`Empty`, `SizeMismatch`, `InvalidEntry`).
///
/// # Complexity
///
/// `O(n log n)` time.
///
/// # Examples
///
/// ```
/// use colocation_matching::assign_by_popularity;
///
/// // Expert 1 is the most popular, GPU 2 the fastest.
/// let gpu_of = assign_by_popularity(&[10.0, 30.0, 20.0], &[1.0, 2.0, 3.0])?;
/// assert_eq!(gpu_of, vec![0, 2, 1]);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn assign_by_popularity(
    expert_tokens: &[f64],
    gpu_performance: &[f64],
) -> Result<Vec<usize>, MatchingError> {
    if expert_tokens.is_empty() {
        return Err(MatchingError::Input(InputError::Empty { what: "experts" }));
    }
    check_same_len(
        "experts vs GPUs",
        expert_tokens.len(),
        gpu_performance.len(),
    )?;
    check_entries("expert_tokens", expert_tokens)?;
    check_entries("gpu_performance", gpu_performance)?;
    let experts = descending(expert_tokens);
    let gpus = descending(gpu_performance);
    let mut gpu_of = vec![0; expert_tokens.len()];
    for (&e, &g) in experts.iter().zip(&gpus) {
        gpu_of[e] = g;
    }
    Ok(gpu_of)
}

/// Indices sorted by value, largest first; ties by index.
pub(crate) fn descending(values: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&x, &y| values[y].total_cmp(&values[x]).then(x.cmp(&y)));
    idx
}

/// Exact GPU assignment minimizing the slowest GPU for any per-(expert, GPU) time matrix.
///
/// Generalizes Aurora Theorem 5.1: a [`crate::bottleneck_matching`] of `times[e][g]`, optimal even when
/// a faster-computing GPU has less bandwidth (where sorting by popularity can lose).
///
/// # Errors
///
/// As [`crate::bottleneck_matching`].
///
/// # Complexity
///
/// That of [`crate::bottleneck_matching`].
///
/// # Examples
///
/// ```
/// use colocation_matching::{ExpertDemand, GpuSpec, assign_gpus_bottleneck, exclusive_time_matrix};
///
/// // GPU 0 computes fast but has a thin link; GPU 1 the opposite (violates Aurora footnote 2).
/// let gpus = [
///     GpuSpec { flop_per_s: 100.0, bandwidth_bytes_per_s: 1.0 },
///     GpuSpec { flop_per_s: 10.0, bandwidth_bytes_per_s: 10.0 },
/// ];
/// let experts = [
///     ExpertDemand { send_bytes: 10.0, recv_bytes: 10.0, flop: 100.0 }, // popular
///     ExpertDemand { send_bytes: 1.0, recv_bytes: 1.0, flop: 10.0 },
/// ];
/// let t = exclusive_time_matrix(&experts, &gpus)?;
/// let a = assign_gpus_bottleneck(&t)?;
/// // Theorem 5.1 puts the popular expert on GPU 0: 2·10/1 + 100/100 = 21 s.
/// // Swapping gives max(2·10/10 + 100/10, 2·1/1 + 10/100) = 12 s.
/// assert_eq!(a.gpu_of_expert, vec![1, 0]);
/// assert_eq!(a.bottleneck_s, 12.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn assign_gpus_bottleneck(times: &SquareMatrix) -> Result<GpuAssignment, MatchingError> {
    let gpu_of_expert = bottleneck_assignment(times, &BottleneckOptions::default())?;
    Ok(GpuAssignment {
        bottleneck_s: chosen_max(times, &gpu_of_expert),
        gpu_of_expert,
    })
}
