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
//! };
//! let spec = InferenceSpec {
//!     gpus: vec![GpuInput { tflops: 100.0, bandwidth_gbps: 100.0 }; 3],
//!     models: vec![model],
//!     seed: 7,
//! };
//! let plan = plan_inference(&spec)?;
//! // The optimal order reaches the all-to-all lower bound on every layer.
//! for layer in &plan.layers {
//!     assert!((layer.dispatch.makespan_s - layer.dispatch.lower_bound_s).abs() < 1e-12);
//! }
//! assert!(plan.inference_time_s <= plan.baseline.inference_time_s + 1e-12);
//! # Ok::<(), moe_planner::inference::InferencePlanError>(())
//! ```

use alltoall_sched::{Algorithm, Bandwidth, ScheduleError, Timetable, TrafficMatrix, schedule};
use colocation_matching::{
    ColocationCostModel, ExpertDemand, ExpertLoads, GpuSpec, LocalSearchOptions, MatchingError,
    PairingOptions, SquareMatrix, assign_gpus_bottleneck, colocate_local_search,
    exclusive_time_matrix, pair_bottleneck, random_colocation, random_gpu_assignment,
};
use comm_cost_model::timeline::{
    ColocatedLayer, ExclusiveLayer, ModelLayerTimes, colocated_timeline, exclusive_time,
};
use comm_cost_model::{CostModelError, check_non_negative, check_positive, units};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One GPU, in vendor units (converted to SI on entry).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GpuInput {
    /// Sustained compute throughput, TFLOP/s.
    pub tflops: f64,
    /// Network bandwidth of the GPU's port, Gbps.
    pub bandwidth_gbps: f64,
}

/// One MoE model: its experts' traffic per layer and its computation costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub ffn_flop_per_byte: f64,
}

/// A deployment request: the cluster and the one or two models to serve on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InferenceSpec {
    /// The GPUs; one expert of each model per GPU, so their count is the expert count.
    pub gpus: Vec<GpuInput>,
    /// One model (exclusive) or two (colocated).
    pub models: Vec<InferenceModelSpec>,
    /// Seed of the random baselines (RGA, REC).
    #[serde(default)]
    pub seed: u64,
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AllToAllSummary {
    /// Lower bound (Aurora Thm 4.2 / 5.2), seconds.
    pub lower_bound_s: f64,
    /// Completion time of the schedule, seconds.
    pub makespan_s: f64,
    /// Transfers in the schedule.
    pub pieces: usize,
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
}

/// The plan: placement, per-layer schedules and times, and the baseline comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InferencePlan {
    /// The scenario the spec falls in.
    pub scenario: Scenario,
    /// `experts_of_gpu[g][m]` is the expert of model `m` that GPU `g` hosts.
    pub experts_of_gpu: Vec<Vec<usize>>,
    /// Per-layer schedules and times.
    pub layers: Vec<LayerPlan>,
    /// Inference time summed over layers, seconds.
    pub inference_time_s: f64,
    /// Each GPU's compute time (gate, FFN, aggregation of every model it hosts) over the layer's
    /// inference time, averaged over GPUs and layers (§8.1).
    pub gpu_utilization: f64,
    /// The random-placement, shortest-job-first baseline.
    pub baseline: BaselineSummary,
    /// `baseline.inference_time_s / inference_time_s` (1 when both are zero).
    pub speedup_over_baseline: f64,
}

