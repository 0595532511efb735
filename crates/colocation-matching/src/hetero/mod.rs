//! Colocating two models on heterogeneous GPUs (Aurora §7): a 3-D bottleneck matching.
//!
//! Every GPU `g` hosts one expert `a` of model A and one expert `b` of model B; the hyperedge
//! `(a, b, g)` costs the layer time on `g`. Minimizing the slowest GPU is NP-hard (Aurora §7.1);
//! this module has the paper's decoupled two-stage method, exact solvers for small instances and
//! a local-search improvement.

mod decoupled;
mod exact;
mod local_search;
mod milp;

pub use decoupled::colocate_decoupled;
pub use exact::{EXACT_MAX_GPUS, colocate_exact};
pub use local_search::{LOCAL_SEARCH_MAX_ITERATIONS, LocalSearchOptions, colocate_local_search};
pub use milp::{MILP_MAX_GPUS, colocate_milp};

use comm_cost_model::InputError;
use comm_cost_model::{MAX_MATRIX_SIDE, check_finite_result};
use serde::{Deserialize, Serialize};

use crate::error::MatchingError;
use crate::gpu_assignment::{ExpertDemand, GpuSpec, check_gpus, layer_time_s};
use bipartite::SquareMatrix;
use comm_cost_model::{check_at_most, check_entry, check_same_len};

/// The cost of putting expert `a` of model A and expert `b` of model B on GPU `gpu`.
///
/// Implementations should return finite non-negative seconds for indices below
/// [`HyperedgeCost::size`] (the provided types validate their inputs on construction, and
/// return NaN out of range). The solvers check every cost they use and return
/// [`MatchingError::Input`] (`InvalidEntry`) (or a `Cost` error) for one that is not.
pub trait HyperedgeCost {
    /// Number of experts per model, which is also the number of GPUs.
    fn size(&self) -> usize;

    /// Layer time in seconds of GPU `gpu` hosting `a` (model A) and `b` (model B).
    fn cost_s(&self, a: usize, b: usize, gpu: usize) -> f64;

    /// The weight Aurora §7.2's first stage pairs experts by, before GPUs are known. Defaults to
    /// the mean cost over GPUs; [`ColocationCostModel`] uses Eq. 6's aggregated bytes as the paper
    /// does.
    fn pair_weight(&self, a: usize, b: usize) -> f64 {
        let n = self.size() as f64;
        // Divide before summing: the mean of finite costs is finite (the sum of costs near
        // `f64::MAX` is not).
        (0..self.size())
            .map(|g| self.cost_s(a, b, g) / n)
            .sum::<f64>()
    }
}

/// Structured costs: both models' expert demands and the GPUs.
///
/// GPU `g` hosting A's expert `a` and B's expert `b` takes
/// `2·max(s_a + s_b, r_a + r_b)/B_g + (f_a + f_b)/F_g`: the aggregated first and second
/// all-to-all (Theorem 5.2 on the combined traffic) and both FFNs, which cannot overlap each
/// other (Aurora §6.1 "computation competition").
///
/// # Examples
///
/// ```
/// use colocation_matching::{ColocationCostModel, ExpertDemand, GpuSpec, HyperedgeCost};
///
/// let e = |s, r, f| ExpertDemand { send_bytes: s, recv_bytes: r, flop: f };
/// let model = ColocationCostModel::new(
///     vec![e(4.0, 2.0, 8.0)],
///     vec![e(1.0, 5.0, 2.0)],
///     vec![GpuSpec { flop_per_s: 10.0, bandwidth_bytes_per_s: 2.0 }],
/// )?;
/// assert_eq!(model.cost_s(0, 0, 0), 2.0 * 7.0 / 2.0 + 10.0 / 10.0);
/// assert_eq!(model.pair_weight(0, 0), 7.0); // max(4 + 1, 2 + 5) bytes
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
///
/// It deserializes through [`ColocationCostModel::new`] (fields `model_a`, `model_b`, `gpus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CostModelFields")]
pub struct ColocationCostModel {
    model_a: Vec<ExpertDemand>,
    model_b: Vec<ExpertDemand>,
    gpus: Vec<GpuSpec>,
}

