//! Many experts per GPU: `E` logical experts per layer on `G` GPUs through a replica placement.
//!
//! Per layer: the placement ([`expert_placement::place`], optimal), the dispatch matrix that
//! follows from it and the replica choice ([`alltoall_sched::dispatch_tokens`]), its
//! contention-free schedule and the combine (the transpose), and Aurora's Eq. 1 with the expert
//! time of each GPU = tokens of all its replicas x FLOP per token / GPU speed. The baselines run
//! on the same cost model: EPLB with NCCL's peer order, EPLB with the plain `r + k` shift, EPLB
//! with shortest-job-first, and a random slot placement with shortest-job-first.

use alltoall_sched::baselines::{nccl, shift, sjf};
use alltoall_sched::{
    Algorithm, Bandwidth, Timetable, TrafficMatrix, dispatch_tokens, lower_bound_s, schedule,
    uniform_sources,
};
use comm_cost_model::timeline::{ExclusiveLayer, exclusive_time, ffn_times_s};
use comm_cost_model::{check_count, check_non_negative, units};
use expert_placement::{
    EplbPolicy, LayerLoads, Placement, PlacementAlgorithm, PlacementCluster, place,
    random_slot_placement,
};
use rayon::prelude::*;

use super::{
    AllToAllSummary, BaselineSummary, InferenceModelSpec, InferencePlan, InferenceSpec, LayerPlan,
    Scenario, check_len, speedup, summary,
};
use crate::PlanError;

/// How a deployment orders its sends.
#[derive(Debug, Clone, Copy)]
enum Order {
    /// The contention-free schedule ([`alltoall_sched::optimal`]).
    Planned,
    /// NCCL's node-aware peer order, simulated.
    Nccl,
    /// `r + k`, simulated.
    Shift,
    /// Shortest first, simulated.
    Sjf,
}

/// Validated, SI-unit view of a many-experts spec.
struct Experts {
    flop_per_s: Vec<f64>,
    bandwidth: Bandwidth,
    cluster: PlacementCluster,
    gpus_per_node: usize,
    /// `[layers][G][E]` routed tokens.
    routed: Vec<Vec<Vec<f64>>>,
    /// Per-layer token count of each expert.
    loads: Vec<LayerLoads>,
    bytes_per_token: f64,
    flop_per_token: f64,
    gate_s: f64,
    aggregation_s: f64,
}

/// One layer's traffic under a slot map, before any send order is chosen.
struct Routed {
    experts_of_gpu: Vec<Vec<usize>>,
    /// The dispatch (bytes); the combine is its transpose.
    there: TrafficMatrix,
    back: TrafficMatrix,
    /// Expert computation time of each GPU.
    ffn_s: Vec<f64>,
}

/// One layer timed: its plan and the utilization of Eq. 1.
struct Timed {
    plan: LayerPlan,
    utilization: f64,
}

/// Plans a spec whose model is given per logical expert (see [`super::plan_inference`]).
pub(super) fn plan_experts(spec: &InferenceSpec) -> Result<InferencePlan, PlanError> {
    let work = Experts::new(spec)?;
    if spec.placement.is_some() {
        return Err(PlanError::MissingField {
            field: "layer_placements",
            needed_by: "a fixed placement with many experts per GPU",
        });
    }
    let fixed = work.fixed_maps(&spec.layer_placements)?;
    // Layers are independent: planned in parallel, then summed in layer order (the first
    // failing layer's error wins), so the result does not depend on the thread count.
    let planned: Vec<Result<(Timed, [f64; 4]), PlanError>> = (0..work.loads.len())
        .into_par_iter()
        .map(|l| work.plan_layer(l, fixed.get(l), spec.seed))
        .collect();
    let mut layers = Vec::with_capacity(work.loads.len());
    let mut totals = [0.0; 4];
    let mut utilization = 0.0;
    for result in planned {
        let (timed, baselines) = result?;
        utilization += timed.utilization;
        for (total, t) in totals.iter_mut().zip(baselines) {
            *total += t;
        }
        layers.push(timed.plan);
    }
    let planned_s: f64 = layers.iter().map(|l| l.inference_time_s).sum();
    let descriptions = [
        "EPLB placement (global), NCCL's node-aware peer order under contention",
        "EPLB placement (global), shift order (GPU r sends to r + k) under contention",
        "EPLB placement (global), shortest-job-first order under contention",
        "random slot placement (same replicas), shortest-job-first order under contention",
    ];
    let baselines: Vec<BaselineSummary> = descriptions
        .iter()
        .zip(totals)
        .map(|(d, t)| BaselineSummary {
            description: (*d).to_owned(),
            experts_of_gpu: Vec::new(),
            inference_time_s: t,
            speedup: speedup(t, planned_s),
        })
        .collect();
    let homogeneous = work.flop_per_s.windows(2).all(|w| w[0] == w[1])
        && spec.gpus.windows(2).all(|w| w[0] == w[1]);
    Ok(InferencePlan {
        scenario: if homogeneous {
            Scenario::ExclusiveHomogeneous
        } else {
            Scenario::ExclusiveHeterogeneous
        },
        experts_of_gpu: Vec::new(),
        gpu_utilization: utilization / layers.len() as f64,
        layers,
        inference_time_s: planned_s,
        speedup_over_baseline: baselines[0].speedup,
        baseline: baselines[0].clone(),
        baselines,
    })
}

