//! Inference planner: where each expert runs and in what order its tokens flow (Aurora).
//!
//! [`plan_inference`] composes the algorithm crates along the four scenarios of Aurora (Li et
//! al., §3, Fig. 2):
//!
//! | models | GPUs | placement | Aurora |
//! |---|---|---|---|
//! | one | identical | expert `i` on GPU `i` | §4 |
//! | one | mixed | exact bottleneck GPU assignment ([`assign_gpus_bottleneck`]) | §5, Thm 5.1 generalised |
//! | two | identical | bottleneck pairing of the two models' experts ([`pair_bottleneck`]) | §6, Thm 6.2 |
//! | two | mixed | decoupled matching improved by local search ([`colocate_local_search`]) | §7 |
//!
//! Every layer's dispatch all-to-all (and the combine, its transpose) is then scheduled with the
//! contention-free optimal order ([`alltoall_sched::optimal`]), and the layer is timed with the
//! exclusive model (Eq. 1) or the colocated timeline (Table 2, Eq. 4). The same pipeline is run
//! for the baseline a plain deployment gets — random GPU assignment (RGA) and random colocation
//! (REC) with shortest-job-first send order under contention (Aurora §8.1) — so the plan reports
//! its own speedup.
//!
//! Placement decisions use the traffic summed over all layers (Aurora's historical statistics);
//! the per-layer schedules use each layer's own matrix.
//!
//! # Examples
//!
//! ```
//! use moe_planner::inference::{plan_inference, GpuInput, InferenceModelSpec, InferenceSpec};
//! let model = InferenceModelSpec {
//!     name: "moe".into(),
//!     layers: vec![vec![
//!         vec![0.0, 4e6, 1e6],
//!         vec![2e6, 0.0, 1e6],
//!         vec![3e6, 1e6, 0.0],
//!     ]],
//!     gate_s: 1e-4,
//!     aggregation_s: 1e-4,
//!     ffn_flop_per_byte: 1e3,
//!     ..Default::default()
//! };
//! let spec = InferenceSpec {
//!     gpus: vec![GpuInput { tflop_per_s: 100.0, bandwidth_gbps: 100.0 }; 3],
//!     models: vec![model],
//!     seed: 7,
//!     ..Default::default()
//! };
//! let plan = plan_inference(&spec)?;
//! // The optimal order reaches the all-to-all lower bound on every layer.
//! for layer in &plan.layers {
//!     assert!((layer.dispatch.makespan_s - layer.dispatch.lower_bound_s).abs() < 1e-12);
//! }
//! assert!(plan.inference_time_s <= plan.baseline.inference_time_s + 1e-12);
//! # Ok::<(), moe_planner::PlanError>(())
//! ```

mod experts;

use alltoall_sched::{Algorithm, Bandwidth, Plan, TrafficMatrix, Transfer, schedule};
use colocation_matching::{
    ColocationCostModel, ExpertDemand, ExpertLoads, GpuSpec, LocalSearchOptions, PairingOptions,
    assign_gpus_bottleneck, colocate_local_search, exclusive_time_matrix, pair_bottleneck,
    random_placement,
};
use comm_cost_model::timeline::{
    ColocatedLayer, ExclusiveLayer, ModelLayerTimes, colocated_gpu_utilization, colocated_timeline,
    exclusive_time, ffn_times_s,
};
use comm_cost_model::{
    CostModelError, check_count, check_finite_result, check_non_negative, units,
};
use serde::{Deserialize, Serialize};

use crate::PlanError;

/// One GPU, in vendor units (converted to SI on entry).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GpuInput {
    /// Sustained compute throughput, TFLOP/s (`tflops` is accepted as an older spelling).
    #[serde(alias = "tflops")]
    pub tflop_per_s: f64,
    /// Network bandwidth of the GPU's port, Gbps.
    pub bandwidth_gbps: f64,
}

