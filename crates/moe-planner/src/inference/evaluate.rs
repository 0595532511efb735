//! The one evaluator of a layer's timeline, for both modes: each all-to-all ordered as asked,
//! then Aurora Eq. 1 (one model) or Table 2 / Eq. 4 (two colocated models).

use alltoall_sched::baselines::{nccl, shift, sjf};
use alltoall_sched::{Bandwidth, Timetable, TrafficMatrix, lower_bound_s, optimal};
use comm_cost_model::InputError;
use comm_cost_model::check_finite_result;
use comm_cost_model::timeline::{
    ColocatedLayer, ExclusiveLayer, ModelLayerTimes, colocated_gpu_utilization, colocated_timeline,
    exclusive_time,
};

use super::{AllToAllSummary, BaselineSummary, InferencePlan, LayerPlan, Scenario};
use crate::PlanError;

/// How a deployment orders its sends.
#[derive(Debug, Clone, Copy)]
pub(super) enum Order {
    /// The contention-free schedule ([`alltoall_sched::optimal`]); its timetable is kept.
    Planned,
    /// Shortest first per sender, simulated under contention.
    Sjf,
    /// NCCL's node-aware peer order with this many GPUs per node, simulated.
    Nccl {
        /// GPUs per node.
        gpus_per_node: usize,
    },
    /// `r + k`, simulated.
    Shift,
}

/// One model's share of one layer, on GPUs.
pub(super) struct ModelOnGpus {
    /// GPU-indexed dispatch traffic, bytes; the combine is its transpose (Aurora §2.2).
    pub(super) dispatch: TrafficMatrix,
    /// Each GPU's expert (FFN) time, seconds.
    pub(super) ffn_s: Vec<f64>,
    /// Each GPU's gate time, seconds.
    pub(super) gate_s: Vec<f64>,
    /// Each GPU's aggregation time, seconds.
    pub(super) aggregation_s: Vec<f64>,
}

/// One layer timed: its plan and its GPU utilization.
pub(super) struct Timed {
    pub(super) plan: LayerPlan,
    pub(super) utilization: f64,
}

/// Every layer of one deployment timed, summed.
pub(super) struct Evaluation {
    pub(super) layers: Vec<LayerPlan>,
    pub(super) total_s: f64,
    pub(super) utilization: f64,
}

/// Times layers on one cluster's ports.
pub(super) struct Evaluator<'a> {
    pub(super) bandwidth: &'a Bandwidth,
}

impl Evaluator<'_> {
    /// One layer of one model (Eq. 1, per-GPU terms) or two colocated models (Table 2, Eq. 4:
    /// both models' all-to-alls share the ports), its sends ordered by `order`.
    pub(super) fn layer(
        &self,
        models: &[ModelOnGpus],
        order: Order,
        experts_of_gpu: Vec<Vec<usize>>,
    ) -> Result<Timed, PlanError> {
        match models {
            [one] => self.exclusive(one, order, experts_of_gpu),
            [a, b] => self.colocated(a, b, order, experts_of_gpu),
            _ => Err(PlanError::Input(InputError::too_large(
                "models (one exclusive, or two colocated)",
                2,
                models.len(),
            ))),
        }
    }

    fn exclusive(
        &self,
        model: &ModelOnGpus,
        order: Order,
        experts_of_gpu: Vec<Vec<usize>>,
    ) -> Result<Timed, PlanError> {
        let ((dispatch, there), (combine, back)) = self.both_ways(&model.dispatch, order)?;
        let time = exclusive_time(&ExclusiveLayer {
            gate_s: model.gate_s.clone(),
            dispatch_s: there.port_finish_times()?,
            ffn_s: model.ffn_s.clone(),
            combine_s: back.port_finish_times()?,
            aggregation_s: model.aggregation_s.clone(),
        })?;
        Ok(Timed {
            plan: LayerPlan {
                dispatch,
                combine,
                inference_time_s: time.inference_time_s,
                experts_of_gpu,
            },
            utilization: time.gpu_utilization,
        })
    }

    fn colocated(
        &self,
        a: &ModelOnGpus,
        b: &ModelOnGpus,
        order: Order,
        experts_of_gpu: Vec<Vec<usize>>,
    ) -> Result<Timed, PlanError> {
        let ((dispatch, _), (combine, _)) =
            self.both_ways(&a.dispatch.checked_add(&b.dispatch)?, order)?;
        let shared = ColocatedLayer {
            a: self.model_times(a, order)?,
            b: self.model_times(b, order)?,
            aggregated_dispatch_s: dispatch.makespan_s,
            aggregated_combine_s: combine.makespan_s,
        };
        Ok(Timed {
            plan: LayerPlan {
                dispatch,
                combine,
                inference_time_s: colocated_timeline(&shared)?.inference_time_s,
                experts_of_gpu,
            },
            utilization: colocated_gpu_utilization(&shared, &a.ffn_s, &b.ffn_s)?,
        })
    }

    /// One colocated model's component times: maxima over GPUs, its all-to-alls alone.
    fn model_times(&self, model: &ModelOnGpus, order: Order) -> Result<ModelLayerTimes, PlanError> {
        let ((dispatch, _), (combine, _)) = self.both_ways(&model.dispatch, order)?;
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        Ok(ModelLayerTimes {
            gate_s: max(&model.gate_s),
            dispatch_s: dispatch.makespan_s,
            ffn_s: max(&model.ffn_s),
            combine_s: combine.makespan_s,
            aggregation_s: max(&model.aggregation_s),
        })
    }

    /// A dispatch matrix and its combine (the transpose), each ordered by `order`.
    #[allow(clippy::type_complexity)]
    fn both_ways(
        &self,
        dispatch: &TrafficMatrix,
        order: Order,
    ) -> Result<((AllToAllSummary, Timetable), (AllToAllSummary, Timetable)), PlanError> {
        Ok((
            self.run(dispatch, order)?,
            self.run(&dispatch.transposed(), order)?,
        ))
    }

    /// One all-to-all ordered by `order`: its summary (with the timetable, sender by sender,
    /// for the planned order only) and its timetable.
    fn run(
        &self,
        matrix: &TrafficMatrix,
        order: Order,
    ) -> Result<(AllToAllSummary, Timetable), PlanError> {
        let bandwidth = self.bandwidth;
        let timetable = match order {
            Order::Planned => optimal(matrix, bandwidth)?,
            Order::Sjf => sjf(matrix, bandwidth)?,
            Order::Nccl { gpus_per_node } => nccl(matrix, bandwidth, gpus_per_node)?,
            Order::Shift => shift(matrix, bandwidth)?,
        };
        let kept = match order {
            Order::Planned => timetable.send_orders()?.into_iter().flatten().collect(),
            _ => Vec::new(),
        };
        let summary = AllToAllSummary {
            lower_bound_s: lower_bound_s(matrix, bandwidth)?,
            makespan_s: timetable.makespan_s(),
            pieces: timetable.pieces(),
            nonzero_pairs: matrix.nonzeros(),
            timetable: kept,
        };
        Ok((summary, timetable))
    }
}