impl Experts {
    fn new(spec: &InferenceSpec) -> Result<Self, PlanError> {
        let g = check_count("GPUs", spec.gpus.len(), 1)?;
        if spec.models.len() != 1 {
            return Err(PlanError::TooLarge {
                what: "models given per logical expert (routed_tokens / expert_tokens): one \
                       model may have many experts per GPU; two colocated models need one \
                       expert each per GPU (layers as GPU x GPU byte matrices); models",
                limit: 1,
                value: spec.models.len(),
            });
        }
        let model = &spec.models[0];
        let routed = routed_tokens(model, g)?;
        let experts = routed[0][0].len();
        let slots = match spec.slots_per_gpu {
            Some(s) => s,
            None => experts.div_ceil(g),
        };
        let gpus_per_node = spec.gpus_per_node.unwrap_or(g);
        check_count("GPUs per node", gpus_per_node, 1)?;
        let node_of_gpu: Vec<usize> = (0..g).map(|i| i / gpus_per_node).collect();
        let mut flop_per_s = Vec::with_capacity(g);
        let mut bytes_per_s = Vec::with_capacity(g);
        for gpu in &spec.gpus {
            flop_per_s.push(units::checked_tflop_per_s("GPU TFLOP/s", gpu.tflop_per_s)?);
            bytes_per_s.push(units::checked_gbps(
                "GPU bandwidth (Gbps)",
                gpu.bandwidth_gbps,
            )?);
        }
        let fastest = flop_per_s.iter().copied().fold(0.0, f64::max);
        let speeds = flop_per_s.iter().map(|f| f / fastest).collect();
        let cluster = PlacementCluster::new(vec![slots; g], speeds, node_of_gpu)?;
        let loads = routed
            .iter()
            .map(|layer| {
                LayerLoads::new(
                    (0..experts)
                        .map(|e| layer.iter().map(|r| r[e]).sum())
                        .collect(),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let need = |v: Option<f64>, field| {
            v.ok_or(PlanError::MissingField {
                field,
                needed_by: "many experts per GPU (routed_tokens / expert_tokens)",
            })
        };
        Ok(Self {
            bandwidth: Bandwidth::per_gpu(bytes_per_s)?,
            flop_per_s,
            cluster,
            gpus_per_node,
            routed,
            loads,
            bytes_per_token: check_non_negative(
                "bytes per token",
                need(model.bytes_per_token, "bytes_per_token")?,
            )?,
            flop_per_token: check_non_negative(
                "FLOP per token",
                need(model.flop_per_token, "flop_per_token")?,
            )?,
            gate_s: check_non_negative("gate time (s)", model.gate_s)?,
            aggregation_s: check_non_negative("aggregation time (s)", model.aggregation_s)?,
        })
    }

    /// The slot maps (`physical_to_logical`) of fixed `[layers][G][slots]` placements (none
    /// when none is given).
    fn fixed_maps(&self, layers: &[Vec<Vec<usize>>]) -> Result<Vec<Vec<usize>>, PlanError> {
        if !layers.is_empty() {
            check_len("layers of layer_placements", self.loads.len(), layers.len())?;
        }
        layers
            .iter()
            .map(|rows| {
                check_len("GPUs of a layer placement", self.cluster.gpus(), rows.len())?;
                for (gpu, row) in rows.iter().enumerate() {
                    check_len(
                        "experts per GPU of a layer placement (slots per GPU)",
                        self.cluster.slot_range(gpu).len(),
                        row.len(),
                    )?;
                }
                Ok(rows.concat())
            })
            .collect()
    }

    /// Layer `l` planned (on the fixed slot map if given), and the inference times of the four
    /// baselines in the order of `plan_experts`' descriptions.
    fn plan_layer(
        &self,
        l: usize,
        fixed: Option<&Vec<usize>>,
        seed: u64,
    ) -> Result<(Timed, [f64; 4]), PlanError> {
        let loads = &self.loads[l];
        let ours = match fixed {
            Some(map) => Placement::evaluate(loads, &self.cluster, map.clone())?,
            None => place(loads, &self.cluster, PlacementAlgorithm::Optimal)?,
        };
        let eplb = place(
            loads,
            &self.cluster,
            PlacementAlgorithm::Eplb(EplbPolicy::Global),
        )?;
        let random = random_slot_placement(loads, &self.cluster, &ours, seed ^ l as u64)?;
        let timed = self.time(&self.route(l, &ours.physical_to_logical)?, Order::Planned)?;
        // EPLB's traffic is routed once and timed under each of its three orders.
        let eplb = self.route(l, &eplb.physical_to_logical)?;
        let random = self.route(l, &random.physical_to_logical)?;
        let runs = [
            (&eplb, Order::Nccl),
            (&eplb, Order::Shift),
            (&eplb, Order::Sjf),
            (&random, Order::Sjf),
        ];
        let mut baselines = [0.0; 4];
        for (t, (routed, order)) in baselines.iter_mut().zip(runs) {
            *t = self.time(routed, order)?.plan.inference_time_s;
        }
        Ok((timed, baselines))
    }

    /// Layer `l`'s traffic and expert times with the slot map `map`.
    fn route(&self, l: usize, map: &[usize]) -> Result<Routed, PlanError> {
        let experts_of_gpu: Vec<Vec<usize>> = (0..self.cluster.gpus())
            .map(|gpu| self.cluster.slot_range(gpu).map(|s| map[s]).collect())
            .collect();
        let dispatch =
            dispatch_tokens(&self.routed[l], &experts_of_gpu, self.cluster.node_of_gpu())?;
        let there = dispatch.traffic(self.bytes_per_token)?;
        let ffn_s = ffn_times_s(
            &dispatch.computed_tokens(),
            self.flop_per_token,
            &self.flop_per_s,
        )?;
        Ok(Routed {
            experts_of_gpu,
            back: there.transposed(),
            there,
            ffn_s,
        })
    }

    /// A routed layer with its sends ordered by `order`: Eq. 1.
    fn time(&self, routed: &Routed, order: Order) -> Result<Timed, PlanError> {
        let g = self.cluster.gpus();
        let (out, home) = (
            self.run(&routed.there, order)?,
            self.run(&routed.back, order)?,
        );
        let time = exclusive_time(&ExclusiveLayer {
            gate_s: vec![self.gate_s; g],
            dispatch_s: out.1.port_finish_times()?,
            ffn_s: routed.ffn_s.clone(),
            combine_s: home.1.port_finish_times()?,
            aggregation_s: vec![self.aggregation_s; g],
        })?;
        Ok(Timed {
            plan: LayerPlan {
                dispatch: out.0,
                combine: home.0,
                inference_time_s: time.inference_time_s,
                experts_of_gpu: routed.experts_of_gpu.clone(),
            },
            utilization: time.gpu_utilization,
        })
    }

    /// One all-to-all with `order`; the summary (with its timetable only for the plan).
    fn run(
        &self,
        matrix: &TrafficMatrix,
        order: Order,
    ) -> Result<(AllToAllSummary, Timetable), PlanError> {
        let timetable = match order {
            Order::Planned => {
                let plan = schedule(matrix, &self.bandwidth, Algorithm::Optimal, 0)?;
                return Ok((summary(&plan)?, plan.timetable));
            }
            Order::Nccl => nccl(matrix, &self.bandwidth, self.gpus_per_node)?,
            Order::Shift => shift(matrix, &self.bandwidth)?,
            Order::Sjf => sjf(matrix, &self.bandwidth)?,
        };
        let brief = AllToAllSummary {
            lower_bound_s: lower_bound_s(matrix, &self.bandwidth)?,
            makespan_s: timetable.makespan_s(),
            pieces: timetable.pieces(),
            nonzero_pairs: matrix.nonzeros(),
            timetable: Vec::new(),
        };
        Ok((brief, timetable))
    }
}

/// The model's `[layers][G][E]` routed tokens, from `routed_tokens` or, assuming equal sources,
/// from `expert_tokens`.
fn routed_tokens(model: &InferenceModelSpec, g: usize) -> Result<Vec<Vec<Vec<f64>>>, PlanError> {
    let routed = if model.routed_tokens.is_empty() {
        model
            .expert_tokens
            .iter()
            .map(|t| uniform_sources(t, g))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        model.routed_tokens.clone()
    };
    check_count("MoE layers of a model", routed.len(), 1)?;
    let experts = routed[0].first().map_or(0, Vec::len);
    check_count("experts per layer", experts, 1)?;
    for layer in &routed {
        if layer.len() != g {
            return Err(PlanError::SizeMismatch {
                what: "source GPUs of a layer's routed tokens (one per GPU)",
                expected: g,
                actual: layer.len(),
            });
        }
        for row in layer {
            if row.len() != experts {
                return Err(PlanError::SizeMismatch {
                    what: "experts of a layer's routed tokens",
                    expected: experts,
                    actual: row.len(),
                });
            }
        }
    }
    Ok(routed)
}