/// One MoE model: its experts' traffic per layer and its computation costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InferenceModelSpec {
    /// Name used in reports.
    pub name: String,
    /// One dispatch (first all-to-all) traffic matrix per MoE layer, bytes: entry `[i][j]` is
    /// what expert `i`'s GPU sends to expert `j`'s GPU. The combine is its transpose (§2.2).
    pub layers: Vec<Vec<Vec<f64>>>,
    /// Gate time per layer on every GPU, seconds.
    pub gate_s: f64,
    /// Aggregation time per layer on every GPU, seconds.
    pub aggregation_s: f64,
    /// FFN work per byte of tokens an expert receives, FLOP/byte.
    #[serde(default)]
    pub ffn_flop_per_byte: f64,
    /// Many experts per GPU: routed token counts from each source GPU to each logical expert,
    /// `[layers][G][E]` (what a router trace gives). Replaces `layers` when given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routed_tokens: Vec<Vec<Vec<f64>>>,
    /// Many experts per GPU, from per-expert loads: tokens of each logical expert, `[layers][E]`,
    /// every GPU assumed the source of an equal share (balanced data-parallel batches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expert_tokens: Vec<Vec<f64>>,
    /// Bytes of one routed token (hidden size x bytes per element); needed with
    /// `routed_tokens` / `expert_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_token: Option<f64>,
    /// FLOP of one token through one expert; needed with `routed_tokens` / `expert_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flop_per_token: Option<f64>,
}

/// A deployment request: the cluster and the one or two models to serve on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InferenceSpec {
    /// The GPUs; one expert of each model per GPU, so their count is the expert count.
    pub gpus: Vec<GpuInput>,
    /// One model (exclusive) or two (colocated).
    pub models: Vec<InferenceModelSpec>,
    /// Seed of the random baselines (RGA, REC).
    #[serde(default)]
    pub seed: u64,
    /// Many experts per GPU: expert replica slots on each GPU (default: `ceil(E / G)`, no
    /// replicas beyond filling the last slots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots_per_gpu: Option<usize>,
    /// Many experts per GPU: GPUs per node, consecutive (default: all GPUs in one node). Used
    /// by the replica choice (same node first) and NCCL's node-aware peer order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_node: Option<usize>,
    /// Measured link fits (`fit --json` output): when given, every GPU's bandwidth is the bus
    /// bandwidth of the fitted AlltoAll on the most GPUs measured up to the GPU count
    /// ([`crate::fitting::CollectiveFitPlan::link_for`]), replacing `bandwidth_gbps`.
    #[serde(default)]
    pub link_fits: Option<crate::fitting::CollectiveFitPlan>,
    /// One expert per GPU: a fixed deployment to evaluate instead of optimizing one (for
    /// example a plan made on older statistics, evaluated on today's traffic), `[G][models]`
    /// as in the plan's `experts_of_gpu`. The send orders are still planned per layer and the
    /// baselines computed as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Vec<Vec<usize>>>,
    /// Many experts per GPU: fixed per-layer placements to evaluate instead of optimizing,
    /// `[layers][G][slots_per_gpu]` as in the plan's `layers[i].experts_of_gpu`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_placements: Vec<Vec<Vec<usize>>>,
}

/// Which of Aurora's four scenarios the spec falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// One model, identical GPUs (Aurora §4).
    ExclusiveHomogeneous,
    /// One model, mixed GPUs (§5).
    ExclusiveHeterogeneous,
    /// Two models, identical GPUs (§6).
    ColocatingHomogeneous,
    /// Two models, mixed GPUs (§7, NP-hard; heuristic).
    ColocatingHeterogeneous,
}

/// One all-to-all of one layer as scheduled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllToAllSummary {
    /// Lower bound (Aurora Thm 4.2 / 5.2), seconds.
    pub lower_bound_s: f64,
    /// Completion time of the schedule, seconds.
    pub makespan_s: f64,
    /// Transfers in the schedule.
    pub pieces: usize,
    /// GPU pairs with traffic: the fewest transfers any schedule can have.
    #[serde(default)]
    pub nonzero_pairs: usize,
    /// The transfers a system runs, ordered by sender, then start time: each GPU posts its
    /// sends in this order, one outstanding send per port.
    #[serde(default)]
    pub timetable: Vec<Transfer>,
}

/// One MoE layer of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerPlan {
    /// The dispatch all-to-all of all models on the cluster (aggregated when colocated).
    pub dispatch: AllToAllSummary,
    /// The combine all-to-all (aggregated when colocated).
    pub combine: AllToAllSummary,
    /// Layer inference time (Eq. 1, or Eq. 4 when colocated), seconds.
    pub inference_time_s: f64,
    /// Many experts per GPU: this layer's placement, the experts on each GPU (replicas
    /// repeated on every GPU that holds one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub experts_of_gpu: Vec<Vec<usize>>,
}

/// How the baseline deployment does on the same workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineSummary {
    /// What the baseline is.
    pub description: String,
    /// `experts_of_gpu` of the baseline placement.
    pub experts_of_gpu: Vec<Vec<usize>>,
    /// Its total inference time over all layers, seconds.
    pub inference_time_s: f64,
    /// Its inference time over the plan's (1 when both are zero).
    #[serde(default)]
    pub speedup: f64,
}