impl Evaluation {
    /// The layers in order, their total time (finite, or a typed error) and mean utilization.
    pub(super) fn of(timed: Vec<Timed>) -> Result<Self, PlanError> {
        let count = timed.len().max(1) as f64;
        let utilization = timed.iter().map(|t| t.utilization).sum::<f64>() / count;
        let layers: Vec<LayerPlan> = timed.into_iter().map(|t| t.plan).collect();
        Ok(Self {
            total_s: total_s(layers.iter().map(|l| l.inference_time_s))?,
            layers,
            utilization,
        })
    }
}

/// A sum of layer times: each is finite, but several near `f64::MAX` overflow their sum.
pub(super) fn total_s(times: impl Iterator<Item = f64>) -> Result<f64, PlanError> {
    Ok(check_finite_result("inference time (s)", times.sum())?)
}

/// A baseline deployment's name, placement and total time.
pub(super) struct Baseline {
    pub(super) description: String,
    pub(super) experts_of_gpu: Vec<Vec<usize>>,
    pub(super) total_s: f64,
}

/// The plan from the planned deployment and its baselines (the first is `baseline`).
pub(super) fn assemble(
    scenario: Scenario,
    experts_of_gpu: Vec<Vec<usize>>,
    planned: Evaluation,
    baselines: Vec<Baseline>,
) -> Result<InferencePlan, PlanError> {
    let baselines = baselines
        .into_iter()
        .map(|b| {
            Ok(BaselineSummary {
                speedup: speedup(b.total_s, planned.total_s)?,
                description: b.description,
                experts_of_gpu: b.experts_of_gpu,
                inference_time_s: b.total_s,
            })
        })
        .collect::<Result<Vec<_>, PlanError>>()?;
    let Some(baseline) = baselines.first().cloned() else {
        return Err(PlanError::MissingField {
            field: "baselines",
            needed_by: "an inference plan",
        });
    };
    Ok(InferencePlan {
        scenario,
        experts_of_gpu,
        layers: planned.layers,
        inference_time_s: planned.total_s,
        gpu_utilization: planned.utilization,
        speedup_over_baseline: baseline.speedup,
        baseline,
        baselines,
    })
}

/// `baseline / planned`, 1 when the plan takes no time; finite or a typed error.
fn speedup(baseline_s: f64, planned_s: f64) -> Result<f64, PlanError> {
    let ratio = if planned_s > 0.0 {
        baseline_s / planned_s
    } else {
        1.0
    };
    Ok(check_finite_result("speedup over a baseline", ratio)?)
}
