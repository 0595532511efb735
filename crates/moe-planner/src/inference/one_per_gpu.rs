//! One expert of each model per GPU (Aurora §4–7): the placement of the spec's scenario, timed
//! layer by layer against random placement with shortest-job-first order (RGA / REC + SJF).

use alltoall_sched::{Bandwidth, TrafficMatrix};
use colocation_matching::{
    ColocationCostModel, ExpertDemand, ExpertLoads, LocalSearchOptions, PairingOptions,
    assign_gpus_bottleneck, colocate_local_search, exclusive_time_matrix, lina_pairs,
    pair_bottleneck, random_placement,
};
use comm_cost_model::InputError;
use comm_cost_model::timeline::ffn_times_s;
use comm_cost_model::{check_count, check_non_negative};

use super::cluster::Cluster;
use super::evaluate::{Baseline, Evaluation, Evaluator, ModelOnGpus, Order, assemble};
use super::{InferenceModelSpec, InferencePlan, OnePerGpuSpec, Scenario};
use crate::PlanError;
use comm_cost_model::check_same_len;

/// Validated, SI-unit view of the cluster and models.
struct Workload {
    cluster: Cluster,
    models: Vec<ModelData>,
}

struct ModelData {
    /// Expert-indexed dispatch traffic of every layer.
    layers: Vec<TrafficMatrix>,
    /// Per-expert loads summed over layers (Aurora's historical statistics).
    total: ExpertLoads,
    /// Per GPU of the cluster.
    gate_s: Vec<f64>,
    /// Per GPU of the cluster.
    aggregation_s: Vec<f64>,
    flop_per_byte: f64,
}

/// Plans a one-per-GPU spec (see [`super::plan_inference`]).
pub(super) fn plan(spec: &OnePerGpuSpec) -> Result<InferencePlan, PlanError> {
    let work = Workload::new(spec)?;
    let scenario = work.scenario();
    let placement = match &spec.placement {
        Some(fixed) => work.fixed_placement(fixed)?,
        None => work.optimized_placement(scenario)?,
    };
    let baseline_placement =
        random_placement(work.cluster.gpus.len(), work.models.len() == 2, spec.seed)?;
    let planned = work.evaluate(&placement, Order::Planned)?;
    let baseline = work.evaluate(&baseline_placement, Order::Sjf)?;
    let mut baselines = vec![Baseline {
        description: baseline_description(work.models.len()),
        experts_of_gpu: baseline_placement,
        total_s: baseline.total_s,
    }];
    baselines.extend(work.lina()?);
    assemble(scenario, placement, planned, baselines)
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
    fn new(spec: &OnePerGpuSpec) -> Result<Self, PlanError> {
        let cluster = Cluster::new(&spec.gpus, spec.link_fits.as_ref())?;
        check_count("models", spec.models.len(), 1)?;
        if spec.models.len() > 2 {
            return Err(PlanError::Input(InputError::too_large(
                "models (one exclusive, or two colocated)",
                2,
                spec.models.len(),
            )));
        }
        let n = cluster.gpus.len();
        let models = spec
            .models
            .iter()
            .map(|m| ModelData::new(m, n))
            .collect::<Result<Vec<_>, _>>()?;
        if let [a, b] = models.as_slice() {
            check_same_len(
                "MoE layers of the second colocated model",
                b.layers.len(),
                a.layers.len(),
            )?;
        }
        Ok(Self { cluster, models })
    }

    fn scenario(&self) -> Scenario {
        match (self.models.len() == 2, self.cluster.homogeneous()) {
            (false, true) => Scenario::ExclusiveHomogeneous,
            (false, false) => Scenario::ExclusiveHeterogeneous,
            (true, true) => Scenario::ColocatingHomogeneous,
            (true, false) => Scenario::ColocatingHeterogeneous,
        }
    }

    /// A given `experts_of_gpu[g][m]`, checked for shape (each model's column is checked to be
    /// a permutation when its traffic is relabelled).
    fn fixed_placement(&self, fixed: &[Vec<usize>]) -> Result<Vec<Vec<usize>>, PlanError> {
        check_same_len(
            "GPUs of the fixed placement",
            fixed.len(),
            self.cluster.gpus.len(),
        )?;
        for row in fixed {
            check_same_len(
                "experts per GPU of the fixed placement (one per model)",
                row.len(),
                self.models.len(),
            )?;
        }
        Ok(fixed.to_vec())
    }

    /// `experts_of_gpu[g][m]` chosen by the scenario's optimizer.
    fn optimized_placement(&self, scenario: Scenario) -> Result<Vec<Vec<usize>>, PlanError> {
        let models = &self.models;
        let gpus = &self.cluster.gpus;
        Ok(match scenario {
            Scenario::ExclusiveHomogeneous => (0..gpus.len()).map(|g| vec![g]).collect(),
            Scenario::ExclusiveHeterogeneous => {
                let times = exclusive_time_matrix(&models[0].demands()?, gpus)?;
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
                    gpus.clone(),
                )?;
                let placement = colocate_local_search(&cost, &LocalSearchOptions::default())?;
                placement.gpu_experts.iter().map(|p| p.to_vec()).collect()
            }
        })
    }

    /// Times every layer of a placement with the sends ordered by `order`.
    fn evaluate(&self, placement: &[Vec<usize>], order: Order) -> Result<Evaluation, PlanError> {
        let evaluator = Evaluator {
            bandwidth: &self.cluster.bandwidth,
        };
        let flop_per_s = self.cluster.flop_per_s();
        let timed = (0..self.models[0].layers.len())
            .map(|layer| {
                let on_gpus = self
                    .models
                    .iter()
                    .enumerate()
                    .map(|(m, model)| {
                        let dispatch = model.layers[layer].relabel(&experts_of(placement, m))?;
                        model.on_gpus(dispatch, &flop_per_s, 0)
                    })
                    .collect::<Result<Vec<_>, PlanError>>()?;
                evaluator.layer(&on_gpus, order, Vec::new())
            })
            .collect::<Result<Vec<_>, _>>()?;
        Evaluation::of(timed)
    }
}