/// The plan: placement, per-layer schedules and times, and the baseline comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InferencePlan {
    /// The scenario the spec falls in.
    pub scenario: Scenario,
    /// `experts_of_gpu[g][m]` is the expert of model `m` that GPU `g` hosts (empty with many
    /// experts per GPU, where each layer has its own placement: `layers[i].experts_of_gpu`).
    pub experts_of_gpu: Vec<Vec<usize>>,
    /// Per-layer schedules and times.
    pub layers: Vec<LayerPlan>,
    /// Inference time summed over layers, seconds.
    pub inference_time_s: f64,
    /// Each GPU's compute time (gate, FFN, aggregation of every model it hosts) over the layer's
    /// inference time, averaged over GPUs and layers (§8.1).
    pub gpu_utilization: f64,
    /// The baseline a plain deployment gets: random placement with shortest-job-first order
    /// (one expert per GPU), EPLB with NCCL's peer order (many experts per GPU).
    pub baseline: BaselineSummary,
    /// `baseline.inference_time_s / inference_time_s` (1 when both are zero).
    pub speedup_over_baseline: f64,
    /// Every baseline on the same cost model, `baseline` first.
    #[serde(default)]
    pub baselines: Vec<BaselineSummary>,
}

/// Validated, SI-unit view of the cluster and models.
struct Workload {
    gpus: Vec<GpuSpec>,
    bandwidth: Bandwidth,
    models: Vec<ModelData>,
}

struct ModelData {
    /// Expert-indexed dispatch traffic of every layer.
    layers: Vec<TrafficMatrix>,
    /// Per-expert loads summed over layers (Aurora's historical statistics).
    total: ExpertLoads,
    gate_s: f64,
    aggregation_s: f64,
    flop_per_byte: f64,
}

/// Plans an MoE inference deployment (Aurora §4–7) and compares it with the RGA/REC + SJF baseline.
///
/// # Errors
///
/// [`PlanError::Cost`] for no GPUs, no models, a model without layers, or a negative or
/// non-finite time, rate or FLOP count; [`PlanError::TooLarge`] for more than two models, or two
/// when one gives `routed_tokens` / `expert_tokens` (many experts per GPU plans one model);
/// [`PlanError::SizeMismatch`] for a layer matrix that does not have one row per GPU or models
/// with different layer counts; [`PlanError::Schedule`] / [`PlanError::Matching`] for traffic
/// the algorithm crates reject (ragged rows, negative or non-finite bytes).
///
/// # Complexity
///
/// Placement: one bottleneck matching (or local search) on `n` GPUs; then, for each of `L` layers
/// and each model, two optimal all-to-all schedules and two simulated SJF baselines; dominated by
/// the all-to-all decomposition, `O(L · n^2.5 · log n)` in practice.
pub fn plan_inference(spec: &InferenceSpec) -> Result<InferencePlan, PlanError> {
    if spec
        .models
        .iter()
        .any(InferenceModelSpec::has_expert_traffic)
    {
        return experts::plan_experts(spec);
    }
    if !spec.layer_placements.is_empty() {
        return Err(PlanError::MissingField {
            field: "routed_tokens or expert_tokens",
            needed_by: "layer_placements (many experts per GPU)",
        });
    }
    let work = Workload::new(spec)?;
    let scenario = work.scenario();
    let placement = match &spec.placement {
        Some(fixed) => work.fixed_placement(fixed)?,
        None => work.optimized_placement(scenario)?,
    };
    let baseline_placement = random_placement(work.gpus.len(), work.models.len() == 2, spec.seed)?;
    let planned = work.evaluate(&placement, Algorithm::Optimal, spec.seed)?;
    let baseline = work.evaluate(&baseline_placement, Algorithm::Sjf, spec.seed)?;
    let speedup = speedup(baseline.total_s, planned.total_s);
    let baseline = BaselineSummary {
        description: baseline_description(work.models.len()),
        experts_of_gpu: baseline_placement,
        inference_time_s: baseline.total_s,
        speedup,
    };
    Ok(InferencePlan {
        scenario,
        experts_of_gpu: placement,
        layers: planned.layers,
        inference_time_s: planned.total_s,
        gpu_utilization: planned.utilization,
        baselines: vec![baseline.clone()],
        baseline,
        speedup_over_baseline: speedup,
    })
}