/// Everything that can make an inference spec unplannable.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum InferencePlanError {
    /// The spec's shape is wrong (model count, layer count, matrix size).
    #[error("invalid inference spec: {0}")]
    Invalid(String),
    /// A traffic matrix or bandwidth was rejected by the scheduler.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A placement problem was rejected by the matcher.
    #[error(transparent)]
    Matching(#[from] MatchingError),
    /// A time or rate was invalid.
    #[error(transparent)]
    Cost(#[from] CostModelError),
}

/// Validated, SI-unit view of the cluster and models.
struct Workload {
    gpus: Vec<GpuSpec>,
    bandwidth: Bandwidth,
    models: Vec<ModelData>,
}

struct ModelData {
    layers: Vec<SquareMatrix>,
    total: SquareMatrix,
    gate_s: f64,
    aggregation_s: f64,
    flop_per_byte: f64,
}

/// Plans an MoE inference deployment (Aurora §4–7) and compares it with the RGA/REC + SJF baseline.
///
/// # Errors
///
/// [`InferencePlanError::Invalid`] for no GPUs, zero or more than two models, a model without
/// layers, models with different layer counts, or a matrix that is not GPU-count square;
/// [`InferencePlanError::Cost`] for a negative or non-finite time, rate or FLOP count;
/// [`InferencePlanError::Schedule`] / [`InferencePlanError::Matching`] for traffic the algorithm
/// crates reject (negative or non-finite bytes).
///
/// # Complexity
///
/// Placement: one bottleneck matching (or local search) on `n` GPUs; then, for each of `L` layers
/// and each model, two optimal all-to-all schedules and two simulated SJF baselines; dominated by
/// the all-to-all decomposition, `O(L · n^2.5 · log n)` in practice.
pub fn plan_inference(spec: &InferenceSpec) -> Result<InferencePlan, InferencePlanError> {
    let work = Workload::new(spec)?;
    let scenario = work.scenario();
    let placement = work.optimized_placement(scenario)?;
    let baseline_placement = work.random_placement(spec.seed);
    let planned = work.evaluate(&placement, Algorithm::Optimal, spec.seed)?;
    let baseline = work.evaluate(&baseline_placement, Algorithm::Sjf, spec.seed)?;
    let speedup = if planned.total_s > 0.0 {
        baseline.total_s / planned.total_s
    } else {
        1.0
    };
    Ok(InferencePlan {
        scenario,
        experts_of_gpu: placement,
        layers: planned.layers,
        inference_time_s: planned.total_s,
        gpu_utilization: planned.utilization,
        baseline: BaselineSummary {
            description: baseline_description(work.models.len()),
            experts_of_gpu: baseline_placement,
            inference_time_s: baseline.total_s,
        },
        speedup_over_baseline: speedup,
    })
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
    fn new(spec: &InferenceSpec) -> Result<Self, InferencePlanError> {
        let n = spec.gpus.len();
        if n == 0 {
            return Err(InferencePlanError::Invalid(
                "the cluster has no GPUs".into(),
            ));
        }
        if spec.models.is_empty() || spec.models.len() > 2 {
            return Err(InferencePlanError::Invalid(format!(
                "one model (exclusive) or two (colocated) are supported, got {}",
                spec.models.len()
            )));
        }
        let gpus = spec
            .gpus
            .iter()
            .map(|g| {
                Ok(GpuSpec {
                    flop_per_s: units::tflop_per_s(check_positive("GPU TFLOP/s", g.tflops)?),
                    bandwidth_bytes_per_s: units::gbps(check_positive(
                        "GPU bandwidth (Gbps)",
                        g.bandwidth_gbps,
                    )?),
                })
            })
            .collect::<Result<Vec<_>, CostModelError>>()?;
        let bandwidth = Bandwidth::per_gpu(gpus.iter().map(|g| g.bandwidth_bytes_per_s).collect())?;
        let models = spec
            .models
            .iter()
            .map(|m| ModelData::new(m, n))
            .collect::<Result<Vec<_>, _>>()?;
        if models.len() == 2 && models[0].layers.len() != models[1].layers.len() {
            return Err(InferencePlanError::Invalid(format!(
                "colocated models must have the same number of MoE layers, got {} and {}",
                models[0].layers.len(),
                models[1].layers.len()
            )));
        }
        Ok(Self {
            gpus,
            bandwidth,
            models,
        })
    }

    fn n(&self) -> usize {
        self.gpus.len()
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

    /// `experts_of_gpu[g][m]` chosen by the scenario's optimizer.
    fn optimized_placement(
        &self,
        scenario: Scenario,
    ) -> Result<Vec<Vec<usize>>, InferencePlanError> {
        let n = self.n();
        Ok(match scenario {
            Scenario::ExclusiveHomogeneous => (0..n).map(|g| vec![g]).collect(),
            Scenario::ExclusiveHeterogeneous => {
                let times = exclusive_time_matrix(&self.models[0].demands(), &self.gpus)?;
                let expert_to_gpu = assign_gpus_bottleneck(&times)?.expert_to_gpu;
                invert(&expert_to_gpu)
                    .into_iter()
                    .map(|e| vec![e])
                    .collect()
            }
            Scenario::ColocatingHomogeneous => {
                let a = ExpertLoads::from_traffic(&self.models[0].total);
                let b = ExpertLoads::from_traffic(&self.models[1].total);
                let pairing = pair_bottleneck(&a, &b, &PairingOptions::default())?;
                pairing.pairs.iter().map(|p| p.to_vec()).collect()
            }
            Scenario::ColocatingHeterogeneous => {
                let cost = ColocationCostModel::new(
                    self.models[0].demands(),
                    self.models[1].demands(),
                    self.gpus.clone(),
                )?;
                let placement = colocate_local_search(&cost, &LocalSearchOptions::default())?;
                placement.gpu_experts.iter().map(|p| p.to_vec()).collect()
            }
        })
    }

    /// RGA (and REC for the second model), seeded.
    fn random_placement(&self, seed: u64) -> Vec<Vec<usize>> {
        let n = self.n();
        let gpu_of_a = random_gpu_assignment(n, seed);
        let expert_on = invert(&gpu_of_a);
        let partner = random_colocation(n, seed);
        (0..n)
            .map(|g| {
                let a = expert_on[g];
                if self.models.len() == 2 {
                    vec![a, partner[a]]
                } else {
                    vec![a]
                }
            })
            .collect()
    }

    /// Times every layer of a placement with the given all-to-all algorithm.
    fn evaluate(
        &self,
        placement: &[Vec<usize>],
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<Evaluation, InferencePlanError> {
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
        let total_s = layers.iter().map(|l| l.inference_time_s).sum();
        Ok(Evaluation {
            utilization: utilization / layers.len() as f64,
            layers,
            total_s,
        })
    }

    fn exclusive_layer(
        &self,
        placement: &[Vec<usize>],
        layer: usize,
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<(LayerPlan, f64), InferencePlanError> {
        let model = &self.models[0];
        let on_gpu = gpu_matrix(&model.layers[layer], placement, 0);
        let (dispatch, combine) = self.both_ways(&on_gpu, algorithm, seed)?;
        let n = self.n();
        let times = ExclusiveLayer {
            gate_s: vec![model.gate_s; n],
            dispatch_s: port_finish_times(&dispatch.1, n),
            ffn_s: self.ffn_times(model, &on_gpu),
            combine_s: port_finish_times(&combine.1, n),
            aggregation_s: vec![model.aggregation_s; n],
        };
        let time = exclusive_time(&times)?;
        let plan = LayerPlan {
            dispatch: dispatch.0,
            combine: combine.0,
            inference_time_s: time.inference_time_s,
        };
        Ok((plan, time.gpu_utilization))
    }

    fn colocated_layer(
        &self,
        placement: &[Vec<usize>],
        layer: usize,
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<(LayerPlan, f64), InferencePlanError> {
        let mats: Vec<Vec<Vec<f64>>> = (0..2)
            .map(|m| gpu_matrix(&self.models[m].layers[layer], placement, m))
            .collect();
        let sum = add(&mats[0], &mats[1]);
        let (dispatch, combine) = self.both_ways(&sum, algorithm, seed)?;
        let (a, ffn_a) = self.model_times(0, &mats[0], algorithm, seed)?;
        let (b, ffn_b) = self.model_times(1, &mats[1], algorithm, seed)?;
        let timeline = colocated_timeline(&ColocatedLayer {
            a,
            b,
            aggregated_dispatch_s: shared_port_s(dispatch.0.makespan_s, a.dispatch_s, b.dispatch_s),
            aggregated_combine_s: shared_port_s(combine.0.makespan_s, a.combine_s, b.combine_s),
        })?;
        let t = timeline.inference_time_s;
        // Utilization as in the exclusive case (Eq. 1's `gpu_utilization`): each GPU's own
        // compute over the layer time, averaged over GPUs. The timeline's own figure uses the
        // slowest GPU's FFN (Table 2 works with maxima), which would overstate it.
        let fixed = a.gate_s + a.aggregation_s + b.gate_s + b.aggregation_s;
        let utilization = if t > 0.0 {
            let busy: f64 = ffn_a.iter().zip(&ffn_b).map(|(x, y)| fixed + x + y).sum();
            busy / (t * ffn_a.len() as f64)
        } else {
            0.0
        };
        let plan = LayerPlan {
            dispatch: dispatch.0,
            combine: combine.0,
            inference_time_s: t,
        };
        Ok((plan, utilization))
    }

    /// One model's component times (maxima over GPUs) on the shared cluster, and its per-GPU
    /// FFN times.
    fn model_times(
        &self,
        m: usize,
        on_gpu: &[Vec<f64>],
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<(ModelLayerTimes, Vec<f64>), InferencePlanError> {
        let model = &self.models[m];
        let (dispatch, combine) = self.both_ways(on_gpu, algorithm, seed)?;
        let ffn = self.ffn_times(model, on_gpu);
        let times = ModelLayerTimes {
            gate_s: model.gate_s,
            dispatch_s: dispatch.0.makespan_s,
            ffn_s: ffn.iter().copied().fold(0.0, f64::max),
            combine_s: combine.0.makespan_s,
            aggregation_s: model.aggregation_s,
        };
        Ok((times, ffn))
    }

    /// FFN time of every GPU: bytes it receives times FLOP/byte over its FLOP/s.
    fn ffn_times(&self, model: &ModelData, on_gpu: &[Vec<f64>]) -> Vec<f64> {
        let n = self.n();
        (0..n)
            .map(|g| {
                let received: f64 = (0..n).filter(|&s| s != g).map(|s| on_gpu[s][g]).sum();
                received * model.flop_per_byte / self.gpus[g].flop_per_s
            })
            .collect()
    }

    /// Schedules a dispatch matrix and its combine (the transpose, Aurora §2.2).
    fn both_ways(
        &self,
        dispatch: &[Vec<f64>],
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<(Scheduled, Scheduled), InferencePlanError> {
        let matrix = TrafficMatrix::from_rows(dispatch)?;
        let there = self.run(&matrix, algorithm, seed)?;
        let back = self.run(&matrix.transposed(), algorithm, seed)?;
        Ok((there, back))
    }

    fn run(
        &self,
        matrix: &TrafficMatrix,
        algorithm: Algorithm,
        seed: u64,
    ) -> Result<Scheduled, InferencePlanError> {
        let plan = schedule(matrix, &self.bandwidth, algorithm, seed)?;
        let summary = AllToAllSummary {
            lower_bound_s: plan.lower_bound_s,
            makespan_s: plan.makespan_s,
            pieces: plan.pieces,
        };
        Ok((summary, plan.timetable))
    }
}

/// A scheduled all-to-all: its summary and its timetable.
type Scheduled = (AllToAllSummary, Timetable);

struct Evaluation {
    layers: Vec<LayerPlan>,
    total_s: f64,
    utilization: f64,
}

impl ModelData {
    fn new(spec: &InferenceModelSpec, n: usize) -> Result<Self, InferencePlanError> {
        if spec.layers.is_empty() {
            return Err(InferencePlanError::Invalid(format!(
                "model `{}` has no MoE layers",
                spec.name
            )));
        }
        let mut layers = Vec::with_capacity(spec.layers.len());
        for (l, rows) in spec.layers.iter().enumerate() {
            if rows.len() != n || rows.iter().any(|r| r.len() != n) {
                return Err(InferencePlanError::Invalid(format!(
                    "model `{}` layer {l}: the traffic matrix must be {n}x{n} (one expert per GPU)",
                    spec.name
                )));
            }
            layers.push(SquareMatrix::from_rows(rows)?);
        }
        let total =
            SquareMatrix::from_fn(n, |i, j| layers.iter().filter_map(|m| m.get(i, j)).sum())?;
        Ok(Self {
            layers,
            total,
            gate_s: check_non_negative("gate time (s)", spec.gate_s)?,
            aggregation_s: check_non_negative("aggregation time (s)", spec.aggregation_s)?,
            flop_per_byte: check_non_negative("FFN FLOP per byte", spec.ffn_flop_per_byte)?,
        })
    }

    /// Per-expert demand summed over layers, for the placement optimizers.
    fn demands(&self) -> Vec<ExpertDemand> {
        let loads = ExpertLoads::from_traffic(&self.total);
        loads
            .send_bytes
            .iter()
            .zip(&loads.recv_bytes)
            .map(|(&send, &recv)| ExpertDemand {
                send_bytes: send,
                recv_bytes: recv,
                flop: recv * self.flop_per_byte,
            })
            .collect()
    }
}

/// Time of both models' all-to-all on the shared ports, kept within `[max, sum]` of the solo
/// times as the Table 2 timeline requires.
///
/// The optimal schedules satisfy this up to rounding (the aggregated bound is the busiest port of
/// the summed matrix). Simulated baselines need not: contention can make the aggregated run
/// slower than running the two models back to back, which any runtime could do instead, and a
/// lucky interleaving can beat a model's own contended solo run. Clamping keeps the baseline
/// conservative on the first count and consistent on the second.
fn shared_port_s(aggregated: f64, a: f64, b: f64) -> f64 {
    aggregated.clamp(a.max(b), a + b)
}

/// The inverse of a permutation.
fn invert(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}

/// A model's expert-indexed matrix moved onto GPUs: `out[g][h] = d[e(g)][e(h)]`, where `e(g)`
/// is the model's expert on GPU `g`.
fn gpu_matrix(d: &SquareMatrix, placement: &[Vec<usize>], model: usize) -> Vec<Vec<f64>> {
    placement
        .iter()
        .map(|src| {
            placement
                .iter()
                .map(|dst| d.get(src[model], dst[model]).unwrap_or(0.0))
                .collect()
        })
        .collect()
}

fn add(a: &[Vec<f64>], b: &[Vec<f64>]) -> Vec<Vec<f64>> {
    a.iter()
        .zip(b)
        .map(|(ra, rb)| ra.iter().zip(rb).map(|(x, y)| x + y).collect())
        .collect()
}

/// When each GPU's port is done: the last end of a transfer it sends or receives.
fn port_finish_times(timetable: &Timetable, n: usize) -> Vec<f64> {
    let mut finish = vec![0.0_f64; n];
    for t in &timetable.transfers {
        finish[t.src] = finish[t.src].max(t.end_s);
        finish[t.dst] = finish[t.dst].max(t.end_s);
    }
    finish
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str, layers: Vec<Vec<Vec<f64>>>) -> InferenceModelSpec {
        InferenceModelSpec {
            name: name.into(),
            layers,
            gate_s: 1e-4,
            aggregation_s: 1e-4,
            ffn_flop_per_byte: 1e3,
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
        }
    }

    fn uniform_gpus(n: usize) -> Vec<GpuInput> {
        vec![
            GpuInput {
                tflops: 100.0,
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
            tflops: 300.0,
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
                tflops: 25.0,
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
    fn bad_specs_are_typed_errors() {
        let m = || model("a", vec![skewed(3, 1.0)]);
        assert!(matches!(
            plan_inference(&spec(vec![], vec![m()])),
            Err(InferencePlanError::Invalid(_))
        ));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(4), vec![m()])),
            Err(InferencePlanError::Invalid(_))
        ));
        assert!(matches!(
            plan_inference(&spec(uniform_gpus(3), vec![m(), m(), m()])),
            Err(InferencePlanError::Invalid(_))
        ));
        let mut bad_gpu = uniform_gpus(3);
        bad_gpu[1].bandwidth_gbps = 0.0;
        assert!(plan_inference(&spec(bad_gpu, vec![m()])).is_err());
        let mut nan = m();
        nan.layers[0][0][1] = f64::NAN;
        assert!(plan_inference(&spec(uniform_gpus(3), vec![nan])).is_err());
        let mut empty = m();
        empty.layers.clear();
        assert!(plan_inference(&spec(uniform_gpus(3), vec![empty])).is_err());
    }
}