/// The serialized form of a [`ColocationCostModel`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CostModelFields {
    model_a: Vec<ExpertDemand>,
    model_b: Vec<ExpertDemand>,
    gpus: Vec<GpuSpec>,
}

impl TryFrom<CostModelFields> for ColocationCostModel {
    type Error = MatchingError;

    fn try_from(f: CostModelFields) -> Result<Self, Self::Error> {
        Self::new(f.model_a, f.model_b, f.gpus)
    }
}

impl ColocationCostModel {
    /// Validates and stores the demands and GPUs.
    ///
    /// # Errors
    ///
    /// [`MatchingError::Input`] (`Empty`, `SizeMismatch`) unless all three lengths agree,
    /// [`MatchingError::Input`] (`InvalidEntry` or `NotPositiveEntry`) for bad numbers,
    /// [`MatchingError::Input`] (`NonFinite`) when the slowest case (the largest demands of both
    /// models on the GPU with the least bandwidth and FLOP/s) takes a time that overflows, so
    /// that every [`HyperedgeCost::cost_s`] is finite.
    ///
    /// # Complexity
    ///
    /// `O(n)`.
    pub fn new(
        model_a: Vec<ExpertDemand>,
        model_b: Vec<ExpertDemand>,
        gpus: Vec<GpuSpec>,
    ) -> Result<Self, MatchingError> {
        check_gpus(&gpus)?;
        check_same_len("experts of model A vs GPUs", model_a.len(), gpus.len())?;
        check_same_len("experts of model B vs GPUs", model_b.len(), gpus.len())?;
        for (i, e) in model_a.iter().enumerate() {
            e.check("model A demand", i)?;
        }
        for (i, e) in model_b.iter().enumerate() {
            e.check("model B demand", i)?;
        }
        check_finite_result(
            "slowest colocated layer time (s)",
            worst_time_s(&model_a, &model_b, &gpus),
        )?;
        Ok(Self {
            model_a,
            model_b,
            gpus,
        })
    }

    /// `cost_s(a, b, gpu)`, or `None` for an index out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::{ColocationCostModel, ExpertDemand, GpuSpec};
    ///
    /// let e = ExpertDemand { send_bytes: 1.0, recv_bytes: 1.0, flop: 1.0 };
    /// let g = GpuSpec { flop_per_s: 1.0, bandwidth_bytes_per_s: 1.0 };
    /// let model = ColocationCostModel::new(vec![e], vec![e], vec![g])?;
    /// assert_eq!(model.get(0, 0, 0), Some(6.0));
    /// assert_eq!(model.get(0, 1, 0), None);
    /// # Ok::<(), colocation_matching::MatchingError>(())
    /// ```
    #[must_use]
    pub fn get(&self, a: usize, b: usize, gpu: usize) -> Option<f64> {
        let (x, y, g) = (
            self.model_a.get(a)?,
            self.model_b.get(b)?,
            self.gpus.get(gpu)?,
        );
        Some(layer_time_s(
            g,
            x.send_bytes + y.send_bytes,
            x.recv_bytes + y.recv_bytes,
            x.flop + y.flop,
        ))
    }
}

/// An upper bound on every layer time of the model: the largest demands of each model on the
/// GPU with the least bandwidth and the least FLOP/s (the time grows with demands and falls
/// with speeds).
fn worst_time_s(model_a: &[ExpertDemand], model_b: &[ExpertDemand], gpus: &[GpuSpec]) -> f64 {
    let most =
        |v: &[ExpertDemand], f: fn(&ExpertDemand) -> f64| v.iter().map(f).fold(0.0, f64::max);
    let slowest = GpuSpec {
        flop_per_s: gpus
            .iter()
            .map(|g| g.flop_per_s)
            .fold(f64::INFINITY, f64::min),
        bandwidth_bytes_per_s: gpus
            .iter()
            .map(|g| g.bandwidth_bytes_per_s)
            .fold(f64::INFINITY, f64::min),
    };
    let both = |f: fn(&ExpertDemand) -> f64| most(model_a, f) + most(model_b, f);
    layer_time_s(
        &slowest,
        both(|e| e.send_bytes),
        both(|e| e.recv_bytes),
        both(|e| e.flop),
    )
}