/// [`PlanError::SizeMismatch`] unless `actual == expected`.
pub(crate) fn check_len(
    what: &'static str,
    expected: usize,
    actual: usize,
) -> Result<(), PlanError> {
    if expected == actual {
        Ok(())
    } else {
        Err(PlanError::SizeMismatch {
            what,
            expected,
            actual,
        })
    }
}

/// `baseline / planned`, 1 when the plan takes no time.
fn speedup(baseline_s: f64, planned_s: f64) -> f64 {
    if planned_s > 0.0 {
        baseline_s / planned_s
    } else {
        1.0
    }
}

impl InferenceModelSpec {
    /// Whether the model is given per logical expert (many experts per GPU).
    fn has_expert_traffic(&self) -> bool {
        !self.routed_tokens.is_empty() || !self.expert_tokens.is_empty()
    }
}

fn baseline_description(models: usize) -> String {
    let placement = if models == 2 {
        "random colocation (REC) on randomly assigned GPUs (RGA)"
    } else {
        "random GPU assignment (RGA)"
    };
    format!("{placement}, shortest-job-first send order under contention")
}

impl Workload {
    fn new(spec: &InferenceSpec) -> Result<Self, PlanError> {
        let n = check_count("GPUs", spec.gpus.len(), 1)?;
        check_count("models", spec.models.len(), 1)?;
        if spec.models.len() > 2 {
            return Err(PlanError::TooLarge {
                what: "models (one exclusive, or two colocated)",
                limit: 2,
                value: spec.models.len(),
            });
        }
        let gpus = spec
            .gpus
            .iter()
            .map(|g| {
                Ok(GpuSpec {
                    flop_per_s: units::checked_tflop_per_s("GPU TFLOP/s", g.tflop_per_s)?,
                    bandwidth_bytes_per_s: units::checked_gbps(
                        "GPU bandwidth (Gbps)",
                        g.bandwidth_gbps,
                    )?,
                })
            })
            .collect::<Result<Vec<_>, CostModelError>>()?;
        let mut gpus = gpus;
        if let Some(fits) = &spec.link_fits {
            let fitted = fits
                .link_for(comm_cost_model::gpu_scaling::Collective::AllToAll, n as u64)?
                .bus_bandwidth_bytes_per_s()?;
            gpus.iter_mut()
                .for_each(|g| g.bandwidth_bytes_per_s = fitted);
        }
        let bandwidth = Bandwidth::per_gpu(gpus.iter().map(|g| g.bandwidth_bytes_per_s).collect())?;
        let models = spec
            .models
            .iter()
            .map(|m| ModelData::new(m, n))
            .collect::<Result<Vec<_>, _>>()?;
        if let [a, b] = models.as_slice()
            && a.layers.len() != b.layers.len()
        {
            return Err(PlanError::SizeMismatch {
                what: "MoE layers of the second colocated model",
                expected: a.layers.len(),
                actual: b.layers.len(),
            });
        }
        Ok(Self {
            gpus,
            bandwidth,
            models,
        })
    }

    fn scenario(&self) -> Scenario {
        let homogeneous = self.gpus.windows(2).all(|w| w[0] == w[1]);
        match (self.models.len() == 2, homogeneous) {
            (false, true) => Scenario::ExclusiveHomogeneous,
            (false, false) => Scenario::ExclusiveHeterogeneous,
            (true, true) => Scenario::ColocatingHomogeneous,
            (true, false) => Scenario::ColocatingHeterogeneous,
        }
    }

    /// A given `experts_of_gpu[g][m]`, checked for shape (each model's column is checked to be
    /// a permutation when its traffic is relabelled).
    fn fixed_placement(&self, fixed: &[Vec<usize>]) -> Result<Vec<Vec<usize>>, PlanError> {
        check_len("GPUs of the fixed placement", self.gpus.len(), fixed.len())?;
        for row in fixed {
            check_len(
                "experts per GPU of the fixed placement (one per model)",
                self.models.len(),
                row.len(),
            )?;
        }
        Ok(fixed.to_vec())
    }