impl Workload {
    /// Lina (Aurora §8.1, footnote 5: its expert packing, the component Aurora compares
    /// against), for two models on an even number of GPUs: each model alone on half of the
    /// GPUs (model `a` on the first half, `b` on the second), two of its own experts per GPU
    /// paired most popular with least popular ([`lina_pairs`] on the tokens each expert
    /// receives over all layers), sends in the optimal order like the plan's, so the comparison
    /// is of placement alone. The two halves run side by side: the deployment's time is the
    /// slower model's. `None` for one model or an odd GPU count (no even split).
    fn lina(&self) -> Result<Option<Baseline>, PlanError> {
        let n = self.cluster.gpus.len();
        if self.models.len() != 2 || n % 2 != 0 {
            return Ok(None);
        }
        let half = n / 2;
        let mut slowest = 0.0f64;
        for (m, model) in self.models.iter().enumerate() {
            let gpus = &self.cluster.gpus[m * half..(m + 1) * half];
            let bandwidth =
                Bandwidth::per_gpu(gpus.iter().map(|g| g.bandwidth_bytes_per_s).collect())?;
            let flop_per_s: Vec<f64> = gpus.iter().map(|g| g.flop_per_s).collect();
            let pairs = lina_pairs(&model.total.recv_bytes)?;
            let evaluator = Evaluator {
                bandwidth: &bandwidth,
            };
            let timed = model
                .layers
                .iter()
                .map(|layer| {
                    let on_gpus = model.on_gpus(layer.relabel(&pairs)?, &flop_per_s, m * half)?;
                    evaluator.layer(&[on_gpus], Order::Planned, Vec::new())
                })
                .collect::<Result<Vec<_>, PlanError>>()?;
            slowest = slowest.max(Evaluation::of(timed)?.total_s);
        }
        Ok(Some(Baseline {
            description: "Lina: each model alone on half of the GPUs, two of its own experts \
                          per GPU (most with least popular), optimal send order"
                .to_owned(),
            experts_of_gpu: Vec::new(),
            total_s: slowest,
        }))
    }
}

/// Model `m`'s expert on every GPU of a placement, in the shape [`TrafficMatrix::relabel`] takes.
fn experts_of(placement: &[Vec<usize>], m: usize) -> Vec<&[usize]> {
    placement.iter().map(|experts| &experts[m..=m]).collect()
}

impl ModelData {
    fn new(spec: &InferenceModelSpec, n: usize) -> Result<Self, PlanError> {
        check_count("MoE layers of a model", spec.layers.len(), 1)?;
        let mut layers = Vec::with_capacity(spec.layers.len());
        for rows in &spec.layers {
            check_same_len(
                "experts of a layer's traffic matrix (one per GPU)",
                rows.len(),
                n,
            )?;
            layers.push(TrafficMatrix::from_rows(rows)?);
        }
        let mut total = layers[0].clone();
        for layer in &layers[1..] {
            total = total.checked_add(layer)?;
        }
        Ok(Self {
            total: ExpertLoads::new(total.send_totals(), total.receive_totals())?,
            layers,
            gate_s: spec.gate_s.on_gpus("gate time (s), one per GPU", n)?,
            aggregation_s: spec
                .aggregation_s
                .on_gpus("aggregation time (s), one per GPU", n)?,
            flop_per_byte: check_non_negative("FFN FLOP per byte", spec.ffn_flop_per_byte)?,
        })
    }

    /// This model's share of a layer whose GPU-indexed dispatch is `dispatch`, on the GPUs
    /// `first..first + flop_per_s.len()` of the cluster: FFN time from the bytes each GPU
    /// receives, the model's gate and aggregation on each of those GPUs.
    fn on_gpus(
        &self,
        dispatch: TrafficMatrix,
        flop_per_s: &[f64],
        first: usize,
    ) -> Result<ModelOnGpus, PlanError> {
        let gpus = first..first + flop_per_s.len();
        Ok(ModelOnGpus {
            ffn_s: ffn_times_s(&dispatch.receive_totals(), self.flop_per_byte, flop_per_s)?,
            dispatch,
            gate_s: self.gate_s[gpus.clone()].to_vec(),
            aggregation_s: self.aggregation_s[gpus].to_vec(),
        })
    }

    /// Per-expert demand summed over layers, for the placement optimizers.
    fn demands(&self) -> Result<Vec<ExpertDemand>, PlanError> {
        Ok(ExpertDemand::from_loads(&self.total, self.flop_per_byte)?)
    }
}