impl HyperedgeCost for ColocationCostModel {
    fn size(&self) -> usize {
        self.gpus.len()
    }

    /// NaN for an index out of range.
    fn cost_s(&self, a: usize, b: usize, gpu: usize) -> f64 {
        self.get(a, b, gpu).unwrap_or(f64::NAN)
    }

    /// NaN for an index out of range.
    fn pair_weight(&self, a: usize, b: usize) -> f64 {
        match (self.model_a.get(a), self.model_b.get(b)) {
            (Some(x), Some(y)) => (x.send_bytes + y.send_bytes).max(x.recv_bytes + y.recv_bytes),
            _ => f64::NAN,
        }
    }
}

/// Largest side of a [`CostTensor`]: `n^3` entries of 8 bytes are then at most 8 GiB.
pub const COST_TENSOR_MAX_SIDE: usize = 1024;

/// An explicit `n × n × n` cost tensor, `cost[a][b][gpu]` in seconds.
///
/// It serializes as `{"n": .., "data": [..]}` (`data[(a n + b) n + gpu]`) and deserializes
/// through the same validation as [`CostTensor::from_fn`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TensorFields")]
pub struct CostTensor {
    n: usize,
    data: Vec<f64>,
}

/// The serialized form of a [`CostTensor`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorFields {
    n: usize,
    data: Vec<f64>,
}

impl TryFrom<TensorFields> for CostTensor {
    type Error = MatchingError;

    fn try_from(f: TensorFields) -> Result<Self, Self::Error> {
        if f.n == 0 {
            return Err(MatchingError::Input(InputError::Empty {
                what: "cost tensor",
            }));
        }
        check_at_most("cost tensor side", COST_TENSOR_MAX_SIDE, f.n)?;
        check_same_len("cost tensor entries (n³)", f.data.len(), f.n * f.n * f.n)?;
        Self::from_fn(f.n, |a, b, g| f.data[(a * f.n + b) * f.n + g])
    }
}

impl CostTensor {
    /// Builds the tensor from `f(a, b, gpu)`.
    ///
    /// # Errors
    ///
    /// [`MatchingError::Input`] (`Empty`) for `n = 0`, [`MatchingError::Input`] (`TooLarge`) above
    /// [`COST_TENSOR_MAX_SIDE`], [`MatchingError::Input`] (`InvalidEntry`) for a NaN, infinite or negative
    /// cost.
    ///
    /// # Complexity
    ///
    /// `O(n^3)` time and space.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::{CostTensor, HyperedgeCost};
    ///
    /// let t = CostTensor::from_fn(2, |a, b, g| (a + 2 * b + 4 * g) as f64)?;
    /// assert_eq!(t.cost_s(1, 0, 1), 5.0);
    /// # Ok::<(), colocation_matching::MatchingError>(())
    /// ```
    pub fn from_fn(
        n: usize,
        mut f: impl FnMut(usize, usize, usize) -> f64,
    ) -> Result<Self, MatchingError> {
        if n == 0 {
            return Err(MatchingError::Input(InputError::Empty {
                what: "cost tensor",
            }));
        }
        check_at_most("cost tensor side", COST_TENSOR_MAX_SIDE, n)?;
        let mut data = Vec::with_capacity(n * n * n);
        for a in 0..n {
            for b in 0..n {
                for g in 0..n {
                    let value = f(a, b, g);
                    data.push(check_entry("cost tensor", data.len(), value)?);
                }
            }
        }
        Ok(Self { n, data })
    }
}

impl CostTensor {
    /// `cost[a][b][gpu]`, or `None` for an index out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use colocation_matching::CostTensor;
    ///
    /// let t = CostTensor::from_fn(2, |a, b, g| (a + 2 * b + 4 * g) as f64)?;
    /// assert_eq!((t.get(1, 1, 1), t.get(2, 0, 0)), (Some(7.0), None));
    /// # Ok::<(), colocation_matching::MatchingError>(())
    /// ```
    #[must_use]
    pub fn get(&self, a: usize, b: usize, gpu: usize) -> Option<f64> {
        let n = self.n;
        (a < n && b < n && gpu < n).then(|| self.data[(a * n + b) * n + gpu])
    }
}