    /// `experts_of_gpu[g][m]` chosen by the scenario's optimizer.
    fn optimized_placement(&self, scenario: Scenario) -> Result<Vec<Vec<usize>>, PlanError> {
        let models = &self.models;
        Ok(match scenario {
            Scenario::ExclusiveHomogeneous => (0..self.gpus.len()).map(|g| vec![g]).collect(),
            Scenario::ExclusiveHeterogeneous => {
                let times = exclusive_time_matrix(&models[0].demands()?, &self.gpus)?;
                assign_gpus_bottleneck(&times)?.experts_of_gpu()
            }
            Scenario::ColocatingHomogeneous => {
                let options = PairingOptions::default();
                let pairing = pair_bottleneck(&models[0].total, &models[1].total, &options)?;
                pairing.pairs.iter().map(|p| p.to_vec()).collect()
            }
            Scenario::ColocatingHeterogeneous => {
                let cost = ColocationCostModel::new(
                    models[0].demands()?,
                    models[1].demands()?,
                    self.gpus.clone(),
                )?;
                let placement = colocate_local_search(&cost, &LocalSearchOptions::default())?;
                placement.gpu_experts.iter().map(|p| p.to_vec()).collect()
            }
        })
    }

    /// Times every layer of a placement with the given all-to-all algorithm.
    fn evaluate(
        &self,
        placement: &[Vec<usize>],
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<Evaluation, PlanError> {
        let mut layers = Vec::new();
        let mut utilization = 0.0;
        for layer in 0..self.models[0].layers.len() {
            let (plan, util) = if self.models.len() == 1 {
                self.exclusive_layer(placement, layer, algorithm, seed)?
            } else {
                self.colocated_layer(placement, layer, algorithm, seed)?
            };
            utilization += util;
            layers.push(plan);
        }
        // Each layer's time is finite; several near `f64::MAX` overflow their sum.
        let total_s = check_finite_result(
            "inference time (s)",
            layers.iter().map(|l| l.inference_time_s).sum(),
        )?;
        Ok(Evaluation {
            utilization: utilization / layers.len() as f64,
            layers,
            total_s,
        })
    }

    /// One exclusive layer: Aurora Eq. 1 with per-GPU all-to-all and FFN times.
    fn exclusive_layer(
        &self,
        placement: &[Vec<usize>],
        layer: usize,
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<(LayerPlan, f64), PlanError> {
        let model = &self.models[0];
        let on_gpu = model.layers[layer].relabel(&experts_of(placement, 0))?;
        let (dispatch, combine) = self.both_ways(&on_gpu, algorithm, seed)?;
        let n = self.gpus.len();
        let time = exclusive_time(&ExclusiveLayer {
            gate_s: vec![model.gate_s; n],
            dispatch_s: dispatch.timetable.port_finish_times()?,
            ffn_s: self.ffn_times(model, &on_gpu)?,
            combine_s: combine.timetable.port_finish_times()?,
            aggregation_s: vec![model.aggregation_s; n],
        })?;
        let plan = LayerPlan {
            dispatch: summary(&dispatch)?,
            combine: summary(&combine)?,
            inference_time_s: time.inference_time_s,
            experts_of_gpu: Vec::new(),
        };
        Ok((plan, time.gpu_utilization))
    }

    /// One colocated layer: both models' all-to-alls share the ports (Table 2, Eq. 4).
    fn colocated_layer(
        &self,
        placement: &[Vec<usize>],
        layer: usize,
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<(LayerPlan, f64), PlanError> {
        let on_gpu = |m: usize| self.models[m].layers[layer].relabel(&experts_of(placement, m));
        let (a_on_gpu, b_on_gpu) = (on_gpu(0)?, on_gpu(1)?);
        let (dispatch, combine) =
            self.both_ways(&a_on_gpu.checked_add(&b_on_gpu)?, algorithm, seed)?;
        let (a, ffn_a) = self.model_times(0, &a_on_gpu, algorithm, seed)?;
        let (b, ffn_b) = self.model_times(1, &b_on_gpu, algorithm, seed)?;
        let shared = ColocatedLayer {
            a,
            b,
            aggregated_dispatch_s: dispatch.makespan_s,
            aggregated_combine_s: combine.makespan_s,
        };
        let plan = LayerPlan {
            dispatch: summary(&dispatch)?,
            combine: summary(&combine)?,
            inference_time_s: colocated_timeline(&shared)?.inference_time_s,
            experts_of_gpu: Vec::new(),
        };
        Ok((plan, colocated_gpu_utilization(&shared, &ffn_a, &ffn_b)?))
    }

    /// One model's component times (maxima over GPUs) on the shared cluster, and its per-GPU
    /// FFN times.
    fn model_times(
        &self,
        m: usize,
        on_gpu: &TrafficMatrix,
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<(ModelLayerTimes, Vec<f64>), PlanError> {
        let model = &self.models[m];
        let (dispatch, combine) = self.both_ways(on_gpu, algorithm, seed)?;
        let ffn = self.ffn_times(model, on_gpu)?;
        let times = ModelLayerTimes {
            gate_s: model.gate_s,
            dispatch_s: dispatch.makespan_s,
            ffn_s: ffn.iter().copied().fold(0.0, f64::max),
            combine_s: combine.makespan_s,
            aggregation_s: model.aggregation_s,
        };
        Ok((times, ffn))
    }

    /// Each GPU's FFN time for the tokens it receives in `on_gpu`.
    fn ffn_times(&self, model: &ModelData, on_gpu: &TrafficMatrix) -> Result<Vec<f64>, PlanError> {
        let flop_per_s: Vec<f64> = self.gpus.iter().map(|g| g.flop_per_s).collect();
        Ok(ffn_times_s(
            &on_gpu.receive_totals(),
            model.flop_per_byte,
            &flop_per_s,
        )?)
    }

    /// Schedules a dispatch matrix and its combine (the transpose, Aurora §2.2).
    fn both_ways(
        &self,
        dispatch: &TrafficMatrix,
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<(Plan, Plan), PlanError> {
        let there = schedule(dispatch, &self.bandwidth, algorithm, seed)?;
        let back = schedule(&dispatch.transposed(), &self.bandwidth, algorithm, seed)?;
        Ok((there, back))
    }
}

/// Model `m`'s expert on every GPU of a placement, in the shape [`TrafficMatrix::relabel`] takes.
fn experts_of(placement: &[Vec<usize>], m: usize) -> Vec<&[usize]> {
    placement.iter().map(|experts| &experts[m..=m]).collect()
}

/// The figures and the timetable of a schedule, transfers ordered by sender then start.
pub(crate) fn summary(plan: &Plan) -> Result<AllToAllSummary, PlanError> {
    Ok(AllToAllSummary {
        lower_bound_s: plan.lower_bound_s,
        makespan_s: plan.makespan_s,
        pieces: plan.pieces,
        nonzero_pairs: plan.nonzero_pairs,
        timetable: plan
            .timetable
            .send_orders()?
            .into_iter()
            .flatten()
            .collect(),
    })
}

struct Evaluation {
    layers: Vec<LayerPlan>,
    total_s: f64,
    utilization: f64,
}

impl ModelData {
    fn new(spec: &InferenceModelSpec, n: usize) -> Result<Self, PlanError> {
        check_count("MoE layers of a model", spec.layers.len(), 1)?;
        let mut layers = Vec::with_capacity(spec.layers.len());
        for rows in &spec.layers {
            if rows.len() != n {
                return Err(PlanError::SizeMismatch {
                    what: "experts of a layer's traffic matrix (one per GPU)",
                    expected: n,
                    actual: rows.len(),
                });
            }
            layers.push(TrafficMatrix::from_rows(rows)?);
        }
        let mut total = layers[0].clone();
        for layer in &layers[1..] {
            total = total.checked_add(layer)?;
        }
        Ok(Self {
            total: ExpertLoads::new(total.send_totals(), total.receive_totals())?,
            layers,
            gate_s: check_non_negative("gate time (s)", spec.gate_s)?,
            aggregation_s: check_non_negative("aggregation time (s)", spec.aggregation_s)?,
            flop_per_byte: check_non_negative("FFN FLOP per byte", spec.ffn_flop_per_byte)?,
        })
    }

    /// Per-expert demand summed over layers, for the placement optimizers.
    fn demands(&self) -> Result<Vec<ExpertDemand>, PlanError> {
        Ok(ExpertDemand::from_loads(&self.total, self.flop_per_byte)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alltoall_sched::ScheduleError;

    fn model(name: &str, layers: Vec<Vec<Vec<f64>>>) -> InferenceModelSpec {
        InferenceModelSpec {
            name: name.into(),
            layers,
            gate_s: 1e-4,
            aggregation_s: 1e-4,
            ffn_flop_per_byte: 1e3,
            ..Default::default()
        }
    }

    fn skewed(n: usize, scale: f64) -> Vec<Vec<f64>> {
        (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if i == j {
                            0.0
                        } else {
                            scale * 1e6 / (1 + j) as f64
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn spec(gpus: Vec<GpuInput>, models: Vec<InferenceModelSpec>) -> InferenceSpec {
        InferenceSpec {
            gpus,
            models,
            seed: 3,
            ..Default::default()
        }
    }

    fn uniform_gpus(n: usize) -> Vec<GpuInput> {
        vec![
            GpuInput {
                tflop_per_s: 100.0,
                bandwidth_gbps: 100.0
            };
            n
        ]
    }

    #[test]
    fn exclusive_homogeneous_reaches_the_bound_and_beats_the_baseline() {
        let plan = plan_inference(&spec(
            uniform_gpus(4),
            vec![model("a", vec![skewed(4, 1.0)])],
        ))
        .unwrap();
        assert_eq!(plan.scenario, Scenario::ExclusiveHomogeneous);
        assert_eq!(
            plan.experts_of_gpu,
            vec![vec![0], vec![1], vec![2], vec![3]]
        );
        let l = &plan.layers[0];
        assert!((l.dispatch.makespan_s - l.dispatch.lower_bound_s).abs() < 1e-12);
        assert!(plan.inference_time_s <= plan.baseline.inference_time_s + 1e-12);
        assert!(plan.gpu_utilization > 0.0 && plan.gpu_utilization <= 1.0);
    }

    #[test]
    fn three_gpus_match_eq_1_by_hand() {
        // 3 identical GPUs at 8 Gbps = 1e9 bytes/s and 1 TFLOP/s; one layer, in MB:
        //     d = [[0, 4, 1], [1, 0, 1], [1, 3, 0]]
        // Row sums 5, 2, 4; column sums 2, 7, 2. GPU 1 receives 7 MB: its port is the
        // bottleneck of the dispatch (7 ms) and, sending those 7 MB back, of the combine (7 ms),
        // so the optimal orders keep it busy until 7 ms both times: N_1 = C_1 = 7 ms.
        // FFN at 1000 FLOP/byte: F = (2, 7, 2) ms. Gate 1 ms, aggregation 0.5 ms. Eq. 1:
        //     t = max_i(G + N_i) + max_j(F_j + C_j) + max_k A_k = (1 + 7) + (7 + 7) + 0.5 = 22.5 ms
        // (GPUs 0 and 2 give at most 2 + 7 < 14 in the middle term).
        let mb = |rows: [[f64; 3]; 3]| rows.map(|r| r.map(|x| x * 1e6).to_vec()).to_vec();
        let spec = InferenceSpec {
            gpus: vec![
                GpuInput {
                    tflop_per_s: 1.0,
                    bandwidth_gbps: 8.0
                };
                3
            ],
            models: vec![InferenceModelSpec {
                name: "hand".into(),
                layers: vec![mb([[0.0, 4.0, 1.0], [1.0, 0.0, 1.0], [1.0, 3.0, 0.0]])],
                gate_s: 1e-3,
                aggregation_s: 0.5e-3,
                ffn_flop_per_byte: 1e3,
                ..Default::default()
            }],
            seed: 0,
            ..Default::default()
        };
        let plan = plan_inference(&spec).unwrap();
        assert_eq!(plan.scenario, Scenario::ExclusiveHomogeneous);
        assert_eq!(plan.experts_of_gpu, vec![vec![0], vec![1], vec![2]]);
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y;
        let layer = &plan.layers[0];
        for a2a in [&layer.dispatch, &layer.combine] {
            assert!(close(a2a.lower_bound_s, 7e-3) && close(a2a.makespan_s, 7e-3));
        }
        assert!(close(layer.inference_time_s, 22.5e-3), "{layer:?}");
        assert!(close(plan.inference_time_s, 22.5e-3));
        // Utilization (§8.1): each GPU computes G + F_i + A = 3.5, 8.5, 3.5 ms of 22.5 ms.
        assert!(close(plan.gpu_utilization, (3.5 + 8.5 + 3.5) / 3.0 / 22.5));
    }

    #[test]
    fn colocating_homogeneous_pairs_every_expert_once() {
        let models = vec![
            model("a", vec![skewed(4, 1.0)]),
            model("b", vec![skewed(4, 2.0)]),
        ];
        let plan = plan_inference(&spec(uniform_gpus(4), models)).unwrap();
        assert_eq!(plan.scenario, Scenario::ColocatingHomogeneous);
        for m in 0..2 {
            let mut experts: Vec<usize> = plan.experts_of_gpu.iter().map(|p| p[m]).collect();
            experts.sort_unstable();
            assert_eq!(experts, vec![0, 1, 2, 3]);
        }
        assert!(plan.speedup_over_baseline >= 1.0 - 1e-12);
    }

    #[test]
    fn heterogeneous_scenarios_are_detected_and_planned() {
        let mut gpus = uniform_gpus(4);
        gpus[0] = GpuInput {
            tflop_per_s: 300.0,
            bandwidth_gbps: 400.0,
        };
        let one =
            plan_inference(&spec(gpus.clone(), vec![model("a", vec![skewed(4, 1.0)])])).unwrap();
        assert_eq!(one.scenario, Scenario::ExclusiveHeterogeneous);
        // The most popular expert (0 receives the most) goes to the fast GPU 0.
        assert_eq!(one.experts_of_gpu[0], vec![0]);
        let two = plan_inference(&spec(
            gpus,
            vec![
                model("a", vec![skewed(4, 1.0)]),
                model("b", vec![skewed(4, 1.0)]),
            ],
        ))
        .unwrap();
        assert_eq!(two.scenario, Scenario::ColocatingHeterogeneous);
    }

    #[test]
    fn colocated_plans_hold_on_zipf_workloads_and_mixed_gpus() {
        use alltoall_sched::workload::zipf_traffic;
        let mut gpus = uniform_gpus(6);
        for g in &mut gpus[3..] {
            *g = GpuInput {
                tflop_per_s: 25.0,
                bandwidth_gbps: 50.0,
            };
        }
        for seed in 0..6 {
            let layer = |s: f64, k: u64| zipf_traffic(6, s, 512, 4096, seed * 10 + k).unwrap();
            let models = vec![
                model("a", vec![layer(1.0, 0).to_rows(), layer(1.0, 1).to_rows()]),
                model("b", vec![layer(1.2, 2).to_rows(), layer(1.2, 3).to_rows()]),
            ];
            for cluster in [uniform_gpus(6), gpus.clone()] {
                let plan = plan_inference(&spec(cluster, models.clone())).unwrap();
                for l in &plan.layers {
                    let lb = l.dispatch.lower_bound_s;
                    assert!((l.dispatch.makespan_s - lb).abs() <= 1e-9 * lb);
                }
                assert!(plan.gpu_utilization > 0.0 && plan.gpu_utilization <= 1.0);
                assert!(plan.baseline.inference_time_s > 0.0);
            }
        }
    }

    #[test]
    fn gpus_load_under_both_spellings_of_their_compute() {
        let new: GpuInput =
            serde_json::from_str(r#"{"tflop_per_s": 312.0, "bandwidth_gbps": 100.0}"#).unwrap();
        let old: GpuInput =
            serde_json::from_str(r#"{"tflops": 312.0, "bandwidth_gbps": 100.0}"#).unwrap();
        assert_eq!(new, old);
        assert_eq!(new.tflop_per_s, 312.0);
        assert!(
            serde_json::to_string(&new)
                .unwrap()
                .contains("\"tflop_per_s\"")
        );
    }

    #[test]
    fn bad_specs_are_typed_errors() {
        let m = || model("a", vec![skewed(3, 1.0)]);
        assert!(matches!(
            plan_inference(&spec(vec![], vec![m()])),
            Err(PlanError::Cost(CostModelError::CountTooSmall {
                what: "GPUs",
                ..
            }))
        ));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(4), vec![m()])),
            Err(PlanError::SizeMismatch {
                expected: 4,
                actual: 3,
                ..
            })
        ));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![m(), m(), m()])),
            Err(PlanError::TooLarge {
                limit: 2,
                value: 3,
                ..
            })
        ));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![])),
            Err(PlanError::Cost(CostModelError::CountTooSmall {
                what: "models",
                ..
            }))
        ));
        let mut bad_gpu = uniform_gpus(3);
        bad_gpu[1].bandwidth_gbps = 0.0;
        assert!(matches!(
            plan_inference(&spec(bad_gpu, vec![m()])),
            Err(PlanError::Cost(CostModelError::NotPositive { .. }))
        ));
        let mut nan = m();
        nan.layers[0][0][1] = f64::NAN;
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![nan])),
            Err(PlanError::Schedule(ScheduleError::InvalidTraffic {
                src: 0,
                dst: 1,
                ..
            }))
        ));
        let mut ragged = m();
        ragged.layers[0][2].pop();
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![ragged])),
            Err(PlanError::Schedule(ScheduleError::NotSquare { row: 2, .. }))
        ));
        let mut empty = m();
        empty.layers.clear();
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![empty])),
            Err(PlanError::Cost(CostModelError::CountTooSmall { .. }))
        ));
        let mut two_layers = m();
        two_layers.layers.push(skewed(3, 2.0));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![m(), two_layers])),
            Err(PlanError::SizeMismatch {
                expected: 1,
                actual: 2,
                ..
            })
        ));
        let mut negative = m();
        negative.gate_s = -1.0;
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![negative])),
            Err(PlanError::Cost(CostModelError::Negative { .. }))
        ));
    }
}