impl HyperedgeCost for CostTensor {
    fn size(&self) -> usize {
        self.n
    }

    /// NaN for an index out of range.
    fn cost_s(&self, a: usize, b: usize, gpu: usize) -> f64 {
        self.get(a, b, gpu).unwrap_or(f64::NAN)
    }
}

/// A complete colocating + heterogeneous placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeteroPlacement {
    /// `gpu_experts[g] = [expert_of_a, expert_of_b]` hosted by GPU `g`.
    pub gpu_experts: Vec<[usize; 2]>,
    /// The slowest GPU's time in seconds (the objective).
    pub bottleneck_s: f64,
}

impl HeteroPlacement {
    /// Scores `gpu_experts` under `cost`, checking every cost it uses (a user's
    /// [`HyperedgeCost`] may return anything).
    pub(crate) fn scored(
        cost: &impl HyperedgeCost,
        gpu_experts: Vec<[usize; 2]>,
    ) -> Result<Self, MatchingError> {
        let mut bottleneck_s = 0.0f64;
        for (g, &[a, b]) in gpu_experts.iter().enumerate() {
            let c = check_entry("hyperedge cost on GPU", g, cost.cost_s(a, b, g))?;
            bottleneck_s = bottleneck_s.max(c);
        }
        Ok(Self {
            gpu_experts,
            bottleneck_s,
        })
    }
}

/// A lower bound on the optimal colocating + heterogeneous bottleneck.
///
/// Every A expert, every B expert and every GPU is in some hyperedge, so the optimum is at least
/// `max(max_a min_{b,g} c, max_b min_{a,g} c, max_g min_{a,b} c)`. Not in Aurora; it certifies
/// optimality when a heuristic reaches it (common when one hot expert dominates).
///
/// # Errors
///
/// [`MatchingError::Input`] (`Empty`) for size 0, [`MatchingError::Input`] (`TooLarge`) above
/// [`comm_cost_model::MAX_MATRIX_SIDE`] (like every other solver here),
/// [`MatchingError::Input`] (`InvalidEntry`) if `cost` returns a NaN, infinite or negative value.
///
/// # Complexity
///
/// `O(n^3)` cost evaluations, `O(n)` space.
///
/// # Examples
///
/// ```
/// use colocation_matching::{CostTensor, colocate_lower_bound_s};
///
/// let load = [1.0, 3.0];
/// let t = CostTensor::from_fn(2, |a, b, g| (load[a] + load[b]) * (1.0 + g as f64))?;
/// // A1's cheapest hyperedge is A1+B0 on GPU 0: 4. The optimum is 6.
/// assert_eq!(colocate_lower_bound_s(&t)?, 4.0);
/// # Ok::<(), colocation_matching::MatchingError>(())
/// ```
pub fn colocate_lower_bound_s(cost: &impl HyperedgeCost) -> Result<f64, MatchingError> {
    let n = cost.size();
    if n == 0 {
        return Err(MatchingError::Input(InputError::Empty {
            what: "hyperedge costs",
        }));
    }
    check_at_most("GPUs", MAX_MATRIX_SIDE, n)?;
    let mut min_a = vec![f64::INFINITY; n];
    let mut min_b = vec![f64::INFINITY; n];
    let mut min_g = vec![f64::INFINITY; n];
    for (a, ma) in min_a.iter_mut().enumerate() {
        for (b, mb) in min_b.iter_mut().enumerate() {
            for (g, mg) in min_g.iter_mut().enumerate() {
                let c = check_entry("hyperedge cost", (a * n + b) * n + g, cost.cost_s(a, b, g))?;
                *ma = ma.min(c);
                *mb = mb.min(c);
                *mg = mg.min(c);
            }
        }
    }
    Ok(min_a
        .iter()
        .chain(&min_b)
        .chain(&min_g)
        .fold(0.0, |m, &x| f64::max(m, x)))
}

/// The matrix `w[row][col] = f(row, col)` (validated like every [`SquareMatrix`]).
pub(crate) fn matrix_of(
    n: usize,
    f: impl FnMut(usize, usize) -> f64,
) -> Result<SquareMatrix, MatchingError> {
    Ok(SquareMatrix::from_fn(n, f)?)
}
